import { Tensor } from '@ninodes/kernels';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { patchify, unpatchify } from './patchify.js';

function latent(c: number, t: number, h: number, w: number): Tensor<'f32'> {
  return Tensor.f32([1, c, t, h, w], Array.from({ length: c * t * h * w }, (_, i) => i + 0.5));
}

describe('patchify 1×2×2', () => {
  it('row (f, i, j), column c·4 + dy·2 + dx holds latent[c, f, 2i+dy, 2j+dx] (circular beyond odd edges)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 7 }), fc.integer({ min: 1, max: 7 }), (c, t, h, w) => {
        const x = latent(c, t, h, w);
        const rows = patchify(x);
        const hN = Math.ceil(h / 2);
        const wN = Math.ceil(w / 2);
        expect(rows.shape).toEqual([t * hN * wN, c * 4]);
        for (let f = 0; f < t; f++)
          for (let i = 0; i < hN; i++)
            for (let j = 0; j < wN; j++)
              for (let ch = 0; ch < c; ch++)
                for (let dy = 0; dy < 2; dy++)
                  for (let dx = 0; dx < 2; dx++) {
                    const want = x.data[((ch * t + f) * h + ((2 * i + dy) % h)) * w + ((2 * j + dx) % w)];
                    expect(rows.data[((f * hN + i) * wN + j) * c * 4 + ch * 4 + dy * 2 + dx]).toBe(want);
                  }
        const back = unpatchify(rows, { channels: c, frames: t, height: h, width: w });
        expect([...back.data]).toEqual([...x.data]);
        const neg = unpatchify(rows, { channels: c, frames: t, height: h, width: w }, true);
        expect([...neg.data]).toEqual([...x.data].map((v) => -v));
      }),
      { numRuns: 40 },
    );
  });

  it('rejects a batched or 4-d latent', () => {
    expect(() => patchify(Tensor.zeros('f32', [2, 24, 1, 2, 2]))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => patchify(Tensor.zeros('f32', [24, 1, 2, 2]) as Tensor<'f32'>)).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
  });
});
