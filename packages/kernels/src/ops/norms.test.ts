import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { layerNorm, reference, rmsNorm, softmax } from '../index.js';
import { Tensor } from '../tensor.js';
import { expectClose, expectSameBitsOnThreads, randomF32, seedArb, shapeArb, simdPaths, withSimd } from '../test-support/numeric.js';

// Independent float64 definitions, written from the formulas (torch semantics).
function rmsF64(x: Float32Array, w: Float32Array | undefined, dim: number, eps: number): number[] {
  const out: number[] = [];
  for (let r = 0; r * dim < x.length; r++) {
    const row = Array.from(x.subarray(r * dim, (r + 1) * dim));
    const ms = row.reduce((a, v) => a + v * v, 0) / dim;
    row.forEach((v, i) => out.push((v / Math.sqrt(ms + eps)) * (w ? (w[i] as number) : 1)));
  }
  return out;
}

function lnF64(x: Float32Array, w: Float32Array | undefined, b: Float32Array | undefined, dim: number, eps: number): number[] {
  const out: number[] = [];
  for (let r = 0; r * dim < x.length; r++) {
    const row = Array.from(x.subarray(r * dim, (r + 1) * dim));
    const mean = row.reduce((a, v) => a + v, 0) / dim;
    const variance = row.reduce((a, v) => a + (v - mean) * (v - mean), 0) / dim;
    row.forEach((v, i) => out.push(((v - mean) / Math.sqrt(variance + eps)) * (w ? (w[i] as number) : 1) + (b ? (b[i] as number) : 0)));
  }
  return out;
}

function softmaxF64(x: Float32Array, dim: number): number[] {
  const out: number[] = [];
  for (let r = 0; r * dim < x.length; r++) {
    const row = Array.from(x.subarray(r * dim, (r + 1) * dim));
    const e = row.map((v) => Math.exp(v));
    const s = e.reduce((a, v) => a + v, 0);
    e.forEach((v) => out.push(v / s));
  }
  return out;
}

const last = (s: readonly number[]) => s[s.length - 1] as number;

// fp32 centring (x - mean) carries an absolute error of a few ulps of max|x|, which the
// normalization divides by sqrt(var + eps): the tolerance follows that conditioning per row.
function expectLayerNormClose(x: Tensor<'f32'>, w: Tensor<'f32'> | undefined, got: Float32Array, want: Float32Array, eps: number): void {
  const d = last(x.shape);
  const xs = x.data;
  for (let r = 0; r * d < xs.length; r++) {
    const row = Array.from(xs.subarray(r * d, (r + 1) * d));
    const mean = row.reduce((a, v) => a + v, 0) / d;
    const variance = row.reduce((a, v) => a + (v - mean) ** 2, 0) / d;
    const maxAbs = Math.max(...row.map(Math.abs));
    const cond = (8 * 2 ** -23 * maxAbs * Math.max(1, d / 64)) / Math.sqrt(variance + eps);
    for (let i = 0; i < d; i++) {
      const wi = w ? Math.abs(w.data[i] as number) : 1;
      const e = want[r * d + i] as number;
      const err = Math.abs((got[r * d + i] as number) - e);
      if (err > 2e-5 * Math.abs(e) + cond * wi + 1e-6) expect.fail(`row ${r} col ${i}: got ${got[r * d + i]}, expected ${e}`);
    }
  }
}

describe('rmsNorm / layerNorm / softmax', () => {
  for (const path of simdPaths()) {
    it(`native (${path}) agrees with the reference on random shapes`, () => {
      fc.assert(
        fc.property(shapeArb(), seedArb, fc.boolean(), fc.boolean(), (shape, seed, withW, withB) => {
          const x = randomF32(shape, seed, 2);
          const d = last(shape);
          const w = withW ? randomF32([d], seed + 1) : undefined;
          const b = withB ? randomF32([d], seed + 2) : undefined;
          withSimd(path, () => {
            expectClose(rmsNorm(x, w, 1e-5).data, reference.rmsNorm(x, w, 1e-5).data, 2e-5, 1e-6);
            expectLayerNormClose(x, w, layerNorm(x, w, b, 1e-5).data, reference.layerNorm(x, w, b, 1e-5).data, 1e-5);
            expectClose(softmax(x).data, reference.softmax(x).data, 2e-5, 1e-7);
          });
        }),
        { numRuns: 60 },
      );
    });
  }

  it('the reference agrees with float64 definitions', () => {
    fc.assert(
      fc.property(shapeArb(), seedArb, (shape, seed) => {
        const x = randomF32(shape, seed, 3);
        const d = last(shape);
        const w = randomF32([d], seed + 5);
        const b = randomF32([d], seed + 6);
        expectClose(reference.rmsNorm(x, w, 1e-6).data, rmsF64(x.data, w.data, d, 1e-6), 1e-6, 1e-7);
        expectClose(reference.layerNorm(x, w, b, 1e-5).data, lnF64(x.data, w.data, b.data, d, 1e-5), 1e-6, 1e-7);
        expectClose(reference.softmax(x).data, softmaxF64(x.data, d), 1e-6, 1e-9);
      }),
      { numRuns: 60 },
    );
  });

  it('softmax is shift-invariant and survives large logits', () => {
    const x = Tensor.f32([2, 3], [1000, 1001, 1002, -1000, -1001, -1002]);
    const y = softmax(x).data;
    expectClose(y, softmaxF64(Float32Array.from([0, 1, 2, 0, -1, -2]), 3), 1e-6, 1e-7);
  });

  it('gives the same bits for any thread count', () => {
    const x = randomF32([513, 200], 11);
    const w = randomF32([200], 12);
    const b = randomF32([200], 13);
    const run = () => [rmsNorm(x, w, 1e-6).data, layerNorm(x, w, b).data, softmax(x).data];
    expectSameBitsOnThreads(run, 3);
  });

  it('rejects bad inputs with typed errors', () => {
    const x = randomF32([4, 8], 1);
    expect(() => rmsNorm(x, randomF32([7], 2))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => layerNorm(x, undefined, randomF32([4, 8], 2))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => rmsNorm(Tensor.zeros('bf16', [4, 8]) as never)).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
    expect(() => rmsNorm(x, undefined, Number.NaN)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => softmax(Tensor.zeros('f32', []))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => reference.rmsNorm(x, randomF32([7], 2))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
  });
});
