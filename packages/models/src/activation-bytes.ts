import { ModelsError } from './error-codes.js';
import { type H3Config, H3_PATCH } from './h3-config.js';

/** The text and audio streams that join the video tokens in every block (forwardStreams). */
export interface H3StreamSizes {
  /** Text states L of `context` [1, L, W]. */
  readonly textTokens?: number;
  /** Audio latent frames T of `audio` [1, C, 2, T] (one token each). */
  readonly audioFrames?: number;
}

export interface H3ActivationBytes {
  /** Tokens of the joint sequence: video S = T · H/2 · W/2, plus the text and audio streams' tokens. */
  readonly tokens: number;
  /** The f32 activations alive at once in one block's forward (the MLP half is the peak), plus the latent. */
  readonly peakBytes: number;
  /** The largest single activation, `mlp.fc1`'s output [S, 2F] in f32. */
  readonly largestTensorBytes: number;
}

/**
 * An upper estimate of what a forward at this latent size holds, before anything is allocated, so
 * a size that cannot fit is refused up front instead of failing deep inside with a RangeError.
 * Attention is tiled (O(S·D)), so everything is linear in S: the residual stream and its norms
 * (about 6 × [S, hidden]), q/k/v and the attention output (4 × [S, heads·headDim]), fc1's output
 * [S, 2F] and its SwiGLU [S, F], and the latent with the sampler's copy and velocity. Text and
 * audio tokens run the same blocks beside the video (each stream's own projections are no wider),
 * so they count as video tokens do.
 */
export function h3ActivationBytes(config: H3Config, frames: number, height: number, width: number, streams: H3StreamSizes = {}): H3ActivationBytes {
  const extra = { textTokens: streams.textTokens ?? 0, audioFrames: streams.audioFrames ?? 0 };
  for (const [name, v, min] of [['frames', frames, 1], ['height', height, 1], ['width', width, 1], ['textTokens', extra.textTokens, 0], ['audioFrames', extra.audioFrames, 0]] as const) {
    if (!Number.isSafeInteger(v) || v < min) throw new ModelsError('INVALID_ARGUMENT', `${name} must be ${min === 1 ? 'a positive' : 'a non-negative'} integer, got ${String(v)}`, { value: v, where: name });
  }
  const tokens = (frames / H3_PATCH[0]) * Math.ceil(height / H3_PATCH[1]) * Math.ceil(width / H3_PATCH[2]) + extra.textTokens + extra.audioFrames;
  const inner = config.heads * config.headDim;
  const perToken = 6 * config.hidden + 4 * inner + 3 * config.ffn;
  const latent = config.latentChannels * frames * height * width;
  return { tokens, peakBytes: 4 * (tokens * perToken + 3 * latent), largestTensorBytes: 4 * tokens * 2 * config.ffn };
}
