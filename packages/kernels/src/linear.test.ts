import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cast, linear, reference, Tensor } from './index.js';
import { get, readFixture } from './test-support/fixture-safetensors.js';

/** |native - float64| must stay within K·eps·Σ|x·w| (the fp32 summation bound) plus the bias rounding. */
function expectClose(y: Float32Array, x: Float32Array, w: Float32Array, bias: Float32Array | undefined, m: number, k: number, n: number): void {
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let exact = bias === undefined ? 0 : (bias[j] as number);
      let mag = Math.abs(exact);
      for (let t = 0; t < k; t++) {
        const p = (x[i * k + t] as number) * (w[j * k + t] as number);
        exact += p;
        mag += Math.abs(p);
      }
      expect(Math.abs((y[i * n + j] as number) - exact)).toBeLessThanOrEqual((k + 2) * 2 ** -23 * mag + 1e-30);
    }
  }
}

describe('linear', () => {
  const fx = readFixture('int8', 'int8_convrot.safetensors');

  it.each(['lin_a', 'lin_b'])('matches PyTorch y_fp32 of %s', async (layer) => {
    const x = get(fx, `${layer}.x`, 'f32');
    const w = get(fx, `${layer}.w`, 'f32');
    const bias = get(fx, `${layer}.bias`, 'f32');
    const expected = get(fx, `${layer}.y_fp32`, 'f32').data;
    const y = (await linear(x, w, bias)).data;
    const r = reference.linear(x, w, bias).data;
    expected.forEach((e, i) => {
      expect(Math.abs((y[i] as number) - e)).toBeLessThan(1e-4 * (1 + Math.abs(e)));
      expect(Math.abs((r[i] as number) - e)).toBeLessThan(1e-4 * (1 + Math.abs(e)));
    });
  });

  it('native and reference agree with float64 within the fp32 bound on random shapes (f32 and bf16 weights)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 7 }),
        fc.integer({ min: 0, max: 41 }),
        fc.integer({ min: 0, max: 13 }),
        fc.boolean(),
        fc.boolean(),
        fc.integer(),
        async (m, k, n, withBias, bf16, seed) => {
          let s = seed;
          const rnd = (): number => (((s = (Math.imul(s, 1103515245) + 12345) | 0) >>> 8) / 2 ** 24) * 2 - 1;
          const x = Tensor.f32([m, k], Array.from({ length: m * k }, rnd));
          const w32 = Tensor.f32([n, k], Array.from({ length: n * k }, rnd));
          const w = bf16 ? cast(w32, 'bf16') : w32;
          const wide = bf16 ? cast(w, 'f32') : w32;
          const bias = withBias ? Tensor.f32([n], Array.from({ length: n }, rnd)) : undefined;
          const y = await linear(x, w, bias);
          expect(y.shape).toEqual([m, n]);
          expectClose(y.data, x.data, wide.data, bias?.data, m, k, n);
          expectClose(reference.linear(x, w, bias).data, x.data, wide.data, bias?.data, m, k, n);
        },
      ),
      { numRuns: 80 },
    );
  });

  it('folds leading dimensions of x into rows', async () => {
    const x = Tensor.f32([2, 3, 4], Array.from({ length: 24 }, (_, i) => i / 10));
    const w = Tensor.f32([5, 4], Array.from({ length: 20 }, (_, i) => (i % 3) - 1));
    const y = await linear(x, w);
    expect(y.shape).toEqual([2, 3, 5]);
    expectClose(y.data, x.data, w.data, undefined, 6, 4, 5);
  });

  it('is deterministic run to run at a fixed thread count', async () => {
    const x = Tensor.f32([64, 300], Array.from({ length: 64 * 300 }, (_, i) => Math.sin(i)));
    const w = Tensor.f32([70, 300], Array.from({ length: 70 * 300 }, (_, i) => Math.cos(i * 0.3)));
    const a = await linear(x, w);
    const b = await linear(x, w);
    expect(a.bytes()).toEqual(b.bytes());
  });

  it('rejects shape and dtype mismatches with typed errors', async () => {
    const x = Tensor.f32([2, 4], new Array(8).fill(1));
    await expect(linear(x, Tensor.zeros('f32', [3, 5]))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(linear(x, Tensor.zeros('f16', [3, 4]))).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
    await expect(linear(x, Tensor.zeros('f32', [3, 4]), Tensor.zeros('f32', [4]))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(linear(Tensor.zeros('i8', [2, 4]), Tensor.zeros('f32', [3, 4]))).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
    await expect(linear(Tensor.zeros('f32', [4]), Tensor.zeros('f32', [3, 4, 1]))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
  });
});
