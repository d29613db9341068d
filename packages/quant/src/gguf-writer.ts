// Streams tensors into a GGUF v3 file (little-endian): header, metadata in the order given, tensor
// infos, then each tensor's bytes at a multiple of the alignment, requested one at a time. The same
// layout gguf-py's GGUFWriter and ggml's gguf_write produce (zero padding after the header and after
// every tensor, the last one included), written through kernels' writeFileAtomically.
import { type DType, Tensor, byteSizeOf, writeFileAtomically } from '@ninodes/kernels';
import type { TensorSource } from '@ninodes/memory';
import { GGML_TYPE_TO_DTYPE, GGUF_VALUE_TYPE, type GgufValue, type GgufValueTypeName } from './gguf-types.js';
import { QuantError, type QuantThrownCode } from './error-codes.js';

export interface WriteGgufOptions {
  /** general.alignment; default 32 (GGUF's default, written only when another value is asked for). */
  alignment?: number;
}

export interface WriteGgufResult {
  readonly path: string;
  readonly bytes: number;
  /** Bytes before the data section (header, metadata, tensor infos, padding). */
  readonly headerBytes: number;
}

/** One metadata entry: key and typed value, written in the order given. */
export type GgufEntry = readonly [key: string, value: GgufValue];

const MAGIC = [0x47, 0x47, 0x55, 0x46]; // 'GGUF'
const utf8 = new TextEncoder();
const TYPE_ID_OF: ReadonlyMap<DType, number> = new Map(Object.entries(GGML_TYPE_TO_DTYPE).map(([id, d]) => [d, Number(id)]));

/** The ggml type id a kernels dtype is stored as, or undefined when GGUF cannot hold it (u8, fp8, bool). */
export function ggmlTypeIdOf(dtype: DType): number | undefined {
  return TYPE_ID_OF.get(dtype);
}

/** Little-endian bytes built up piece by piece (the header is small: one growing buffer). */
class ByteSink {
  private buf = new Uint8Array(4096);
  private view = new DataView(this.buf.buffer);
  length = 0;
  private reserve(n: number): void {
    if (this.length + n <= this.buf.byteLength) return;
    const next = new Uint8Array(Math.max(this.buf.byteLength * 2, this.length + n));
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  bytes(b: ArrayLike<number>): void {
    this.reserve(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  num(type: Exclude<GgufValueTypeName, 'string' | 'array' | 'bool' | 'u64' | 'i64'>, v: number): void {
    const size = { u8: 1, i8: 1, u16: 2, i16: 2, u32: 4, i32: 4, f32: 4, f64: 8 }[type];
    this.reserve(size);
    const at = this.length;
    const dv = this.view;
    if (type === 'u8') dv.setUint8(at, v);
    else if (type === 'i8') dv.setInt8(at, v);
    else if (type === 'u16') dv.setUint16(at, v, true);
    else if (type === 'i16') dv.setInt16(at, v, true);
    else if (type === 'u32') dv.setUint32(at, v, true);
    else if (type === 'i32') dv.setInt32(at, v, true);
    else if (type === 'f32') dv.setFloat32(at, v, true);
    else dv.setFloat64(at, v, true);
    this.length += size;
  }
  big(type: 'u64' | 'i64', v: bigint): void {
    this.reserve(8);
    if (type === 'u64') this.view.setBigUint64(this.length, v, true);
    else this.view.setBigInt64(this.length, v, true);
    this.length += 8;
  }
  string(s: string): void {
    const b = utf8.encode(s);
    this.big('u64', BigInt(b.byteLength));
    this.bytes(b);
  }
  pad(alignment: number): void {
    const n = (alignment - (this.length % alignment)) % alignment;
    this.bytes(new Uint8Array(n));
  }
  result(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

function invalid(code: QuantThrownCode, path: string, message: string, value?: unknown, hint?: string): never {
  throw new QuantError(code, `${path}: ${message}`, { where: path, value, ...(hint === undefined ? {} : { hint }) });
}

/** Writes one value's payload (its type id is written by the caller). */
function writeValue(sink: ByteSink, v: GgufValue, path: string, key: string): void {
  switch (v.type) {
    case 'string':
      sink.string(v.value);
      return;
    case 'bool':
      sink.num('u8', v.value ? 1 : 0);
      return;
    case 'u64':
    case 'i64':
      sink.big(v.type, v.value);
      return;
    case 'array': {
      sink.num('u32', GGUF_VALUE_TYPE[v.itemType]);
      sink.big('u64', BigInt(v.value.length));
      for (const item of v.value) {
        if (item.type !== v.itemType) invalid('GGUF_BAD_VALUE', path, `metadata '${key}' is an array of ${v.itemType} holding a ${item.type}`, item.type);
        writeValue(sink, item, path, key);
      }
      return;
    }
    default: {
      const ok = v.type === 'f32' || v.type === 'f64' ? typeof v.value === 'number' : Number.isInteger(v.value);
      if (!ok) invalid('GGUF_BAD_VALUE', path, `metadata '${key}' is ${v.type} but holds ${String(v.value)}`, v.value);
      sink.num(v.type, v.value);
    }
  }
}

/** Header bytes (padded to the alignment) and each tensor's byte size. */
export function buildGgufHeader(
  tensors: readonly Pick<TensorSource, 'name' | 'dtype' | 'shape'>[],
  metadata: readonly GgufEntry[],
  options: WriteGgufOptions = {},
  path = '<gguf>',
): { header: Uint8Array; sizes: number[]; alignment: number } {
  const alignment = options.alignment ?? 32;
  if (!Number.isInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
    invalid('GGUF_BAD_ALIGNMENT', path, `alignment ${alignment} is not a positive power of two`, alignment);
  }
  const entries: GgufEntry[] = [...metadata];
  const keys = new Set<string>();
  for (const [key] of entries) {
    if (keys.has(key)) invalid('GGUF_DUPLICATE_KEY', path, `metadata key '${key}' is given twice`, key);
    keys.add(key);
  }
  if (keys.has('general.alignment')) invalid('GGUF_BAD_ALIGNMENT', path, 'general.alignment is set by the writer', 'general.alignment', 'pass options.alignment');
  if (alignment !== 32) entries.push(['general.alignment', { type: 'u32', value: alignment }]);

  const sink = new ByteSink();
  sink.bytes(MAGIC);
  sink.num('u32', 3);
  sink.big('u64', BigInt(tensors.length));
  sink.big('u64', BigInt(entries.length));
  for (const [key, value] of entries) {
    sink.string(key);
    sink.num('u32', GGUF_VALUE_TYPE[value.type]);
    writeValue(sink, value, path, key);
  }
  const sizes: number[] = [];
  const names = new Set<string>();
  let offset = 0;
  for (const t of tensors) {
    if (names.has(t.name)) invalid('GGUF_DUPLICATE_TENSOR', path, `tensor '${t.name}' is given twice`, t.name);
    names.add(t.name);
    const typeId = ggmlTypeIdOf(t.dtype);
    if (typeId === undefined) {
      invalid('GGUF_UNSUPPORTED_TENSOR_TYPE', path, `tensor '${t.name}' is ${t.dtype}, which GGUF cannot store`, t.dtype, `GGUF stores ${[...TYPE_ID_OF.keys()].join(', ')}`);
    }
    if (t.shape.length > 4) invalid('GGUF_BAD_DIMS', path, `tensor '${t.name}' has ${t.shape.length} dimensions`, t.shape, 'ggml tensors have 1..4 dimensions');
    const size = byteSizeOf(t.dtype, t.shape, `${path} :: ${t.name}`);
    sink.string(t.name);
    // A 0-d tensor is stored as [1]; dims go innermost first (ne0 = the torch shape's last).
    const ne = t.shape.length === 0 ? [1] : [...t.shape].reverse();
    sink.num('u32', ne.length);
    for (const d of ne) sink.big('u64', BigInt(d));
    sink.num('u32', typeId);
    sink.big('u64', BigInt(offset));
    sizes.push(size);
    offset += Math.ceil(size / alignment) * alignment;
  }
  sink.pad(alignment);
  return { header: sink.result(), sizes, alignment };
}

/**
 * Writes a GGUF v3 file atomically. Tensors come in torch order (`shape` as PyTorch sees it) and
 * any dtype GGUF holds (f32/f16/bf16, the GGUF block dtypes, integers); their data is requested
 * one at a time, in order, so a converter holds about one tensor at once.
 */
export async function writeGguf(path: string, tensors: readonly TensorSource[], metadata: readonly GgufEntry[], options: WriteGgufOptions = {}): Promise<WriteGgufResult> {
  const { header, sizes, alignment } = buildGgufHeader(tensors, metadata, options, path);
  let total = header.byteLength;
  await writeFileAtomically(path, async (write) => {
    write(header);
    for (const [i, t] of tensors.entries()) {
      const value = await t.data();
      const bytes = value instanceof Tensor ? value.bytes() : value;
      if (value instanceof Tensor && (value.dtype !== t.dtype || value.shape.join() !== t.shape.join())) {
        invalid('GGUF_WRITE_MISMATCH', path, `tensor '${t.name}' was declared ${t.dtype} [${t.shape.join(', ')}] but its data is ${value.dtype} [${value.shape.join(', ')}]`);
      }
      const size = sizes[i] as number;
      if (bytes.byteLength !== size) invalid('GGUF_WRITE_MISMATCH', path, `tensor '${t.name}' needs ${size} bytes, its data has ${bytes.byteLength}`, bytes.byteLength);
      write(bytes);
      const padding = Math.ceil(size / alignment) * alignment - size;
      if (padding > 0) write(new Uint8Array(padding));
      total += size + padding;
    }
  });
  return { path, bytes: total, headerBytes: header.byteLength };
}
