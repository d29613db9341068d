import { Tensor } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';

/**
 * Sinusoidal features of H3's time embedder for timestep t (= 1 − sigma): freqDim/2 frequencies
 * exp(−ln(10000)·j/half), cos before sin, fp32 like ComfyUI's `TimeEmbedder`. Returns [1, freqDim]
 * (`out` when given: a reused [1, freqDim] buffer).
 */
export function timestepFeatures(t: number, freqDim: number, out?: Tensor<'f32'>): Tensor<'f32'> {
  if (!Number.isFinite(t)) throw new ModelsError('INVALID_ARGUMENT', `timestep must be finite, got ${String(t)}`, { value: t });
  if (!Number.isSafeInteger(freqDim) || freqDim < 2 || freqDim % 2 !== 0) {
    throw new ModelsError('INVALID_ARGUMENT', `freqDim must be a positive even integer, got ${String(freqDim)}`, { value: freqDim });
  }
  const half = freqDim / 2;
  if (out !== undefined && (out.dtype !== 'f32' || out.numel !== freqDim)) {
    throw new ModelsError('SHAPE_MISMATCH', `timestepFeatures: out must be f32 [1, ${freqDim}], got ${out.dtype} [${out.shape.join(', ')}]`, { value: out.shape, where: 'timestepFeatures(out)' });
  }
  const f = out === undefined ? new Float32Array(freqDim) : out.data;
  const tf = Math.fround(t);
  for (let j = 0; j < half; j++) {
    const freq = Math.fround(Math.exp(Math.fround((-Math.log(10000) * j) / half)));
    const arg = Math.fround(tf * freq);
    f[j] = Math.cos(arg);
    f[half + j] = Math.sin(arg);
  }
  return out ?? Tensor.fromArray('f32', [1, freqDim], f);
}
