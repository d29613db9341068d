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

  it('refuses a non-positive size', () => {
    expect(() => h3ActivationBytes(H3_PRESETS['h3-tiny'].config, 0, 8, 8)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
