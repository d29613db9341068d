// Fused passes a DiT block does in a row, bit-identical to the ops they replace (the native side
// rounds every intermediate as the separate ops do and reuses their row kernels): one pass over the
// activations instead of two, and no intermediate tensor.
import { NinodesError } from '../errors.js';
import { Tensor } from '../tensor.js';
import { callNative } from '../native-addon.js';
import { planNorm } from './norms.js';
import { outputF32, requireF32, requireShape, requireSuffixBroadcast } from '../arg-checks.js';

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
    throw new NinodesError('SHAPE_MISMATCH', `${op}: 'gate' is empty`, { value: tg.shape, where: `${op}(gate)` });
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
