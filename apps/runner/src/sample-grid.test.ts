import { Tensor } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { sampleGrid, sideBySide } from './sample-grid.js';

/** A [1, 3, 1, 1, 1] latent of one RGB colour given in [0, 1]. */
const pixel = (r: number, g: number, b: number) => Tensor.fromArray('f32', [1, 3, 1, 1, 1], Float32Array.from([r * 2 - 1, g * 2 - 1, b * 2 - 1]));

describe('sampleGrid', () => {
  it('maps [-1, 1] to 0..255 without stretching, clamps, and lays tiles row by row with grey gaps', () => {
    const im = sampleGrid([pixel(1, 0, 0.5), pixel(0, 1, 0), pixel(2, -1, 0)], 2, 1);
    // 2 columns x 2 rows of 1x1 tiles, 2-pixel gaps
    expect([im.width, im.height]).toEqual([4, 4]);
    const at = (x: number, y: number) => Array.from(im.rgb.subarray((y * im.width + x) * 3, (y * im.width + x) * 3 + 3));
    expect(at(0, 0)).toEqual([255, 0, 128]);
    expect(at(3, 0)).toEqual([0, 255, 0]);
    expect(at(0, 3)).toEqual([255, 0, 0]);
    expect(at(1, 0)).toEqual([128, 128, 128]);
  });

  it('puts images side by side, top-aligned', () => {
    const a = sampleGrid([pixel(1, 1, 1)], 1, 2);
    const b = sampleGrid([pixel(0, 0, 0)], 1, 1);
    const im = sideBySide([a, b], 1);
    expect([im.width, im.height]).toEqual([4, 2]);
    expect(Array.from(im.rgb.subarray(3 * 3, 3 * 3 + 3))).toEqual([0, 0, 0]);
    expect(Array.from(im.rgb.subarray((4 + 3) * 3, (4 + 3) * 3 + 3))).toEqual([255, 255, 255]);
  });
});
