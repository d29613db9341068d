import { Tensor } from '@ninodes/kernels';
import { openSafetensors } from '@ninodes/memory';
import { maxRelError } from '@ninodes/quant';
import { fixturePath, readSafetensorsFile } from '@ninodes/test-safetensors';
import { describe, expect, it } from 'vitest';
import { h3LatentFrames, h3PixelFrames, h3VideoDecoderLayout, openH3VideoDecoder } from './h3-video-vae.js';

// A tiny random H3 video VAE decoder (2 blocks of width 128, linears F16) and its outputs from a
// float64 re-implementation in PyTorch (tools/h3-vae-ref/video_decoder.py).
const model = fixturePath('h3-vae', 'video-decoder.safetensors');
const expected = readSafetensorsFile(fixturePath('h3-vae', 'video-decoder-expect.safetensors')).tensors;
const f32 = (name: string): Tensor<'f32'> => {
  const t = expected.get(name)!;
  return Tensor.fromArray('f32', t.shape, new Float32Array(t.bytes.slice().buffer));
};
const f64 = (name: string): Float64Array => new Float64Array(expected.get(name)!.bytes.slice().buffer);

describe('H3 video VAE decoder against the float64 reference', () => {
  it.each([1, 2, 12])('latent of %i frame(s): pixels within 1e-5 relative (chunks of 7 latent frames blended in time)', async (t) => {
    const { decoder, close } = openH3VideoDecoder(model);
    try {
      expect(decoder.config).toEqual({ dim: 128, heads: 2, layers: 2, ffn: 256 });
      const pixels = await decoder.decode(f32(`latent.t${t}`));
      expect(pixels.shape).toEqual([3, h3PixelFrames(t), 32, 48]);
      expect(expected.get(`pixels.t${t}`)!.shape).toEqual(pixels.shape);
      expect(maxRelError(pixels.data, f64(`pixels.t${t}`))).toBeLessThan(1e-5);
    } finally {
      close();
    }
  });

  it('tiled in space: outside the overlap each pixel is its tile decoded alone; inside, a blend of the two', async () => {
    // A [1, 24, 1, 2, 3] latent in tiles of 2 cells: x in [0, 2) and [1, 3), overlapping on cell 1.
    const latent = f32('latent.t1');
    const sub = (x0: number): Tensor<'f32'> => {
      const out = new Float32Array(24 * 2 * 2);
      for (let c = 0; c < 24; c++) for (let y = 0; y < 2; y++) for (let x = 0; x < 2; x++) out[(c * 2 + y) * 2 + x] = latent.data[(c * 2 + y) * 3 + x0 + x] as number;
      return Tensor.fromArray('f32', [1, 24, 1, 2, 2], out);
    };
    const tiled = openH3VideoDecoder(model, { tile: 2 });
    const whole = openH3VideoDecoder(model, { tile: 0 });
    try {
      const got = await tiled.decoder.decode(latent);
      expect(got.shape).toEqual([3, 1, 32, 48]);
      const [left, right] = [await whole.decoder.decode(sub(0)), await whole.decoder.decode(sub(1))];
      let blended = 0;
      for (let c = 0; c < 3; c++) {
        for (let y = 0; y < 32; y++) {
          for (let x = 0; x < 48; x++) {
            const v = got.data[(c * 32 + y) * 48 + x] as number;
            const l = x < 32 ? (left.data[(c * 32 + y) * 32 + x] as number) : undefined;
            const r = x >= 16 ? (right.data[(c * 32 + y) * 32 + x - 16] as number) : undefined;
            if (x < 16) expect(v).toBe(l);
            else if (x >= 32) expect(v).toBe(r);
            else {
              expect(v).toBeGreaterThanOrEqual(Math.min(l!, r!) - 1e-6);
              expect(v).toBeLessThanOrEqual(Math.max(l!, r!) + 1e-6);
              if (Math.abs(v - l!) > 1e-6 && Math.abs(v - r!) > 1e-6) blended++;
            }
          }
        }
      }
      expect(blended).toBeGreaterThan(0);
      // Untiled, the whole frame attends together: the tiles differ from it (H3's decoder is global).
      expect(maxRelError((await whole.decoder.decode(latent)).data, got.data)).toBeGreaterThan(0);
    } finally {
      tiled.close();
      whole.close();
    }
    expect(() => openH3VideoDecoder(model, { tile: 1 })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('frames on the 17k + 5 grid and latent frames agree both ways', () => {
    for (const k of [0, 1, 2, 5]) {
      expect(h3LatentFrames(17 * k + 5)).toBe(5 * k + 2);
      expect(h3PixelFrames(5 * k + 2)).toBe(17 * k + 5);
    }
    expect(h3PixelFrames(1)).toBe(1);
  });

  it('its layout has the groups the hooks see, in order', async () => {
    const source = openSafetensors(model);
    const layout = h3VideoDecoderLayout(source);
    source.close();
    expect(layout.groups.map((g) => g.name)).toEqual(['decoder.in', 'decoder.transformer_blocks.0', 'decoder.transformer_blocks.1', 'decoder.out']);
    const seen: string[] = [];
    const { decoder, close } = openH3VideoDecoder(model, { hooks: { beforeGroup: (n) => void seen.push(n) } });
    try {
      await decoder.decode(f32('latent.t1'));
      expect(seen).toEqual(layout.groups.map((g) => g.name));
    } finally {
      close();
    }
  });

  it('a latent of the wrong shape and a file that is not a VAE are typed errors', async () => {
    const { decoder, close } = openH3VideoDecoder(model);
    try {
      await expect(decoder.decode(Tensor.zeros('f32', [1, 16, 1, 2, 2]))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    } finally {
      close();
    }
    expect(() => openH3VideoDecoder(fixturePath('qwen3', 'tiny-f32.safetensors'))).toThrow(expect.objectContaining({ code: 'ARCHITECTURE_MISMATCH' }));
  });
});
