// Fused passes a DiT block does in a row, bit-identical to the ops they replace (the native side
// rounds every intermediate as the separate ops do and reuses their row kernels): one pass over the
// activations instead of two, and no intermediate tensor.
import { KernelsError } from '../error-codes.js';
import { Tensor } from '../tensor.js';
import { callNative } from '../native-addon.js';
import { planNorm } from './norms.js';
import { planRope } from './rope.js';
import { matrixDims, optionalF32, outputF32, requireF32, requireFiniteNumber, requireShape, requireSuffixBroadcast } from '../arg-checks.js';

/**
 * x + branch·gate, gate broadcast over the rows of branch (a trailing part of its shape); =
 * add(x, mul(branch, gate)) bit for bit. Into `out` when given (see outputF32).
 */
export function gatedResidual(x: Tensor<'f32'>, branch: Tensor<'f32'>, gate: Tensor<'f32'>, out?: Tensor<'f32'>): Tensor<'f32'> {
  const op = 'gatedResidual';
  const tx = requireF32(x, op, 'x');
  const to = requireF32(branch, op, 'branch');
  const tg = requireF32(gate, op, 'gate');
  requireShape(to, tx.shape, `${op}(out)`);
  requireSuffixBroadcast(to, tg, op, 'gate');
  if (tg.numel === 0 && to.numel !== 0) {
    throw new KernelsError('SHAPE_MISMATCH', `${op}: 'gate' is empty`, { value: tg.shape, where: `${op}(gate)` });
  }
  const y = outputF32(out, tx.shape, op, [tx, to, tg]);
  callNative(op, (n) => n.gatedResidualF32(tx.data, to.data, tg.data, y.data));
  return y;
}

/** modulate(rmsNorm(x, weight, eps), shift, scale) in one pass, bit for bit; shift and scale [D], D the last dim of x. Into `out` when given (see outputF32). */
export function rmsNormModulate(x: Tensor<'f32'>, weight: Tensor<'f32'> | null | undefined, shift: Tensor<'f32'>, scale: Tensor<'f32'>, eps = 1e-6, out?: Tensor<'f32'>): Tensor<'f32'> {
  const op = 'rmsNormModulate';
  const p = planNorm(op, x, weight, undefined, eps);
  const tsh = requireF32(shift, op, 'shift');
  const tsc = requireF32(scale, op, 'scale');
  requireShape(tsh, [p.dim], `${op}(shift)`);
  requireShape(tsc, [p.dim], `${op}(scale)`);
  const y = outputF32(out, p.x.shape, op, [p.x, p.weight, tsh, tsc]);
  callNative(op, (n) => n.rmsNormModulateF32(p.x.data, p.weight?.data ?? null, tsh.data, tsc.data, y.data, p.rows, p.dim, p.eps));
  return y;
}

export interface QkNormRopeOptions {
  heads: number;
  /** Leading dims of each head that rotate (even, ≤ headDim). */
  rotDim: number;
  eps?: number;
  /** Where q, k and v go (each f32 [heads, S, headDim], see outputF32); default fresh tensors. */
  out?: { q: Tensor<'f32'>; k: Tensor<'f32'>; v: Tensor<'f32'> };
}

/**
 * The attention inputs of a DiT block from its fused qkv projection [S, 3·heads·D] in one pass:
 * q = ropeSplitHalf(rmsNorm(q_h, qWeight, eps)), k likewise with kWeight, v copied, each heads-first
 * [heads, S, D]. Bit for bit what splitting the heads, rmsNorm, ropeSplitHalf and the transpose give
 * one after another (the same compiled row kernels). angles [S, rotDim] or [S, rotDim / 2].
 */
export function qkNormRope(
  qkv: Tensor<'f32'>,
  qWeight: Tensor<'f32'> | null | undefined,
  kWeight: Tensor<'f32'> | null | undefined,
  angles: Tensor<'f32'>,
  options: QkNormRopeOptions,
): { q: Tensor<'f32'>; k: Tensor<'f32'>; v: Tensor<'f32'> } {
  const op = 'qkNormRope';
  const t = requireF32(qkv, op, 'qkv');
  const heads = options?.heads;
  const [s, width] = matrixDims(t, `${op}(qkv)`);
  if (typeof heads !== 'number' || !Number.isSafeInteger(heads) || heads < 1 || width % (3 * heads) !== 0) {
    throw new KernelsError('INVALID_ARGUMENT', `${op}: heads must be a positive integer dividing qkv's ${width} columns into 3·heads heads`, { value: heads, where: `${op}(heads)` });
  }
  const headDim = width / (3 * heads);
  // The rope checks (rotDim even and ≤ headDim, angles [S, rotDim or rotDim/2]) on the [S, heads, D] view of q.
  const rope = planRope(t.view('f32', [s, heads, headDim]), angles, options.rotDim, op);
  const qw = optionalF32(qWeight, op, 'qWeight');
  const kw = optionalF32(kWeight, op, 'kWeight');
  if (qw) requireShape(qw, [headDim], `${op}(qWeight)`);
  if (kw) requireShape(kw, [headDim], `${op}(kWeight)`);
  const eps = requireFiniteNumber(options.eps ?? 1e-6, op, 'eps');
  const shape = [heads, s, headDim];
  const q = outputF32(options.out?.q, shape, `${op} q`, [t, rope.angles, qw, kw]);
  const k = outputF32(options.out?.k, shape, `${op} k`, [t, rope.angles, qw, kw, q]);
  const v = outputF32(options.out?.v, shape, `${op} v`, [t, rope.angles, qw, kw, q, k]);
  callNative(op, (n) => n.qkNormRopeF32(t.data, qw?.data ?? null, kw?.data ?? null, rope.angles.data, q.data, k.data, v.data, s, heads, headDim, rope.rotDim, rope.angleColumns, eps));
  return { q, k, v };
}
