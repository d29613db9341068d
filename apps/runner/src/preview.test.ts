import { Tensor } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { latentPreviewPng } from './preview.js';
import { decodePng } from './test-support/png-decode.js';

// [1, 4, 1, 1, 4]: four pixels in a row, channels 0..2 shown, channel 3 ignored.
const values = [
  [-1, 1, 0, 3], // red: black, full, mid, clamped
  [1, -1, -3, 0.5],
  [0, 0, 1, -1],
  [9, 9, 9, 9],
];
const latent = Tensor.fromArray('f32', [1, 4, 1, 1, 4], Float32Array.from(values.flat()));
const pixel = (rgb: Uint8Array, x: number) => [...rgb.subarray(x * 3, x * 3 + 3)];

describe('latentPreviewPng', () => {
  it("'true' maps [-1, 1] to 0..255 per channel and clamps outside it", () => {
    const { width, height, rgb } = decodePng(latentPreviewPng(latent, 'true', 1));
    expect([width, height]).toEqual([4, 1]);
    // round(255 · (v + 1) / 2): -1 -> 0, 1 -> 255, 0 -> 128 (127.5 rounds up), 0.5 -> 191
    expect([0, 1, 2, 3].map((x) => pixel(rgb, x))).toEqual([
      [0, 255, 128],
      [255, 0, 128],
      [128, 0, 255],
      [255, 191, 0],
    ]);
  });

  it("'stretch' spreads each channel over its own percentile range", () => {
    const { rgb } = decodePng(latentPreviewPng(latent, 'stretch', 1));
    // Channel 0 holds -1, 1, 0, 3: its 1st percentile is -1 (black) and its 99th is 3 (full).
    expect([0, 1, 2, 3].map((x) => pixel(rgb, x)[0])).toEqual([0, 128, 64, 255]);
  });

  it('upscales by nearest neighbour', () => {
    const { width, height, rgb } = decodePng(latentPreviewPng(latent, 'true', 4));
    expect([width, height]).toEqual([16, 4]);
    expect(pixel(rgb, 16 * 3 + 5)).toEqual([255, 0, 128]);
  });
});
