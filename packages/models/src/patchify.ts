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
 * `pad_to_patch_size`). Into `out` when given (a reused buffer of that size).
 */
export function patchify(latent: Tensor<'f32'>, out?: Tensor<'f32'>): Tensor<'f32'> {
  const { channels: C, frames: T, height: H, width: W } = latentDims(latent);
  const hN = Math.ceil(H / 2);
  const wN = Math.ceil(W / 2);
  const P = C * 4;
  const src = latent.data;
  const rows = T * hN * wN;
  if (out !== undefined && (out.dtype !== 'f32' || out.numel !== rows * P)) {
    throw new ModelsError('SHAPE_MISMATCH', `patchify: out must be f32 [${rows}, ${P}], got ${out.dtype} [${out.shape.join(', ')}]`, { value: out.shape, where: 'patchify(out)' });
  }
  const dst = out === undefined ? new Float32Array(rows * P) : out.data;
  for (let f = 0; f < T; f++) {
    for (let i = 0; i < hN; i++) {
      for (let j = 0; j < wN; j++) {
        const base = ((f * hN + i) * wN + j) * P;
        for (let c = 0; c < C; c++) {
          const plane = (c * T + f) * H;
          for (let dy = 0; dy < 2; dy++) {
            const y = (2 * i + dy) % H;
            for (let dx = 0; dx < 2; dx++) {
              dst[base + c * 4 + dy * 2 + dx] = src[(plane + y) * W + ((2 * j + dx) % W)] as number;
            }
          }
        }
      }
    }
  }
  return out ?? Tensor.fromArray('f32', [rows, P], dst);
}

/** Inverse of `patchify`, cropping the padding: rows [S, C·4] -> [1, C, T, H, W]; `negate` flips the sign. */
export function unpatchify(rows: Tensor<'f32'>, dims: LatentDims, negate = false, out?: Tensor<'f32'>): Tensor<'f32'> {
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
  if (out !== undefined && (out.dtype !== 'f32' || out.numel !== C * T * H * W || (out.buffer === rows.buffer && out.byteOffset < rows.byteOffset + rows.byteLength && rows.byteOffset < out.byteOffset + out.byteLength))) {
    throw new ModelsError('SHAPE_MISMATCH', `unpatchify: out must be f32 [1, ${C}, ${T}, ${H}, ${W}] apart from the rows, got ${out.dtype} [${out.shape.join(', ')}]`, { value: out.shape, where: 'unpatchify(out)' });
  }
  const dst = out === undefined ? new Float32Array(C * T * H * W) : out.data;
  for (let c = 0; c < C; c++) {
    for (let f = 0; f < T; f++) {
      for (let y = 0; y < H; y++) {
        const rowBase = (f * hN + (y >> 1)) * wN;
        const o = ((c * T + f) * H + y) * W;
        for (let x = 0; x < W; x++) {
          dst[o + x] = sign * (src[(rowBase + (x >> 1)) * P + c * 4 + (y & 1) * 2 + (x & 1)] as number);
        }
      }
    }
  }
  return out === undefined ? Tensor.fromArray('f32', [1, C, T, H, W], dst) : out.reshape([1, C, T, H, W]);
}
