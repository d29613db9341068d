import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { flowSigmas } from './sigma-schedule.js';

describe('flowSigmas', () => {
  it('matches the shifted definition and runs 1 -> 0', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.double({ min: 0.1, max: 30, noNaN: true }), (steps, shift) => {
        const s = flowSigmas(steps, shift);
        expect(s.length).toBe(steps + 1);
        expect(s[0]).toBeCloseTo(1, 12);
        expect(s[steps]).toBe(0);
        for (let i = 0; i < steps; i++) {
          const u = (steps - i) / steps;
          expect(s[i]).toBeCloseTo((shift * u) / (1 + (shift - 1) * u), 12);
          expect(s[i] as number).toBeGreaterThan(s[i + 1] as number);
        }
      }),
    );
  });

  it('H3 default: 8 steps, shift 12 spends most steps at high noise', () => {
    const s = flowSigmas(8, 12);
    // s = 0.5 -> 12·0.5 / (1 + 11·0.5) = 6 / 6.5
    expect(s[4]).toBeCloseTo(6 / 6.5, 14);
  });

  it('rejects bad arguments with codes', () => {
    expect(() => flowSigmas(0, 12)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => flowSigmas(8, Number.NaN)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('refuses a shift that collapses the schedule: 1e308 would be pure noise, 1e-308 one jump', () => {
    expect(() => flowSigmas(8, 1e308)).toThrow(expect.objectContaining({ code: 'SHIFT_OUT_OF_RANGE' }));
    expect(() => flowSigmas(8, 1e-308)).toThrow(expect.objectContaining({ code: 'SHIFT_OUT_OF_RANGE' }));
    // At the limit the first interior sigma is exactly 0.999 (computed here, not by flowSigmas).
    const n = 8;
    const max = 999 * (n - 1);
    const u = 1 / n;
    expect((max * u) / (1 + (max - 1) * u)).toBeCloseTo(0.999, 12);
    expect(() => flowSigmas(n, max)).not.toThrow();
    expect(() => flowSigmas(n, max * 1.01)).toThrow(expect.objectContaining({ code: 'SHIFT_OUT_OF_RANGE' }));
  });
});
