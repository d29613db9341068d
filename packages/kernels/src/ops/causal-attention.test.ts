import { describe, expect, it } from 'vitest';
import { causalAttention, reference } from '../index.js';
import { Tensor } from '../tensor.js';
import { expectClose, randomF32 } from '../test-support/numeric.js';

// Causal GQA built from the reference (unmasked) attention: query i of head h against the first
// i + 1 keys of its key/value head, each gathered into the [H, T, D] layout reference.attention takes.
function causalViaReference(q: Tensor<'f32'>, k: Tensor<'f32'>, v: Tensor<'f32'>): Float32Array {
  const [S, H, D] = q.shape as [number, number, number];
  const hkv = k.shape[1] as number;
  const out = new Float32Array(S * H * D);
  for (let h = 0; h < H; h++) {
    const g = Math.floor((h * hkv) / H);
    for (let i = 0; i < S; i++) {
      const qi = Tensor.f32([1, 1, D], q.data.subarray((i * H + h) * D, (i * H + h + 1) * D));
      const kk = new Float32Array((i + 1) * D);
      const vv = new Float32Array((i + 1) * D);
      for (let j = 0; j <= i; j++) {
        kk.set(k.data.subarray((j * hkv + g) * D, (j * hkv + g + 1) * D), j * D);
        vv.set(v.data.subarray((j * hkv + g) * D, (j * hkv + g + 1) * D), j * D);
      }
      const o = reference.attention(qi, Tensor.f32([1, i + 1, D], kk), Tensor.f32([1, i + 1, D], vv));
      out.set(o.data, (i * H + h) * D);
    }
  }
  return out;
}

describe('causalAttention', () => {
  for (const [H, hkv] of [
    [4, 4],
    [6, 2],
    [4, 1],
  ] as const) {
    it(`${H} query heads over ${hkv} key/value heads: query i attends to keys 0..i of its group's head`, () => {
      const [S, D] = [9, 8];
      const q = randomF32([S, H, D], 1, 3);
      const k = randomF32([S, hkv, D], 2, 3);
      const v = randomF32([S, hkv, D], 3);
      const got = causalAttention(q, k, v);
      expect(got.shape).toEqual([S, H * D]);
      expectClose(got.data, causalViaReference(q, k, v), 1e-6, 1e-7);
    });
  }

  it('the first token sees only itself: its output is its own value row', () => {
    const q = randomF32([3, 2, 4], 5);
    const k = randomF32([3, 1, 4], 6);
    const v = randomF32([3, 1, 4], 7);
    const got = causalAttention(q, k, v);
    expect(Array.from(got.data.subarray(0, 4))).toEqual(Array.from(v.data.subarray(0, 4)));
    expect(Array.from(got.data.subarray(4, 8))).toEqual(Array.from(v.data.subarray(0, 4)));
  });

  it('rejects heads that do not group and mismatched sequences, naming the shapes', () => {
    const q = randomF32([3, 3, 4], 1);
    expect(() => causalAttention(q, randomF32([3, 2, 4], 2), randomF32([3, 2, 4], 3))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => causalAttention(q, randomF32([2, 3, 4], 2), randomF32([2, 3, 4], 3))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => causalAttention(q, randomF32([3, 3, 4], 2), randomF32([3, 3, 4], 3), { scale: Number.NaN })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
