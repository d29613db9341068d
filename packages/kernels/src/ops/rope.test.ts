import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { reference, ropeSplitHalf } from '../index.js';
import { Tensor } from '../tensor.js';
import { f32Of, fixturePath, readSafetensors } from '../test-support/fixture-files.js';
import { expectClose, expectSameBitsOnThreads, randomF32, seedArb } from '../test-support/numeric.js';

// Rotation of the complex pair (x_i + i·x_{i+R/2}) by the angle, in float64.
function ropeF64(x: Float32Array, angles: Float32Array, s: number, h: number, d: number, r: number, cols: number): number[] {
  const out = Array.from(x);
  for (let t = 0; t < s; t++) {
    for (let hh = 0; hh < h; hh++) {
      for (let i = 0; i < r / 2; i++) {
        const o = (t * h + hh) * d;
        const re = x[o + i] as number;
        const im = x[o + i + r / 2] as number;
        const a = angles[t * cols + i] as number;
        out[o + i] = re * Math.cos(a) - im * Math.sin(a);
        out[o + i + r / 2] = re * Math.sin(a) + im * Math.cos(a);
      }
    }
  }
  return out;
}

describe('ropeSplitHalf', () => {
  const caseArb = fc
    .tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 40 }), fc.nat(), fc.boolean(), seedArb)
    .map(([s, h, half, rcut, full, seed]) => {
      const d = 2 * half + (rcut % 3);
      const r = 2 * (rcut % (half + 1));
      return { s, h, d, r, cols: full ? r : r / 2, seed };
    });

  it('native agrees with the reference and with complex rotation in float64', () => {
    fc.assert(
      fc.property(caseArb, ({ s, h, d, r, cols, seed }) => {
        const x = randomF32([s, h, d], seed);
        const base = randomF32([s, cols], seed + 1, 3);
        // The angles' second half repeats the first, as the DiT fixtures store them.
        if (cols === r) for (let t = 0; t < s; t++) for (let i = 0; i < r / 2; i++) base.data[t * r + r / 2 + i] = base.data[t * r + i] as number;
        const y = ropeSplitHalf(x, base, r).data;
        expectClose(y, reference.ropeSplitHalf(x, base, r).data, 1e-6, 1e-6);
        expectClose(reference.ropeSplitHalf(x, base, r).data, ropeF64(x.data, base.data, s, h, d, r, cols), 1e-6, 1e-7);
        // Dims past rotDim pass through untouched.
        let changed = 0;
        for (let t = 0; t < s * h; t++) for (let i = r; i < d; i++) if (!Object.is(y[t * d + i], x.data[t * d + i])) changed++;
        expect(changed).toBe(0);
      }),
      { numRuns: 80 },
    );
  });

  it('matches the H3 fixture rope inputs: 48 of 64 dims rotated, norms of pairs kept', () => {
    const { tensors, metadata } = readSafetensors(fixturePath('dit', 'h3_blocks.safetensors'));
    const rotDim = Number(metadata.rot_dim);
    const angles = f32Of(tensors.get('in.rope_angles')!);
    const [seq, cols] = tensors.get('in.rope_angles')!.shape as [number, number];
    expect(cols).toBe(rotDim);
    let unrepeated = 0;
    for (let t = 0; t < seq; t++) for (let i = 0; i < rotDim / 2; i++) if (angles[t * cols + i + rotDim / 2] !== angles[t * cols + i]) unrepeated++;
    expect(unrepeated).toBe(0);
    const x = randomF32([seq, 4, 64], 77);
    const a = Tensor.fromArray('f32', [seq, cols], angles);
    const y = ropeSplitHalf(x, a, rotDim).data;
    expectClose(y, ropeF64(x.data, angles, seq, 4, 64, rotDim, cols), 1e-6, 1e-6);
    let worst = 0;
    for (let p = 0; p < seq * 4; p++) {
      for (let i = 0; i < rotDim / 2; i++) {
        const o = p * 64;
        const before = Math.hypot(x.data[o + i] as number, x.data[o + i + rotDim / 2] as number);
        const after = Math.hypot(y[o + i] as number, y[o + i + rotDim / 2] as number);
        worst = Math.max(worst, Math.abs(before - after) / Math.max(1, before));
      }
    }
    expect(worst).toBeLessThanOrEqual(1e-5);
  });

  it('gives the same bits for any thread count', () => {
    const x = randomF32([257, 8, 64], 1);
    const a = randomF32([257, 48], 2, 10);
    expectSameBitsOnThreads(() => [ropeSplitHalf(x, a, 48).data], 4);
  });

  it('rejects bad rotDim and angle shapes', () => {
    const x = randomF32([3, 2, 8], 1);
    expect(() => ropeSplitHalf(x, randomF32([3, 6], 2), 5)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => ropeSplitHalf(x, randomF32([3, 10], 2), 10)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => ropeSplitHalf(x, randomF32([3, 5], 2), 6)).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => ropeSplitHalf(x, randomF32([2, 6], 2), 6)).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => ropeSplitHalf(randomF32([3, 16], 1), randomF32([3, 6], 2), 6)).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
  });
});
