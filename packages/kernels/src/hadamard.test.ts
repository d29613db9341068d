import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hadamard, hadamardSync, quantizeRowsInt8, quantizeWeightInt8, reference, Tensor } from './index.js';
import { simdPaths, withSimd } from './test-support/numeric.js';

/** Dense float64 Hadamard matrices from their definitions (independent of the FWHT). */
function denseRegular(n: number): number[][] {
  const h4 = [
    [1, 1, 1, -1],
    [1, 1, -1, 1],
    [1, -1, 1, 1],
    [-1, 1, 1, 1],
  ];
  let h = [[1]];
  while (h.length < n) h = h.flatMap((row) => h4.map((r4) => row.flatMap((v) => r4.map((u) => v * u))));
  return h.map((row) => row.map((v) => v / Math.sqrt(n)));
}
function denseSylvester(n: number): number[][] {
  return Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => ((popcount(i & j) & 1) === 0 ? 1 : -1) / Math.sqrt(n)));
}
function popcount(v: number): number {
  let c = 0;
  for (; v; v &= v - 1) c++;
  return c;
}

const bits = (t: Tensor<'f32'>): Uint32Array => new Uint32Array(t.data.buffer, t.data.byteOffset, t.numel);

describe('hadamard', () => {
  it.each([
    ['regular', [1, 4, 16, 64, 256, 1024]],
    ['sylvester', [1, 2, 4, 8, 16, 32, 128, 512]],
  ] as const)('%s: native == reference bit for bit, and both ~ dense float64 x·H', async (order, groups) => {
    for (const group of groups) {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: group >= 256 ? 1 : 3 }), fc.integer(), async (rows, chunks, seed) => {
          let s = seed;
          const rnd = (): number => (((s = (Math.imul(s, 1103515245) + 12345) | 0) >>> 8) / 2 ** 24) * 4 - 2;
          const cols = group * chunks;
          const x = Tensor.f32([rows, cols], Array.from({ length: rows * cols }, rnd));
          const a = hadamardSync(x, { group, order });
          const b = await hadamard(x, { group, order });
          const r = reference.hadamardSync(x, { group, order });
          expect(bits(a)).toEqual(bits(r));
          expect(bits(b)).toEqual(bits(r));
          const H = order === 'regular' ? denseRegular(group) : denseSylvester(group);
          for (let row = 0; row < rows; row++) {
            for (let c = 0; c < cols; c++) {
              const g0 = c - (c % group);
              let sum = 0;
              for (let i = 0; i < group; i++) sum += (x.data[row * cols + g0 + i] as number) * (H[i]?.[c - g0] as number);
              expect(Math.abs((a.data[row * cols + c] as number) - sum)).toBeLessThan(1e-5 * Math.sqrt(group) * 2);
            }
          }
        }),
        { numRuns: group >= 512 ? 3 : 10 },
      );
    }
  });

  it('every SIMD path (AVX-512 in-register, AVX2, scalar) gives the same rotation and quantization bits, NaN and infinities included', () => {
    const specials = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0, 3.4e38, -3.4e38, 1e-45];
    for (const group of [16, 64, 256, 1024]) {
      const rows = 5;
      const cols = Math.max(group, 256) * 2;
      const x = Tensor.f32([rows, cols], Array.from({ length: rows * cols }, (_, i) => Math.sin(i * 0.77) * (1 + (i % 5))));
      // Row 1 carries special values; row 2 is all NaN (absmax must ignore it).
      for (let i = 0; i < specials.length; i++) x.data[cols + i * 37] = specials[i] as number;
      x.data.fill(Number.NaN, 2 * cols, 3 * cols);
      const runs = simdPaths().map((path) =>
        withSimd(path, () => {
          const { q, scale } = quantizeWeightInt8(x, { convrot: group });
          const inPlace = Tensor.f32([rows, cols], x.data);
          hadamardSync(inPlace, { group, out: inPlace });
          const plain = quantizeRowsInt8(x).q;
          return { path, out: Array.from(bits(hadamardSync(x, { group }))), inPlace: Array.from(bits(inPlace)), q: Array.from(q.data), scale: Array.from(bits(scale)), plain: Array.from(plain.data) };
        }),
      );
      // The vector paths agree to the bit, NaN payloads included; the scalar path may give a NaN of
      // the other sign (x86 makes -NaN for inf - inf), so it is compared with NaNs canonicalized.
      const canonical = (r: (typeof runs)[number]): unknown => {
        const c = (v: number): number => ((v & 0x7f800000) === 0x7f800000 && (v & 0x7fffff) !== 0 ? 0x7fc00000 : v);
        return { out: r.out.map(c), inPlace: r.inPlace.map(c), q: r.q, scale: r.scale.map(c), plain: r.plain };
      };
      for (const run of runs.slice(1)) {
        const label = `${run.path} vs ${String(runs[0]?.path)}, group ${group}`;
        if (run.path === 'scalar') expect(canonical(run), label).toEqual(canonical(runs[0] as (typeof runs)[number]));
        else expect({ ...run, path: runs[0]?.path }, label).toEqual(runs[0]);
      }
    }
  });

  it('is its own inverse (orthonormal and symmetric)', () => {
    const x = Tensor.f32([3, 512], Array.from({ length: 1536 }, (_, i) => Math.sin(i)));
    for (const order of ['regular', 'sylvester'] as const) {
      const back = hadamardSync(hadamardSync(x, { group: 256, order }), { group: 256, order, inverse: true }).data;
      back.forEach((v, i) => expect(Math.abs(v - (x.data[i] as number))).toBeLessThan(1e-5));
    }
  });

  it('throws GROUP_MISMATCH / INVALID_ARGUMENT / DTYPE_MISMATCH before touching memory', async () => {
    const x = Tensor.f32([2, 96], new Array(192).fill(1));
    expect(() => hadamardSync(x)).toThrow(expect.objectContaining({ code: 'GROUP_MISMATCH' }));
    await expect(hadamard(x, { group: 64 })).rejects.toMatchObject({ code: 'GROUP_MISMATCH' });
    expect(() => hadamardSync(x, { group: 32 })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => hadamardSync(x, { group: 32, order: 'sylvester' })).not.toThrow();
    expect(() => hadamardSync(x, { group: 0 })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => hadamardSync(Tensor.zeros('f16', [2, 256]))).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
    expect(() => reference.hadamardSync(x)).toThrow(expect.objectContaining({ code: 'GROUP_MISMATCH' }));
  });
});

describe('hadamard out', () => {
  it('writes into opts.out, in place included, with the same bits', async () => {
    const x = Tensor.f32([2, 64], Array.from({ length: 128 }, (_, i) => Math.cos(i)));
    const expected = reference.hadamardSync(x, { group: 64 });
    const out = Tensor.zeros('f32', [2, 64]);
    expect(hadamardSync(x, { group: 64, out })).toBe(out);
    expect(out.data).toEqual(expected.data);
    const inPlace = x.copy() as Tensor<'f32'>;
    await hadamard(inPlace, { group: 64, out: inPlace });
    expect(inPlace.data).toEqual(expected.data);
    expect(() => hadamardSync(x, { group: 64, out: Tensor.zeros('f32', [2, 32]) })).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
  });
});
