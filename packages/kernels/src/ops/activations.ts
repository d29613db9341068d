import { KernelsError } from '../error-codes.js';
import { Tensor } from '../tensor.js';
import { callNative } from '../native-addon.js';
import { lastDim, outputF32, requireF32, requireRank } from '../arg-checks.js';

/** SiLU: x · sigmoid(x); into `out` when given (see outputF32). */
export function silu(x: Tensor<'f32'>, out?: Tensor<'f32'>): Tensor<'f32'> {
  const t = requireF32(x, 'silu', 'x');
  const y = outputF32(out, t.shape, 'silu', [t]);
  callNative('silu', (n) => n.siluF32(t.data, y.data));
  return y;
}

/** GELU, tanh approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
export function gelu(x: Tensor<'f32'>): Tensor<'f32'> {
  const t = requireF32(x, 'gelu', 'x');
  const out = Tensor.zeros('f32', t.shape);
  callNative('gelu', (n) => n.geluTanhF32(t.data, out.data));
  return out;
}

export function planSwiglu(x: unknown): { x: Tensor<'f32'>; rows: number; features: number; outShape: number[] } {
  const t = requireF32(x, 'swiglu', 'x');
  requireRank(t, 'atLeast1', 'swiglu', 'x');
  const last = lastDim(t);
  if (last % 2 !== 0) {
    throw new KernelsError('SHAPE_MISMATCH', `swiglu: last dimension ${last} is odd`, {
      value: t.shape,
      where: 'swiglu(x)',
      hint: 'the last dimension holds [gate | up] halves of equal size',
    });
  }
  const features = last / 2;
  return { x: t, rows: last === 0 ? 0 : t.numel / last, features, outShape: [...t.shape.slice(0, -1), features] };
}

/** SwiGLU on [.., 2F]: silu(first half) · second half -> [.., F]; into `out` when given (see outputF32). */
export function swiglu(x: Tensor<'f32'>, out?: Tensor<'f32'>): Tensor<'f32'> {
  const p = planSwiglu(x);
  const y = outputF32(out, p.outShape, 'swiglu', [p.x]);
  callNative('swiglu', (n) => n.swigluF32(p.x.data, y.data, p.rows, p.features));
  return y;
}
