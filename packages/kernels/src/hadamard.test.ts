import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hadamard, hadamardSync, reference, Tensor } from './index.js';

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
