// Reference norms and softmax: float64 accumulation, one float32 rounding per output.
import { planNorm, planRows } from '../ops/norms.js';
import { Tensor } from '../tensor.js';

export function rmsNorm(x: Tensor<'f32'>, weight?: Tensor<'f32'> | null, eps = 1e-6): Tensor<'f32'> {
  const p = planNorm('rmsNorm', x, weight, undefined, eps);
  const xs = p.x.data;
  const w = p.weight?.data;
  const out = new Float32Array(xs.length);
  for (let r = 0; r < p.rows; r++) {
    const o = r * p.dim;
    let ss = 0;
    for (let i = 0; i < p.dim; i++) ss += (xs[o + i] as number) ** 2;
    const inv = 1 / Math.sqrt(ss / p.dim + p.eps);
    for (let i = 0; i < p.dim; i++) out[o + i] = (xs[o + i] as number) * inv * (w ? (w[i] as number) : 1);
  }
  return Tensor.fromArray('f32', p.x.shape, out);
}

export function layerNorm(x: Tensor<'f32'>, weight?: Tensor<'f32'> | null, bias?: Tensor<'f32'> | null, eps = 1e-5): Tensor<'f32'> {
  const p = planNorm('layerNorm', x, weight, bias, eps);
  const xs = p.x.data;
  const w = p.weight?.data;
  const b = p.bias?.data;
  const out = new Float32Array(xs.length);
  for (let r = 0; r < p.rows; r++) {
    const o = r * p.dim;
    let s = 0;
    for (let i = 0; i < p.dim; i++) s += xs[o + i] as number;
    const mean = s / p.dim;
    let ss = 0;
    for (let i = 0; i < p.dim; i++) ss += ((xs[o + i] as number) - mean) ** 2;
    const inv = 1 / Math.sqrt(ss / p.dim + p.eps);
    for (let i = 0; i < p.dim; i++) {
      out[o + i] = ((xs[o + i] as number) - mean) * inv * (w ? (w[i] as number) : 1) + (b ? (b[i] as number) : 0);
    }
  }
  return Tensor.fromArray('f32', p.x.shape, out);
}

export function softmax(x: Tensor<'f32'>): Tensor<'f32'> {
  const p = planRows('softmax', x);
  const xs = p.x.data;
  const out = new Float32Array(xs.length);
  const row = new Float64Array(p.dim);
  for (let r = 0; r < p.rows; r++) {
    const o = r * p.dim;
    let m = -Infinity;
    for (let i = 0; i < p.dim; i++) m = Math.max(m, xs[o + i] as number);
    let s = 0;
    for (let i = 0; i < p.dim; i++) {
      row[i] = Math.exp((xs[o + i] as number) - m);
      s += row[i] as number;
    }
    for (let i = 0; i < p.dim; i++) out[o + i] = (row[i] as number) / s;
  }
  return Tensor.fromArray('f32', p.x.shape, out);
}
