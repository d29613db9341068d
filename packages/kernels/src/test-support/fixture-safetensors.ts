// Test-only: a minimal safetensors reader for the shared fixtures (the real reader lives in
// @ninodes/memory, which kernels may not import). Copies each tensor into aligned memory.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ElementDType } from '../dtype.js';
import { Tensor } from '../tensor.js';

const DTYPES: Record<string, ElementDType> = {
  F64: 'f64',
  F32: 'f32',
  F16: 'f16',
  BF16: 'bf16',
  I64: 'i64',
  I32: 'i32',
  I16: 'i16',
  I8: 'i8',
  U8: 'u8',
  BOOL: 'bool',
  F8_E4M3: 'f8_e4m3fn',
  F8_E5M2: 'f8_e5m2',
};

export function fixturePath(...parts: string[]): string {
  const root = process.env.NINODES_FIXTURES;
  if (root === undefined) throw new Error('NINODES_FIXTURES is not set (vitest.shared.ts sets it)');
  return join(root, ...parts);
}

export function readFixture(...parts: string[]): Map<string, Tensor> {
  const file = readFileSync(fixturePath(...parts));
  const headerLength = Number(file.readBigUInt64LE(0));
  const header = JSON.parse(file.subarray(8, 8 + headerLength).toString('utf8')) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const out = new Map<string, Tensor>();
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const dtype = DTYPES[entry.dtype];
    if (dtype === undefined) throw new Error(`fixture dtype ${entry.dtype} not handled`);
    const [start, end] = entry.data_offsets;
    const bytes = new Uint8Array(end - start);
    bytes.set(file.subarray(8 + headerLength + start, 8 + headerLength + end));
    out.set(name, new Tensor(dtype, entry.shape, bytes.buffer));
  }
  return out;
}

export function get<D extends ElementDType>(tensors: Map<string, Tensor>, name: string, dtype: D): Tensor<D> {
  const t = tensors.get(name);
  if (t === undefined || t.dtype !== dtype) throw new Error(`fixture tensor ${name} (${dtype}) missing`);
  return t as Tensor<D>;
}
