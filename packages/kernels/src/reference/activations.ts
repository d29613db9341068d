// Reference activations in float64, rounded once to float32.
import { planSwiglu } from '../ops/activations.js';
import { requireF32 } from '../arg-checks.js';
import { Tensor } from '../tensor.js';

const siluOf = (v: number): number => v / (1 + Math.exp(-v));

// x / (1 + exp(-2u)) is 0.5·x·(1 + tanh(u)) without cancellation for negative x.
const geluOf = (v: number): number => v / (1 + Math.exp(-2 * Math.sqrt(2 / Math.PI) * (v + 0.044715 * v * v * v)));

function map(op: string, x: Tensor<'f32'>, fn: (v: number) => number): Tensor<'f32'> {
  const t = requireF32(x, op, 'x');
  const xs = t.data;
  const out = new Float32Array(xs.length);
  for (let i = 0; i < xs.length; i++) out[i] = fn(xs[i] as number);
  return Tensor.fromArray('f32', t.shape, out);
}

export function silu(x: Tensor<'f32'>): Tensor<'f32'> {
  return map('silu', x, siluOf);
}

export function gelu(x: Tensor<'f32'>): Tensor<'f32'> {
  return map('gelu', x, geluOf);
}

export function swiglu(x: Tensor<'f32'>): Tensor<'f32'> {
  const p = planSwiglu(x);
  const xs = p.x.data;
  const f = p.features;
  const out = new Float32Array(p.rows * f);
  for (let r = 0; r < p.rows; r++) {
    for (let i = 0; i < f; i++) out[r * f + i] = siluOf(xs[r * 2 * f + i] as number) * (xs[r * 2 * f + f + i] as number);
  }
  return Tensor.fromArray('f32', p.outShape, out);
}
