// Pictures of the trained model's samples: channels 0..2 of each latent as RGB on the fixed range
// [-1, 1] (no stretching, so the colours are the model's own), tiles in a grid, grids side by side.
import type { Tensor } from '@ninodes/kernels';

export interface RgbImage {
  readonly width: number;
  readonly height: number;
  /** width·height·3 bytes, rows top to bottom. */
  readonly rgb: Uint8Array;
}

const GAP = 2;
const GAP_GREY = 128;

/** First frames of `latents` ([1, C ≥ 3, T, H, W], all the same H and W), `columns` per row, upscaled by `scale`. */
export function sampleGrid(latents: readonly Tensor<'f32'>[], columns = 4, scale = 4): RgbImage {
  const first = latents[0];
  if (first === undefined) throw new RangeError('sampleGrid: no latents');
  const [, , frames, h, w] = first.shape as [number, number, number, number, number];
  const rows = Math.ceil(latents.length / columns);
  const tile = (n: number) => n * scale;
  const width = columns * tile(w) + (columns - 1) * GAP;
  const height = rows * tile(h) + (rows - 1) * GAP;
  const rgb = new Uint8Array(width * height * 3).fill(GAP_GREY);
  latents.forEach((latent, i) => {
    const [, channels, f, lh, lw] = latent.shape as [number, number, number, number, number];
    if (latent.rank !== 5 || channels < 3 || lh !== h || lw !== w || f !== frames) {
      throw new RangeError(`sampleGrid: latent ${i} is [${latent.shape.join(', ')}], expected [1, C>=3, ${frames}, ${h}, ${w}]`);
    }
    const plane = frames * h * w;
    const x0 = (i % columns) * (tile(w) + GAP);
    const y0 = Math.floor(i / columns) * (tile(h) + GAP);
    for (let y = 0; y < tile(h); y++) {
      for (let x = 0; x < tile(w); x++) {
        const src = Math.floor(y / scale) * w + Math.floor(x / scale);
        const dst = ((y0 + y) * width + x0 + x) * 3;
        for (let c = 0; c < 3; c++) {
          const v = ((latent.data[c * plane + src] as number) + 1) / 2;
          rgb[dst + c] = Math.round(255 * Math.min(1, Math.max(0, v)));
        }
      }
    }
  });
  return { width, height, rgb };
}

/** Images side by side, top-aligned, separated by a wider grey gap. */
export function sideBySide(images: readonly RgbImage[], gap = 4 * GAP): RgbImage {
  const width = images.reduce((a, im) => a + im.width, 0) + Math.max(0, images.length - 1) * gap;
  const height = Math.max(...images.map((im) => im.height));
  const rgb = new Uint8Array(width * height * 3).fill(255);
  let x0 = 0;
  for (const im of images) {
    for (let y = 0; y < im.height; y++) rgb.set(im.rgb.subarray(y * im.width * 3, (y + 1) * im.width * 3), (y * width + x0) * 3);
    x0 += im.width + gap;
  }
  return { width, height, rgb };
}
