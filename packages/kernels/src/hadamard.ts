import { type HadamardOptions, resolveHadamard } from './hadamard-options.js';
import { callNative, callNativeAsync } from './native-addon.js';
import { Tensor } from './tensor.js';

export type { HadamardOptions } from './hadamard-options.js';

/**
 * Normalized Hadamard rotation x·H of each `group`-sized chunk of the last dimension, as an
 * O(n log n) fast transform. Bit-identical for any thread count and SIMD path.
 */
export function hadamardSync(x: Tensor, opts?: HadamardOptions): Tensor<'f32'> {
  const r = resolveHadamard(x, opts);
  const out = (opts?.out as Tensor<'f32'> | undefined) ?? Tensor.zeros('f32', x.shape);
  callNative('hadamard', (n) => n.hadamardSync(x.bytes(), out.bytes(), r.rows, r.cols, r.group, r.order));
  return out;
}

/** hadamardSync off the JS thread. */
export async function hadamard(x: Tensor, opts?: HadamardOptions): Promise<Tensor<'f32'>> {
  const r = resolveHadamard(x, opts);
  const out = (opts?.out as Tensor<'f32'> | undefined) ?? Tensor.zeros('f32', x.shape);
  await callNativeAsync('hadamard', (n) => n.hadamardAsync(x.bytes(), out.bytes(), r.rows, r.cols, r.group, r.order));
  return out;
}
