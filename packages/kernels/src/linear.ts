import { checkBias, linearDims } from './linear-checks.js';
import { callNativeAsync } from './native-addon.js';
import type { Tensor } from './tensor.js';
import { outputF32 } from './arg-checks.js';

/**
 * Multiply precision. 'f32': bf16 weights are widened exactly and multiplied in f32 (any CPU).
 * 'bf16': the input is rounded to bf16 (nearest even) and multiplied with bf16 weights on the CPU's
 * bf16 units, accumulating in f32 — PyTorch's bf16 mode; needs `buildInfo().bf16Units`, else
 * BACKEND_UNAVAILABLE (never a silent switch).
 */
export type LinearPrecision = 'f32' | 'bf16';

export interface LinearOptions {
  precision?: LinearPrecision;
  /** Where y goes ([..., N] f32, see outputF32); default a fresh tensor. */
  out?: Tensor<'f32'>;
}

/**
 * y = x·wᵀ + bias through oneDNN's matmul. x [..., K] f32, w [N, K] f32 or bf16, bias [N] ->
 * [..., N] f32. Runs off the JS thread.
 */
export async function linear(x: Tensor, w: Tensor, bias?: Tensor, options: LinearOptions = {}): Promise<Tensor<'f32'>> {
  const d = linearDims(x, w, 'linear', ['f32', 'bf16']);
  checkBias(bias, d.n, 'linear');
  const precision = options.precision ?? 'f32';
  const y = outputF32(options.out, d.outShape, 'linear', [x, w, bias]);
  await callNativeAsync('linear', (n) => n.linear(x.bytes(), w.bytes(), w.dtype === 'bf16', bias?.bytes() ?? null, y.bytes(), d.m, d.k, d.n, precision));
  return y;
}
