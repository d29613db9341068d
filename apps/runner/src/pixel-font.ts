// Labels for the demo's pictures: a 3x5 pixel font (each glyph five rows of three bits, read as
// '#' on and '.' off), enough for format names and numbers. A font library would bring a renderer
// and font files for a few words of text.
import type { RgbImage } from './sample-grid.js';

const GLYPHS: Record<string, string> = {
  a: '.#.#.#####.##.#', b: '##.#.###.#.###.', c: '.###..#..#...##', d: '##.#.##.##.###.',
  e: '####..##.#..###', f: '####..##.#..#..', g: '.###..#.##.#.##', h: '#.##.#####.##.#',
  i: '###.#..#..#.###', j: '..#..#..##.#.#.', k: '#.##.###.#.##.#', l: '#..#..#..#..###',
  m: '#.########.##.#', n: '##.#.##.##.##.#', o: '.#.#.##.##.#.#.', p: '##.#.###.#..#..',
  q: '.#.#.##.###..##', r: '##.#.###.#.##.#', s: '.###...#...###.', t: '###.#..#..#..#.',
  u: '#.##.##.##.####', v: '#.##.##.##.#.#.', w: '#.##.########.#', x: '#.##.#.#.#.##.#',
  y: '#.##.#.#..#..#.', z: '###..#.#.#..###', '0': '####.##.##.####', '1': '.#.##..#..#.###',
  '2': '##...#.#.#..###', '3': '##...#.#...###.', '4': '#.##.####..#..#', '5': '####..##...###.',
  '6': '.###..####.####', '7': '###..#.#..#..#.', '8': '####.#####.####', '9': '####.####..###.',
  _: '............###', '-': '......###......', '.': '.............#.', ' ': '...............',
  '%': '#.#..#.#.#..#.#', '(': '.#.#..#..#...#.', ')': '.#...#..#..#.#.', ':': '....#.....#....',
  '/': '..#..#.#.#..#..',
};

/** Pixels of one line of `text` in the font, `scale` pixels per font pixel, 1 column between glyphs. */
function textMask(text: string, scale: number): { width: number; height: number; on: (x: number, y: number) => boolean } {
  const chars = [...text.toLowerCase()];
  const width = (chars.length * 4 - 1) * scale;
  const height = 5 * scale;
  return {
    width: Math.max(0, width),
    height,
    on: (x, y) => {
      const cell = Math.floor(x / scale);
      const glyph = GLYPHS[chars[Math.floor(cell / 4)] ?? ' '] ?? GLYPHS['.']!;
      const gx = cell % 4;
      if (gx === 3) return false;
      return glyph[Math.floor(y / scale) * 3 + gx] === '#';
    },
  };
}

/** `image` with `text` in black on a white strip above it, left-aligned. */
export function withLabel(image: RgbImage, text: string, scale = 2): RgbImage {
  const mask = textMask(text, scale);
  const pad = 2 * scale;
  const strip = mask.height + 2 * pad;
  const width = Math.max(image.width, mask.width + 2 * pad);
  const height = image.height + strip;
  const rgb = new Uint8Array(width * height * 3).fill(255);
  for (let y = 0; y < mask.height; y++) {
    for (let x = 0; x < mask.width; x++) {
      if (mask.on(x, y)) rgb.fill(0, ((pad + y) * width + pad + x) * 3, ((pad + y) * width + pad + x + 1) * 3);
    }
  }
  for (let y = 0; y < image.height; y++) rgb.set(image.rgb.subarray(y * image.width * 3, (y + 1) * image.width * 3), ((strip + y) * width) * 3);
  return { width, height, rgb };
}
