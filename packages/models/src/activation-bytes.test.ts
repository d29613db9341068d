import { describe, expect, it } from 'vitest';
import { h3ActivationBytes } from './activation-bytes.js';
import { H3_PRESETS } from './presets.js';

describe('h3ActivationBytes', () => {
  it('counts tokens of the 1x2x2 patch and sizes fc1 output as [S, 2F] f32', () => {
    const c = H3_PRESETS['h3-tiny'].config;
    const r = h3ActivationBytes(c, 3, 32, 32);
    expect(r.tokens).toBe(3 * 16 * 16);
    expect(r.largestTensorBytes).toBe(3 * 16 * 16 * 2 * c.ffn * 4);
    // Linear in the token count: four times the area, about four times the bytes.
    const big = h3ActivationBytes(c, 3, 64, 64);
    expect(big.peakBytes / r.peakBytes).toBeCloseTo(4, 5);
    expect(r.peakBytes).toBeGreaterThan(r.largestTensorBytes);
  });

  it('counts text and audio tokens as video tokens, linearly', () => {
    const c = H3_PRESETS['h3-tiny'].config;
    const video = h3ActivationBytes(c, 1, 8, 8);
    const text = h3ActivationBytes(c, 1, 8, 8, { textTokens: 1000, audioFrames: 24 });
    expect(text.tokens).toBe(16 + 1000 + 24);
    expect(text.largestTensorBytes).toBe((16 + 1000 + 24) * 2 * c.ffn * 4);
    const huge = h3ActivationBytes(c, 1, 8, 8, { textTokens: 1_000_000 });
    // Linear: the bytes per extra token are the same at a thousand and at a million.
    expect((huge.peakBytes - video.peakBytes) / 1_000_000).toBeCloseTo((text.peakBytes - video.peakBytes) / 1024, 6);
  });

  it('refuses a non-positive size', () => {
    expect(() => h3ActivationBytes(H3_PRESETS['h3-tiny'].config, 0, 8, 8)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
