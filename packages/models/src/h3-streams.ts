import { Tensor } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';
import { H3_AUDIO_STEREO } from './h3-config.js';

/**
 * The sigma of a schedule of shift `to` at the same base-grid point as `sigma` on a schedule of
 * shift `from` (invert sigma = s·b / (1 + (s − 1)·b) to b, re-apply with the other shift). This is
 * how H3 derives the audio stream's sigma (shift 3) from the video sigma the sampler runs (shift 12).
 */
export function timeShiftSigma(sigma: number, from: number, to: number): number {
  const base = sigma / (from + sigma * (1 - from));
  return (to * base) / (1 + (to - 1) * base);
}

/** Audio latent [1, C, 2, T] -> rows [2·T, C], channel-major (stereo channel 0's frames, then 1's). */
export function packAudio(audio: Tensor<'f32'>, channels: number): Tensor<'f32'> {
  const [b, c, ch, t] = audio.shape as [number, number, number, number];
  if (audio.rank !== 4 || b !== 1 || c !== channels || ch !== H3_AUDIO_STEREO || !(t >= 1)) {
    throw new ModelsError('SHAPE_MISMATCH', `audio latent must be [1, ${channels}, ${H3_AUDIO_STEREO}, T], got [${audio.shape.join(', ')}]`, {
      value: audio.shape,
      where: 'audio',
      hint: 'H3 audio latents are stereo, one row per frame and channel',
    });
  }
  const src = audio.data;
  const out = new Float32Array(ch * t * c);
  for (let s = 0; s < ch; s++) for (let f = 0; f < t; f++) for (let k = 0; k < c; k++) out[(s * t + f) * c + k] = src[(k * ch + s) * t + f] as number;
  return Tensor.fromArray('f32', [ch * t, c], out);
}

/** Rows [2·T, C] -> audio latent [1, C, 2, T]; `negate` flips the sign (ComfyUI returns −head). */
export function unpackAudio(rows: Tensor<'f32'>, negate = false): Tensor<'f32'> {
  const [n, c] = rows.shape as [number, number];
  const ch = H3_AUDIO_STEREO;
  const t = n / ch;
  const src = rows.data;
  const out = new Float32Array(n * c);
  const sign = negate ? -1 : 1;
  for (let s = 0; s < ch; s++) for (let f = 0; f < t; f++) for (let k = 0; k < c; k++) out[(k * ch + s) * t + f] = sign * (src[(s * t + f) * c + k] as number);
  return Tensor.fromArray('f32', [1, c, ch, t], out);
}

/**
 * The fp32 time-embedding rows of the curve form: for each t, the two rows of `table` [G, D] around
 * clamp(t, 0, 1)·(G − 1) blended by the fractional part (torch.lerp's two-sided formula, so the
 * rows match PyTorch's bit for bit). Returns [M, D].
 */
export function curveTimeEmbedding(table: Tensor<'f32'>, ts: readonly number[]): Tensor<'f32'> {
  const [g, d] = table.shape as [number, number];
  const src = table.data;
  const out = new Float32Array(ts.length * d);
  ts.forEach((t, m) => {
    const pos = Math.fround(Math.min(1, Math.max(0, Math.fround(t))) * (g - 1));
    const i0 = Math.min(Math.floor(pos), g - 2);
    const w = Math.fround(pos - i0);
    for (let j = 0; j < d; j++) {
      const a = src[i0 * d + j] as number;
      const b = src[(i0 + 1) * d + j] as number;
      const diff = Math.fround(b - a);
      out[m * d + j] = w < 0.5 ? Math.fround(a + Math.fround(w * diff)) : Math.fround(b - Math.fround(diff * Math.fround(1 - w)));
    }
  });
  return Tensor.fromArray('f32', [ts.length, d], out);
}

/**
 * Weights of the extra heads 1 … n−1 of a PDD head bank for a step from `sigma` to `sigmaNext`
 * (each stream's own sigmas). Our reading of the rule: head k owns the sigma interval
 * [(k−1)/(n−1), k/(n−1)]; the heads whose interval the step spans whole are averaged, each weighted
 * by its interval's dt, and added to head 0. A step that spans no whole interval (any step of an
 * ordinary schedule finer than n−1 steps) uses head 0 alone — the one case the float64 fixture
 * pins down. Returns all zeros without a next sigma.
 */
export function pddHeadWeights(heads: number, sigma: number, sigmaNext: number | undefined): number[] {
  const k = heads - 1;
  const w = new Array<number>(k).fill(0);
  if (k <= 0 || sigmaNext === undefined) return w;
  const hi = Math.max(sigma, sigmaNext);
  const lo = Math.min(sigma, sigmaNext);
  let total = 0;
  for (let i = 0; i < k; i++) {
    const a = i / k;
    const b = (i + 1) / k;
    if (lo <= a && b <= hi) {
      w[i] = b - a;
      total += b - a;
    }
  }
  return total > 0 ? w.map((x) => x / total) : w;
}

/** Head 0 of a [S, n·C] head-bank output plus the weighted extra heads: [S, C]. */
export function combinePddHeads(out: Tensor<'f32'>, channels: number, weights: readonly number[]): Tensor<'f32'> {
  const [s, width] = out.shape as [number, number];
  const n = width / channels;
  if (n === 1) return out;
  const src = out.data;
  const res = new Float32Array(s * channels);
  for (let r = 0; r < s; r++) {
    const base = r * width;
    for (let c = 0; c < channels; c++) {
      let v = src[base + c] as number;
      for (let h = 1; h < n; h++) {
        const wt = weights[h - 1] as number;
        if (wt !== 0) v += wt * (src[base + h * channels + c] as number);
      }
      res[r * channels + c] = v;
    }
  }
  return Tensor.fromArray('f32', [s, channels], res);
}

/** A contiguous run of rows of the packed sequence and the adaLN row (timestep row · 3 + modality) it reads. */
export interface ModSegment {
  readonly start: number;
  readonly stop: number;
  readonly row: number;
}

/** Modality tags of H3's adaLN rows: video 0, text 1, audio 2 (three rows per timestep). */
export const H3_MODALITY = { video: 0, text: 1, audio: 2 } as const;
