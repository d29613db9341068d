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
export function packAudio(audio: Tensor<'f32'>, channels: number, into?: Tensor<'f32'>): Tensor<'f32'> {
  const [b, c, ch, t] = audio.shape as [number, number, number, number];
  if (audio.rank !== 4 || b !== 1 || c !== channels || ch !== H3_AUDIO_STEREO || !(t >= 1)) {
    throw new ModelsError('SHAPE_MISMATCH', `audio latent must be [1, ${channels}, ${H3_AUDIO_STEREO}, T], got [${audio.shape.join(', ')}]`, {
      value: audio.shape,
      where: 'audio',
      hint: 'H3 audio latents are stereo, one row per frame and channel',
    });
  }
  const src = audio.data;
  const dst = into ?? Tensor.zeros('f32', [ch * t, c]);
  if (dst.numel !== ch * t * c) throw new ModelsError('SHAPE_MISMATCH', `packAudio: into holds ${dst.numel} values, needs ${ch * t * c}`, { value: dst.shape, where: 'packAudio(into)' });
  const out = dst.data;
  for (let s = 0; s < ch; s++) for (let f = 0; f < t; f++) for (let k = 0; k < c; k++) out[(s * t + f) * c + k] = src[(k * ch + s) * t + f] as number;
  return dst.reshape([ch * t, c]);
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

/** Python's round(): to the nearest integer, halves to even (ComfyUI rounds the head interval bounds with it). */
function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x - Math.trunc(x)) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** torch.linspace(from, to, steps) in float64: the first half counts up from `from`, the rest down from `to`. */
function linspace(from: number, to: number, steps: number): number[] {
  const step = (to - from) / (steps - 1);
  const half = Math.floor(steps / 2);
  return Array.from({ length: steps }, (_, i) => (i < half ? from + step * i : to - step * (steps - i - 1)));
}

/**
 * Weights of the extra heads 1 … n−1 of a PDD head bank for the step from the video sigma `sigma`
 * to the sampler's next video sigma `sigmaNext`, as ComfyUI's `comfy/ldm/minimax/model.py`
 * (`FinalLayer.forward`, `_pdd_head`; Comfy-Org/ComfyUI PR #15908) computes them:
 * - the bank splits the unshifted base grid b ∈ [1, 0] into n equal intervals; the step covers
 *   intervals [start, stop) with start = round((1 − b(sigma))·n), stop = round((1 − b(sigmaNext))·n)
 *   (b = `timeShiftSigma(·, videoShift, 1)`, Python's half-to-even round), start ≤ n − 1,
 *   stop ≥ start + 1 — the same intervals for both streams, from the video sigmas;
 * - interval j weighs dt_j / Σ dt, dt_j the growth of 1 − sigma_f over it on the stream's own shifted
 *   grid (shift `flowShift`: 12 for video, 3 for audio);
 * - head 0 is a whole head, head k ≥ 1 an offset added with interval k's weight; interval 0 has no
 *   offset, so its weight is dropped (head 0 counts once, whatever the step).
 * Without a next sigma (ComfyUI refuses: it needs the schedule) head 0 alone: all zeros.
 */
export function pddHeadWeights(heads: number, sigma: number, sigmaNext: number | undefined, videoShift: number, flowShift: number): number[] {
  const w = new Array<number>(Math.max(heads - 1, 0)).fill(0);
  if (heads <= 1 || sigmaNext === undefined) return w;
  const bound = (s: number): number => roundHalfEven((1 - timeShiftSigma(s, videoShift, 1)) * heads);
  const start = Math.min(bound(sigma), heads - 1);
  const stop = Math.max(bound(sigmaNext), start + 1);
  const f = linspace(1, 0, heads + 1).map((g) => 1 - (flowShift * g) / (1 + (flowShift - 1) * g));
  const dt: number[] = [];
  for (let j = start; j < stop; j++) dt.push((f[j + 1] as number) - (f[j] as number));
  const total = dt.reduce((a, b) => a + b, 0);
  for (let j = Math.max(start, 1); j < stop; j++) w[j - 1] = (dt[j - start] as number) / total;
  return w;
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
