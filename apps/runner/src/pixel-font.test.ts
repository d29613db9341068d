import { describe, expect, it } from 'vitest';
import { withLabel } from './pixel-font.js';

const dark = (im: { width: number; rgb: Uint8Array }, x: number, y: number) => im.rgb[(y * im.width + x) * 3] === 0;

describe('withLabel', () => {
  it('draws the glyphs on a strip above the image and keeps the image below it', () => {
    const image = { width: 40, height: 3, rgb: new Uint8Array(40 * 3 * 3).fill(77) };
    const out = withLabel(image, 'l1', 1);
    // strip: 2 px padding, 5 rows of glyph, 2 px padding
    expect(out.height).toBe(3 + 9);
    // 'l' is '#..' on rows 0-3 and '###' on row 4, at x = 2..4, y = 2..6
    const l = [0, 1, 2, 3, 4].map((y) => [0, 1, 2].map((x) => (dark(out, 2 + x, 2 + y) ? '#' : '.')).join(''));
    expect(l).toEqual(['#..', '#..', '#..', '#..', '###']);
    // the image rows follow the strip unchanged
    expect(Array.from(out.rgb.subarray(9 * out.width * 3))).toEqual(Array(40 * 3 * 3).fill(77));
  });

  it('widens the picture for a label longer than the image', () => {
    const out = withLabel({ width: 4, height: 1, rgb: new Uint8Array(12) }, 'int8_convrot', 2);
    expect(out.width).toBe((12 * 4 - 1) * 2 + 8);
  });
});
