import { describe, expect, it } from 'vitest';
import { GaussianStream, gaussianNoise, hashSeed } from './noise.js';

describe('gaussian noise', () => {
  it('is deterministic per seed and differs across seeds', () => {
    const a = gaussianNoise([1, 24, 2, 4, 4], 145);
    const b = gaussianNoise([1, 24, 2, 4, 4], 145);
    const c = gaussianNoise([1, 24, 2, 4, 4], 146);
    expect([...a.data]).toEqual([...b.data]);
    expect([...a.data]).not.toEqual([...c.data]);
  });

  it('has standard-normal moments', () => {
    const n = 200_000;
    const x = new GaussianStream(hashSeed(7, 'moments')).fill(new Float32Array(n));
    let m = 0;
    let v = 0;
    let k = 0;
    for (const s of x) m += s / n;
    for (const s of x) {
      v += (s - m) ** 2 / n;
      k += (s - m) ** 4 / n;
    }
    expect(Math.abs(m)).toBeLessThan(0.01);
    expect(Math.abs(v - 1)).toBeLessThan(0.02);
    expect(Math.abs(k / (v * v) - 3)).toBeLessThan(0.1);
    const u = new GaussianStream(1);
    let lo = 0;
    for (let i = 0; i < 10_000; i++) if (u.uniform() < 0.5) lo++;
    expect(Math.abs(lo - 5000)).toBeLessThan(250);
  });

  it('rejects a negative seed', () => {
    expect(() => gaussianNoise([2], -1)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
