import { describe, expect, it } from 'vitest';
import { psnr } from './psnr.js';

describe('psnr', () => {
  it('is infinite for identical signals', () => {
    const a = Float32Array.from([0, 1, 2, 3]);
    expect(psnr(a, a.slice())).toBe(Infinity);
  });

  it('matches the textbook formula on a hand-checked case', () => {
    // range 4, one error of 0.5 over 4 samples: mse = 0.0625, psnr = 10*log10(16/0.0625) = 24.08 dB
    const ref = Float32Array.from([-2, 0, 1, 2]);
    const test = Float32Array.from([-2, 0.5, 1, 2]);
    expect(psnr(ref, test)).toBeCloseTo(10 * Math.log10(256), 10);
  });

  it('rejects mismatched lengths', () => {
    expect(() => psnr(new Float32Array(2), new Float32Array(3))).toThrow(RangeError);
  });
});
