import { outputF32, requireDType } from './arg-checks.js';
import { type DecodeFp8Options, type EncodeFp8Options, type Fp8Format, FP8_FORMATS, resolveDecodeScale, resolveEncodeFp8 } from './fp8-options.js';
import { callNative, callNativeAsync } from './native-addon.js';
import { allocateNative } from './native-memory.js';
import { Tensor } from './tensor.js';

export type { DecodeFp8Options, EncodeFp8Options, Fp8Format } from './fp8-options.js';

/**
 * f32 -> fp8 bytes. Without options: PyTorch 2.13's `.to(float8)` (round to nearest even; e4m3fn
 * saturates |x| > 448 and ±inf to ±448, e5m2 overflows to ±inf; NaN -> NaN byte). With `scale`: comfy-kitchen `quantize_per_tensor_fp8` (x * (1/scale), clamp to ±max, cast).
 */
export function encodeFp8<F extends Fp8Format>(x: Tensor, format: F, opts?: EncodeFp8Options): Tensor<F> {
  requireDType(x, ['f32'], 'encodeFp8 input');
  const o = resolveEncodeFp8(format, opts);
  const out = Tensor.zeros(format, x.shape);
  callNative('encodeFp8', (n) => n.encodeFp8(x.bytes(), out.bytes(), x.numel, format, o.scale ?? Number.NaN, o.clamp, o.seed !== undefined, o.seed ?? 0));
  return out;
}

/**
 * `encodeFp8` on a worker thread, so a streamed weight encodes while the model computes; the same
 * bits. The output is native memory (every byte is written), as castAsync's.
 */
export async function encodeFp8Async<F extends Fp8Format>(x: Tensor, format: F, opts?: EncodeFp8Options): Promise<Tensor<F>> {
  requireDType(x, ['f32'], 'encodeFp8 input');
  const o = resolveEncodeFp8(format, opts);
  const out = allocateNative(format, x.shape);
  try {
    await callNativeAsync('encodeFp8', (n) => n.encodeFp8Async(x.bytes(), out.bytes(), x.numel, format, o.scale ?? Number.NaN, o.clamp, o.seed !== undefined, o.seed ?? 0));
  } catch (error) {
    out.dispose();
    throw error;
  }
  return out;
}

/**
 * max |x| of an f32 tensor on a worker thread (the input of a per-tensor fp8 scale): 0 when empty,
 * NaN when any element is NaN, Infinity when one is infinite.
 */
export async function absMaxAsync(x: Tensor): Promise<number> {
  requireDType(x, ['f32'], 'absMax input');
  return callNativeAsync('absMax', (n) => n.absMaxAsync(x.bytes(), x.numel));
}

/** fp8 bytes -> f32 (times `scale` in float32 when given), into `opts.out` when given. */
export function decodeFp8(x: Tensor, opts?: DecodeFp8Options): Tensor<'f32'> {
  requireDType(x, FP8_FORMATS, 'decodeFp8 input');
  const scale = resolveDecodeScale(opts);
  const out = outputF32(opts?.out, x.shape, 'decodeFp8', [x]);
  callNative('decodeFp8', (n) => n.decodeFp8(x.bytes(), out.bytes(), x.numel, x.dtype, scale ?? Number.NaN));
  return out;
}
