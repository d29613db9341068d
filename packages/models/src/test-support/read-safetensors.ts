// Test-only safetensors reader: whole file into memory, decoded to float64. It exists so the float64
// oracle shares no code with the model under test (which reads through @ninodes/memory).
import { readFileSync } from 'node:fs';

export interface RawTensor {
  readonly dtype: string;
  readonly shape: number[];
  readonly bytes: Uint8Array;
}

export interface RawCheckpoint {
  readonly metadata: Record<string, string>;
  readonly tensors: Map<string, RawTensor>;
}

export function readSafetensorsFile(path: string): RawCheckpoint {
  const file = readFileSync(path);
  const headerLen = Number(file.readBigUInt64LE(0));
  const header = JSON.parse(file.subarray(8, 8 + headerLen).toString('utf8')) as Record<string, unknown>;
  const base = 8 + headerLen;
  const tensors = new Map<string, RawTensor>();
  let metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = value as Record<string, string>;
      continue;
    }
    const v = value as { dtype: string; shape: number[]; data_offsets: [number, number] };
    const bytes = new Uint8Array(file.buffer, file.byteOffset + base + v.data_offsets[0], v.data_offsets[1] - v.data_offsets[0]);
    tensors.set(name, { dtype: v.dtype, shape: v.shape, bytes });
  }
  return { metadata, tensors };
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

export function tensorF64(ckpt: RawCheckpoint, name: string): Float64Array {
  const t = ckpt.tensors.get(name);
  if (!t) throw new Error(`missing tensor ${name}`);
  return decodeF64(t);
}
