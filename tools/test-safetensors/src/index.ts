// Test-only: the one minimal safetensors reader of the repository's tests. It reads expected
// values from reference fixtures and checkpoints, sharing no code with @ninodes/memory's reader
// (which is what many of those tests check), and depends on no workspace, so kernels (rank 0) can
// use it too. Minimal on purpose: whole file into memory, bounds-checked, aligned copies.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** safetensors dtype names -> ninodes dtype names (kernels' `DType` spelling). */
export const DTYPE_NAMES: Readonly<Record<string, string>> = {
  F64: 'f64',
  F32: 'f32',
  F16: 'f16',
  BF16: 'bf16',
  I64: 'i64',
  I32: 'i32',
  I16: 'i16',
  I8: 'i8',
  U8: 'u8',
  U16: 'u16',
  U32: 'u32',
  U64: 'u64',
  BOOL: 'bool',
  F8_E4M3: 'f8_e4m3fn',
  F8_E5M2: 'f8_e5m2',
};

/** A path under the repository's reference fixtures (NINODES_FIXTURES, set by vitest.shared.ts). */
export function fixturePath(...parts: string[]): string {
  const root = process.env.NINODES_FIXTURES;
  if (root === undefined) throw new Error('NINODES_FIXTURES is not set (vitest.shared.ts sets it)');
  return join(root, ...parts);
}

export interface RawTensor {
  /** As the file spells it: `F32`, `BF16`, ... */
  readonly dtype: string;
  readonly shape: number[];
  /** The tensor's bytes, copied into their own buffer (so typed views are aligned). */
  readonly bytes: Uint8Array;
  readonly dataOffsets: [number, number];
}

export interface RawCheckpoint {
  readonly metadata: Record<string, string>;
  /** The header JSON exactly as stored. */
  readonly headerJson: string;
  /** Tensors in header order. */
  readonly tensors: Map<string, RawTensor>;
}

/** Reads a whole (small) safetensors file. */
export function readSafetensorsFile(path: string): RawCheckpoint {
  const file = readFileSync(path);
  const headerLen = Number(file.readBigUInt64LE(0));
  if (8 + headerLen > file.length) throw new Error(`${path}: header length ${headerLen} runs past the file`);
  const headerJson = file.subarray(8, 8 + headerLen).toString('utf8');
  const header = JSON.parse(headerJson) as Record<string, unknown>;
  const base = 8 + headerLen;
  const tensors = new Map<string, RawTensor>();
  let metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = value as Record<string, string>;
      continue;
    }
    const e = value as { dtype: string; shape: number[]; data_offsets: [number, number] };
    const [begin, end] = e.data_offsets;
    if (base + end > file.length || begin > end) throw new Error(`${path}: safetensors entry ${name} is out of bounds`);
    tensors.set(name, { dtype: e.dtype, shape: e.shape, bytes: new Uint8Array(file.subarray(base + begin, base + end)), dataOffsets: [begin, end] });
  }
  return { metadata, headerJson, tensors };
}

/** Any float dtype of the file as exact float64 values (bf16/f16/f32 widen exactly). */
export function decodeF64(t: RawTensor): Float64Array {
  const b = t.bytes;
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  switch (t.dtype) {
    case 'F64': {
      const out = new Float64Array(b.byteLength / 8);
      for (let i = 0; i < out.length; i++) out[i] = dv.getFloat64(i * 8, true);
      return out;
    }
    case 'F32': {
      const out = new Float64Array(b.byteLength / 4);
      for (let i = 0; i < out.length; i++) out[i] = dv.getFloat32(i * 4, true);
      return out;
    }
    case 'BF16': {
      const out = new Float64Array(b.byteLength / 2);
      const scratch = new DataView(new ArrayBuffer(4));
      for (let i = 0; i < out.length; i++) {
        scratch.setUint32(0, dv.getUint16(i * 2, true) << 16, true);
        out[i] = scratch.getFloat32(0, true);
      }
      return out;
    }
    case 'F16': {
      const out = new Float64Array(b.byteLength / 2);
      for (let i = 0; i < out.length; i++) {
        const h = dv.getUint16(i * 2, true);
        const s = h & 0x8000 ? -1 : 1;
        const e = (h >> 10) & 0x1f;
        const m = h & 0x3ff;
        out[i] = e === 0 ? s * m * 2 ** -24 : e === 31 ? (m ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15);
      }
      return out;
    }
    default:
      throw new Error(`decodeF64: unsupported dtype ${t.dtype}`);
  }
}

/** A named tensor of a checkpoint as float64; throws when it is missing. */
export function tensorF64(ckpt: RawCheckpoint, name: string): Float64Array {
  const t = ckpt.tensors.get(name);
  if (!t) throw new Error(`missing tensor ${name}`);
  return decodeF64(t);
}

/** A named F32 tensor's values (a view of its aligned copy); throws on another dtype. */
export function f32Of(t: RawTensor): Float32Array {
  if (t.dtype !== 'F32') throw new Error(`expected F32, got ${t.dtype}`);
  return new Float32Array(t.bytes.buffer, t.bytes.byteOffset, t.bytes.byteLength / 4);
}
