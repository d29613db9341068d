import { Tensor } from '@ninodes/kernels';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { absMax, fp8Scale, maxRelError, relativeError } from './quant-math.js';

const f32Arrays = fc.array(fc.float({ noNaN: true, noDefaultInfinity: true }), { maxLength: 300 });

describe('quant math', () => {
  it('absMax equals the max of |x| (0 for empty), NaN propagates', () => {
    fc.assert(
      fc.property(f32Arrays, (xs) => {
        const t = Tensor.f32([xs.length], xs);
        expect(absMax(t)).toBe(xs.reduce((m, v) => Math.max(m, Math.abs(v)), 0));
      }),
    );
    expect(absMax(Tensor.f32([3], [1, Number.NaN, -2]))).toBeNaN();
  });

  it('fp8Scale is fround(absmax / max), 1 for all-zero, an error for inf', () => {
    fc.assert(
      fc.property(f32Arrays, fc.constantFrom('f8_e4m3fn' as const, 'f8_e5m2' as const), (xs, f) => {
        const m = xs.reduce((a, v) => Math.max(a, Math.abs(v)), 0);
        const want = m === 0 ? 1 : Math.fround(m / (f === 'f8_e4m3fn' ? 448 : 57344));
        expect(fp8Scale(Tensor.f32([xs.length], xs), f)).toBe(want);
      }),
    );
    expect(() => fp8Scale(Tensor.f32([2], [1, Number.POSITIVE_INFINITY]), 'f8_e4m3fn')).toThrow(expect.objectContaining({ code: 'NON_FINITE_WEIGHT' }));
  });

  it('relativeError is ‖a−b‖/‖b‖', () => {
    expect(relativeError(Tensor.f32([2], [3, 4]), Tensor.f32([2], [0, 0]))).toBe(Infinity);
    expect(relativeError(Tensor.f32([2], [0, 0]), Tensor.f32([2], [0, 0]))).toBe(0);
    expect(relativeError(Tensor.f32([2], [4, 4]), Tensor.f32([2], [3, 4]))).toBeCloseTo(1 / 5, 12);
    expect(() => relativeError(Tensor.f32([1], [1]), Tensor.f32([2], [1, 1]))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
  });
});

describe('maxRelError', () => {
  it('is the largest absolute difference over the largest magnitude of the reference', () => {
    expect(maxRelError([1, 2, 3], [1, 2, 4])).toBe(0.25);
    expect(maxRelError([-8, 0.5], [-6, 0])).toBeCloseTo(2 / 6, 15);
    expect(maxRelError(new Float32Array([1, 2]), [1, 2])).toBe(0);
  });
});
