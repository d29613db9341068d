import { type Tensor } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';
import { latentDims } from './patchify.js';

/**
 * The colours of the drawings the `h3-shapes` model was trained on (RGB in [0, 1]): two backgrounds,
 * then four shape colours. Keep in sync with tools/train-demo/shapes.py (PALETTE).
 */
export const SHAPES_PALETTE: readonly (readonly [number, number, number])[] = [
  [0.08, 0.08, 0.1],
  [0.92, 0.92, 0.88],
  [0.9, 0.15, 0.15],
  [0.15, 0.75, 0.2],
  [0.2, 0.35, 0.95],
  [0.95, 0.8, 0.1],
];

/** A pixel counts when it lies within `radius` (Euclidean RGB in [0, 1]) of a palette colour. */
export const SHAPE_SCORE_RADIUS = 0.2;
/** A sample passes when at least this fraction of its pixels count. */
export const SHAPE_SCORE_PASS = 0.9;

/**
 * Fraction of the pixels of a latent [1, C ≥ 3, T, H, W] whose RGB (channels 0..2 mapped from [−1, 1]
 * to [0, 1]) lies within `SHAPE_SCORE_RADIUS` of a colour of `palette`.
 */
export function paletteFraction(latent: Tensor<'f32'>, palette: readonly (readonly [number, number, number])[] = SHAPES_PALETTE): number {
  const { channels, frames, height, width } = latentDims(latent);
  if (channels < 3) throw new ModelsError('SHAPE_MISMATCH', `the shape score reads RGB from channels 0..2, the latent has ${channels}`, { value: latent.shape, where: 'latent' });
  const plane = frames * height * width;
  const d = latent.data;
  const r2 = SHAPE_SCORE_RADIUS * SHAPE_SCORE_RADIUS;
  let inside = 0;
  for (let i = 0; i < plane; i++) {
    const r = ((d[i] as number) + 1) / 2;
    const g = ((d[plane + i] as number) + 1) / 2;
    const b = ((d[2 * plane + i] as number) + 1) / 2;
    for (const [pr, pg, pb] of palette) {
      if ((r - pr) ** 2 + (g - pg) ** 2 + (b - pb) ** 2 <= r2) {
        inside++;
        break;
      }
    }
  }
  return inside / plane;
}

/**
 * The palette score of issue 19 (tools/train-demo/shapes.py's `shape_score`): the fraction of
 * samples for which at least 90 % of the pixels lie within 0.2 of one of the drawings' colours.
 * Drawings score 1.0, noise 0 — but so does a flat background or a ragged blob, which is why the
 * demo reports `cleanShapeScore`.
 */
export function paletteScore(latents: readonly Tensor<'f32'>[], palette: readonly (readonly [number, number, number])[] = SHAPES_PALETTE): number {
  if (latents.length === 0) throw new ModelsError('INVALID_ARGUMENT', 'the palette score needs at least one sample', { value: 0, where: 'latents' });
  let pass = 0;
  for (const l of latents) if (paletteFraction(l, palette) >= SHAPE_SCORE_PASS) pass++;
  return pass / latents.length;
}

/** Why a frame is or is not a clean shape on a background (see `cleanShape`). */
export interface CleanShapeVerdict {
  readonly clean: boolean;
  /** The first rule the frame broke, or 'clean'. */
  readonly reason: 'clean' | 'off-palette' | 'no-background' | 'no-shape' | 'mixed-colours' | 'ragged' | 'scattered';
}

/** The training shapes cover 12.6 % (smallest disk) to 49 % (largest square) of a frame. */
const MIN_SHAPE_SHARE = 0.06;
const MAX_SHAPE_SHARE = 0.6;
/** A disk fills π/4 ≈ 0.785 of its bounding box, a square 1; a ragged blob less. */
const MIN_BOX_FILL = 0.6;
/** The largest 4-connected part of the shape holds at least this share of its pixels. */
const MIN_CONNECTED = 0.9;
/** Pixels of a second shape colour allowed, as a share of the shape's. */
const MAX_OTHER_COLOUR = 0.1;

/**
 * Whether every frame of a latent [1, C ≥ 3, T, H, W] is what the training data shows: one disk or
 * square of one shape colour on one background colour. Each pixel takes the palette colour it lies
 * within `SHAPE_SCORE_RADIUS` of (`palette`'s first `backgrounds` entries are backgrounds). A frame
 * is clean when ≥ 90 % of its pixels are palette colours, one background colour holds the most
 * pixels, one shape colour covers 6–60 % of the frame with other shape colours under a tenth of
 * it, the shape fills ≥ 0.6 of its bounding box, and its largest connected part holds ≥ 90 % of it.
 */
export function cleanShape(latent: Tensor<'f32'>, palette: readonly (readonly [number, number, number])[] = SHAPES_PALETTE, backgrounds = 2): CleanShapeVerdict {
  const { channels, frames, height, width } = latentDims(latent);
  if (channels < 3) throw new ModelsError('SHAPE_MISMATCH', `the shape score reads RGB from channels 0..2, the latent has ${channels}`, { value: latent.shape, where: 'latent' });
  const plane = frames * height * width;
  const area = height * width;
  const d = latent.data;
  const r2 = SHAPE_SCORE_RADIUS * SHAPE_SCORE_RADIUS;
  for (let t = 0; t < frames; t++) {
    const cls = new Int8Array(area).fill(-1);
    const counts = new Array<number>(palette.length).fill(0);
    let onPalette = 0;
    for (let i = 0; i < area; i++) {
      const j = t * area + i;
      const rgb = [((d[j] as number) + 1) / 2, ((d[plane + j] as number) + 1) / 2, ((d[2 * plane + j] as number) + 1) / 2] as const;
      let best = -1;
      let bestD = r2;
      palette.forEach(([pr, pg, pb], k) => {
        const dd = (rgb[0] - pr) ** 2 + (rgb[1] - pg) ** 2 + (rgb[2] - pb) ** 2;
        if (dd <= bestD) [best, bestD] = [k, dd];
      });
      cls[i] = best;
      if (best >= 0) {
        onPalette++;
        counts[best]!++;
      }
    }
    if (onPalette < SHAPE_SCORE_PASS * area) return { clean: false, reason: 'off-palette' };
    const bg = counts.slice(0, backgrounds);
    const fg = counts.slice(backgrounds);
    const bgCount = Math.max(...bg);
    const fgCount = Math.max(...fg);
    if (bgCount < fgCount) return { clean: false, reason: 'no-background' };
    if (fgCount < MIN_SHAPE_SHARE * area || fgCount > MAX_SHAPE_SHARE * area) return { clean: false, reason: 'no-shape' };
    const fgClass = backgrounds + fg.indexOf(fgCount);
    if (fg.reduce((a, b) => a + b, 0) - fgCount > MAX_OTHER_COLOUR * fgCount) return { clean: false, reason: 'mixed-colours' };
    let [y0, y1, x0, x1] = [height, -1, width, -1];
    for (let i = 0; i < area; i++) {
      if (cls[i] !== fgClass) continue;
      const y = Math.floor(i / width);
      const x = i % width;
      [y0, y1, x0, x1] = [Math.min(y0, y), Math.max(y1, y), Math.min(x0, x), Math.max(x1, x)];
    }
    if (fgCount < MIN_BOX_FILL * (y1 - y0 + 1) * (x1 - x0 + 1)) return { clean: false, reason: 'ragged' };
    if (largestComponent(cls, fgClass, height, width) < MIN_CONNECTED * fgCount) return { clean: false, reason: 'scattered' };
  }
  return { clean: true, reason: 'clean' };
}

/** Pixels in the largest 4-connected region of class `k`. */
function largestComponent(cls: Int8Array, k: number, height: number, width: number): number {
  const seen = new Uint8Array(cls.length);
  let largest = 0;
  for (let start = 0; start < cls.length; start++) {
    if (cls[start] !== k || seen[start]) continue;
    let size = 0;
    const stack = [start];
    seen[start] = 1;
    while (stack.length > 0) {
      const i = stack.pop() as number;
      size++;
      const y = Math.floor(i / width);
      const x = i % width;
      for (const [ny, nx] of [[y - 1, x], [y + 1, x], [y, x - 1], [y, x + 1]] as const) {
        const n = ny * width + nx;
        if (ny < 0 || ny >= height || nx < 0 || nx >= width || seen[n] || cls[n] !== k) continue;
        seen[n] = 1;
        stack.push(n);
      }
    }
    largest = Math.max(largest, size);
  }
  return largest;
}

/** The share of samples that are clean shapes on a background (`cleanShape`): what the demo reports. */
export function cleanShapeScore(latents: readonly Tensor<'f32'>[], palette: readonly (readonly [number, number, number])[] = SHAPES_PALETTE): number {
  if (latents.length === 0) throw new ModelsError('INVALID_ARGUMENT', 'the shape score needs at least one sample', { value: 0, where: 'latents' });
  return latents.filter((l) => cleanShape(l, palette).clean).length / latents.length;
}
