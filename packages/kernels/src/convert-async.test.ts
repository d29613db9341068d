// The worker-thread conversions a streamed weight uses (castAsync, quantizeWeightInt8Async) must give
// the bits of their synchronous twins, which the cast and int8 tests check against independent
// references; here also against a float64 model of bf16 rounding.
import { describe, expect, it } from 'vitest';
import { Tensor, absMaxAsync, cast, castAsync, encodeFp8, encodeFp8Async, quantizeWeightInt8, quantizeWeightInt8Async } from './index.js';

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

  it.each(['f8_e4m3fn', 'f8_e5m2'] as const)('encodeFp8Async (%s) gives encodeFp8\'s bits, scaled and clamped, plain, stochastic', async (format) => {
    // Values past the format's range too, so clamping and saturation are exercised.
    const x = Tensor.fromArray('f32', [64, 300], values(64 * 300, 3).map((v, i) => (i % 11 === 0 ? v * 1e6 : v)));
    for (const opts of [{ scale: 0.0125, mode: 'clamp' as const }, undefined, { stochastic: { seed: 7 } }]) {
      const want = encodeFp8(x, format, opts);
      const pending = encodeFp8Async(x, format, opts);
      expect(pending).toBeInstanceOf(Promise);
      const got = await pending;
      expect(got.dtype).toBe(format);
      expect(got.shape).toEqual([64, 300]);
      expect(Buffer.from(got.bytes()).equals(Buffer.from(want.bytes())), JSON.stringify(opts)).toBe(true);
    }
    await expect(encodeFp8Async(Tensor.zeros('bf16', [4]), format)).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
    await expect(encodeFp8Async(x, format, { scale: -1 })).rejects.toMatchObject({ code: expect.any(String) });
  });

  it('absMaxAsync is max |x| (NaN when one is NaN, Infinity kept, 0 when empty)', async () => {
    const v = values(100_003, 4);
    v[77_777] = -9.5;
    // The definition, in float64 over the f32 values.
    let want = 0;
    for (const e of v) want = Math.max(want, Math.abs(e));
    expect(want).toBe(9.5);
    expect(await absMaxAsync(Tensor.fromArray('f32', [v.length], v))).toBe(want);
    const withNan = v.slice();
    withNan[5] = Number.NaN;
    expect(await absMaxAsync(Tensor.fromArray('f32', [withNan.length], withNan))).toBeNaN();
    const withInf = v.slice();
    withInf[99_000] = Number.NEGATIVE_INFINITY;
    expect(await absMaxAsync(Tensor.fromArray('f32', [withInf.length], withInf))).toBe(Number.POSITIVE_INFINITY);
    expect(await absMaxAsync(Tensor.zeros('f32', [0]))).toBe(0);
    await expect(absMaxAsync(Tensor.zeros('bf16', [4]))).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
  });

  it('rejects what the synchronous twin rejects', async () => {
    await expect(quantizeWeightInt8Async(Tensor.fromArray('f32', [2, 100], new Float32Array(200)), { convrot: 256 })).rejects.toMatchObject({ code: expect.any(String) });
    await expect(quantizeWeightInt8Async(Tensor.zeros('bf16', [2, 256]))).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
  });
});
