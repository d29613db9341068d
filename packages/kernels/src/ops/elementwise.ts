import { KernelsError } from '../error-codes.js';
import { Tensor } from '../tensor.js';
import { callNative } from '../native-addon.js';
import { outputF32, requireF32, requireFiniteNumber, requireRank, requireSuffixBroadcast } from '../arg-checks.js';

export function planBinary(op: string, a: unknown, b: unknown): { a: Tensor<'f32'>; b: Tensor<'f32'> } {
  const ta = requireF32(a, op, 'a');
  const tb = requireF32(b, op, 'b');
  requireSuffixBroadcast(ta, tb, op, 'b');
  return { a: ta, b: tb };
}

export function planTernary(op: string, names: [string, string, string], x: unknown, a: unknown, b: unknown) {
  const tx = requireF32(x, op, names[0]);
  const ta = requireF32(a, op, names[1]);
  const tb = requireF32(b, op, names[2]);
  requireSuffixBroadcast(tx, ta, op, names[1]);
  requireSuffixBroadcast(tx, tb, op, names[2]);
  if (ta.numel !== tb.numel) {
    throw new KernelsError('SHAPE_MISMATCH', `${op}: '${names[1]}' [${ta.shape.join(', ')}] and '${names[2]}' [${tb.shape.join(', ')}] must have the same size`, {
      value: { [names[1]]: ta.shape, [names[2]]: tb.shape },
      where: op,
    });
  }
  return { x: tx, a: ta, b: tb };
}

export function planModulate(x: unknown, shift: unknown, scale: unknown) {
  const p = planTernary('modulate', ['x', 'shift', 'scale'], x, shift, scale);
  requireRank(p.x, 'atLeast1', 'modulate', 'x');
  return p;
}

/** a + b; b broadcasts when its shape is a trailing part of a's shape. Into `out` when given (see outputF32). */
export function add(a: Tensor<'f32'>, b: Tensor<'f32'>, out?: Tensor<'f32'>): Tensor<'f32'> {
  const p = planBinary('add', a, b);
  const y = outputF32(out, p.a.shape, 'add', [p.a, p.b]);
  callNative('add', (n) => n.addF32(p.a.data, p.b.data, y.data));
  return y;
}

/** a · b; b broadcasts when its shape is a trailing part of a's shape. */
export function mul(a: Tensor<'f32'>, b: Tensor<'f32'>): Tensor<'f32'> {
  const p = planBinary('mul', a, b);
  const out = Tensor.zeros('f32', p.a.shape);
  callNative('mul', (n) => n.mulF32(p.a.data, p.b.data, out.data));
  return out;
}

/** x + a·b; a and b have one shape that broadcasts over x. */
export function addcmul(x: Tensor<'f32'>, a: Tensor<'f32'>, b: Tensor<'f32'>): Tensor<'f32'> {
  const p = planTernary('addcmul', ['x', 'a', 'b'], x, a, b);
  const out = Tensor.zeros('f32', p.x.shape);
  callNative('addcmul', (n) => n.addcmulF32(p.x.data, p.a.data, p.b.data, out.data));
  return out;
}

/** adaLN modulation x·(1 + scale) + shift, shift/scale [D] (or any trailing shape of x); into `out` when given (see outputF32). */
export function modulate(x: Tensor<'f32'>, shift: Tensor<'f32'>, scale: Tensor<'f32'>, out?: Tensor<'f32'>): Tensor<'f32'> {
  const p = planModulate(x, shift, scale);
  const y = outputF32(out, p.x.shape, 'modulate', [p.x, p.a, p.b]);
  callNative('modulate', (n) => n.modulateF32(p.x.data, p.a.data, p.b.data, y.data));
  return y;
}

/** x · s. */
export function scale(x: Tensor<'f32'>, s: number): Tensor<'f32'> {
  const t = requireF32(x, 'scale', 'x');
  const v = requireFiniteNumber(s, 'scale', 's');
  const out = Tensor.zeros('f32', t.shape);
  callNative('scale', (n) => n.scaleF32(t.data, v, out.data));
  return out;
}
