import { Tensor } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { combinePddHeads, packAudio, pddHeadWeights, timeShiftSigma, unpackAudio } from './h3-streams.js';

describe('h3 streams helpers', () => {
  it('timeShiftSigma maps shift 12 onto shift 3 through the shared base grid', () => {
    for (const b of [0.1, 0.5, 0.875]) {
      const sv = (12 * b) / (1 + 11 * b);
      const sa = (3 * b) / (1 + 2 * b);
      expect(timeShiftSigma(sv, 12, 3)).toBeCloseTo(sa, 14);
    }
    expect(timeShiftSigma(1, 12, 3)).toBe(1);
  });

  it('packAudio is channel-major rows and unpackAudio inverts it', () => {
    const a = Tensor.fromArray('f32', [1, 3, 2, 4], Float32Array.from({ length: 24 }, (_, i) => i));
    const rows = packAudio(a, 3);
    expect(rows.shape).toEqual([8, 3]);
    // row (ch·T + t), column c holds audio[c, ch, t] = (c·2 + ch)·4 + t
    expect(rows.data[(1 * 4 + 2) * 3 + 1]).toBe((1 * 2 + 1) * 4 + 2);
    expect(Array.from(unpackAudio(rows).data)).toEqual(Array.from(a.data));
    expect(() => packAudio(a, 32)).toThrow(/SHAPE_MISMATCH|audio latent/);
  });

  it('PDD: a step inside one head interval uses head 0 alone; a step over whole intervals averages them by dt', () => {
    expect(pddHeadWeights(4, 0.988, 0.973)).toEqual([0, 0, 0]);
    expect(pddHeadWeights(4, 0.988, undefined)).toEqual([0, 0, 0]);
    expect(pddHeadWeights(1, 1, 0)).toEqual([]);
    // 1 -> 0.3 spans [1/3, 2/3] and [2/3, 1] whole: equal dt, so half each.
    const w = pddHeadWeights(4, 1, 0.3);
    expect(w[0]).toBe(0);
    expect(w[1]).toBeCloseTo(0.5, 15);
    expect(w[2]).toBeCloseTo(0.5, 15);
    const out = Tensor.fromArray('f32', [1, 6], Float32Array.from([1, 2, 10, 20, 100, 200]));
    expect(Array.from(combinePddHeads(out, 2, [0.25, 0.75]).data)).toEqual([1 + 2.5 + 75, 2 + 5 + 150]);
  });
});
