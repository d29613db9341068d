// Test-only GGUF encoder: builds valid files (for property tests) and, by editing fields, malformed ones.
import { GGUF_VALUE_TYPE, type GgufValue } from '../gguf-types.js';

export interface TestGgufTensor {
  name: string;
  ne: number[];
  ggmlType: number;
  /** Relative data offset; default: packed after the previous tensor at the alignment. */
  offset?: bigint;
  data: Uint8Array;
}

export interface TestGgufFile {
  version?: number;
  magic?: number;
  alignment?: number;
  metadata?: [string, GgufValue][];
  tensors?: TestGgufTensor[];
  /** Overrides of the counts written in the header. */
  tensorCount?: bigint;
  kvCount?: bigint;
}

class Writer {
  parts: number[] = [];
  u8(v: number) { this.parts.push(v & 0xff); }
  bytes(b: Uint8Array) { for (const x of b) this.parts.push(x); }
  dv(n: number, f: (d: DataView) => void) { const b = new Uint8Array(n); f(new DataView(b.buffer)); this.bytes(b); }
  u32(v: number) { this.dv(4, (d) => d.setUint32(0, v, true)); }
  u64(v: bigint) { this.dv(8, (d) => d.setBigUint64(0, v, true)); }
  str(s: string) { const b = new TextEncoder().encode(s); this.u64(BigInt(b.length)); this.bytes(b); }
  value(v: GgufValue) {
    switch (v.type) {
      case 'u8': this.u8(v.value); break;
      case 'i8': this.dv(1, (d) => d.setInt8(0, v.value)); break;
      case 'u16': this.dv(2, (d) => d.setUint16(0, v.value, true)); break;
      case 'i16': this.dv(2, (d) => d.setInt16(0, v.value, true)); break;
      case 'u32': this.u32(v.value); break;
      case 'i32': this.dv(4, (d) => d.setInt32(0, v.value, true)); break;
      case 'f32': this.dv(4, (d) => d.setFloat32(0, v.value, true)); break;
      case 'f64': this.dv(8, (d) => d.setFloat64(0, v.value, true)); break;
      case 'u64': this.u64(v.value); break;
      case 'i64': this.dv(8, (d) => d.setBigInt64(0, v.value, true)); break;
      case 'bool': this.u8(v.value ? 1 : 0); break;
      case 'string': this.str(v.value); break;
      case 'array':
        this.u32(GGUF_VALUE_TYPE[v.itemType]);
        this.u64(BigInt(v.value.length));
        for (const x of v.value) this.value(x);
        break;
    }
  }
}

/** Encodes a GGUF file; returns the bytes and where each tensor info's offset field sits. */
export function encodeGguf(file: TestGgufFile): Uint8Array {
  const alignment = file.alignment ?? 32;
  const metadata = [...(file.metadata ?? [])];
  if (file.alignment !== undefined) metadata.push(['general.alignment', { type: 'u32', value: alignment }]);
  const tensors = file.tensors ?? [];
  const w = new Writer();
  w.u32(file.magic ?? 0x46554747);
  w.u32(file.version ?? 3);
  w.u64(file.tensorCount ?? BigInt(tensors.length));
  w.u64(file.kvCount ?? BigInt(metadata.length));
  for (const [k, v] of metadata) {
    w.str(k);
    w.u32(GGUF_VALUE_TYPE[v.type]);
    w.value(v);
  }
  let next = 0n;
  const offsets: bigint[] = [];
  for (const t of tensors) {
    const off = t.offset ?? next;
    offsets.push(off);
    const end = off + BigInt(t.data.length);
    const a = BigInt(alignment);
    next = ((end + a - 1n) / a) * a;
    w.str(t.name);
    w.u32(t.ne.length);
    for (const d of t.ne) w.u64(BigInt(d));
    w.u32(t.ggmlType);
    w.u64(off);
  }
  while (w.parts.length % alignment !== 0) w.u8(0);
  const dataStart = w.parts.length;
  let total = dataStart;
  tensors.forEach((t, i) => { total = Math.max(total, dataStart + Number(offsets[i]) + t.data.length); });
  const out = new Uint8Array(total);
  out.set(w.parts);
  tensors.forEach((t, i) => out.set(t.data, dataStart + Number(offsets[i])));
  return out;
}
