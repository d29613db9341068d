import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { median, quantileSorted, summarize } from './stats.js';

const samples = fc.array(fc.double({ min: -1e6, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 60 });

/** Median from its definition: the middle order statistic, or the mean of the two middle ones. */
function medianByDefinition(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? (s[(n - 1) / 2] as number) : ((s[n / 2 - 1] as number) + (s[n / 2] as number)) / 2;
}

describe('stats', () => {
  it('median matches the definition', () => {
    fc.assert(fc.property(samples, (v) => Math.abs(median(v) - medianByDefinition(v)) <= 1e-9 * (1 + Math.abs(medianByDefinition(v)))));
  });

  it('summarize: min, max, mean, MAD and IQR from their definitions', () => {
    fc.assert(
      fc.property(samples, (v) => {
        const s = summarize(v);
        const sorted = [...v].sort((a, b) => a - b);
        expect(s.n).toBe(v.length);
        expect(s.min).toBe(sorted[0]);
        expect(s.max).toBe(sorted[sorted.length - 1]);
        expect(s.mean).toBeCloseTo(v.reduce((a, b) => a + b, 0) / v.length, 3);
        expect(s.mad).toBeCloseTo(medianByDefinition(v.map((x) => Math.abs(x - s.median))), 3);
        expect(s.iqr).toBeGreaterThanOrEqual(0);
        expect(s.min).toBeLessThanOrEqual(s.median);
        expect(s.median).toBeLessThanOrEqual(s.max);
        if (s.median !== 0) expect(s.spread).toBeCloseTo(s.iqr / Math.abs(s.median), 6);
      }),
    );
  });

  it('quartiles interpolate between order statistics', () => {
    // 1..5: q25 sits exactly on 2, q75 on 4; 1..4: q25 = 1 + 0.75 * (2 - 1).
    expect(quantileSorted([1, 2, 3, 4, 5], 0.25)).toBe(2);
    expect(quantileSorted([1, 2, 3, 4, 5], 0.75)).toBe(4);
    expect(quantileSorted([1, 2, 3, 4], 0.25)).toBe(1.75);
    expect(summarize([1, 2, 3, 4, 5]).iqr).toBe(2);
  });

  it('an empty sample has no statistics rather than zeros', () => {
    const s = summarize([]);
    expect(s.n).toBe(0);
    expect(Number.isNaN(s.median)).toBe(true);
  });
});
