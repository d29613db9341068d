import { BLOCK_DTYPES, type BlockDType, Tensor, byteSizeOf } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';

/** Byte offsets of the fp16 scale fields (d, dmin) inside one ggml block of each type. */
const HALF_FIELDS: Readonly<Record<BlockDType, readonly number[]>> = {
  q4_0: [0],
  q4_1: [0, 2],
  q5_0: [0],
  q5_1: [0, 2],
  q8_0: [0],
  q2_k: [80, 82],
  q3_k: [108],
  q4_k: [0, 2],
  q5_k: [0, 2],
  q6_k: [208],
  iq4_nl: [0],
  iq4_xs: [0],
};

/**
 * A block tensor of random quant bytes with sane fp16 scales (0.001..0.03, never inf/NaN), the way
 * the GGUF fixture was made: decode benchmarks and large-layer tests for every type without a file.
 */
export function randomBlockTensor(dtype: BlockDType, shape: readonly number[], seed = 145): Tensor {
  if (!Object.hasOwn(BLOCK_DTYPES, dtype)) {
    throw new QuantError('UNKNOWN_DTYPE', `'${dtype}' is not a GGUF block dtype`, { value: dtype, hint: `one of ${Object.keys(BLOCK_DTYPES).join(', ')}` });
  }
  const bytes = new Uint8Array(byteSizeOf(dtype, shape));
  let a = seed >>> 0;
  for (let i = 0; i < bytes.length; i += 4) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    t = (t ^ (t >>> 14)) >>> 0;
    bytes[i] = t & 0xff;
    if (i + 1 < bytes.length) bytes[i + 1] = (t >>> 8) & 0xff;
    if (i + 2 < bytes.length) bytes[i + 2] = (t >>> 16) & 0xff;
    if (i + 3 < bytes.length) bytes[i + 3] = t >>> 24;
  }
  const { blockBytes } = BLOCK_DTYPES[dtype];
  const view = new DataView(bytes.buffer);
  for (let b = 0; b < bytes.length; b += blockBytes) {
    for (const off of HALF_FIELDS[dtype]) {
      // fp16 with exponent 5..9 (2^-10..2^-6 ≈ 0.001..0.03) and a random mantissa, positive.
      const mant = view.getUint16(b + off, true) & 0x3ff;
      const exp = 5 + (bytes[b + off + 1] as number) % 5;
      view.setUint16(b + off, (exp << 10) | mant, true);
    }
  }
  return new Tensor(dtype, shape, bytes.buffer);
}
