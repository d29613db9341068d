import { brandInstances } from './brand.js';
import { type DType, byteSizeOf } from './dtype.js';
import { callNative } from './native-addon.js';
import { type StorageOwner, Tensor } from './tensor.js';

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
    callNative('releaseNative', (n) => n.releaseNative(this.buffer));
  }
}

/**
 * A tensor in native, 64-byte aligned memory (uninitialized). `dispose()` detaches and frees it at
 * once; otherwise the GC's finalizer frees it. Counted in `nativeBytes()` while alive.
 */
export function allocateNative<D extends DType>(dtype: D, shape: readonly number[]): Tensor<D> {
  const bytes = byteSizeOf(dtype, shape, 'allocateNative');
  const buffer = callNative('allocateNative', (n) => n.allocateNative(bytes));
  return new Tensor(dtype, shape, buffer, { owner: new NativeStorage(buffer) });
}

/** Bytes of native memory allocated by allocateNative and not yet freed. */
export function nativeBytes(): number {
  return callNative('nativeBytes', (n) => n.nativeBytes());
}
