import { brandInstances } from './brand.js';
import { type DType, byteSizeOf } from './dtype.js';
import { fromNativeError } from './errors.js';
import { nativeAddon } from './native-addon.js';
import { type StorageOwner, Tensor } from './tensor.js';

interface NativeMemoryAddon {
  allocateNative(bytes: number): ArrayBuffer;
  releaseNative(buffer: ArrayBuffer): boolean;
  nativeBytes(): number;
}

const addon = (): NativeMemoryAddon => nativeAddon() as unknown as NativeMemoryAddon;

class NativeStorage implements StorageOwner {
  static {
    // withPinned pins a tensor made by the other module build (ESM and CJS) too.
    brandInstances(this, 'native-storage');
  }

  #released = false;
  #pins = 0;
  #freePending = false;
  constructor(private readonly buffer: ArrayBuffer) {}
  get released(): boolean {
    return this.#released;
  }
  /** Views read as disposed at once; the memory itself is freed when no async op still uses it. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    if (this.#pins > 0) this.#freePending = true;
    else addon().releaseNative(this.buffer);
  }
  pin(): void {
    this.#pins++;
  }
  unpin(): void {
    this.#pins--;
    if (this.#pins === 0 && this.#freePending) {
      this.#freePending = false;
      addon().releaseNative(this.buffer);
    }
  }
}

/**
 * Runs an async native op while keeping the native memory of `tensors` alive: a dispose() during
 * the op takes effect when it settles, so the op never touches freed memory.
 */
export async function withPinned<T>(tensors: readonly (Tensor | undefined)[], op: () => Promise<T>): Promise<T> {
  const owners = tensors.map((t) => t?.owner).filter((o): o is NativeStorage => o instanceof NativeStorage);
  for (const o of owners) o.pin();
  try {
    return await op();
  } finally {
    for (const o of owners) o.unpin();
  }
}

/**
 * A tensor in native, 64-byte aligned memory (uninitialized). `dispose()` detaches and frees it at
 * once; otherwise the GC's finalizer frees it. Counted in `nativeBytes()` while alive.
 */
export function allocateNative<D extends DType>(dtype: D, shape: readonly number[]): Tensor<D> {
  const bytes = byteSizeOf(dtype, shape, 'allocateNative');
  let buffer: ArrayBuffer;
  try {
    buffer = addon().allocateNative(bytes);
  } catch (error) {
    throw fromNativeError(error, 'allocateNative');
  }
  return new Tensor(dtype, shape, buffer, { owner: new NativeStorage(buffer) });
}

/** Bytes of native memory allocated by allocateNative and not yet freed. */
export function nativeBytes(): number {
  return addon().nativeBytes();
}
