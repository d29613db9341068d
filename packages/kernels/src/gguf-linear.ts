import { matrixDims, outputF32, requireDType } from './arg-checks.js';
import { BLOCK_DTYPES } from './dtype.js';
import { KernelsError } from './error-codes.js';
import { checkBias } from './linear-checks.js';
import { callNative, callNativeAsync } from './native-addon.js';
import type { Tensor } from './tensor.js';

/** The GGUF block types `ggufLinear` multiplies on their blocks (what city96 and stable-diffusion.cpp ship). */
export const GGUF_LINEAR_DTYPES = ['q8_0', 'q4_0', 'q4_k', 'q5_k', 'q6_k'] as const;
export type GgufLinearDType = (typeof GGUF_LINEAR_DTYPES)[number];

/** Which kernel runs it: 'vnni' (AVX512-VNNI), 'avx2', or 'scalar'; all give the same bits. */
export type GgufLinearKernel = 'vnni' | 'avx2' | 'scalar';

export interface GgufLinearOptions {
  /** Where y goes ([..., N] f32); default a fresh tensor. */
  out?: Tensor<'f32'>;
  /** Forces a kernel (tests, benchmarks); 'auto' (default) takes the fastest this CPU runs. */
  kernel?: GgufLinearKernel | 'auto';
}

/**
 * Bytes of a [N, K] weight in `blocks` as stored: whole blocks per row (a K off the blocks, which
 * ggufLinear refuses, counts its last block whole). What a backend holds for a 'gguf' prepared weight.
 */
export function ggufWeightBytes(blocks: GgufLinearDType, n: number, k: number): number {
  const { blockElements, blockBytes } = BLOCK_DTYPES[blocks];
  return n * Math.ceil(k / blockElements) * blockBytes;
}

export function isGgufLinearDType(dtype: string): dtype is GgufLinearDType {
  return (GGUF_LINEAR_DTYPES as readonly string[]).includes(dtype);
}

/** The kernel `ggufLinear` runs by default on this CPU (follows NINODES_SIMD / setSimd). */
export function ggufLinearKernel(): GgufLinearKernel {
  return callNative('ggufLinearKernel', (n) => n.ggufLinearKernel());
}

/**
 * y = x·wᵀ + bias with w [N, K] in GGUF blocks, computed on the blocks as ggml's CPU backend does:
 * each input row quantized to int8 per block (32 values for q8_0 / q4_0 weights, 256 for the
 * k-quants; scale absmax / 127), integer dot products per weight sub-block, block scales applied
 * in f32 after. The weight stays as stored; no f32 copy of it is made. Against the f32 product with
 * the dequantized weight the result differs by the input's quantization only: at most
 * Σ_blocks (absmax_block / 254) · Σ_block |w| per output, plus f32 rounding (the mins of q4_k /
 * q5_k multiply the unquantized input sums). Bit-identical for any kernel and thread count.
 */
export async function ggufLinear(x: Tensor, w: Tensor, bias?: Tensor, options: GgufLinearOptions = {}): Promise<Tensor<'f32'>> {
  requireDType(x, ['f32'], 'ggufLinear input');
  requireDType(w, GGUF_LINEAR_DTYPES, 'ggufLinear weight');
  const [m, k] = matrixDims(x, 'ggufLinear input', true);
  const [n, wk] = matrixDims(w, 'ggufLinear weight');
  if (wk !== k) {
    throw new KernelsError('SHAPE_MISMATCH', `ggufLinear: input has K = ${k} but the weight [${w.shape.join(', ')}] has K = ${wk}`, {
      value: { x: x.shape, w: w.shape },
      where: 'ggufLinear',
      hint: 'weights are [N, K] (PyTorch layout), inputs [..., K]',
    });
  }
  const block = BLOCK_DTYPES[w.dtype as GgufLinearDType].blockElements;
  if (k % block !== 0) {
    throw new KernelsError('BLOCK_MISALIGNED', `ggufLinear: K = ${k} is not a whole number of ${w.dtype}'s ${block}-value blocks`, { value: k, where: 'ggufLinear weight' });
  }
  checkBias(bias, n, 'ggufLinear');
  const y = outputF32(options.out, [...x.shape.slice(0, -1), n], 'ggufLinear', [x, w, bias]);
  const kernel = options.kernel ?? 'auto';
  await callNativeAsync('ggufLinear', (a) => a.ggufLinear(w.dtype, x.bytes(), w.bytes(), bias?.bytes() ?? null, y.bytes(), m, k, n, kernel));
  return y;
}
