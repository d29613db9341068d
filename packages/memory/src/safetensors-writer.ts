// Streams tensors into a safetensors file: the header is computed from names, dtypes and shapes
// alone, then each tensor's bytes are requested and written one at a time, through
// writeFileAtomically, so a failure never leaves a partial file under the real name.
import { type DType, Tensor, byteSizeOf, writeFileAtomically } from '@ninodes/kernels';
import { MemoryError, type MemoryThrownCode } from './error-codes.js';
import { safetensorsDTypeOf } from './safetensors-dtype.js';

/** One tensor to write: its layout up front, its bytes only when the writer reaches it. */
export interface TensorSource {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** Called once, in order; return the tensor or its raw little-endian bytes. */
  data(): Tensor | Uint8Array | Promise<Tensor | Uint8Array>;
}

export interface WriteSafetensorsOptions {
  metadata?: Readonly<Record<string, string>>;
}

export interface WriteSafetensorsResult {
  readonly path: string;
  readonly bytes: number;
  readonly headerBytes: number;
}

/** Wraps in-memory tensors as sources. */
export function tensorSources(tensors: Readonly<Record<string, Tensor>> | ReadonlyMap<string, Tensor>): TensorSource[] {
  const list = tensors instanceof Map ? [...tensors] : Object.entries(tensors);
  return list.map(([name, t]) => ({ name, dtype: t.dtype, shape: t.shape, data: () => t }));
}

function invalid(code: MemoryThrownCode, path: string, message: string, value?: unknown): never {
  throw new MemoryError(code, `${path}: ${message}`, { where: path, value });
}

/** Builds the padded JSON header (length is a multiple of 8, padded with spaces as Hugging Face does). */
export function buildHeader(tensors: readonly TensorSource[], metadata: Readonly<Record<string, string>> | undefined, path = '<header>'): { json: Uint8Array; sizes: number[] } {
  const header: Record<string, unknown> = {};
  if (metadata !== undefined && Object.keys(metadata).length > 0) {
    for (const [k, v] of Object.entries(metadata)) if (typeof v !== 'string') invalid('SAFETENSORS_INVALID_METADATA', path, `metadata '${k}' is not a string`, v);
    header.__metadata__ = { ...metadata };
  }
  const sizes: number[] = [];
  let offset = 0;
  const seen = new Set<string>();
  for (const t of tensors) {
    if (t.name === '__metadata__' || seen.has(t.name)) invalid('SAFETENSORS_DUPLICATE_NAME', path, `tensor name '${t.name}' is reserved or repeated`, t.name);
    seen.add(t.name);
    const dtype = safetensorsDTypeOf(t.dtype);
    if (dtype === undefined) invalid('SAFETENSORS_UNSUPPORTED_DTYPE', path, `tensor '${t.name}': safetensors cannot store ${t.dtype}`, t.dtype);
    const size = byteSizeOf(t.dtype, t.shape, `${path} :: ${t.name}`);
    header[t.name] = { dtype, shape: [...t.shape], data_offsets: [offset, offset + size] };
    sizes.push(size);
    offset += size;
  }
  let text = JSON.stringify(header);
  const raw = new TextEncoder().encode(text);
  text += ' '.repeat((8 - (raw.byteLength % 8)) % 8);
  return { json: new TextEncoder().encode(text), sizes };
}

/**
 * Writes a safetensors file atomically (`writeFileAtomically`); tensors are requested one at a time.
 */
export async function writeSafetensors(path: string, tensors: readonly TensorSource[], options: WriteSafetensorsOptions = {}): Promise<WriteSafetensorsResult> {
  const { json, sizes } = buildHeader(tensors, options.metadata, path);
  await writeFileAtomically(path, async (write) => {
    const length = new Uint8Array(8);
    new DataView(length.buffer).setBigUint64(0, BigInt(json.byteLength), true);
    write(length);
    write(json);
    for (const [i, t] of tensors.entries()) {
      const value = await t.data();
      const bytes = value instanceof Tensor ? value.bytes() : value;
      if (value instanceof Tensor && (value.dtype !== t.dtype || value.shape.join() !== t.shape.join())) {
        invalid('SAFETENSORS_WRITE_MISMATCH', path, `tensor '${t.name}' was declared ${t.dtype} [${t.shape.join(', ')}] but its data is ${value.dtype} [${value.shape.join(', ')}]`);
      }
      if (bytes.byteLength !== sizes[i]) {
        invalid('SAFETENSORS_WRITE_MISMATCH', path, `tensor '${t.name}' needs ${sizes[i]} bytes, its data has ${bytes.byteLength}`, bytes.byteLength);
      }
      write(bytes);
    }
  });
  return { path, bytes: 8 + json.byteLength + sizes.reduce((a, b) => a + b, 0), headerBytes: json.byteLength };
}
