// Source dtypes GGUF decode accepts, and the bf16 rounding both backends share.
import { BLOCK_DTYPES, type BlockDType } from './dtype.js';

export type DequantizeSource = BlockDType | 'f32' | 'f16' | 'bf16';

export const DEQUANTIZE_SOURCES: readonly DequantizeSource[] = ['f32', 'f16', 'bf16', ...(Object.keys(BLOCK_DTYPES) as BlockDType[])];

const scratch = new DataView(new ArrayBuffer(4));

/** float32 -> bf16 bits, round to nearest even, NaN kept quiet (same as the native decoder). */
export function bf16BitsFromF32(value: number): number {
  scratch.setFloat32(0, value);
  const bits = scratch.getUint32(0);
  if ((bits & 0x7fffffff) > 0x7f800000) return ((bits >>> 16) | 0x40) & 0xffff;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}
