import { type DType, GGML_TYPE_DTYPES } from '@ninodes/kernels';

/**
 * ggml tensor type ids (ggml.h `enum ggml_type`). Every id is listed so an id that ggml defines but
 * the kernels cannot decode is reported as unsupported by name, and only a truly unknown id is
 * "unknown".
 */
export const GGML_TYPE_NAMES: Readonly<Record<number, string>> = {
  0: 'F32',
  1: 'F16',
  2: 'Q4_0',
  3: 'Q4_1',
  6: 'Q5_0',
  7: 'Q5_1',
  8: 'Q8_0',
  9: 'Q8_1',
  10: 'Q2_K',
  11: 'Q3_K',
  12: 'Q4_K',
  13: 'Q5_K',
  14: 'Q6_K',
  15: 'Q8_K',
  16: 'IQ2_XXS',
  17: 'IQ2_XS',
  18: 'IQ3_XXS',
  19: 'IQ1_S',
  20: 'IQ4_NL',
  21: 'IQ3_S',
  22: 'IQ2_S',
  23: 'IQ4_XS',
  24: 'I8',
  25: 'I16',
  26: 'I32',
  27: 'I64',
  28: 'F64',
  29: 'IQ1_M',
  30: 'BF16',
  34: 'TQ1_0',
  35: 'TQ2_0',
  39: 'MXFP4',
};

/** ggml types the kernels hold, mapped to kernels dtypes (the table lives in @ninodes/kernels). */
export const GGML_TYPE_TO_DTYPE: Readonly<Record<number, DType>> = GGML_TYPE_DTYPES;

/** The ggml type name (as in GGUF files and city96 file names, e.g. `Q4_K`) of a kernels dtype. */
export function ggmlTypeNameOf(dtype: DType): string | undefined {
  for (const [id, d] of Object.entries(GGML_TYPE_TO_DTYPE)) if (d === dtype) return GGML_TYPE_NAMES[Number(id)];
  return undefined;
}

/** GGUF metadata value type ids (gguf.md `gguf_metadata_value_type`). */
export const GGUF_VALUE_TYPE = {
  u8: 0,
  i8: 1,
  u16: 2,
  i16: 3,
  u32: 4,
  i32: 5,
  f32: 6,
  bool: 7,
  string: 8,
  array: 9,
  u64: 10,
  i64: 11,
  f64: 12,
} as const;

export type GgufValueTypeName = keyof typeof GGUF_VALUE_TYPE;

/**
 * The items of a metadata array: a plain array when a value is built in code; when parsed from a
 * file, a view over the header bytes that decodes an item on access (a tokenizer vocabulary or a
 * 24M-element table would otherwise cost one JS object per element, 70-150x its bytes).
 */
export interface GgufArrayItems extends Iterable<GgufValue> {
  readonly length: number;
  /** Item `index` (negative counts from the end, as Array.prototype.at); undefined out of range. */
  at(index: number): GgufValue | undefined;
}

/**
 * A metadata value as the file stores it: the declared type is kept so a round trip (or a report)
 * can tell an i32 from a u32; 64-bit integers are bigints so no value is rounded.
 */
export type GgufValue =
  | { readonly type: 'u8' | 'i8' | 'u16' | 'i16' | 'u32' | 'i32' | 'f32' | 'f64'; readonly value: number }
  | { readonly type: 'u64' | 'i64'; readonly value: bigint }
  | { readonly type: 'bool'; readonly value: boolean }
  | { readonly type: 'string'; readonly value: string }
  | { readonly type: 'array'; readonly itemType: GgufValueTypeName; readonly value: GgufArrayItems };

/** A GGUF value as plain JS (arrays of plain values, bigints for 64-bit integers). */
export type GgufPlainValue = number | bigint | boolean | string | readonly GgufPlainValue[];

export function plainGgufValue(v: GgufValue): GgufPlainValue {
  if (v.type === 'array') return Array.from(v.value, plainGgufValue);
  return v.value;
}

/** Renders a value as a string for `CheckpointSource.metadata` (arrays as JSON, bigints exact). */
export function ggufValueToString(v: GgufValue): string {
  if (v.type === 'string') return v.value;
  if (v.type === 'array') return `[${Array.from(v.value, (x) => (x.type === 'string' ? JSON.stringify(x.value) : ggufValueToString(x))).join(',')}]`;
  return String(v.value);
}
