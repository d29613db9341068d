// The fused passes must give exactly the bits of the ops they replace (the model swaps them in
// without changing a single output), on every SIMD path and thread count, and still follow the
// definitions (checked in float64 here, independently of the separate ops).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { add, gatedResidual, modulate, mul, rmsNorm, rmsNormModulate } from '../index.js';
import { expectBitsEqual, expectClose, randomF32, seedArb, simdPaths, withSimd } from '../test-support/numeric.js';
import { setThreads } from '../threads.js';

// Rows × width, widths off the SIMD width and rows past the parallel grain included.
const dimsArb = fc.tuple(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 200 }), seedArb);

describe('fused elementwise passes', () => {
  for (const path of simdPaths()) {
    it(`gatedResidual (${path}) = add(x, mul(out, gate)) bit for bit`, () => {
      fc.assert(
        fc.property(dimsArb, ([rows, d, seed]) => {
          const x = randomF32([rows, d], seed, 4);
          const out = randomF32([rows, d], seed + 1, 4);
          const gate = randomF32([d], seed + 2, 3);
          withSimd(path, () => expectBitsEqual(gatedResidual(x, out, gate).data, add(x, mul(out, gate)).data));
        }),
        { numRuns: 60 },
      );
    });

    it(`rmsNormModulate (${path}) = modulate(rmsNorm(x, w), shift, scale) bit for bit`, () => {
      fc.assert(
        fc.property(dimsArb, fc.boolean(), ([rows, d, seed], withWeight) => {
          const x = randomF32([rows, d], seed, 4);
          const w = withWeight ? randomF32([d], seed + 1, 2) : null;
          const shift = randomF32([d], seed + 2);
          const scale = randomF32([d], seed + 3);
          withSimd(path, () => expectBitsEqual(rmsNormModulate(x, w, shift, scale, 1e-5).data, modulate(rmsNorm(x, w, 1e-5), shift, scale).data));
        }),
        { numRuns: 60 },
      );
    });
  }

  it('follow the definitions (float64) on a [2, 1, 5] input', () => {
    const x = randomF32([2, 1, 5], 7, 3);
    const o = randomF32([2, 1, 5], 8, 3);
    const g = randomF32([1, 5], 9);
    const xs = x.data, os = o.data, gs = g.data;
    expectClose(gatedResidual(x, o, g).data, Array.from(xs, (v, i) => v + (os[i] as number) * (gs[i % 5] as number)), 1e-6, 1e-6);
    const w = randomF32([5], 10), sh = randomF32([5], 11), sc = randomF32([5], 12);
    const want: number[] = [];
    for (let r = 0; r < 2; r++) {
      let ss = 0;
      for (let c = 0; c < 5; c++) ss += (xs[r * 5 + c] as number) ** 2;
      const inv = 1 / Math.sqrt(ss / 5 + 1e-5);
      for (let c = 0; c < 5; c++) want.push((xs[r * 5 + c] as number) * inv * (w.data[c] as number) * (1 + (sc.data[c] as number)) + (sh.data[c] as number));
    }
    expectClose(rmsNormModulate(x, w, sh, sc, 1e-5).data, want, 1e-5, 1e-6);
  });

  it('give the same bits for any thread count', () => {
    const x = randomF32([700, 333], 3);
    const o = randomF32([700, 333], 4);
    const g = randomF32([333], 5);
    const run = () => [gatedResidual(x, o, g).data, rmsNormModulate(x, g, o.view('f32', [333], 0), g, 1e-5).data];
    setThreads(1);
    const one = run();
    setThreads(4);
    const four = run();
    setThreads(0);
    one.forEach((v, i) => expectBitsEqual(v, four[i] as Float32Array));
  });

  it('reject shapes that do not fit with SHAPE_MISMATCH', () => {
    const x = randomF32([4, 6], 1);
    expect(() => gatedResidual(x, randomF32([4, 5], 2), randomF32([6], 3))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => gatedResidual(x, randomF32([4, 6], 2), randomF32([4], 3))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => rmsNormModulate(x, null, randomF32([5], 2), randomF32([6], 3))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => rmsNormModulate(x, randomF32([4], 2), randomF32([6], 2), randomF32([6], 3))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
  });
});
