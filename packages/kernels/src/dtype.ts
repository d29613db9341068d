import { KernelsError } from './error-codes.js';

/** Element dtypes: one value per element, `bytes` each. */
export const ELEMENT_DTYPES = {
  f64: { bytes: 8 },
  f32: { bytes: 4 },
  f16: { bytes: 2 },
  bf16: { bytes: 2 },
  f8_e4m3fn: { bytes: 1 },
  f8_e5m2: { bytes: 1 },
  i64: { bytes: 8 },
  i32: { bytes: 4 },
  i16: { bytes: 2 },
  i8: { bytes: 1 },
  u64: { bytes: 8 },
  u32: { bytes: 4 },
  u16: { bytes: 2 },
  u8: { bytes: 1 },
  bool: { bytes: 1 },
} as const;

/**
 * GGUF block dtypes: opaque encoded storage, `blockElements` values packed into `blockBytes` bytes
 * (ggml's block layouts). The innermost (last, torch order) dimension must be a multiple of the block.
 */
export const BLOCK_DTYPES = {
  q4_0: { blockElements: 32, blockBytes: 18 },
  q4_1: { blockElements: 32, blockBytes: 20 },
  q5_0: { blockElements: 32, blockBytes: 22 },
  q5_1: { blockElements: 32, blockBytes: 24 },
  q8_0: { blockElements: 32, blockBytes: 34 },
  q2_k: { blockElements: 256, blockBytes: 84 },
  q3_k: { blockElements: 256, blockBytes: 110 },
  q4_k: { blockElements: 256, blockBytes: 144 },
  q5_k: { blockElements: 256, blockBytes: 176 },
  q6_k: { blockElements: 256, blockBytes: 210 },
  iq4_nl: { blockElements: 32, blockBytes: 18 },
  iq4_xs: { blockElements: 256, blockBytes: 136 },
} as const;

export type ElementDType = keyof typeof ELEMENT_DTYPES;
export type BlockDType = keyof typeof BLOCK_DTYPES;
export type DType = ElementDType | BlockDType;

export const DTYPES: readonly DType[] = [
  ...(Object.keys(ELEMENT_DTYPES) as ElementDType[]),
  ...(Object.keys(BLOCK_DTYPES) as BlockDType[]),
];

export function isElementDType(dtype: string): dtype is ElementDType {
  return Object.hasOwn(ELEMENT_DTYPES, dtype);
}

export function isBlockDType(dtype: string): dtype is BlockDType {
  return Object.hasOwn(BLOCK_DTYPES, dtype);
}

export function isDType(dtype: string): dtype is DType {
  return isElementDType(dtype) || isBlockDType(dtype);
}

export function assertDType(dtype: string, where?: string): DType {
  if (!isDType(dtype)) {
    throw new KernelsError('UNKNOWN_DTYPE', `unknown dtype '${dtype}'`, {
      value: dtype,
      ...(where === undefined ? {} : { where }),
      hint: `valid dtypes: ${DTYPES.join(', ')}`,
    });
  }
  return dtype;
}

/** Number of elements of a shape; validates that every dimension is a non-negative safe integer. */
export function numelOf(shape: readonly number[], where?: string): number {
  let n = 1;
  for (const [i, d] of shape.entries()) {
    if (!Number.isSafeInteger(d) || d < 0) {
      throw new KernelsError('INVALID_SHAPE', `dimension ${i} of shape [${shape.join(', ')}] is not a non-negative integer`, {
        value: shape,
        ...(where === undefined ? {} : { where }),
        hint: 'shapes are arrays of non-negative integers',
      });
    }
    n *= d;
    if (!Number.isSafeInteger(n)) {
      throw new KernelsError('INVALID_SHAPE', `shape [${shape.join(', ')}] has more elements than 2^53`, {
        value: shape,
        ...(where === undefined ? {} : { where }),
      });
    }
  }
  return n;
}

/** Bytes that `shape` occupies in `dtype` (block dtypes: the last dimension must fill whole blocks). */
export function byteSizeOf(dtype: DType, shape: readonly number[], where?: string): number {
  assertDType(dtype, where);
  const numel = numelOf(shape, where);
  if (isElementDType(dtype)) return numel * ELEMENT_DTYPES[dtype].bytes;
  const { blockElements, blockBytes } = BLOCK_DTYPES[dtype];
  const inner = shape.length === 0 ? 1 : (shape[shape.length - 1] as number);
  if (inner % blockElements !== 0) {
    throw new KernelsError(
      'BLOCK_MISALIGNED',
      `innermost dimension ${inner} of a ${dtype} tensor is not a multiple of its block size ${blockElements}`,
      { value: shape, ...(where === undefined ? {} : { where }), hint: 'block dtypes pack whole blocks along the last dimension' },
    );
  }
  return (numel / blockElements) * blockBytes;
}
