import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { attention, attentionNaive, buildInfo, reference } from '../index.js';
import { Tensor } from '../tensor.js';
import { expectBitsEqual, expectClose, randomF32, seedArb, simdPaths, withSimdAsync } from '../test-support/numeric.js';
import { setThreads } from '../threads.js';

// Textbook attention in float64: materialize the scores, softmax them, multiply by V.
function naiveF64(q: Float32Array, k: Float32Array, v: Float32Array, h: number, s: number, t: number, d: number, scale: number): Float64Array {
  const out = new Float64Array(h * s * d);
  for (let hh = 0; hh < h; hh++) {
    const scores: number[][] = [];
    for (let i = 0; i < s; i++) {
      const row: number[] = [];
      for (let j = 0; j < t; j++) {
        let dot = 0;
        for (let c = 0; c < d; c++) dot += (q[(hh * s + i) * d + c] as number) * (k[(hh * t + j) * d + c] as number);
        row.push(dot * scale);
      }
      const m = Math.max(...row);
      const e = row.map((x) => Math.exp(x - m));
      const z = e.reduce((a, b) => a + b, 0);
      scores.push(e.map((x) => x / z));
    }
    for (let i = 0; i < s; i++) {
      for (let c = 0; c < d; c++) {
        let acc = 0;
        for (let j = 0; j < t; j++) acc += (scores[i]![j] as number) * (v[(hh * t + j) * d + c] as number);
        out[(hh * s + i) * d + c] = acc;
      }
    }
  }
  return out;
}

const caseArb = fc.record({
  h: fc.integer({ min: 0, max: 3 }),
  s: fc.oneof(fc.constantFrom(0, 1, 31, 32, 33, 65), fc.integer({ min: 1, max: 70 })),
  t: fc.oneof(fc.constantFrom(1, 15, 16, 63, 64, 65, 129), fc.integer({ min: 1, max: 140 })),
  d: fc.oneof(fc.constantFrom(1, 7, 8, 9, 24, 33, 64), fc.integer({ min: 1, max: 80 })),
  seed: seedArb,
  sharp: fc.boolean(),
});

describe('attention', () => {
  for (const path of simdPaths()) {
    it(`tiled native (${path}) agrees with the reference and with float64 materialized attention`, async () => {
      await fc.assert(
        fc.asyncProperty(caseArb, async ({ h, s, t, d, seed, sharp }) => {
          // sharp: large logits, so the online rescaling (running max changes) really matters.
          const q = randomF32([h, s, d], seed, sharp ? 4 : 1);
          const k = randomF32([h, t, d], seed + 1, sharp ? 4 : 1);
          const v = randomF32([h, t, d], seed + 2);
          const scale = 1 / Math.sqrt(d);
          const got = await withSimdAsync(path, () => attention(q, k, v));
          const ref = reference.attention(q, k, v);
          const f64 = naiveF64(q.data, k.data, v.data, h, s, t, d, scale);
          expectClose(got.data, ref.data, 1e-4, 2e-5);
          expectClose(ref.data, f64, 1e-6, 1e-7);
        }),
        { numRuns: 40 },
      );
    });
  }

  // [H, S, D] (float64 reference) -> [S, H·D], done here independently of the kernel's own indexing.
  const mergeF64 = (x: Float64Array, h: number, s: number, d: number): Float64Array => {
    const y = new Float64Array(h * s * d);
    for (let hh = 0; hh < h; hh++) for (let i = 0; i < s; i++) for (let c = 0; c < d; c++) y[(i * h + hh) * d + c] = x[(hh * s + i) * d + c] as number;
    return y;
  };
  const precisions = buildInfo().bf16Units ? (['f32', 'bf16'] as const) : (['f32'] as const);
  for (const path of simdPaths()) {
    for (const precision of precisions) {
      if (precision === 'bf16' && path !== 'avx512') continue;
      it(`mergeHeads (${path}, ${precision}) writes [S, H·D]: float64 attention with the heads merged, the same bits as [H, S, D]`, async () => {
        const [h, s, t, d] = [3, 70, 45, 40];
        const q = randomF32([h, s, d], 11, 2);
        const k = randomF32([h, t, d], 12, 2);
        const v = randomF32([h, t, d], 13);
        const out = Tensor.zeros('f32', [s, h * d]);
        const got = await withSimdAsync(path, () => attention(q, k, v, { precision, mergeHeads: true, out }));
        expect(got.shape).toEqual([s, h * d]);
        expect(got).toBe(out);
        // bf16 rounds q, k, v and P: its distance to float64 is of bf16 size (attention-bf16.test.ts bounds it tightly).
        const want = mergeF64(naiveF64(q.data, k.data, v.data, h, s, t, d, 1 / Math.sqrt(d)), h, s, d);
        if (precision === 'f32') expectClose(got.data, want, 1e-4, 2e-5);
        else expectClose(got.data, want, 3e-2, 3e-2);
        const split = await withSimdAsync(path, () => attention(q, k, v, { precision }));
        expectBitsEqual(got.data, Float32Array.from(mergeF64(Float64Array.from(split.data), h, s, d)));
      });
    }
  }

  it('mergeHeads checks the out shape, and attentionNaive refuses it', async () => {
    const q = randomF32([2, 3, 4], 1);
    const k = randomF32([2, 5, 4], 2);
    await expect(attention(q, k, k, { mergeHeads: true, out: Tensor.zeros('f32', [2, 3, 4]) })).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(attentionNaive(q, k, k, { mergeHeads: true })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(attention(q, k, k, { mergeHeads: 1 as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('the naive benchmark baseline computes the same attention', async () => {
    const q = randomF32([2, 37, 24], 1);
    const k = randomF32([2, 70, 24], 2);
    const v = randomF32([2, 70, 24], 3);
    const f64 = naiveF64(q.data, k.data, v.data, 2, 37, 70, 24, 0.3);
    expectClose((await attentionNaive(q, k, v, { scale: 0.3 })).data, f64, 1e-4, 2e-5);
    expectClose((await attention(q, k, v, { scale: 0.3 })).data, f64, 1e-4, 2e-5);
  });

  it('with no keys returns zeros', async () => {
    const y = await attention(randomF32([2, 3, 4], 1), Tensor.zeros('f32', [2, 0, 4]), Tensor.zeros('f32', [2, 0, 4]));
    expect(Array.from(y.data)).toEqual(new Array(24).fill(0));
  });

  it('is bit-identical for any thread count and for any split of the heads', async () => {
    const [h, s, t, d] = [4, 97, 150, 64];
    const q = randomF32([h, s, d], 5, 2);
    const k = randomF32([h, t, d], 6, 2);
    const v = randomF32([h, t, d], 7);
    setThreads(1);
    const one = await attention(q, k, v);
    setThreads(3);
    const three = await attention(q, k, v);
    setThreads(0);
    expectBitsEqual(one.data, three.data);
    // Heads 1..2 alone (as one tensor-parallel rank would see them).
    const part = await attention(q.rows(1, 3), k.rows(1, 3), v.rows(1, 3));
    expectBitsEqual(part.data, one.data.subarray(s * d, 3 * s * d));
  });

  it('rejects mismatched shapes, non-f32 and non-finite scales', async () => {
    const q = randomF32([2, 3, 4], 1);
    const k = randomF32([2, 5, 4], 2);
    await expect(attention(q, k, randomF32([2, 6, 4], 3))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(attention(q, randomF32([2, 5, 3], 2), randomF32([2, 5, 3], 3))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(attention(randomF32([3, 4], 1), k, k)).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(attention(q, k, k, { scale: Number.NaN })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(attention(Tensor.zeros('bf16', [2, 3, 4]) as never, k, k)).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
  });
});
