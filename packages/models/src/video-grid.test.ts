import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { refAngles, refVideoPositions } from './test-support/reference-f64.js';
import { h3RopeAngles, h3VideoPositions } from './video-grid.js';

describe('H3 video grid', () => {
  it('equals the float64 definition for any even frame size', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 20 }), (t, h2, w2) => {
        const got = h3VideoPositions(t, 2 * h2, 2 * w2);
        const want = refVideoPositions(t, 2 * h2, 2 * w2);
        expect(got.length).toBe(want.length);
        for (let i = 0; i < want.length; i++) expect(got[i]).toBeCloseTo(want[i] as number, 10);
      }),
    );
  });

  it('square frames span [0, 32) on h and w; time spans are 5/3·(1,4,4,4,4)', () => {
    const p = h3VideoPositions(7, 8, 8);
    const perFrame = 16;
    expect(p[1]).toBe(0);
    expect(p[(perFrame - 1) * 3 + 1]).toBeCloseTo(24, 12);
    const times = Array.from({ length: 7 }, (_, f) => p[f * perFrame * 3] as number);
    const spans = [1, 4, 4, 4, 4, 1].map((s) => (5 / 3) * s);
    let acc = 0;
    times.forEach((t, f) => {
      expect(t).toBeCloseTo(acc, 12);
      acc += spans[f] as number;
    });
  });

  it('a wide frame is centred: the short axis starts above 0', () => {
    const p = h3VideoPositions(1, 4, 16);
    // ratio_h = 4/8 = 0.5: starts at (1 − 0.5)/2·32 = 8
    expect(p[1]).toBeCloseTo(8, 12);
    expect(p[2]).toBeCloseTo((1 - 2) / 2 * 32, 12);
  });

  it('rope angles: positions × inv_freq per axis, halves duplicated (fp32 rounding only)', () => {
    const pos = h3VideoPositions(3, 6, 10);
    const inv = Float32Array.from({ length: 8 }, (_, i) => 10000 ** (-i / 8));
    const got = h3RopeAngles(pos, inv);
    expect(got.shape).toEqual([3 * 3 * 5, 48]);
    const want = refAngles(pos, Float64Array.from(inv));
    got.data.forEach((v, i) => expect(Math.abs(v - (want[i] as number))).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(want[i] as number))));
  });

  it('rejects odd sizes', () => {
    expect(() => h3VideoPositions(1, 3, 4)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
