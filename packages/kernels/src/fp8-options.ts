import type { Tensor } from './tensor.js';
import { optionsOf, show } from './arg-checks.js';
import { KernelsError } from './error-codes.js';

export type Fp8Format = 'f8_e4m3fn' | 'f8_e5m2';
export const FP8_FORMATS: readonly Fp8Format[] = ['f8_e4m3fn', 'f8_e5m2'];

export interface EncodeFp8Options {
  /** Per-tensor scale: the stored value is x / scale (multiplied by the float32 reciprocal). */
  scale?: number;
  /** 'torch-cast': PyTorch `.to(float8)`; 'clamp' (default when scale is given): clamp to ±max first. */
  mode?: 'torch-cast' | 'clamp';
  /** Stochastic rounding between the two neighbouring fp8 values, deterministic from the seed (saturates at ±max). */
  stochastic?: { seed: number };
}

export interface DecodeFp8Options {
  scale?: number;
  /**
   * f32 of the input's shape to decode into (every element is written), disjoint from the input. A
   * caller that decodes a weight per call reuses one: fresh memory costs a page fault every 4 KiB on
   * first touch, which made a 50 MB decode ~20x slower than the decode itself on a VM.
   */
  out?: Tensor<'f32'>;
}

export interface ResolvedEncodeFp8 {
  format: Fp8Format;
  scale: number | undefined;
  clamp: boolean;
  seed: number | undefined;
}

export function resolveEncodeFp8(format: unknown, options?: EncodeFp8Options): ResolvedEncodeFp8 {
  if (!FP8_FORMATS.includes(format as Fp8Format)) {
    throw new KernelsError('DTYPE_MISMATCH', `encodeFp8: format ${show(format)} is not one of ${FP8_FORMATS.join(', ')}`, { value: format, where: 'encodeFp8 format' });
  }
  const { scale, mode, stochastic } = optionsOf(options, 'encodeFp8 options');
  if (scale !== undefined && !(typeof scale === 'number' && Number.isFinite(scale) && scale > 0)) {
    throw new KernelsError('INVALID_ARGUMENT', `encodeFp8: scale ${show(scale)} is not a positive finite number`, { value: scale, where: 'encodeFp8 opts.scale' });
  }
  if (mode !== undefined && mode !== 'torch-cast' && mode !== 'clamp') {
    throw new KernelsError('INVALID_ARGUMENT', `encodeFp8: mode must be 'torch-cast' or 'clamp'`, { value: mode, where: 'encodeFp8 opts.mode' });
  }
  if (stochastic !== undefined) optionsOf(stochastic, 'encodeFp8 opts.stochastic');
  const seed = stochastic?.seed;
  if (stochastic !== undefined && !(Number.isInteger(seed) && (seed as number) >= 0 && (seed as number) <= 0xffffffff)) {
    throw new KernelsError('INVALID_ARGUMENT', `encodeFp8: stochastic.seed must be an integer in 0..2^32-1`, { value: seed, where: 'encodeFp8 opts.stochastic.seed' });
  }
  return { format: format as Fp8Format, scale, clamp: mode === undefined ? scale !== undefined : mode === 'clamp', seed };
}

export function resolveDecodeScale(options?: DecodeFp8Options): number | undefined {
  const { scale } = optionsOf(options, 'decodeFp8 options');
  if (scale !== undefined && !(typeof scale === 'number' && Number.isFinite(scale))) {
    throw new KernelsError('INVALID_ARGUMENT', `decodeFp8: scale ${show(scale)} is not a finite number`, { value: scale, where: 'decodeFp8 opts.scale' });
  }
  return scale;
}
