import { type DType, byteSizeOf } from './dtype.js';
import { NinodesError } from './errors.js';
import { callNative, callNativeAsync } from './native-addon.js';
import { requireDType } from './arg-checks.js';
import { Tensor } from './tensor.js';
import { KernelsError } from './error-codes.js';

/** GGUF block types the kernels can encode (ggml's reference quantizers, byte for byte). */
export const GGUF_QUANTIZE_TARGETS = ['q8_0', 'q4_k'] as const;
export type GgufQuantizeTarget = (typeof GGUF_QUANTIZE_TARGETS)[number];

function plan(x: Tensor, to: GgufQuantizeTarget): { src: Tensor<'f32'>; out: Tensor<GgufQuantizeTarget> } {
  requireDType(x, ['f32'], 'quantizeGguf(x)');
  if (!(GGUF_QUANTIZE_TARGETS as readonly DType[]).includes(to)) {
    throw new KernelsError('UNSUPPORTED_QUANTIZE_TARGET', `quantizeGguf: cannot encode '${String(to)}'`, {
      value: to,
      where: 'quantizeGguf(to)',
      hint: `targets: ${GGUF_QUANTIZE_TARGETS.join(', ')}`,
    });
  }
  // Rows are quantized block by block: the last dimension must hold whole blocks (BLOCK_MISALIGNED).
  byteSizeOf(to, x.shape, 'quantizeGguf(x)');
  return { src: x as Tensor<'f32'>, out: Tensor.zeros(to, x.shape) };
}

/**
 * Encodes an f32 tensor (last dimension a multiple of the block size: 32 for q8_0, 256 for q4_k)
 * into GGUF blocks exactly as ggml's `quantize_row_q8_0_ref` / `quantize_row_q4_K_ref` do. Runs
 * off the JS thread, parallel over blocks; NaN or infinity is NON_FINITE_WEIGHT.
 */
export async function quantizeGguf<T extends GgufQuantizeTarget>(x: Tensor, to: T): Promise<Tensor<T>> {
  const { src, out } = plan(x, to);
  await callNativeAsync('quantizeGguf', (n) => n.ggufQuantizeAsync(to, src.data, out.bytes()));
  return out as Tensor<T>;
}

/** Synchronous `quantizeGguf` (native thread pool, on the calling thread). */
export function quantizeGgufSync<T extends GgufQuantizeTarget>(x: Tensor, to: T): Tensor<T> {
  const { src, out } = plan(x, to);
  callNative('quantizeGguf', (n) => n.ggufQuantize(to, src.data, out.bytes()));
  return out as Tensor<T>;
}
