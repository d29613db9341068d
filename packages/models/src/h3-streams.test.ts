import { Tensor } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { combinePddHeads, packAudio, pddHeadWeights, timeShiftSigma, unpackAudio } from './h3-streams.js';
import { flowSigmas } from './sigma-schedule.js';

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

  it('PDD (ComfyUI FinalLayer): 8 steps of shift 12 over a 32-head bank each take 4 whole intervals, weighted by dt on the stream\'s own grid', () => {
    // The schedule the sampler runs and the 32-interval grids of each stream, from flowSigmas
    // (the sampler's own schedule code), so dt_j = sigma_j − sigma_{j+1} on that stream's shift.
    const steps = flowSigmas(8, 12);
    for (const [shift, grid] of [[12, flowSigmas(32, 12)], [3, flowSigmas(32, 3)]] as const) {
      for (let i = 0; i < 8; i++) {
        const w = pddHeadWeights(32, steps[i] as number, steps[i + 1] as number, 12, shift);
        const dt = [0, 1, 2, 3].map((k) => (grid[4 * i + k] as number) - (grid[4 * i + k + 1] as number));
        const total = dt.reduce((a, b) => a + b, 0);
        const want = new Array<number>(31).fill(0);
        // head 4i + k gets interval 4i + k's share; interval 0 is head 0's own (no offset head).
        for (let k = 0; k < 4; k++) if (4 * i + k >= 1) want[4 * i + k - 1] = (dt[k] as number) / total;
        w.forEach((x, j) => expect([i, j, x]).toEqual([i, j, expect.closeTo(want[j] as number, 12)]));
      }
    }
  });

  it('PDD: the fixture\'s step (4 heads, step 1 -> 2 of 8) stays inside interval 0: head 0 alone; bounds round half to even', () => {
    const s = flowSigmas(8, 12);
    expect(pddHeadWeights(4, s[1] as number, s[2] as number, 12, 12)).toEqual([0, 0, 0]);
    expect(pddHeadWeights(4, 0.988, undefined, 12, 12)).toEqual([0, 0, 0]);
    expect(pddHeadWeights(1, 1, 0, 12, 12)).toEqual([]);
    // Unshifted (shift 1): 0.875 -> (1 − 0.875)·4 = 0.5 rounds to 0, 0.375 -> 2.5 rounds to 2:
    // intervals 0 and 1 of equal dt, head 1 takes half, head 0's half is its own.
    expect(pddHeadWeights(4, 0.875, 0.375, 1, 1)).toEqual([0.5, 0, 0]);
    // The last step: start clamps to n − 1, stop to at least start + 1.
    expect(pddHeadWeights(4, 0.01, 0, 1, 1)).toEqual([0, 0, 1]);
    const out = Tensor.fromArray('f32', [1, 6], Float32Array.from([1, 2, 10, 20, 100, 200]));
    expect(Array.from(combinePddHeads(out, 2, [0.25, 0.75]).data)).toEqual([1 + 2.5 + 75, 2 + 5 + 150]);
  });
});
