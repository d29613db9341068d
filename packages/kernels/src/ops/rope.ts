import { KernelsError } from '../error-codes.js';
import { Tensor } from '../tensor.js';
import { callNative } from '../native-addon.js';
import { outputF32, requireF32, requireRank } from '../arg-checks.js';

export interface RopePlan {
  x: Tensor<'f32'>;
  angles: Tensor<'f32'>;
  seq: number;
  heads: number;
  headDim: number;
  rotDim: number;
  angleColumns: number;
}

export function planRope(x: unknown, angles: unknown, rotDim: unknown, op = 'ropeSplitHalf'): RopePlan {
  const tx = requireF32(x, op, 'x');
  const ta = requireF32(angles, op, 'angles');
  requireRank(tx, 3, op, 'x');
  requireRank(ta, 2, op, 'angles');
  const [seq, heads, headDim] = tx.shape as [number, number, number];
  if (typeof rotDim !== 'number' || !Number.isInteger(rotDim) || rotDim < 0 || rotDim % 2 !== 0 || rotDim > headDim) {
    throw new KernelsError('INVALID_ARGUMENT', `${op}: rotDim must be an even integer in [0, ${headDim}], got ${String(rotDim)}`, {
      value: rotDim,
      where: `${op}(rotDim)`,
    });
  }
  const [aSeq, aCols] = ta.shape as [number, number];
  if (aSeq !== seq || (aCols !== rotDim && aCols !== rotDim / 2)) {
    throw new KernelsError('SHAPE_MISMATCH', `${op}: angles [${ta.shape.join(', ')}] must be [${seq}, ${rotDim}] (or [${seq}, ${rotDim / 2}])`, {
      value: ta.shape,
      where: `${op}(angles)`,
      hint: 'one row of angles per position; column i is the angle of pair (i, i + rotDim/2)',
    });
  }
  return { x: tx, angles: ta, seq, heads, headDim, rotDim, angleColumns: aCols };
}

/**
 * Partial split-half RoPE. x [S, H, D], angles [S, R]: in every head, pair i = (i, i + R/2) for
 * i < R/2 rotates by angles[s, i] (x·cos + rotate_half(x)·sin); dims >= R pass through. Into
 * `out` when given (see outputF32).
 */
export function ropeSplitHalf(x: Tensor<'f32'>, angles: Tensor<'f32'>, rotDim: number, out?: Tensor<'f32'>): Tensor<'f32'> {
  const p = planRope(x, angles, rotDim);
  const y = outputF32(out, p.x.shape, 'ropeSplitHalf', [p.x, p.angles]);
  callNative('ropeSplitHalf', (n) =>
    n.ropeSplitHalfF32(p.x.data, p.angles.data, y.data, p.seq, p.heads, p.headDim, p.rotDim, p.angleColumns),
  );
  return y;
}
