// The fused passes must give exactly the bits of the ops they replace (the model swaps them in
// without changing a single output), on every SIMD path and thread count, and still follow the
// definitions (checked in float64 here, independently of the separate ops).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Tensor, add, gatedResidual, modulate, mul, qkNormRope, rmsNorm, rmsNormModulate, ropeSplitHalf } from '../index.js';
import { expectBitsEqual, expectClose, expectSameBitsOnThreads, randomF32, seedArb, simdPaths, withSimd } from '../test-support/numeric.js';

// Rows × width, widths off the SIMD width and rows past the parallel grain included.
const dimsArb = fc.tuple(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 200 }), seedArb);

/** Columns [off, off + h·d) of a [s, width] matrix as [s, h, d] (the unfused path's head split). */
function headColumns(x: Float32Array, s: number, width: number, off: number, h: number, d: number): Tensor<'f32'> {
  const out = new Float32Array(s * h * d);
  for (let t = 0; t < s; t++) out.set(x.subarray(t * width + off, t * width + off + h * d), t * h * d);
  return Tensor.fromArray('f32', [s, h, d], out);
}

/** [s, h, d] -> [h, s, d]. */
function transpose01(x: Tensor<'f32'>): Float32Array {
  const [s, h, d] = x.shape as [number, number, number];
  const out = new Float32Array(s * h * d);
  for (let t = 0; t < s; t++) for (let j = 0; j < h; j++) out.set(x.data.subarray((t * h + j) * d, (t * h + j + 1) * d), (j * s + t) * d);
  return out;
}

// Tokens × heads × (head dim, rotated dims as a fraction of it), and whether angles have R or R/2 columns.
const qkArb = fc.tuple(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 40 }), fc.double({ min: 0, max: 1, noNaN: true }), fc.boolean(), fc.boolean(), seedArb);

describe('fused elementwise passes', () => {
  for (const path of simdPaths()) {
    it(`qkNormRope (${path}) = split heads, rmsNorm, ropeSplitHalf, heads first, bit for bit`, () => {
      fc.assert(
        fc.property(qkArb, ([s, h, d, frac, halfAngles, withWeight, seed]) => {
          const rot = 2 * Math.floor((d * frac) / 2);
          const qkv = randomF32([s, 3 * h * d], seed, 4);
          const qw = withWeight ? randomF32([d], seed + 1, 2) : null;
          const kw = withWeight ? randomF32([d], seed + 2, 2) : null;
          const angles = randomF32([s, halfAngles ? rot / 2 : rot], seed + 3, 6);
          withSimd(path, () => {
            const got = qkNormRope(qkv, qw, kw, angles, { heads: h, rotDim: rot, eps: 1e-6 });
            const w = 3 * h * d;
            const q = ropeSplitHalf(rmsNorm(headColumns(qkv.data, s, w, 0, h, d), qw, 1e-6), angles, rot);
            const k = ropeSplitHalf(rmsNorm(headColumns(qkv.data, s, w, h * d, h, d), kw, 1e-6), angles, rot);
            expectBitsEqual(got.q.data, transpose01(q));
            expectBitsEqual(got.k.data, transpose01(k));
            expectBitsEqual(got.v.data, transpose01(headColumns(qkv.data, s, w, 2 * h * d, h, d)));
            expect(got.q.shape).toEqual([h, s, d]);
          });
        }),
        { numRuns: 60 },
      );
    });

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

  it('qkNormRope follows the definition (float64) on one token, two heads', () => {
    const [h, d, rot] = [2, 6, 4];
    const qkv = randomF32([1, 3 * h * d], 21, 3);
    const qw = randomF32([d], 22, 2);
    const kw = randomF32([d], 23, 2);
    const angles = randomF32([1, rot], 24, 3);
    const got = qkNormRope(qkv, qw, kw, angles, { heads: h, rotDim: rot, eps: 1e-6 });
    const x = qkv.data;
    const want = (off: number, w: Float32Array): number[] => {
      const out: number[] = [];
      for (let j = 0; j < h; j++) {
        const row = Array.from(x.subarray(off + j * d, off + (j + 1) * d));
        const inv = 1 / Math.sqrt(row.reduce((a, v) => a + v * v, 0) / d + 1e-6);
        const n = row.map((v, i) => v * inv * (w[i] as number));
        const r = [...n];
        for (let i = 0; i < rot / 2; i++) {
          const a = angles.data[i] as number;
          r[i] = (n[i] as number) * Math.cos(a) - (n[i + rot / 2] as number) * Math.sin(a);
          r[i + rot / 2] = (n[i + rot / 2] as number) * Math.cos(a) + (n[i] as number) * Math.sin(a);
        }
        out.push(...r);
      }
      return out;
    };
    expectClose(got.q.data, want(0, qw.data), 1e-5, 1e-6);
    expectClose(got.k.data, want(h * d, kw.data), 1e-5, 1e-6);
    expectClose(got.v.data, Array.from(x.subarray(2 * h * d)), 0, 0);
  });

  it('qkNormRope rejects heads, weights and angles that do not fit', () => {
    const qkv = randomF32([3, 24], 1);
    const angles = randomF32([3, 4], 2);
    expect(() => qkNormRope(qkv, null, null, angles, { heads: 5, rotDim: 4 })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => qkNormRope(qkv, randomF32([5], 3), null, angles, { heads: 2, rotDim: 4 })).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => qkNormRope(qkv, null, null, randomF32([2, 4], 4), { heads: 2, rotDim: 4 })).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => qkNormRope(qkv, null, null, angles, { heads: 2, rotDim: 2 })).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH', where: 'qkNormRope(angles)' }));
    expect(() => qkNormRope(qkv, null, null, angles, { heads: 2, rotDim: 6 })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => qkNormRope(qkv, null, null, angles, { heads: 2, rotDim: 3 })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('give the same bits for any thread count', () => {
    const x = randomF32([700, 333], 3);
    const o = randomF32([700, 333], 4);
    const g = randomF32([333], 5);
    const qkv = randomF32([300, 3 * 4 * 16], 6);
    const angles = randomF32([300, 8], 7);
    const run = () => [gatedResidual(x, o, g).data, rmsNormModulate(x, g, o.view('f32', [333], 0), g, 1e-5).data, ...Object.values(qkNormRope(qkv, null, null, angles, { heads: 4, rotDim: 8 })).map((t) => t.data)];
    expectSameBitsOnThreads(run, 4);
  });

  it('reject shapes that do not fit with SHAPE_MISMATCH', () => {
    const x = randomF32([4, 6], 1);
    expect(() => gatedResidual(x, randomF32([4, 5], 2), randomF32([6], 3))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => gatedResidual(x, randomF32([4, 6], 2), randomF32([4], 3))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => rmsNormModulate(x, null, randomF32([5], 2), randomF32([6], 3))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => rmsNormModulate(x, randomF32([4], 2), randomF32([6], 2), randomF32([6], 3))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
  });
});
