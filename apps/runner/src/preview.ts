// preview.png: the latent's frames side by side, channels 0..2 as RGB, upscaled by nearest neighbour
// so a 16x16 latent is visible. 'stretch' maps each channel's 1st..99th percentile to 0..255, so
// the latent of a model with random weights shows its structure; 'true' maps [-1, 1] to 0..255, the
// colours of a model trained on pixels in channels 0..2 (h3-shapes), as the demo's grids do.
import type { Tensor } from '@ninodes/kernels';
import { encodePng } from './png.js';

function percentileRange(values: Float32Array): [number, number] {
  const sorted = Float32Array.from(values).sort();
  const lo = sorted[Math.floor(0.01 * (sorted.length - 1))] ?? 0;
  const hi = sorted[Math.ceil(0.99 * (sorted.length - 1))] ?? 1;
  return hi > lo ? [lo, hi] : [lo - 1, lo + 1];
}

export type PreviewColours = 'stretch' | 'true';

export function latentPreviewPng(latent: Tensor<'f32'>, colours: PreviewColours = 'stretch', scale = 4): Buffer {
  const [, channels, frames, height, width] = latent.shape as [number, number, number, number, number];
  if (latent.rank !== 5 || channels < 3) throw new RangeError(`preview needs a [1, C>=3, T, H, W] latent, got [${latent.shape.join(', ')}]`);
  const data = latent.data;
  const plane = frames * height * width;
  const ranges = [0, 1, 2].map((c): [number, number] => (colours === 'true' ? [-1, 1] : percentileRange(data.subarray(c * plane, (c + 1) * plane))));
  const gap = 1;
  const outW = frames * width * scale + (frames - 1) * gap;
  const outH = height * scale;
  const rgb = new Uint8Array(outW * outH * 3).fill(255);
  for (let t = 0; t < frames; t++) {
    for (let y = 0; y < outH; y++) {
      for (let x = 0; x < width * scale; x++) {
        const src = t * height * width + Math.floor(y / scale) * width + Math.floor(x / scale);
        const dst = (y * outW + t * (width * scale + gap) + x) * 3;
        for (let c = 0; c < 3; c++) {
          const [lo, hi] = ranges[c]!;
          const v = ((data[c * plane + src] as number) - lo) / (hi - lo);
          rgb[dst + c] = Math.round(255 * Math.min(1, Math.max(0, v)));
        }
      }
    }
  }
  return encodePng(outW, outH, rgb);
}
