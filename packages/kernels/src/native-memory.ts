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

// The addon pins native memory an async op reads (native/src/core/memory_pins.h), so release()
// during such an op only detaches the views; the memory is freed when the op settles.
class NativeStorage implements StorageOwner {
  static {
    // A tensor made by the other module build (ESM and CJS) is recognized as native storage too.
    brandInstances(this, 'native-storage');
  }

  #released = false;
  constructor(private readonly buffer: ArrayBuffer) {}
  get released(): boolean {
    return this.#released;
  }
  release(): void {
    if (this.#released) return;
    this.#released = true;
    addon().releaseNative(this.buffer);
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
