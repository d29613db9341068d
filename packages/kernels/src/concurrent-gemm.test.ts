import { describe, expect, it } from 'vitest';
import { Tensor, int8Backends, int8Linear, linear, quantizeWeightInt8 } from './index.js';

/** Deterministic values in [-1, 1). */
function values(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
}

// Two layers of one shape share a cached oneDNN primitive. Executed from two worker threads at once,
// its library-owned scratchpad was shared and the outputs came back wrong (34 of 200 f32 calls on
// an EPYC before the fix); each call now brings its own scratchpad.
describe('concurrent GEMMs of one shape', () => {
  const [m, k, n, layers, rounds] = [16, 512, 2048, 4, 40];
  const ws = Array.from({ length: layers }, (_, i) => Tensor.fromArray('f32', [n, k], values(n * k, 10 + i)));
  const xs = Array.from({ length: layers }, (_, i) => Tensor.fromArray('f32', [m, k], values(m * k, 20 + i)));

  it('linear: every concurrent result equals the same call run alone', async () => {
    const alone: number[][] = [];
    for (let i = 0; i < layers; i++) alone.push([...(await linear(xs[i] as Tensor<'f32'>, ws[i] as Tensor<'f32'>)).data]);
    let wrong = 0;
    for (let r = 0; r < rounds; r++) {
      const ys = await Promise.all(xs.map((x, i) => linear(x, ws[i] as Tensor<'f32'>)));
      ys.forEach((y, i) => {
        if (y.data.some((v, j) => v !== alone[i]?.[j])) wrong++;
      });
    }
    expect(wrong).toBe(0);
  });

  it.each(['onednn', 'native'] as const)('int8Linear (%s): every concurrent result equals the same call run alone', async (backend) => {
    if (!int8Backends().includes(backend)) return;
    const qs = ws.map((w) => quantizeWeightInt8(w, { convrot: 256 }));
    const run = (i: number) => int8Linear(xs[i] as Tensor<'f32'>, qs[i]?.q as Tensor<'i8'>, qs[i]?.scale as Tensor<'f32'>, { convrot: 256, backend });
    const alone: number[][] = [];
    for (let i = 0; i < layers; i++) alone.push([...(await run(i)).y.data]);
    let wrong = 0;
    for (let r = 0; r < rounds; r++) {
      const ys = await Promise.all(xs.map((_, i) => run(i)));
      ys.forEach((y, i) => {
        if (y.y.data.some((v, j) => v !== alone[i]?.[j])) wrong++;
      });
    }
    expect(wrong).toBe(0);
  });
});
