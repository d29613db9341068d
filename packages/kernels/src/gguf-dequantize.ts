import { byteSizeOf, isBlockDType } from './dtype.js';
import { KernelsError } from './error-codes.js';
import { DEQUANTIZE_SOURCES, type DequantizeSource } from './gguf-dtypes.js';
import { callNative, callNativeAsync } from './native-addon.js';
import { requireDType } from './arg-checks.js';
import { Tensor } from './tensor.js';

export type DequantizeTarget = 'f32' | 'bf16';
export type DequantizeResult<T extends DequantizeTarget> = T extends 'bf16' ? Tensor<'bf16'> : Tensor<'f32'>;

export interface DequantizeOptions {
  /**
   * Decode into this tensor instead of a new one (same element count, dtype = the target): lets a
   * weight cache reuse pooled or native memory. It is returned.
   */
  out?: Tensor;
}

function plan(
  x: Tensor,
  to: DequantizeTarget,
  opts: DequantizeOptions | undefined,
): { src: Tensor<DequantizeSource>; out: Tensor<'f32'> | Tensor<'bf16'> } {
  requireDType(x, DEQUANTIZE_SOURCES, 'dequantize(x)');
  const src = x;
  if (to !== 'f32' && to !== 'bf16') {
    throw new KernelsError('INVALID_ARGUMENT', `dequantize: target dtype must be 'f32' or 'bf16', got '${String(to)}'`, {
      value: to,
      where: 'dequantize(to)',
    });
  }
  if (isBlockDType(src.dtype)) byteSizeOf(src.dtype, src.shape, 'dequantize(x)');
  const out = opts?.out;
  if (out === undefined) return { src, out: to === 'f32' ? Tensor.zeros('f32', src.shape) : Tensor.zeros('bf16', src.shape) };
  requireDType(out, [to], 'dequantize(opts.out)');
  if (out.numel !== src.numel) {
    throw new KernelsError('SHAPE_MISMATCH', `dequantize: opts.out holds ${out.numel} values, the source ${src.numel}`, {
      value: { out: out.shape, x: src.shape },
      where: 'dequantize(opts.out)',
    });
  }
  return { src, out: out as Tensor<'f32'> | Tensor<'bf16'> };
}

/**
 * Decodes a GGUF block tensor (or f32/f16/bf16) to f32 or bf16 in ggml's float32 operation order,
 * bit-identical to llama.cpp / gguf-py. Runs off the JS thread, parallel over blocks.
 */
export async function dequantize<T extends DequantizeTarget = 'f32'>(x: Tensor, to?: T, opts?: DequantizeOptions): Promise<DequantizeResult<T>> {
  const { src, out } = plan(x, to ?? 'f32', opts);
  await callNativeAsync('dequantize', (n) => n.ggufDequantizeAsync(src.dtype, src.bytes(), out.data));
  return out as DequantizeResult<T>;
}

/** Synchronous `dequantize` (native thread pool, on the calling thread). */
export function dequantizeSync<T extends DequantizeTarget = 'f32'>(x: Tensor, to?: T, opts?: DequantizeOptions): DequantizeResult<T> {
  const { src, out } = plan(x, to ?? 'f32', opts);
  callNative('dequantize', (n) => n.ggufDequantize(src.dtype, src.bytes(), out.data));
  return out as DequantizeResult<T>;
}
