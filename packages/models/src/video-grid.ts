import { Tensor } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';

/** H3 stretches time: a latent frame stands for 1 pixel frame first, 4 after, in cycles of 5, ×5/3. */
const FRAME_SPANS = [1, 4, 4, 4, 4] as const;
const FRAME_RESCALE = 5 / 3;

/**
 * One spatial axis of H3's area-normalized grid: `dim / patch` points starting at (1 − r)/2 with step
 * r/n (r = dim / sqrt(H·W)), scaled by 32, so a square frame spans [0, 32) on both axes whatever its size.
 */
function sqrtAreaAxis(dim: number, patch: number, sqrtArea: number): Float64Array {
  const ratio = dim / sqrtArea;
  const n = Math.floor(dim / patch);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * (ratio / n) + (1 - ratio) / 2) * 32;
  return out;
}

/**
 * Positions (t, h, w) of the video tokens of a latent with `frames` × `height` × `width` (after padding
 * to even height/width), one row per 1×2×2 patch in frame-major, then row, then column order, as
 * ComfyUI's H3 `PackedLayout` lays out a video-only sequence (no text or audio rows before it).
 */
export function h3VideoPositions(frames: number, height: number, width: number, origin = 0): Float64Array {
  for (const [name, v] of [['frames', frames], ['height', height], ['width', width]] as const) {
    if (!Number.isSafeInteger(v) || v < 1) throw new ModelsError('INVALID_ARGUMENT', `${name} must be a positive integer, got ${String(v)}`, { value: v, where: name });
  }
  if (height % 2 !== 0 || width % 2 !== 0) {
    throw new ModelsError('INVALID_ARGUMENT', `height ${height} and width ${width} must be even (pad the latent first)`, { value: { height, width }, hint: 'pad to the 2×2 patch' });
  }
  const sqrtArea = Math.sqrt(height * width);
  const hAxis = sqrtAreaAxis(height, 2, sqrtArea);
  const wAxis = sqrtAreaAxis(width, 2, sqrtArea);
  const perFrame = hAxis.length * wAxis.length;
  const out = new Float64Array(frames * perFrame * 3);
  let t = origin;
  let r = 0;
  for (let f = 0; f < frames; f++) {
    for (const h of hAxis) {
      for (const w of wAxis) {
        out[r++] = t;
        out[r++] = h;
        out[r++] = w;
      }
    }
    t += FRAME_RESCALE * (FRAME_SPANS[f % 5] as number);
  }
  return out;
}

/**
 * Positions of a packed [text | audio | video] sequence (no keyframes or references): text row i at
 * (i, 0, 0); the stereo audio rows channel-major at t = L + frame, h = 0, w pinned to the first
 * (channel 0) or last (channel 1) point of the video's width axis; the video from t = L on. With
 * no text and no audio this is `h3VideoPositions` exactly.
 */
export function h3PackedPositions(textLen: number, audioFrames: number, frames: number, height: number, width: number): Float64Array {
  const video = h3VideoPositions(frames, height, width, textLen);
  if (textLen === 0 && audioFrames === 0) return video;
  const wAxis = sqrtAreaAxis(width, 2, Math.sqrt(height * width));
  const out = new Float64Array((textLen + 2 * audioFrames) * 3 + video.length);
  for (let i = 0; i < textLen; i++) out[i * 3] = i;
  let r = textLen * 3;
  for (let ch = 0; ch < 2; ch++) {
    for (let f = 0; f < audioFrames; f++) {
      out[r++] = textLen + f;
      out[r++] = 0;
      out[r++] = ch === 0 ? (wAxis[0] as number) : (wAxis[wAxis.length - 1] as number);
    }
  }
  out.set(video, r);
  return out;
}

/**
 * RoPE angles [S, 6L] for positions [S, 3] and `rope.inv_freq` [L]: per token, (t, h, w) each times
 * inv_freq, concatenated, then the whole half repeated. Rounded like ComfyUI (positions cast to fp32,
 * product in fp32), so the model sees the same angles PyTorch would.
 */
export function h3RopeAngles(positions: Float64Array, invFreq: Float32Array): Tensor<'f32'> {
  if (positions.length % 3 !== 0) {
    throw new ModelsError('SHAPE_MISMATCH', `positions must be [S, 3], got ${positions.length} values`, { value: positions.length });
  }
  const s = positions.length / 3;
  const L = invFreq.length;
  const rot = 6 * L;
  const out = new Float32Array(s * rot);
  for (let i = 0; i < s; i++) {
    for (let a = 0; a < 3; a++) {
      const p = Math.fround(positions[i * 3 + a] as number);
      for (let l = 0; l < L; l++) {
        const v = Math.fround(p * (invFreq[l] as number));
        out[i * rot + a * L + l] = v;
        out[i * rot + 3 * L + a * L + l] = v;
      }
    }
  }
  return Tensor.fromArray('f32', [s, rot], out);
}
