import type { ModelLayout } from '@ninodes/quant';

/** Latent size of a run: frames × height × width of the latent (not of the decoded video). */
export interface LatentSize {
  readonly frames: number;
  readonly height: number;
  readonly width: number;
}

/** Tokens a DiT sees for a latent, patchified by `patch` [t, h, w] (H3: 1×2×2). */
export function latentTokens(latent: LatentSize, patch: readonly [number, number, number] = [1, 2, 2]): number {
  return Math.ceil(latent.frames / patch[0]) * Math.ceil(latent.height / patch[1]) * Math.ceil(latent.width / patch[2]);
}

// Conditioning linears (adaLN modulation, the time embedder) run on one row per sample, not per token.
const PER_SAMPLE = /adaln|time_embed|modulation/i;

/**
 * An estimate of the f32 working set of one execution group for `tokens` tokens, read from the
 * layout alone: the largest per-token linear's input and output rows, plus two more rows of the
 * widest per-token input (the residual stream and a normalized copy that live across the group).
 * Attention here is tiled (online softmax), so no tokens² score matrix is counted. Multiply by the
 * profile's attentionMemoryModifier for the reserve.
 */
export function estimateActivationBytes(layout: ModelLayout, tokens: number): number {
  let widest = 0;
  let largest = 0;
  for (const g of layout.groups) {
    for (const l of g.linears) {
      if (PER_SAMPLE.test(l.name)) continue;
      widest = Math.max(widest, l.inFeatures);
      largest = Math.max(largest, l.inFeatures + l.outFeatures);
    }
  }
  return 4 * tokens * (largest + 2 * widest);
}
