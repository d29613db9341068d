import { KernelsError } from '../error-codes.js';
import { Tensor } from '../tensor.js';
import { callNative } from '../native-addon.js';
import { lastDim, requireF32, requireRank } from '../arg-checks.js';

/** SiLU: x · sigmoid(x). */
export function silu(x: Tensor<'f32'>): Tensor<'f32'> {
  const t = requireF32(x, 'silu', 'x');
  const out = Tensor.zeros('f32', t.shape);
  callNative('silu', (n) => n.siluF32(t.data, out.data));
  return out;
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

/** SwiGLU on [.., 2F]: silu(first half) · second half -> [.., F]. */
export function swiglu(x: Tensor<'f32'>): Tensor<'f32'> {
  const p = planSwiglu(x);
  const out = Tensor.zeros('f32', p.outShape);
  callNative('swiglu', (n) => n.swigluF32(p.x.data, out.data, p.rows, p.features));
  return out;
}
