// Where a backend keeps tensors, in the shape of ggml's buffer types (ggml-backend.h:
// ggml_backend_buffer_type → buffer): a buffer type says how many bytes a tensor takes in it and
// allocates buffers; a device buffer is memory the JS thread cannot read, reached only by explicit,
// asynchronous copies. Host buffer types hand out ordinary ArrayBuffers instead.
import type { DType } from '../dtype.js';

export interface BufferType {
  /** 'cpu', 'reference', 'vulkan:0 device', ...: names it in errors. */
  readonly name: string;
  /** The device id a tensor in this buffer type reports as `tensor.device`. */
  readonly device: string;
  /** True when `allocate` returns host memory (an ArrayBuffer) that `.data` can view. */
  readonly isHost: boolean;
  /** Byte alignment of every allocation. */
  readonly alignment: number;
  /** Bytes a tensor of `dtype` × `shape` takes in this buffer type (ggml's get_alloc_size: may pad). */
  allocSize(dtype: DType, shape: readonly number[]): number;
  /** A buffer of at least `byteLength` bytes: an ArrayBuffer for a host type, a DeviceBuffer otherwise. */
  allocate(byteLength: number): ArrayBufferLike | DeviceBuffer;
}

/**
 * Memory a backend owns outside the JS heap's reach. A Tensor over it has device storage: no `.data`;
 * `write`/`read` are the only way bytes cross. `release()` frees it (every tensor over it reads as
 * disposed).
 */
export interface DeviceBuffer {
  readonly bufferType: BufferType;
  readonly byteLength: number;
  /** Frees the device memory now (a Tensor's StorageOwner: its tensors then read as disposed). */
  release(): void;
  readonly released: boolean;
  /** Copies `bytes` into the buffer at `byteOffset`; resolves once the device holds them. */
  write(byteOffset: number, bytes: Uint8Array): Promise<void>;
  /** Copies `byteLength` bytes from `byteOffset` into fresh host memory. */
  read(byteOffset: number, byteLength: number): Promise<Uint8Array>;
}

/** A DeviceBuffer (not host memory): what Tensor's constructor tells the two storages apart by. */
export function isDeviceBuffer(b: unknown): b is DeviceBuffer {
  return typeof b === 'object' && b !== null && 'bufferType' in b && typeof (b as DeviceBuffer).read === 'function' && typeof (b as DeviceBuffer).write === 'function';
}
