import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { add, addcmul, modulate, mul, reference, scale } from '../index.js';
import { Tensor } from '../tensor.js';
import { expectBitsEqual, expectClose, expectSameBitsOnThreads, randomF32, seedArb, shapeArb, simdPaths, withSimd } from '../test-support/numeric.js';

const f = Math.fround;

describe('add / mul / addcmul / modulate / scale', () => {
  // A shape and a random trailing part of it (the broadcast operand), sometimes with a leading 1.
  const caseArb = fc
    .tuple(shapeArb(3, 3000), fc.nat(), fc.boolean(), seedArb)
    .map(([shape, cut, lead, seed]) => {
      const k = cut % (shape.length + 1);
      const suffix = shape.slice(k);
      return { shape, suffix: lead ? [1, ...suffix] : suffix, seed };
    });

  for (const path of simdPaths()) {
    it(`native (${path}) agrees with the reference, with suffix broadcasting`, () => {
      fc.assert(
        fc.property(caseArb, fc.double({ min: -4, max: 4, noNaN: true }), ({ shape, suffix, seed }, s) => {
          const x = randomF32(shape, seed);
          const a = randomF32(suffix, seed + 1);
          const b = randomF32(suffix, seed + 2);
          const full = randomF32(shape, seed + 3);
          withSimd(path, () => {
            // Single roundings: exact.
            expectBitsEqual(add(x, a).data, reference.add(x, a).data);
            expectBitsEqual(mul(x, a).data, reference.mul(x, a).data);
            expectBitsEqual(add(x, full).data, reference.add(x, full).data);
            expectBitsEqual(scale(x, s).data, reference.scale(x, s).data);
            // Fused forms may round once (FMA) or twice.
            expectClose(addcmul(x, a, b).data, reference.addcmul(x, a, b).data, 1e-6, 1e-6);
            expectClose(modulate(x, a, b).data, reference.modulate(x, a, b).data, 1e-6, 1e-6);
          });
        }),
        { numRuns: 80 },
      );
    });
  }

  it('the reference follows the definitions element by element', () => {
    const x = randomF32([3, 5], 9);
    const sh = randomF32([5], 10);
    const sc = randomF32([5], 11);
    const xs = x.data, shv = sh.data, scv = sc.data;
    const want: number[] = [];
    const wantAdd: number[] = [];
    for (let r = 0; r < 3; r++) {
      for (let c = 0; c < 5; c++) {
        const v = xs[r * 5 + c] as number;
        want.push(v * (1 + (scv[c] as number)) + (shv[c] as number));
        wantAdd.push(f(v + (shv[c] as number)));
      }
    }
    expectClose(reference.modulate(x, sh, sc).data, want, 1e-7, 1e-8);
    expect(Array.from(reference.add(x, sh).data)).toEqual(wantAdd);
    expectClose(reference.addcmul(x, sh, sc).data, Array.from(xs, (v, i) => v + (shv[i % 5] as number) * (scv[i % 5] as number)), 1e-7, 1e-8);
  });

  it('gives the same bits for any thread count', () => {
    const x = randomF32([700, 333], 3);
    const a = randomF32([333], 4);
    const b = randomF32([333], 5);
    const run = () => [add(x, a).data, mul(x, a).data, addcmul(x, a, b).data, modulate(x, a, b).data, scale(x, 0.37).data];
    expectSameBitsOnThreads(run, 4);
  });

  it('rejects shapes that do not broadcast and non-f32 inputs', () => {
    const x = randomF32([4, 6], 1);
    expect(() => add(x, randomF32([4], 2))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => mul(x, randomF32([2, 4, 6], 2))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => modulate(x, randomF32([6], 2), randomF32([4, 6], 3))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => addcmul(x, randomF32([5], 2), randomF32([5], 3))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => scale(x, Number.POSITIVE_INFINITY)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => add(x, Tensor.zeros('f16', [6]) as never)).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
  });
});
