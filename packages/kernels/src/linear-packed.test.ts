import { describe, expect, it } from 'vitest';
import { BF16_FEW_ROWS, PackedLinearWeight, buildInfo, cast, linear, nativeBytes, packLinearWeight, packedLinearBytes, Tensor, unpackLinearWeight } from './index.js';

function rand(n: number, seed: number): Float32Array {
  let s = seed;
  return Float32Array.from({ length: n }, () => ((((s = (Math.imul(s, 1103515245) + 12345) | 0) >>> 8) / 2 ** 24) * 2 - 1));
}

const units = buildInfo().bf16Units;

describe.runIf(units)('packed bf16 linear weights', () => {
  // [K, N]: oneDNN's blocks are 32 (K) by 64 (N) on AVX512_BF16; on and off them, and N below one block.
  const sizes: [number, number][] = [
    [256, 192],
    [100, 70],
    [1536, 320],
    [48, 1000],
    [17, 5],
  ];
  const rows = [1, BF16_FEW_ROWS, 7, 64, 768];

  it.each(sizes)('gives the plain weight call its exact output bytes (K = %i, N = %i; M = 1, 4, 7, 64, 768; with and without bias)', async (k, n) => {
    const w = cast(Tensor.f32([n, k], rand(n * k, k * 31 + n)), 'bf16');
    const packed = await packLinearWeight(w);
    try {
      expect(packed.shape).toEqual([n, k]);
      expect(packed.byteLength).toBeGreaterThanOrEqual(2 * n * k);
      const bias = Tensor.f32([n], rand(n, n + 3));
      for (const m of rows) {
        const x = Tensor.f32([m, k], rand(m * k, m * 7 + k));
        for (const b of [undefined, bias]) {
          const plain = await linear(x, w, b, { precision: 'bf16' });
          const fast = await linear(x, packed, b, { precision: 'bf16' });
          expect(fast.shape).toEqual([m, n]);
          // Not a vacuous comparison: the product is non-zero.
          expect(plain.data.some((v) => v !== 0)).toBe(true);
          expect(Buffer.from(fast.bytes()).equals(Buffer.from(plain.bytes())), `M = ${m}, bias = ${b !== undefined}`).toBe(true);
        }
      }
    } finally {
      packed.dispose();
    }
  });

  it('keeps leading dimensions and writes into out', async () => {
    const w = cast(Tensor.f32([96, 64], rand(96 * 64, 2)), 'bf16');
    const packed = await packLinearWeight(w);
    const x = Tensor.f32([2, 5, 64], rand(640, 4));
    const out = Tensor.zeros('f32', [2, 5, 96]);
    const y = await linear(x, packed, undefined, { precision: 'bf16', out });
    expect(y).toBe(out);
    expect(Buffer.from(out.bytes()).equals(Buffer.from((await linear(x, w, undefined, { precision: 'bf16' })).bytes()))).toBe(true);
    packed.dispose();
  });

  it('unpacks to the original bits', async () => {
    const w = cast(Tensor.f32([70, 100], rand(7000, 9)), 'bf16');
    const packed = await packLinearWeight(w);
    const back = await unpackLinearWeight(packed);
    expect(Buffer.from(back.bytes()).equals(Buffer.from(w.bytes()))).toBe(true);
    packed.dispose();
  });

  it('holds its bytes in native memory until dispose(), then refuses to run', async () => {
    const w = cast(Tensor.f32([128, 256], rand(128 * 256, 5)), 'bf16');
    const before = nativeBytes();
    const packed = await packLinearWeight(w);
    expect(packed.byteLength).toBe(packedLinearBytes(128, 256));
    expect(nativeBytes() - before).toBe(packed.byteLength);
    packed.dispose();
    expect(nativeBytes()).toBe(before);
    expect(packed.disposed).toBe(true);
    await expect(linear(Tensor.f32([8, 256], rand(2048, 1)), packed, undefined, { precision: 'bf16' })).rejects.toMatchObject({ code: 'TENSOR_DISPOSED' });
  });

  it('rejects f32 precision, a K mismatch, a wrong bias and non-bf16 or empty weights with typed errors', async () => {
    const packed = await packLinearWeight(cast(Tensor.f32([16, 32], rand(512, 3)), 'bf16'));
    const x = Tensor.f32([4, 32], rand(128, 8));
    await expect(linear(x, packed)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(linear(Tensor.f32([4, 31], rand(124, 8)), packed, undefined, { precision: 'bf16' })).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(linear(x, packed, Tensor.f32([15], rand(15, 1)), { precision: 'bf16' })).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(packLinearWeight(Tensor.f32([16, 32], rand(512, 3)))).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
    await expect(packLinearWeight(Tensor.zeros('bf16', [0, 32]))).rejects.toMatchObject({ code: 'INVALID_SHAPE' });
    expect(packed).toBeInstanceOf(PackedLinearWeight);
    packed.dispose();
  });
});

describe.runIf(!units)('packed bf16 linear weights without bf16 units', () => {
  it('is BACKEND_UNAVAILABLE', async () => {
    await expect(packLinearWeight(cast(Tensor.f32([1, 4], [1, 1, 1, 1]), 'bf16'))).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
  });
});
