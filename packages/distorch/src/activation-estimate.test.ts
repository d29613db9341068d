import { describe, expect, it } from 'vitest';
import { estimateActivationBytes, latentTokens } from './activation-estimate.js';
import { H3_FULL, H3_SMALL, h3Layout } from './test-support/h3-layout.js';

describe('activation estimate', () => {
  it('tokens of a latent patchified 1×2×2 (odd sizes round up)', () => {
    expect(latentTokens({ frames: 21, height: 60, width: 104 })).toBe(21 * 30 * 52);
    expect(latentTokens({ frames: 1, height: 15, width: 16 })).toBe(8 * 8);
  });

  it('f32 rows of the largest per-token linear (in + out) plus two rows of the widest input, per token', () => {
    // h3-small: fc1 1536 -> 2·4096 is the largest per-token in+out (adaLN runs on one row); fc2's 4096 is the widest input.
    expect(estimateActivationBytes(h3Layout(H3_SMALL), 100)).toBe(4 * 100 * (1536 + 2 * 4096 + 2 * 4096));
    expect(estimateActivationBytes(h3Layout(H3_FULL), 1)).toBe(4 * (5376 + 2 * 14336 + 2 * 14336));
  });
});
