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
 * The shape score of issue 19: the fraction of samples for which at least 90 % of the pixels lie
 * within 0.2 of one of the drawings' colours. Drawings score 1.0, noise 0.
 */
export function shapeScore(latents: readonly Tensor<'f32'>[], palette: readonly (readonly [number, number, number])[] = SHAPES_PALETTE): number {
  if (latents.length === 0) throw new ModelsError('INVALID_ARGUMENT', 'the shape score needs at least one sample', { value: 0, where: 'latents' });
  let pass = 0;
  for (const l of latents) if (paletteFraction(l, palette) >= SHAPE_SCORE_PASS) pass++;
  return pass / latents.length;
}
