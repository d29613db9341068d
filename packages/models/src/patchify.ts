import { Tensor } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';

/** Frames, height and width of a video latent [1, C, T, H, W]. */
export interface LatentDims {
  readonly channels: number;
  readonly frames: number;
  readonly height: number;
  readonly width: number;
}

export function latentDims(latent: Tensor, channels?: number): LatentDims {
  const [b, c, t, h, w] = latent.shape;
  if (latent.rank !== 5 || b !== 1 || (channels !== undefined && c !== channels)) {
    throw new ModelsError('SHAPE_MISMATCH', `a video latent must be [1, ${channels ?? 'C'}, T, H, W], got [${latent.shape.join(', ')}]`, {
      value: latent.shape,
      where: 'latent',
      hint: 'batch size 1, channels first',
    });
  }
  return { channels: c as number, frames: t as number, height: h as number, width: w as number };
}

/**
 * [1, C, T, H, W] -> rows [T·⌈H/2⌉·⌈W/2⌉, C·4]: 1×2×2 patches in frame, row, column order; a row's
 * columns are channel-major, then dy, then dx. Odd H/W wrap around (circular padding, as ComfyUI's
 * `pad_to_patch_size`).
 */
export function patchify(latent: Tensor<'f32'>): Tensor<'f32'> {
  const { channels: C, frames: T, height: H, width: W } = latentDims(latent);
  const hN = Math.ceil(H / 2);
  const wN = Math.ceil(W / 2);
  const P = C * 4;
  const src = latent.data;
  const out = new Float32Array(T * hN * wN * P);
  for (let f = 0; f < T; f++) {
    for (let i = 0; i < hN; i++) {
      for (let j = 0; j < wN; j++) {
        const base = ((f * hN + i) * wN + j) * P;
        for (let c = 0; c < C; c++) {
          const plane = (c * T + f) * H;
          for (let dy = 0; dy < 2; dy++) {
            const y = (2 * i + dy) % H;
            for (let dx = 0; dx < 2; dx++) {
              out[base + c * 4 + dy * 2 + dx] = src[(plane + y) * W + ((2 * j + dx) % W)] as number;
            }
          }
        }
      }
    }
  }
  return Tensor.fromArray('f32', [T * hN * wN, P], out);
}

/** Inverse of `patchify`, cropping the padding: rows [S, C·4] -> [1, C, T, H, W]; `negate` flips the sign. */
export function unpatchify(rows: Tensor<'f32'>, dims: LatentDims, negate = false): Tensor<'f32'> {
  const { channels: C, frames: T, height: H, width: W } = dims;
  const hN = Math.ceil(H / 2);
  const wN = Math.ceil(W / 2);
  const P = C * 4;
  if (rows.rank !== 2 || rows.shape[0] !== T * hN * wN || rows.shape[1] !== P) {
    throw new ModelsError('SHAPE_MISMATCH', `rows [${rows.shape.join(', ')}] do not unpatchify to [1, ${C}, ${T}, ${H}, ${W}]`, {
      value: rows.shape,
      hint: `expected [${T * hN * wN}, ${P}]`,
    });
  }
  const src = rows.data;
  const sign = negate ? -1 : 1;
  const out = new Float32Array(C * T * H * W);
  for (let c = 0; c < C; c++) {
    for (let f = 0; f < T; f++) {
      for (let y = 0; y < H; y++) {
        const rowBase = (f * hN + (y >> 1)) * wN;
        const o = ((c * T + f) * H + y) * W;
        for (let x = 0; x < W; x++) {
          out[o + x] = sign * (src[(rowBase + (x >> 1)) * P + c * 4 + (y & 1) * 2 + (x & 1)] as number);
        }
      }
    }
  }
  return Tensor.fromArray('f32', [1, C, T, H, W], out);
}
