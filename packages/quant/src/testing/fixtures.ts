// Test-only: fixture paths and a tiny independent safetensors reader for expected values.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tensor, type DType } from '@ninodes/kernels';

export function fixturePath(...parts: string[]): string {
  const root = process.env.NINODES_FIXTURES;
  if (root === undefined) throw new Error('NINODES_FIXTURES is not set (run through vitest)');
  return join(root, ...parts);
}

const DTYPE: Record<string, DType> = {
  F64: 'f64', F32: 'f32', F16: 'f16', BF16: 'bf16', I64: 'i64', I32: 'i32', I16: 'i16', I8: 'i8', U8: 'u8',
  BOOL: 'bool', F8_E4M3: 'f8_e4m3fn', F8_E5M2: 'f8_e5m2', U16: 'u16', U32: 'u32', U64: 'u64',
};

export interface SafetensorsFixture {
  metadata: Record<string, string>;
  names: string[];
  headerJson: string;
  tensor(name: string): Tensor;
  f32(name: string): Float32Array;
  info(name: string): { dtype: string; shape: number[]; data_offsets: [number, number] };
}

/** Reads a whole (small) safetensors fixture; tensors are aligned copies. */
export function readSafetensorsFixture(path: string): SafetensorsFixture {
  const file = readFileSync(path);
  const n = Number(file.readBigUInt64LE(0));
  const headerJson = file.subarray(8, 8 + n).toString('utf8');
  const header = JSON.parse(headerJson) as Record<string, unknown>;
  const metadata = (header.__metadata__ ?? {}) as Record<string, string>;
  delete header.__metadata__;
  const infos = header as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const base = 8 + n;
  const info = (name: string) => {
    const i = infos[name];
    if (i === undefined) throw new Error(`no tensor ${name} in ${path}`);
    return i;
  };
  const tensor = (name: string): Tensor => {
    const i = info(name);
    const dtype = DTYPE[i.dtype];
    if (dtype === undefined) throw new Error(`dtype ${i.dtype}`);
    const buf = new ArrayBuffer(i.data_offsets[1] - i.data_offsets[0]);
    new Uint8Array(buf).set(file.subarray(base + i.data_offsets[0], base + i.data_offsets[1]));
    return new Tensor(dtype, i.shape, buf);
  };
  return {
    metadata,
    names: Object.keys(infos),
    headerJson,
    info,
    tensor,
    f32: (name) => tensor(name).data as Float32Array,
  };
}
