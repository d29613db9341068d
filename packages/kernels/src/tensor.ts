import { type DType, ELEMENT_DTYPES, type ElementDType, assertDType, byteSizeOf, isBlockDType, numelOf } from './dtype.js';
import { brandInstances } from './brand.js';
import { KernelsError } from './error-codes.js';
import { type DeviceBuffer, isDeviceBuffer } from './backend/device-buffer.js';

/** The typed array that views each element dtype (16-bit floats are raw bits: Node 20 has no Float16Array). */
export interface TypedArrayOf {
  f64: Float64Array;
  f32: Float32Array;
  f16: Uint16Array;
  bf16: Uint16Array;
  f8_e4m3fn: Uint8Array;
  f8_e5m2: Uint8Array;
  i64: BigInt64Array;
  i32: Int32Array;
  i16: Int16Array;
  i8: Int8Array;
  u64: BigUint64Array;
  u32: Uint32Array;
  u16: Uint16Array;
  u8: Uint8Array;
  bool: Uint8Array;
}

const VIEW: { [K in ElementDType]: new (buffer: ArrayBufferLike, byteOffset: number, length: number) => TypedArrayOf[K] } = {
  f64: Float64Array,
  f32: Float32Array,
  f16: Uint16Array,
  bf16: Uint16Array,
  f8_e4m3fn: Uint8Array,
  f8_e5m2: Uint8Array,
  i64: BigInt64Array,
  i32: Int32Array,
  i16: Int16Array,
  i8: Int8Array,
  u64: BigUint64Array,
  u32: Uint32Array,
  u16: Uint16Array,
  u8: Uint8Array,
  bool: Uint8Array,
};

/**
 * Who owns a tensor's memory when it is not an ordinary GC'd ArrayBuffer: an mmap of a checkpoint, a
 * native allocation. `release()` frees it early (the ArrayBuffer is detached first, so stale views
 * read as empty instead of touching freed memory); a finalizer in the owner is the safety net.
 */
export interface StorageOwner {
  release(): void;
  readonly released: boolean;
}

export interface TensorOptions {
  byteOffset?: number;
  /** Device id host storage belongs to; 'cpu' unless a backend says otherwise (device storage names its own). */
  device?: string;
  owner?: StorageOwner;
}

/**
 * Where a tensor's bytes are: host memory the JS thread can read (an ArrayBuffer: GC'd, mapped or
 * native), or a backend's device buffer that only explicit, asynchronous copies reach
 * (`toHost`/`toDevice` in backend/transfer.ts).
 */
export type TensorStorage = { readonly kind: 'host'; readonly buffer: ArrayBufferLike } | { readonly kind: 'device'; readonly buffer: DeviceBuffer };

// Storages a Tensor has wrapped (each ArrayBuffer or device buffer once): tensorAllocations() counts them, so a test
// can show that a steady-state step creates no new tensor memory (issue 16). A WeakSet keeps no
// storage alive.
const wrapped = new WeakSet<ArrayBufferLike | DeviceBuffer>();
let allocations = 0;

/**
 * How many distinct storages (ArrayBuffers: fresh zeros, copies, native allocations, mapped files,
 * wrapped typed arrays) Tensors have been created over in this module build so far; views of a storage
 * already seen do not count.
 */
export function tensorAllocations(): number {
  return allocations;
}

/**
 * A dtype, a shape (torch order, outermost first) and contiguous storage, in host memory or in a
 * backend's device buffer. Views (reshape, rows, narrow) share storage and owner; nothing here copies
 * unless its name says so. Only host storage has `.data`, `.bytes()` and `.buffer`; on device storage
 * they throw TENSOR_NOT_ON_HOST.
 */
export class Tensor<D extends DType = DType> {
  static {
    // instanceof Tensor accepts tensors of the other module build too (ESM and CJS in one process).
    brandInstances(this, 'tensor');
  }

  readonly dtype: D;
  readonly shape: readonly number[];
  readonly storage: TensorStorage;
  readonly byteOffset: number;
  readonly byteLength: number;
  readonly device: string;
  readonly owner: StorageOwner | undefined;

  constructor(dtype: D, shape: readonly number[], buffer: ArrayBufferLike | DeviceBuffer, options: TensorOptions = {}) {
    this.dtype = assertDType(dtype) as D;
    this.shape = Object.freeze([...shape]);
    this.byteOffset = options.byteOffset ?? 0;
    this.byteLength = byteSizeOf(dtype, shape);
    const onDevice = isDeviceBuffer(buffer) ? buffer : undefined;
    this.device = onDevice ? onDevice.bufferType.device : (options.device ?? 'cpu');
    this.owner = options.owner ?? onDevice;
    if (!Number.isSafeInteger(this.byteOffset) || this.byteOffset < 0 || this.byteOffset + this.byteLength > buffer.byteLength) {
      throw new KernelsError(
        'TENSOR_OUT_OF_BOUNDS',
        `a ${dtype} [${shape.join(', ')}] tensor needs bytes ${this.byteOffset}..${this.byteOffset + this.byteLength} but its buffer has ${buffer.byteLength}`,
        { value: { byteOffset: this.byteOffset, byteLength: this.byteLength, bufferBytes: buffer.byteLength }, hint: 'the storage is smaller than dtype × shape' },
      );
    }
    this.storage = onDevice ? { kind: 'device', buffer: onDevice } : { kind: 'host', buffer: buffer as ArrayBufferLike };
    if (!wrapped.has(buffer)) {
      wrapped.add(buffer);
      allocations++;
    }
  }

  /** A zero-filled tensor in ordinary JS memory. */
  static zeros<D extends DType>(dtype: D, shape: readonly number[]): Tensor<D> {
    return new Tensor(dtype, shape, new ArrayBuffer(byteSizeOf(dtype, shape)));
  }

  /** Wraps a typed array's memory without copying. */
  static fromArray<D extends ElementDType>(dtype: D, shape: readonly number[], data: TypedArrayOf[D]): Tensor<D> {
    const expected = numelOf(shape);
    if (data.length !== expected || data.BYTES_PER_ELEMENT !== ELEMENT_DTYPES[dtype].bytes) {
      throw new KernelsError('SHAPE_MISMATCH', `${data.length} values of ${data.BYTES_PER_ELEMENT} bytes do not fill a ${dtype} [${shape.join(', ')}] tensor`, {
        value: { length: data.length, shape },
        hint: `pass exactly ${expected} values in the dtype's typed array`,
      });
    }
    return new Tensor(dtype, shape, data.buffer, { byteOffset: data.byteOffset });
  }

  /** f32 tensor from plain numbers (copies). */
  static f32(shape: readonly number[], values: ArrayLike<number>): Tensor<'f32'> {
    return Tensor.fromArray('f32', shape, Float32Array.from(values));
  }

  get numel(): number {
    return numelOf(this.shape);
  }

  get rank(): number {
    return this.shape.length;
  }

  get disposed(): boolean {
    return this.owner?.released ?? false;
  }

  /** True when the bytes are in host memory (`.data` works). */
  get onHost(): boolean {
    return this.storage.kind === 'host';
  }

  /** The host ArrayBuffer under this tensor (shared by its views); TENSOR_NOT_ON_HOST on device storage. */
  get buffer(): ArrayBufferLike {
    return hostBuffer(this);
  }

  /** The elements as a typed array over the same memory (no copy). */
  get data(): D extends ElementDType ? TypedArrayOf[D] : never {
    assertLive(this);
    if (isBlockDType(this.dtype)) {
      throw new KernelsError('BLOCK_DTYPE_NO_ELEMENTS', `a ${this.dtype} tensor is block-encoded and has no element view`, {
        value: this.dtype,
        hint: 'decode it first (kernels dequantize), or read its raw bytes()',
      });
    }
    const dtype = this.dtype as ElementDType;
    const size = ELEMENT_DTYPES[dtype].bytes;
    if (this.byteOffset % size !== 0) {
      throw new KernelsError('MISALIGNED_STORAGE', `a ${dtype} view at byte offset ${this.byteOffset} is not ${size}-byte aligned`, {
        value: this.byteOffset,
        hint: 'use copy() to get an aligned tensor',
      });
    }
    return new VIEW[dtype](hostBuffer(this), this.byteOffset, this.byteLength / size) as never;
  }

  /** The raw bytes (no copy). */
  bytes(): Uint8Array {
    assertLive(this);
    return new Uint8Array(hostBuffer(this), this.byteOffset, this.byteLength);
  }

  /** Same storage, another shape with the same number of elements. */
  reshape(shape: readonly number[]): Tensor<D> {
    const known = shape.filter((d) => d !== -1);
    const inferred = shape.length - known.length;
    let resolved = [...shape];
    if (inferred > 1) throw new KernelsError('INVALID_SHAPE', 'reshape accepts at most one -1 dimension', { value: shape });
    if (inferred === 1) {
      const rest = numelOf(known);
      const missing = rest === 0 ? 0 : this.numel / rest;
      resolved = shape.map((d) => (d === -1 ? missing : d));
    }
    if (numelOf(resolved) !== this.numel || (inferred === 1 && !Number.isInteger(resolved[shape.indexOf(-1)]))) {
      throw new KernelsError('SHAPE_MISMATCH', `cannot reshape [${this.shape.join(', ')}] to [${shape.join(', ')}]`, {
        value: shape,
        hint: `the new shape must hold exactly ${this.numel} elements`,
      });
    }
    return this.view(this.dtype, resolved, this.byteOffset);
  }

  /** Rows [start, end) of the outermost dimension, sharing storage. */
  rows(start: number, end: number): Tensor<D> {
    const outer = this.shape[0];
    if (outer === undefined || !Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end < start || end > outer) {
      throw new KernelsError('INDEX_OUT_OF_RANGE', `rows(${start}, ${end}) is outside [0, ${outer ?? 0}]`, {
        value: { start, end, shape: this.shape },
      });
    }
    const rowShape = this.shape.slice(1);
    const rowBytes = byteSizeOf(this.dtype, rowShape);
    return this.view(this.dtype, [end - start, ...rowShape], this.byteOffset + start * rowBytes);
  }

  /** Reinterprets the same bytes as another dtype and shape (sizes must match). */
  view<E extends DType>(dtype: E, shape: readonly number[], byteOffset = this.byteOffset): Tensor<E> {
    const bytes = byteSizeOf(dtype, shape);
    if (byteOffset < this.byteOffset || byteOffset + bytes > this.byteOffset + this.byteLength) {
      throw new KernelsError('TENSOR_OUT_OF_BOUNDS', `a ${dtype} [${shape.join(', ')}] view does not fit inside this tensor's bytes`, {
        value: { byteOffset, bytes, start: this.byteOffset, end: this.byteOffset + this.byteLength },
      });
    }
    return new Tensor(dtype, shape, this.storage.buffer, { byteOffset, device: this.device, ...(this.owner ? { owner: this.owner } : {}) });
  }

  /** A copy in ordinary, aligned JS memory (host storage only: a device tensor comes back with `await toHost(t)`). */
  copy(): Tensor<D> {
    const out = new ArrayBuffer(this.byteLength);
    new Uint8Array(out).set(this.bytes());
    return new Tensor(this.dtype, this.shape, out, { device: this.device });
  }

  /** Frees the storage now when an owner manages it (every view of it becomes empty); else a no-op. */
  dispose(): void {
    if (this.owner && !this.owner.released) this.owner.release();
  }

  toString(): string {
    return `Tensor(${this.dtype}, [${this.shape.join(', ')}], ${this.device})`;
  }
}

// A module function, not a private method: a private member would make the ESM and CJS type
// declarations of Tensor (dist/index.d.ts, dist/index.d.cts) incompatible for TypeScript.
function hostBuffer(t: Tensor): ArrayBufferLike {
  if (t.storage.kind === 'host') return t.storage.buffer;
  throw new KernelsError('TENSOR_NOT_ON_HOST', `${t.toString()} lives in a ${t.storage.buffer.bufferType.name} buffer, not in host memory`, {
    value: t.device,
    hint: 'copy it to the host first (await toHost(tensor)), or run the op through runOp so the backend that owns it runs it',
  });
}

function assertLive(t: Tensor): void {
  if (t.disposed) {
    throw new KernelsError('TENSOR_DISPOSED', `${t.toString()} was disposed`, { hint: 'do not use a tensor after dispose()' });
  }
}
