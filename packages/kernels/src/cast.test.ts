import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cast, reference, Tensor } from './index.js';

const f32Bits = (values: number[]): Uint32Array => new Uint32Array(Float32Array.from(values).buffer);

/** Nearest-even rounding of a finite float64 value to `mantBits` bits, exponent floor `minExp` (independent oracle). */
function roundTo(v: number, mantBits: number, minExp: number, maxFinite: number): number {
  if (!Number.isFinite(v) || v === 0) return v;
  const a = Math.abs(v);
  const e = Math.max(Math.floor(Math.log2(a)), minExp);
  const ulp = 2 ** (e - mantBits);
  const q = a / ulp;
  let r = Math.floor(q);
  const d = q - r;
  if (d > 0.5 || (d === 0.5 && r % 2 === 1)) r += 1;
  const out = r * ulp;
  return Math.sign(v) * (out > maxFinite ? Infinity : out);
}

describe('cast', () => {
  it('f32 -> f16 / bf16 rounds to nearest even like a float64 model of the formats', () => {
    fc.assert(
      fc.property(fc.array(fc.float({ noNaN: true }), { minLength: 0, maxLength: 41 }), (values) => {
        const x = Tensor.f32([values.length], values);
        const h = cast(x, 'f16');
        const b = cast(x, 'bf16');
        const hBack = cast(h, 'f32').data;
        const bBack = cast(b, 'f32').data;
        values.forEach((v0, i) => {
          const v = Math.fround(v0);
          expect(hBack[i]).toBe(roundTo(v, 10, -14, 65504));
          expect(bBack[i]).toBe(roundTo(v, 7, -126, 3.3895313892515355e38));
        });
      }),
      { numRuns: 200 },
    );
  });

  it('native equals reference bit for bit for every source and target, NaN and inf included', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffffffff }), { minLength: 0, maxLength: 37 }), (words) => {
        const raw = Uint32Array.from(words);
        const sources: Tensor[] = [
          new Tensor('f32', [raw.length], raw.buffer),
          new Tensor('f16', [raw.length * 2], raw.buffer),
          new Tensor('bf16', [raw.length * 2], raw.buffer),
          new Tensor('f8_e4m3fn', [raw.length * 4], raw.buffer),
          new Tensor('f8_e5m2', [raw.length * 4], raw.buffer),
          new Tensor('i8', [raw.length * 4], raw.buffer),
          new Tensor('u8', [raw.length * 4], raw.buffer),
          new Tensor('i32', [raw.length], raw.buffer),
        ];
        for (const src of sources) {
          for (const to of ['f32', 'f16', 'bf16'] as const) {
            expect(cast(src, to).bytes()).toEqual(reference.cast(src, to).bytes());
          }
        }
      }),
      { numRuns: 150 },
    );
  });

  it('keeps specials the PyTorch way', () => {
    const x = Tensor.fromArray('f32', [6], new Float32Array(f32Bits([Infinity, -Infinity, 0, -0, 65520, 65519.99]).buffer));
    expect(Array.from(cast(x, 'f16').data)).toEqual([0x7c00, 0xfc00, 0, 0x8000, 0x7c00, 0x7bff]);
    const nan = new Tensor('f32', [2], Uint32Array.from([0xffc00001, 0x7f800001]).buffer);
    expect(Array.from(cast(nan, 'f16').data)).toEqual([0xfe00, 0x7e00]);
    expect(Array.from(cast(nan, 'bf16').data)).toEqual([0x7fc0, 0x7fc0]);
    const big = Tensor.f32([1], [3.4e38]);
    expect(Array.from(cast(big, 'bf16').data)).toEqual([0x7f80]);
  });

  it('widens integers exactly', () => {
    const i = Tensor.fromArray('i32', [3], Int32Array.from([16777217, -5, 2147483647]));
    expect(Array.from(cast(i, 'f32').data)).toEqual([16777216, -5, 2147483648]);
    expect(Array.from(cast(Tensor.fromArray('i8', [2], Int8Array.from([-128, 127])), 'f32').data)).toEqual([-128, 127]);
  });

  it('rejects unsupported dtypes', () => {
    expect(() => cast(Tensor.zeros('f64', [2]), 'f32')).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
    expect(() => cast(Tensor.zeros('f32', [2]), 'i8' as 'f32')).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
  });
});
