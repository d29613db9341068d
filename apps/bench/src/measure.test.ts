import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { measureInterleaved, pairRatios } from './measure.js';

/** A fake monotonic clock that sides advance by a known cost, so timings are exact. */
function fakeClock() {
  let t = 0n;
  return { now: () => t, advance: (ns: number) => (t += BigInt(ns)) };
}

describe('measureInterleaved', () => {
  it('times each side exactly and the per-pair ratio is their cost ratio', async () => {
    const clock = fakeClock();
    const a = { run: () => void clock.advance(3_000_000) };
    const b = { run: () => void clock.advance(1_500_000) };
    const m = await measureInterleaved([a, b], { now: clock.now, budget: { warmup: 2, minRuns: 5, maxRuns: 5, seconds: 0, inner: 1 } });
    expect(m.samples[0]).toEqual([0.003, 0.003, 0.003, 0.003, 0.003]);
    expect(m.samples[1]).toEqual([0.0015, 0.0015, 0.0015, 0.0015, 0.0015]);
    expect(pairRatios(m.samples[0] as number[], m.samples[1] as number[])).toEqual([2, 2, 2, 2, 2]);
  });

  it('rotates the order within each round so no side always goes first', async () => {
    const calls: string[] = [];
    const sides = ['a', 'b', 'c'].map((name) => ({ run: () => void calls.push(name) }));
    await measureInterleaved(sides, { budget: { warmup: 0, minRuns: 3, maxRuns: 3, seconds: 0, inner: 1 } });
    expect(calls).toEqual(['a', 'b', 'c', 'b', 'c', 'a', 'c', 'a', 'b']);
  });

  it('runs warm-up untimed, then at least minRuns and at most maxRuns rounds', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 1, max: 8 }), fc.integer({ min: 0, max: 8 }), fc.double({ min: 0, max: 0.05, noNaN: true }), async (warmup, minRuns, extra, seconds) => {
        const clock = fakeClock();
        let calls = 0;
        const side = { run: () => void (calls++, clock.advance(10_000_000)) };
        const maxRuns = minRuns + extra;
        const m = await measureInterleaved([side], { now: clock.now, budget: { warmup, minRuns, maxRuns, seconds, inner: 1 } });
        const n = (m.samples[0] as number[]).length;
        expect(n).toBeGreaterThanOrEqual(minRuns);
        expect(n).toBeLessThanOrEqual(maxRuns);
        // Each round costs 10 ms: it stops at the first round boundary at or past the time budget.
        expect(n).toBe(Math.min(maxRuns, Math.max(minRuns, Math.ceil(seconds / 0.01 - 1e-9))));
        expect(calls).toBe(warmup + n);
      }),
    );
  });

  it('awaits async runs inside the timing and accepts self-timed sides', async () => {
    const clock = fakeClock();
    const asyncSide = { run: async () => { await Promise.resolve(); clock.advance(2_000_000); } };
    const selfTimed = { time: async (runs: number) => 0.004 * runs };
    const m = await measureInterleaved([asyncSide, selfTimed], { now: clock.now, budget: { warmup: 0, minRuns: 2, maxRuns: 2, seconds: 0, inner: 1 } });
    expect(m.samples).toEqual([[0.002, 0.002], [0.004, 0.004]]);
  });

  it('inner runs: a sample is the mean of that many back-to-back runs, for both kinds of side', async () => {
    const clock = fakeClock();
    let calls = 0;
    const costs = [1_000_000, 3_000_000];
    const inProcess = { run: () => void clock.advance(costs[calls++ % 2] as number) };
    const asked: number[] = [];
    const selfTimed = { time: async (runs: number) => (asked.push(runs), 0.01 * runs) };
    const m = await measureInterleaved([inProcess, selfTimed], { now: clock.now, budget: { warmup: 1, minRuns: 3, maxRuns: 3, seconds: 0, inner: 4 } });
    expect(calls).toBe(16);
    expect(asked).toEqual([4, 4, 4, 4]);
    expect(m.samples).toEqual([[0.002, 0.002, 0.002], [0.01, 0.01, 0.01]]);
  });

  it('rejects a self-timed side that reports a nonsense time', async () => {
    await expect(measureInterleaved([{ time: async () => Number.NaN }], { budget: { warmup: 0, minRuns: 1, maxRuns: 1, seconds: 0, inner: 1 } })).rejects.toThrow(/reported NaN/);
  });
});
