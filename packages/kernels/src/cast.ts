import { requireDType } from './arg-checks.js';
import { type CastTarget, CAST_SOURCES, requireCastTarget } from './reference/cast.js';
import { callNative, callNativeAsync } from './native-addon.js';
import { allocateNative } from './native-memory.js';
import { Tensor } from './tensor.js';

export type { CastSource, CastTarget } from './reference/cast.js';

/**
 * Converts to f32, f16 or bf16: round to nearest even, NaN and infinity kept (PyTorch's bits); also
 * decodes fp8 (unscaled) and widens i8/u8/i32 to float. Synchronous; runs on the native pool.
 */
export function cast<T extends CastTarget>(x: Tensor, to: T): Tensor<T> {
  requireDType(x, CAST_SOURCES, 'cast input');
  requireCastTarget(to);
  const out = Tensor.zeros(to, x.shape);
  callNative('cast', (n) => n.castElements(x.bytes(), x.dtype, out.bytes(), to, x.numel));
  return out;
}

/**
 * `cast` on a worker thread, so a large conversion leaves the JS thread free; the same bits. The
 * output is native memory (every element is written): a zeroed ArrayBuffer of a weight's size costs
 * the JS thread about as much as the cast itself (glibc zeroes heap blocks below its mmap threshold).
 */
export async function castAsync<T extends CastTarget>(x: Tensor, to: T): Promise<Tensor<T>> {
  requireDType(x, CAST_SOURCES, 'cast input');
  requireCastTarget(to);
  const out = allocateNative(to, x.shape);
  await callNativeAsync('cast', (n) => n.castElementsAsync(x.bytes(), x.dtype, out.bytes(), to, x.numel));
  return out;
}
