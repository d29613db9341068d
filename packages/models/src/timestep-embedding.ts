import { Tensor } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';

/**
 * Sinusoidal features of H3's time embedder for timestep t (= 1 − sigma): freqDim/2 frequencies
 * exp(−ln(10000)·j/half), cos before sin, fp32 like ComfyUI's `TimeEmbedder`. Returns [1, freqDim].
 */
export function timestepFeatures(t: number, freqDim: number): Tensor<'f32'> {
  if (!Number.isFinite(t)) throw new ModelsError('INVALID_ARGUMENT', `timestep must be finite, got ${String(t)}`, { value: t });
  if (!Number.isSafeInteger(freqDim) || freqDim < 2 || freqDim % 2 !== 0) {
    throw new ModelsError('INVALID_ARGUMENT', `freqDim must be a positive even integer, got ${String(freqDim)}`, { value: freqDim });
  }
  const half = freqDim / 2;
  const out = new Float32Array(freqDim);
  const tf = Math.fround(t);
  for (let j = 0; j < half; j++) {
    const freq = Math.fround(Math.exp(Math.fround((-Math.log(10000) * j) / half)));
    const arg = Math.fround(tf * freq);
    out[j] = Math.cos(arg);
    out[half + j] = Math.sin(arg);
  }
  return Tensor.fromArray('f32', [1, freqDim], out);
}
