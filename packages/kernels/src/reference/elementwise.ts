// Reference elementwise ops: exact float32 for single operations, float64 then one rounding for
// the fused ones (addcmul, modulate).
import { planBinary, planModulate, planTernary } from '../ops/elementwise.js';
import { requireF32, requireFiniteNumber } from '../arg-checks.js';
import { Tensor } from '../tensor.js';

function periodic(n: number, fn: (i: number, j: number) => number, period: number, shape: readonly number[]): Tensor<'f32'> {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = fn(i, period === 0 ? 0 : i % period);
  return Tensor.fromArray('f32', shape, out);
}

export function add(a: Tensor<'f32'>, b: Tensor<'f32'>): Tensor<'f32'> {
  const p = planBinary('add', a, b);
  const [x, y] = [p.a.data, p.b.data];
  return periodic(x.length, (i, j) => (x[i] as number) + (y[j] as number), y.length, p.a.shape);
}

export function mul(a: Tensor<'f32'>, b: Tensor<'f32'>): Tensor<'f32'> {
  const p = planBinary('mul', a, b);
  const [x, y] = [p.a.data, p.b.data];
  return periodic(x.length, (i, j) => (x[i] as number) * (y[j] as number), y.length, p.a.shape);
}

export function addcmul(x: Tensor<'f32'>, a: Tensor<'f32'>, b: Tensor<'f32'>): Tensor<'f32'> {
  const p = planTernary('addcmul', ['x', 'a', 'b'], x, a, b);
  const [xs, as, bs] = [p.x.data, p.a.data, p.b.data];
  return periodic(xs.length, (i, j) => (xs[i] as number) + (as[j] as number) * (bs[j] as number), as.length, p.x.shape);
}

export function modulate(x: Tensor<'f32'>, shift: Tensor<'f32'>, scale: Tensor<'f32'>): Tensor<'f32'> {
  const p = planModulate(x, shift, scale);
  const [xs, sh, sc] = [p.x.data, p.a.data, p.b.data];
  return periodic(xs.length, (i, j) => (xs[i] as number) * (1 + (sc[j] as number)) + (sh[j] as number), sh.length, p.x.shape);
}

export function scale(x: Tensor<'f32'>, s: number): Tensor<'f32'> {
  const t = requireF32(x, 'scale', 'x');
  // The scalar is rounded to float32 first, as torch does for a float32 tensor.
  const v = Math.fround(requireFiniteNumber(s, 'scale', 's'));
  const xs = t.data;
  return periodic(xs.length, (i) => (xs[i] as number) * v, 0, t.shape);
}
