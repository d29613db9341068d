import { ModelsError } from './error-codes.js';

/**
 * Shape of a MiniMax-H3 DiT (video path). Field names follow the checkpoint's geometry, not ComfyUI's
 * constructor, so a config can be derived from tensor shapes alone (see `detectArchitecture`).
 */
export interface H3Config {
  readonly layers: number;
  readonly hidden: number;
  readonly heads: number;
  readonly headDim: number;
  /** MLP width F: `mlp.fc1` is [2F, hidden] ([gate | up]), `mlp.fc2` is [hidden, F]. */
  readonly ffn: number;
  /** Width of the time embedding fed to every adaLN projection (`time_embed_dim`). */
  readonly tDim: number;
  /** Hidden width of the time embedder MLP (`time_embed_hidden_size`). */
  readonly timeHidden: number;
  /** Sinusoidal frequencies of the timestep (`timestep_input_dim`, 256 in H3). */
  readonly freqDim: number;
  /** Length L of `rope.inv_freq`; RoPE covers the first 6·L dims of each head (3 axes, halves duplicated). */
  readonly ropeLen: number;
  /** Latent channels of the video stream (24 in H3). */
  readonly latentChannels: number;
  readonly eps: number;
  readonly qkEps: number;
  readonly finalEps: number;
  /**
   * Rows of `adaln_t_table` when the checkpoint is the pruned ("curve") form: the time embedder is
   * replaced by that table (t_emb interpolated between two rows), tDim is its width (8 in real
   * files) and every adaLN linear takes t_emb without SiLU. Absent: the full form.
   */
  readonly curveGrid?: number;
  /** Output heads of the final layer (PDD head bank); absent or 1: one head per stream. */
  readonly pddHeads?: number;
  /** Channels of the stereo audio latent [1, C, 2, T] (32 in H3); absent: no audio stream. */
  readonly audioChannels?: number;
  /** Width of the text encoder states `condition_proj` takes (5120 in H3); absent: no text stream. */
  readonly textDim?: number;
  /** Blocks of the token refiner after `condition_proj` (2 in H3). */
  readonly refinerLayers?: number;
}

/** The video and audio flow shifts H3 samples with (ComfyUI's sigma_shift_video / sigma_shift_audio). */
export const H3_SIGMA_SHIFTS = { video: 12, audio: 3 } as const;

/** The stereo audio latent has two channels of T frames each; their rows pack channel-major. */
export const H3_AUDIO_STEREO = 2;

/** Output heads of each stream (1 unless the final layer holds a PDD head bank). */
export function pddHeads(config: Pick<H3Config, 'pddHeads'>): number {
  return config.pddHeads ?? 1;
}

/** H3's own defaults for everything a checkpoint's shapes do not pin down. */
export const H3_DEFAULTS = {
  freqDim: 256,
  latentChannels: 24,
  eps: 1e-5,
  qkEps: 1e-5,
  finalEps: 1e-5,
} as const;

/** The video patch is 1×2×2 (t, h, w). */
export const H3_PATCH = [1, 2, 2] as const;

/** Rows of each patch: channels × 1 × 2 × 2. */
export function patchDim(config: Pick<H3Config, 'latentChannels'>): number {
  return config.latentChannels * H3_PATCH[0] * H3_PATCH[1] * H3_PATCH[2];
}

/** Dims of each head that RoPE rotates: 3 axes × 2 halves × L. */
export function rotDim(config: Pick<H3Config, 'ropeLen'>): number {
  return 6 * config.ropeLen;
}

/** Throws INVALID_CONFIG when a config cannot describe a working H3 model. */
export function validateH3Config(config: H3Config, where = 'H3 config'): H3Config {
  const positive: ('layers' | 'hidden' | 'heads' | 'headDim' | 'ffn' | 'tDim' | 'timeHidden' | 'freqDim' | 'ropeLen' | 'latentChannels')[] = ['layers', 'hidden', 'heads', 'headDim', 'ffn', 'tDim', 'timeHidden', 'freqDim', 'ropeLen', 'latentChannels'];
  for (const key of positive) {
    const v = config[key];
    if (!Number.isSafeInteger(v) || v <= 0) {
      throw new ModelsError('INVALID_CONFIG', `${key} must be a positive integer, got ${String(v)}`, { value: v, where, hint: 'check the preset or the detected shapes' });
    }
  }
  if (config.freqDim % 2 !== 0) {
    throw new ModelsError('INVALID_CONFIG', `freqDim ${config.freqDim} must be even (cos and sin halves)`, { value: config.freqDim, where });
  }
  if (rotDim(config) > config.headDim) {
    throw new ModelsError('INVALID_CONFIG', `RoPE covers ${rotDim(config)} dims but a head has only ${config.headDim}`, {
      value: { ropeLen: config.ropeLen, headDim: config.headDim },
      where,
      hint: 'rope.inv_freq length L needs 6·L ≤ head dim',
    });
  }
  for (const key of ['curveGrid', 'pddHeads', 'audioChannels', 'textDim', 'refinerLayers'] as const) {
    const v = config[key];
    if (v !== undefined && (!Number.isSafeInteger(v) || v < (key === 'curveGrid' ? 2 : key === 'refinerLayers' ? 0 : 1))) {
      throw new ModelsError('INVALID_CONFIG', `${key} must be a positive integer (a curve grid at least 2 rows), got ${String(v)}`, { value: v, where, hint: 'check the preset or the detected shapes' });
    }
  }
  for (const key of ['eps', 'qkEps', 'finalEps'] as const) {
    if (!(config[key] > 0)) throw new ModelsError('INVALID_CONFIG', `${key} must be > 0`, { value: config[key], where });
  }
  return config;
}
