// Source dtypes GGUF decode accepts, and the bf16 rounding both backends share.
import { BLOCK_DTYPES, type BlockDType, type DType } from './dtype.js';

export type DequantizeSource = BlockDType | 'f32' | 'f16' | 'bf16';

export const DEQUANTIZE_SOURCES: readonly DequantizeSource[] = ['f32', 'f16', 'bf16', ...(Object.keys(BLOCK_DTYPES) as BlockDType[])];

/** ggml tensor type ids (ggml.h `enum ggml_type`) of the types the kernels hold, as kernels dtypes. */
export const GGML_TYPE_DTYPES: Readonly<Record<number, DType>> = {
  0: 'f32',
  1: 'f16',
  2: 'q4_0',
  3: 'q4_1',
  6: 'q5_0',
  7: 'q5_1',
  8: 'q8_0',
  10: 'q2_k',
  11: 'q3_k',
  12: 'q4_k',
  13: 'q5_k',
  14: 'q6_k',
  20: 'iq4_nl',
  23: 'iq4_xs',
  24: 'i8',
  25: 'i16',
  26: 'i32',
  27: 'i64',
  28: 'f64',
  30: 'bf16',
};

const scratch = new DataView(new ArrayBuffer(4));

/** float32 -> bf16 bits, round to nearest even, NaN kept quiet (same as the native decoder). */
export function bf16BitsFromF32(value: number): number {
  scratch.setFloat32(0, value);
  const bits = scratch.getUint32(0);
  if ((bits & 0x7fffffff) > 0x7f800000) return ((bits >>> 16) | 0x40) & 0xffff;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}
