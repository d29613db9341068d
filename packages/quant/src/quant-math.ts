import { type Tensor } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';

export const FP8_MAX = { f8_e4m3fn: 448, f8_e5m2: 57344 } as const;

/** Absolute maximum of a f32 tensor (NaN propagates). */
export function absMax(t: Tensor<'f32'>): number {
  const d = t.data;
  let hi = 0;
  let lo = 0;
  for (let i = 0; i < d.length; i++) {
    const v = d[i] as number;
    if (v > hi) hi = v;
    else if (v < lo) lo = v;
    else if (v !== v) return Number.NaN;
  }
  return Math.max(hi, -lo);
}

/**
 * Per-tensor fp8 scale as ComfyUI's scaled-fp8 converters compute it: absmax / format max, in float32.
 * An all-zero tensor gets scale 1 (any scale encodes zeros; 0 would make the decode 0·inf).
 */
export function fp8Scale(w: Tensor<'f32'>, format: 'f8_e4m3fn' | 'f8_e5m2'): number {
  return fp8ScaleOfAbsMax(absMax(w), format);
}

/** fp8Scale from a tensor's absmax (measured elsewhere, e.g. over a whole layer read in blocks). */
export function fp8ScaleOfAbsMax(m: number, format: 'f8_e4m3fn' | 'f8_e5m2'): number {
  if (!Number.isFinite(m)) {
    throw new QuantError('NON_FINITE_WEIGHT', `weight holds ${m}; it cannot be scaled to ${format}`, { value: m, hint: 'the source checkpoint is corrupt' });
  }
  return m === 0 ? 1 : Math.fround(Math.fround(m) / FP8_MAX[format]);
}

/**
 * max |got − want| / max |want| over the whole tensor: one error scale for it (what the model tests,
 * the bench's PyTorch self-check and the tensor-parallel comparisons bound).
 */
export function maxRelError(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < want.length; i++) {
    num = Math.max(num, Math.abs((got[i] as number) - (want[i] as number)));
    den = Math.max(den, Math.abs(want[i] as number));
  }
  return num / den;
}

/** ‖a − b‖ / ‖b‖ (Frobenius, float64 accumulation); 0 when both are zero. */
export function relativeError(a: Tensor<'f32'>, b: Tensor<'f32'>): number {
  const x = a.data;
  const y = b.data;
  if (x.length !== y.length) throw new QuantError('SHAPE_MISMATCH', `relativeError of ${x.length} vs ${y.length} values`, { value: [a.shape, b.shape] });
  let num = 0;
  let den = 0;
  for (let i = 0; i < x.length; i++) {
    const yi = y[i] as number;
    const d = (x[i] as number) - yi;
    num += d * d;
    den += yi * yi;
  }
  if (den === 0) return num === 0 ? 0 : Infinity;
  return Math.sqrt(num / den);
}
