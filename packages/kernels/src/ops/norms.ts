import type { Tensor } from '../tensor.js';
import { Tensor as T } from '../tensor.js';
import { callNative } from '../native-addon.js';
import { lastDim, optionalF32, outputF32, requireF32, requireFiniteNumber, requireRank, requireShape } from '../arg-checks.js';

export interface RowPlan {
  x: Tensor<'f32'>;
  rows: number;
  dim: number;
}

function rowPlan(x: unknown, op: string): RowPlan {
  const t = requireF32(x, op, 'x');
  requireRank(t, 'atLeast1', op, 'x');
  const dim = lastDim(t);
  return { x: t, rows: dim === 0 ? 0 : t.numel / dim, dim };
}

export interface NormPlan extends RowPlan {
  weight: Tensor<'f32'> | undefined;
  bias: Tensor<'f32'> | undefined;
  eps: number;
}

export function planNorm(op: string, x: unknown, weight: unknown, bias: unknown, eps: unknown): NormPlan {
  const p = rowPlan(x, op);
  const w = optionalF32(weight, op, 'weight');
  const b = optionalF32(bias, op, 'bias');
  if (w) requireShape(w, [p.dim], `${op}(weight)`);
  if (b) requireShape(b, [p.dim], `${op}(bias)`);
  const e = requireFiniteNumber(eps, op, 'eps');
  return { ...p, weight: w, bias: b, eps: e };
}

export function planRows(op: string, x: unknown): RowPlan {
  return rowPlan(x, op);
}

/** RMSNorm over the last dim: x / sqrt(mean(x²) + eps) · weight; into `out` when given (see outputF32). */
export function rmsNorm(x: Tensor<'f32'>, weight?: Tensor<'f32'> | null, eps = 1e-6, out?: Tensor<'f32'>): Tensor<'f32'> {
  const p = planNorm('rmsNorm', x, weight, undefined, eps);
  const y = outputF32(out, p.x.shape, 'rmsNorm', [p.x, p.weight]);
  callNative('rmsNorm', (n) => n.rmsNormF32(p.x.data, p.weight?.data ?? null, y.data, p.rows, p.dim, p.eps));
  return y;
}

/** LayerNorm over the last dim (biased variance, two-pass): (x - mean) / sqrt(var + eps) · weight + bias. */
export function layerNorm(x: Tensor<'f32'>, weight?: Tensor<'f32'> | null, bias?: Tensor<'f32'> | null, eps = 1e-5): Tensor<'f32'> {
  const p = planNorm('layerNorm', x, weight, bias, eps);
  const out = T.zeros('f32', p.x.shape);
  callNative('layerNorm', (n) => n.layerNormF32(p.x.data, p.weight?.data ?? null, p.bias?.data ?? null, out.data, p.rows, p.dim, p.eps));
  return out;
}

/** Softmax over the last dim. */
export function softmax(x: Tensor<'f32'>): Tensor<'f32'> {
  const p = planRows('softmax', x);
  const out = T.zeros('f32', p.x.shape);
  callNative('softmax', (n) => n.softmaxF32(p.x.data, out.data, p.rows, p.dim));
  return out;
}
