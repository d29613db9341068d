import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { timestepFeatures } from './timestep-embedding.js';

describe('timestepFeatures', () => {
  it('cos before sin over exp(−ln 10000·j/half) frequencies', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 1, max: 200 }), (t, half) => {
        const e = timestepFeatures(t, 2 * half);
        expect(e.shape).toEqual([1, 2 * half]);
        for (let j = 0; j < half; j++) {
          const a = t * Math.exp((-Math.log(10000) * j) / half);
          expect(Math.abs((e.data[j] as number) - Math.cos(a))).toBeLessThan(1e-6);
          expect(Math.abs((e.data[half + j] as number) - Math.sin(a))).toBeLessThan(1e-6);
        }
      }),
      { numRuns: 50 },
    );
  });

  it('t = 0 gives ones then zeros', () => {
    const e = timestepFeatures(0, 256).data;
    expect([...e.subarray(0, 128)].every((v) => v === 1)).toBe(true);
    expect([...e.subarray(128)].every((v) => v === 0)).toBe(true);
  });

  it('rejects an odd width', () => {
    expect(() => timestepFeatures(0.5, 255)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
