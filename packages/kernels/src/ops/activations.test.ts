import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gelu, reference, silu, swiglu } from '../index.js';
import { Tensor } from '../tensor.js';
import { expectClose, expectSameBitsOnThreads, randomF32, seedArb, shapeArb, simdPaths, withSimd } from '../test-support/numeric.js';

// Definitions as written in the papers / torch docs, in float64.
const siluDef = (x: number) => x * (1 / (1 + Math.exp(-x)));
const geluTanhDef = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

describe('silu / gelu (tanh) / swiglu', () => {
  for (const path of simdPaths()) {
    it(`native (${path}) agrees with the reference on random shapes`, () => {
      fc.assert(
        fc.property(shapeArb(), seedArb, fc.constantFrom(1, 4, 30), (shape, seed, scale) => {
          const x = randomF32(shape, seed, scale);
          withSimd(path, () => {
            expectClose(silu(x).data, reference.silu(x).data, 1e-6, 1e-7);
            expectClose(gelu(x).data, reference.gelu(x).data, 1e-6, 1e-7);
          });
          const even = [...shape.slice(0, -1), 2 * (shape[shape.length - 1] as number)];
          const y = randomF32(even, seed + 1, scale);
          withSimd(path, () => expectClose(swiglu(y).data, reference.swiglu(y).data, 1e-6, 1e-7));
        }),
        { numRuns: 60 },
      );
    });
  }

  it('the reference agrees with the float64 definitions, including extremes', () => {
    const values = Float32Array.from([0, -0, 1e-30, -1e-30, 0.5, -0.5, 3, -3, 10, -10, 20, -20, 80, -80, 88, -88, 100, -100, -1e30, 1e30]);
    const x = Tensor.fromArray('f32', [values.length], values);
    expectClose(reference.silu(x).data, Array.from(values, siluDef), 1e-7, 1e-30);
    // gelu's definition loses everything to cancellation far left; compare where it is meaningful.
    const g = reference.gelu(x).data;
    values.forEach((v, i) => {
      if (v > -8) expectClose([g[i] as number], [geluTanhDef(v)], 1e-7, 1e-30);
    });
    for (const path of simdPaths()) {
      withSimd(path, () => {
        expectClose(silu(x).data, reference.silu(x).data, 1e-6, 1e-37);
        expectClose(gelu(x).data, reference.gelu(x).data, 1e-6, 1e-37);
      });
    }
  });

  it('swiglu gates with the first half', () => {
    const x = Tensor.f32([1, 4], [1, -2, 3, 5]);
    expectClose(swiglu(x).data, [siluDef(1) * 3, siluDef(-2) * 5], 1e-6, 0);
    expect(swiglu(x).shape).toEqual([1, 2]);
  });

  it('gives the same bits for any thread count', () => {
    const x = randomF32([300000], 5, 4);
    expectSameBitsOnThreads(() => [silu(x).data, gelu(x).data, swiglu(x).data], 4);
  });

  it('rejects bad inputs with typed errors', () => {
    expect(() => swiglu(randomF32([2, 3], 1))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => silu(Tensor.zeros('i32', [3]) as never)).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
    expect(() => gelu({} as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
