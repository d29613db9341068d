// Fused passes a DiT block does in a row, bit-identical to the ops they replace (the native side
// rounds every intermediate as the separate ops do and reuses their row kernels): one pass over the
// activations instead of two, and no intermediate tensor.
import { KernelsError } from '../error-codes.js';
import { Tensor } from '../tensor.js';
import { callNative } from '../native-addon.js';
import { planNorm } from './norms.js';
import { requireF32, requireShape, requireSuffixBroadcast } from '../arg-checks.js';

/** x + out·gate, gate broadcast over the rows of out (a trailing part of its shape); = add(x, mul(out, gate)) bit for bit. */
export function gatedResidual(x: Tensor<'f32'>, out: Tensor<'f32'>, gate: Tensor<'f32'>): Tensor<'f32'> {
  const op = 'gatedResidual';
  const tx = requireF32(x, op, 'x');
  const to = requireF32(out, op, 'out');
  const tg = requireF32(gate, op, 'gate');
  requireShape(to, tx.shape, `${op}(out)`);
  requireSuffixBroadcast(to, tg, op, 'gate');
  if (tg.numel === 0 && to.numel !== 0) {
    throw new KernelsError('SHAPE_MISMATCH', `${op}: 'gate' is empty`, { value: tg.shape, where: `${op}(gate)` });
  }
  const y = Tensor.zeros('f32', tx.shape);
  callNative(op, (n) => n.gatedResidualF32(tx.data, to.data, tg.data, y.data));
  return y;
}

/** modulate(rmsNorm(x, weight, eps), shift, scale) in one pass, bit for bit; shift and scale [D], D the last dim of x. */
export function rmsNormModulate(x: Tensor<'f32'>, weight: Tensor<'f32'> | null | undefined, shift: Tensor<'f32'>, scale: Tensor<'f32'>, eps = 1e-6): Tensor<'f32'> {
  const op = 'rmsNormModulate';
  const p = planNorm(op, x, weight, undefined, eps);
  const tsh = requireF32(shift, op, 'shift');
  const tsc = requireF32(scale, op, 'scale');
  requireShape(tsh, [p.dim], `${op}(shift)`);
  requireShape(tsc, [p.dim], `${op}(scale)`);
  const y = Tensor.zeros('f32', p.x.shape);
  callNative(op, (n) => n.rmsNormModulateF32(p.x.data, p.weight?.data ?? null, tsh.data, tsc.data, y.data, p.rows, p.dim, p.eps));
  return y;
}
