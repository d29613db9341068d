import { fromNativeError } from './errors.js';
import { checkBias, linearDims } from './linear-checks.js';
import { nativeAddon } from './native-addon.js';
import { Tensor } from './tensor.js';

type LinearFn = (x: Uint8Array, w: Uint8Array, wIsBf16: boolean, bias: Uint8Array | null, y: Uint8Array, m: number, k: number, n: number) => Promise<void>;

/**
 * y = x·wᵀ + bias through oneDNN's fp32 matmul. x [..., K] f32, w [N, K] f32 or bf16 (widened to
 * f32 exactly), bias [N] -> [..., N]. Runs off the JS thread.
 */
export async function linear(x: Tensor, w: Tensor, bias?: Tensor): Promise<Tensor<'f32'>> {
  const d = linearDims(x, w, 'linear', ['f32', 'bf16']);
  checkBias(bias, d.n, 'linear');
  const y = Tensor.zeros('f32', d.outShape);
  try {
    await (nativeAddon().linear as LinearFn)(x.bytes(), w.bytes(), w.dtype === 'bf16', bias?.bytes() ?? null, y.bytes(), d.m, d.k, d.n);
  } catch (error) {
    throw fromNativeError(error, 'linear');
  }
  return y;
}
