import { fromNativeError } from './errors.js';
import { type HadamardOptions, resolveHadamard } from './hadamard-options.js';
import { nativeAddon } from './native-addon.js';
import { Tensor } from './tensor.js';

export type { HadamardOptions } from './hadamard-options.js';

type HadamardFn<R> = (src: Uint8Array, dst: Uint8Array, rows: number, cols: number, group: number, order: string) => R;

/**
 * Normalized Hadamard rotation x·H of each `group`-sized chunk of the last dimension, as an
 * O(n log n) fast transform. Bit-identical for any thread count and SIMD path.
 */
export function hadamardSync(x: Tensor, opts?: HadamardOptions): Tensor<'f32'> {
  const r = resolveHadamard(x, opts);
  const out = (opts?.out as Tensor<'f32'> | undefined) ?? Tensor.zeros('f32', x.shape);
  try {
    (nativeAddon().hadamardSync as HadamardFn<void>)(x.bytes(), out.bytes(), r.rows, r.cols, r.group, r.order);
  } catch (error) {
    throw fromNativeError(error, 'hadamard');
  }
  return out;
}

/** hadamardSync off the JS thread. */
export async function hadamard(x: Tensor, opts?: HadamardOptions): Promise<Tensor<'f32'>> {
  const r = resolveHadamard(x, opts);
  const out = (opts?.out as Tensor<'f32'> | undefined) ?? Tensor.zeros('f32', x.shape);
  try {
    await (nativeAddon().hadamardAsync as HadamardFn<Promise<void>>)(x.bytes(), out.bytes(), r.rows, r.cols, r.group, r.order);
  } catch (error) {
    throw fromNativeError(error, 'hadamard');
  }
  return out;
}
