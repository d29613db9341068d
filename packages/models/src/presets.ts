import { ModelsError } from './error-codes.js';
import { H3_DEFAULTS, type H3Config } from './h3-config.js';

export type H3PresetName = 'h3-tiny' | 'h3-small' | 'h3-full' | 'h3-full-pruned';

export interface H3Preset {
  readonly name: H3PresetName;
  readonly config: H3Config;
  /** A latent size that makes a sensible default run for this preset ([1, 24, T, H, W]). */
  readonly defaultLatent: { readonly frames: number; readonly height: number; readonly width: number };
  readonly description: string;
}

/**
 * The text and audio streams of a t2va H3 (`condition_proj` from `textDim`, a 2-block token refiner,
 * stereo audio of 32 channels). textDim differs from hidden so context states of text-encoder width
 * are told apart from states already refined (ComfyUI skips the refiner for hidden-width states).
 * Synthetic tensor values depend only on seed and name, so adding these leaves every video-path
 * tensor, and a video-only run's latent, as they were.
 */
function streams(textDim: number): { audioChannels: number; textDim: number; refinerLayers: number } {
  return { audioChannels: 32, textDim, refinerLayers: 2 };
}

/*
 * Widths: hidden, heads·headDim and ffn/2 are multiples of 256 so every block linear takes int8
 * convrot (group 256) and a tensor-parallel split in two. The tiny and small presets also keep tDim a
 * multiple of 256 (adaLN); h3-full keeps the real time_embed_dim 2688, which is not.
 */
export const H3_PRESETS: Readonly<Record<H3PresetName, H3Preset>> = {
  'h3-tiny': {
    name: 'h3-tiny',
    description: 'embedded default: 8 layers, hidden 512, 8×64 heads, ffn 1024, text (text_dim 768, 2-block refiner) and stereo audio streams (~46 M parameters, ~93 MB bf16)',
    config: { ...H3_DEFAULTS, layers: 8, hidden: 512, heads: 8, headDim: 64, ffn: 1024, tDim: 256, timeHidden: 512, ropeLen: 8, ...streams(768) },
    defaultLatent: { frames: 3, height: 32, width: 32 },
  },
  'h3-small': {
    name: 'h3-small',
    description: 'benchmark size: 10 layers, hidden 1536, 12×128 heads, ffn 4096, text (text_dim 2048, 2-block refiner) and stereo audio streams (~0.56 G parameters, ~1.1 GB bf16)',
    config: { ...H3_DEFAULTS, layers: 10, hidden: 1536, heads: 12, headDim: 128, ffn: 4096, tDim: 768, timeHidden: 1536, ropeLen: 16, ...streams(2048) },
    defaultLatent: { frames: 5, height: 32, width: 32 },
  },
  'h3-full': {
    name: 'h3-full',
    description: 'the real MiniMax-H3 DiT shape: 50 layers, hidden 5376, 56×128 heads, ffn 14336 (~32 G parameters, sparse file)',
    config: { ...H3_DEFAULTS, layers: 50, hidden: 5376, heads: 56, headDim: 128, ffn: 14336, tDim: 2688, timeHidden: 5376, ropeLen: 16 },
    defaultLatent: { frames: 21, height: 60, width: 104 },
  },
  'h3-full-pruned': {
    name: 'h3-full-pruned',
    description:
      'the file people run (minimax_h3_*_pruned): h3-full in the curve form (adaln_t_table 1025 × 8, rank-8 adaLN, no time embedder) with the text refiner (text_dim 5120, 2 blocks) and the stereo audio stream (sparse file)',
    // timeHidden mirrors tDim as detection reports it: the curve form has no time embedder.
    config: { ...H3_DEFAULTS, layers: 50, hidden: 5376, heads: 56, headDim: 128, ffn: 14336, tDim: 8, timeHidden: 8, ropeLen: 16, curveGrid: 1025, audioChannels: 32, textDim: 5120, refinerLayers: 2 },
    defaultLatent: { frames: 21, height: 60, width: 104 },
  },
};

export function h3Preset(name: string): H3Preset {
  if (!Object.hasOwn(H3_PRESETS, name)) {
    throw new ModelsError('UNKNOWN_PRESET', `unknown model preset '${name}'`, {
      value: name,
      where: 'preset',
      hint: `presets: ${Object.keys(H3_PRESETS).join(', ')}`,
    });
  }
  return H3_PRESETS[name as H3PresetName];
}
