// The worker-thread conversions a streamed weight uses (castAsync, quantizeWeightInt8Async) must give
// the bits of their synchronous twins, which the cast and int8 tests check against independent
// references; here also against a float64 model of bf16 rounding.
import { describe, expect, it } from 'vitest';
import { Tensor, cast, castAsync, quantizeWeightInt8, quantizeWeightInt8Async } from './index.js';

const values = (n: number, seed: number): Float32Array => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37 + seed) * (1 + (i % 97)) * 0.01);

/** bf16 by nearest-even rounding of the f32 bits (finite inputs), independent of the kernels. */
function bf16Of(x: Float32Array): Uint16Array {
  const bits = new Uint32Array(x.buffer, x.byteOffset, x.length);
  return Uint16Array.from(bits, (b) => (b + 0x7fff + ((b >>> 16) & 1)) >>> 16);
}

describe('conversions off the JS thread', () => {
  it('castAsync gives cast\'s bits, f32 -> bf16 -> f32, and returns before the work is done', async () => {
    const x = Tensor.fromArray('f32', [300, 257], values(300 * 257, 1));
    const pending = castAsync(x, 'bf16');
    expect(pending).toBeInstanceOf(Promise);
    const b = await pending;
    expect(b.dtype).toBe('bf16');
    expect([...new Uint16Array(b.bytes().buffer, b.bytes().byteOffset, b.numel)]).toEqual([...bf16Of(x.data)]);
    expect(Buffer.from(b.bytes()).equals(Buffer.from(cast(x, 'bf16').bytes()))).toBe(true);
    const back = await castAsync(b, 'f32');
    expect(Buffer.from(back.bytes()).equals(Buffer.from(cast(b, 'f32').bytes()))).toBe(true);
    await expect(castAsync(x, 'i8' as never)).rejects.toMatchObject({ code: expect.any(String) });
  });

  it.each([false, 256] as const)('quantizeWeightInt8Async (convrot %s) gives quantizeWeightInt8\'s bits', async (convrot) => {
    const w = Tensor.fromArray('f32', [96, 512], values(96 * 512, 2));
    const want = quantizeWeightInt8(w, { convrot });
    const got = await quantizeWeightInt8Async(w, { convrot });
    expect(got.q.shape).toEqual([96, 512]);
    expect(Buffer.from(got.q.bytes()).equals(Buffer.from(want.q.bytes()))).toBe(true);
    expect(Buffer.from(got.scale.bytes()).equals(Buffer.from(want.scale.bytes()))).toBe(true);
    // Per-row absmax / 127 (rows without rotation: of the weight itself).
    if (convrot === false) {
      const row = w.data.subarray(0, 512);
      expect(got.scale.data[0]).toBe(Math.fround(Math.max(...row.map(Math.abs)) / 127));
    }
  });

  it('rejects what the synchronous twin rejects', async () => {
    await expect(quantizeWeightInt8Async(Tensor.fromArray('f32', [2, 100], new Float32Array(200)), { convrot: 256 })).rejects.toMatchObject({ code: expect.any(String) });
    await expect(quantizeWeightInt8Async(Tensor.zeros('bf16', [2, 256]))).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
  });
});
