import type { ElementDType } from '@ninodes/kernels';

/** safetensors dtype names (the file's spelling) and the ninodes dtype each maps to. */
export const SAFETENSORS_DTYPES = {
  BOOL: 'bool',
  U8: 'u8',
  I8: 'i8',
  F8_E5M2: 'f8_e5m2',
  F8_E4M3: 'f8_e4m3fn',
  I16: 'i16',
  U16: 'u16',
  F16: 'f16',
  BF16: 'bf16',
  I32: 'i32',
  U32: 'u32',
  F32: 'f32',
  F64: 'f64',
  I64: 'i64',
  U64: 'u64',
} as const satisfies Record<string, ElementDType>;

export type SafetensorsDType = keyof typeof SAFETENSORS_DTYPES;

const TO_FILE = Object.fromEntries(Object.entries(SAFETENSORS_DTYPES).map(([k, v]) => [v, k])) as Record<string, SafetensorsDType>;

export function isSafetensorsDType(name: string): name is SafetensorsDType {
  return Object.hasOwn(SAFETENSORS_DTYPES, name);
}

/** The safetensors spelling of a ninodes dtype, or undefined when the format has none (block dtypes). */
export function safetensorsDTypeOf(dtype: string): SafetensorsDType | undefined {
  return Object.hasOwn(TO_FILE, dtype) ? TO_FILE[dtype] : undefined;
}
