import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeFp8, encodeFp8, reference, Tensor } from './index.js';
import { get, readFixture } from './test-support/fixture-safetensors.js';

const fixture = readFixture('fp8', 'fp8.safetensors');
const FORMATS = [
  ['f8_e4m3fn', 'e4m3fn'],
  ['f8_e5m2', 'e5m2'],
] as const;

/** fp8 value of a byte from its definition (float64, independent of both codecs). */
function definitionValue(format: 'f8_e4m3fn' | 'f8_e5m2', b: number): number {
  const sign = b & 0x80 ? -1 : 1;
  const [expBits, mantBits, bias] = format === 'f8_e4m3fn' ? [4, 3, 7] : [5, 2, 15];
  const exp = (b >> mantBits) & ((1 << expBits) - 1);
  const mant = b & ((1 << mantBits) - 1);
  if (format === 'f8_e4m3fn' && exp === 15 && mant === 7) return Number.NaN;
  if (format === 'f8_e5m2' && exp === 31) return mant === 0 ? sign * Infinity : Number.NaN;
  if (exp === 0) return sign * mant * 2 ** (1 - bias - mantBits);
  return sign * (1 + mant / 2 ** mantBits) * 2 ** (exp - bias);
}

function sameBytesNaNAware(actual: Uint8Array, expected: Uint8Array, format: 'f8_e4m3fn' | 'f8_e5m2'): number {
  let bad = 0;
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i] as number, e = expected[i] as number;
    if (a === e) continue;
    if (Number.isNaN(definitionValue(format, a)) && Number.isNaN(definitionValue(format, e))) continue;
    bad++;
  }
  return bad;
}

describe.each(FORMATS)('fp8 %s', (format, key) => {
  const input = get(fixture, 'encode.input', 'f32');
  const all = Tensor.fromArray(format, [256], Uint8Array.from({ length: 256 }, (_, i) => i));

  it('decodes every byte to the PyTorch table (native and reference), which matches the definition', () => {
    const expected = get(fixture, `${key}.decode`, 'f32').data;
    for (const out of [decodeFp8(all).data, reference.decodeFp8(all).data]) {
      for (let b = 0; b < 256; b++) {
        const e = expected[b] as number;
        if (Number.isNaN(e)) expect(out[b]).toBeNaN();
        else expect(Object.is(out[b], e)).toBe(true);
        const def = definitionValue(format, b);
        if (Number.isNaN(def)) expect(e).toBeNaN();
        else expect(e).toBe(def);
      }
    }
  });

  it('encodes like PyTorch .to(float8) byte for byte', () => {
    const expected = get(fixture, `${key}.encode.torch_cast`, 'u8').data;
    expect(sameBytesNaNAware(encodeFp8(input, format).bytes(), expected, format)).toBe(0);
    expect(sameBytesNaNAware(reference.encodeFp8(input, format).bytes(), expected, format)).toBe(0);
    expect(sameBytesNaNAware(encodeFp8(input, format, { mode: 'torch-cast' }).bytes(), expected, format)).toBe(0);
  });

  it('encodes like comfy-kitchen quantize_per_tensor_fp8 (scaled, clamped)', () => {
    const scale = get(fixture, `${key}.encode.ck_scale`, 'f32').data[0] as number;
    const expected = get(fixture, `${key}.encode.ck_scaled`, 'u8').data;
    expect(sameBytesNaNAware(encodeFp8(input, format, { scale }).bytes(), expected, format)).toBe(0);
    expect(sameBytesNaNAware(reference.encodeFp8(input, format, { scale, mode: 'clamp' }).bytes(), expected, format)).toBe(0);
  });

  it('decode(encode(x)) is the nearest fp8 value (float64 check on the random part of the input)', () => {
    const x = input.data;
    const decoded = decodeFp8(encodeFp8(input, format, { mode: 'clamp' })).data;
    const values = Array.from({ length: 256 }, (_, b) => definitionValue(format, b)).filter((v) => Number.isFinite(v));
    const max = format === 'f8_e4m3fn' ? 448 : 57344;
    for (let i = 0; i < x.length; i++) {
      const v = x[i] as number;
      if (!Number.isFinite(v)) continue;
      const c = Math.min(max, Math.max(-max, v));
      const best = Math.min(...values.map((q) => Math.abs(q - c)));
      expect(Math.abs((decoded[i] as number) - c)).toBe(best);
    }
  });

  it('stochastic rounding is deterministic, picks a neighbour, and is unbiased on average', () => {
    const x = Tensor.f32([4096], Array.from({ length: 4096 }, () => 1.3));
    const a = encodeFp8(x, format, { stochastic: { seed: 7 } });
    const b = encodeFp8(x, format, { stochastic: { seed: 7 } });
    const c = encodeFp8(x, format, { stochastic: { seed: 8 } });
    expect(a.bytes()).toEqual(b.bytes());
    expect(a.bytes()).not.toEqual(c.bytes());
    expect(reference.encodeFp8(x, format, { stochastic: { seed: 7 } }).bytes()).toEqual(a.bytes());
    const values = decodeFp8(a).data;
    const distinct = new Set(values);
    expect(distinct.size).toBe(2);
    const mean = values.reduce((s, v) => s + v, 0) / values.length;
    const [lo, hi] = [...distinct].sort((p, q) => p - q) as [number, number];
    // Binomial standard error of the mean: (hi - lo) * 0.5 / sqrt(n).
    expect(Math.abs(mean - Math.fround(1.3))).toBeLessThan((4 * (hi - lo) * 0.5) / Math.sqrt(4096));
  });

  it('native equals reference on random inputs, scales and sizes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.float({ noDefaultInfinity: false }), { minLength: 0, maxLength: 67 }),
        fc.option(fc.float({ min: Math.fround(1e-6), max: Math.fround(1e6), noNaN: true }), { nil: undefined }),
        fc.option(fc.nat(), { nil: undefined }),
        (values, scale, seed) => {
          const x = Tensor.f32([values.length], values);
          const opts = { ...(scale === undefined ? {} : { scale }), ...(seed === undefined ? {} : { stochastic: { seed } }) };
          expect(encodeFp8(x, format, opts).bytes()).toEqual(reference.encodeFp8(x, format, opts).bytes());
          const bytes = Tensor.fromArray(format, [values.length], Uint8Array.from(values, (_, i) => (i * 37) & 0xff));
          const s = scale === undefined ? {} : { scale };
          expect(new Uint32Array(decodeFp8(bytes, s).buffer)).toEqual(new Uint32Array(reference.decodeFp8(bytes, s).buffer));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('fp8 errors', () => {
  it('rejects wrong dtypes, formats and options with typed errors', () => {
    const x = Tensor.f32([2], [1, 2]);
    expect(() => encodeFp8(Tensor.zeros('f16', [2]), 'f8_e4m3fn')).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
    expect(() => encodeFp8(x, 'f8_e4m3' as 'f8_e4m3fn')).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
    expect(() => encodeFp8(x, 'f8_e5m2', { scale: 0 })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => encodeFp8(x, 'f8_e5m2', { stochastic: { seed: -1 } })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => decodeFp8(x)).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
    const bytes = Tensor.fromArray('f8_e4m3fn', [2], Uint8Array.of(1, 2));
    expect(() => decodeFp8(bytes, { out: Tensor.zeros('f32', [3]) })).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => decodeFp8(bytes, { out: Tensor.zeros('f16', [2]) as unknown as Tensor<'f32'> })).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
    const shared = Tensor.zeros('f32', [4]);
    const view = Tensor.fromArray('f8_e4m3fn', [2], new Uint8Array(shared.buffer, 4, 2));
    expect(() => decodeFp8(view, { out: shared.rows(0, 2) })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

describe('decodeFp8 into a given tensor', () => {
  it('writes every element of out (junk before) with the bits of a fresh decode, and returns out', () => {
    for (const format of ['f8_e4m3fn', 'f8_e5m2'] as const) {
      const all = Tensor.fromArray(format, [256], Uint8Array.from({ length: 256 }, (_, i) => i));
      for (const opts of [{}, { scale: 0.37 }]) {
        const out = Tensor.f32([256], new Array(256).fill(-12345));
        const got = decodeFp8(all, { ...opts, out });
        expect(got).toBe(out);
        expect(new Uint32Array(out.data.buffer)).toEqual(new Uint32Array(reference.decodeFp8(all, opts).data.buffer));
      }
    }
  });
});
