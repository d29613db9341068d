// Shape and dtype checks shared by the fp32 ops and their reference twins: both reject the same
// inputs with the same codes before touching memory.
import type { DType } from '../dtype.js';
import { NinodesError } from '../errors.js';
import { Tensor } from '../tensor.js';

export function requireF32(t: unknown, op: string, name: string): Tensor<'f32'> {
  if (!(t instanceof Tensor)) {
    throw new NinodesError('INVALID_ARGUMENT', `${op}: '${name}' must be a Tensor`, { value: typeof t, where: `${op}(${name})` });
  }
  if (t.dtype !== 'f32') {
    throw new NinodesError('DTYPE_MISMATCH', `${op}: '${name}' must be f32, got ${t.dtype}`, {
      value: t.dtype,
      where: `${op}(${name})`,
      hint: 'cast it to f32 first',
    });
  }
  return t as Tensor<'f32'>;
}

export function optionalF32(t: unknown, op: string, name: string): Tensor<'f32'> | undefined {
  return t === undefined || t === null ? undefined : requireF32(t, op, name);
}

export function requireRank(t: Tensor, rank: number | 'atLeast1', op: string, name: string): void {
  const ok = rank === 'atLeast1' ? t.rank >= 1 : t.rank === rank;
  if (!ok) {
    throw new NinodesError('SHAPE_MISMATCH', `${op}: '${name}' must have ${rank === 'atLeast1' ? 'at least 1 dimension' : `${rank} dimensions`}, got [${t.shape.join(', ')}]`, {
      value: t.shape,
      where: `${op}(${name})`,
    });
  }
}

export function lastDim(t: Tensor): number {
  return t.shape[t.shape.length - 1] ?? 1;
}

export function requireShape(t: Tensor, shape: readonly number[], op: string, name: string): void {
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    throw new NinodesError('SHAPE_MISMATCH', `${op}: '${name}' has shape [${t.shape.join(', ')}], expected [${shape.join(', ')}]`, {
      value: t.shape,
      where: `${op}(${name})`,
    });
  }
}

/** `b` broadcasts over `a` when its shape, without leading 1s, is a suffix of `a`'s shape. */
export function requireSuffixBroadcast(a: Tensor, b: Tensor, op: string, name: string): void {
  const core = [...b.shape];
  while (!suffixMatches(a.shape, core) && core[0] === 1) core.shift();
  if (!suffixMatches(a.shape, core)) {
    throw new NinodesError('SHAPE_MISMATCH', `${op}: '${name}' of shape [${b.shape.join(', ')}] does not broadcast over [${a.shape.join(', ')}]`, {
      value: { a: a.shape, [name]: b.shape },
      where: `${op}(${name})`,
      hint: `'${name}' must equal a trailing part of the other shape (leading 1s allowed)`,
    });
  }
}

function suffixMatches(shape: readonly number[], suffix: readonly number[]): boolean {
  if (suffix.length > shape.length) return false;
  const off = shape.length - suffix.length;
  return suffix.every((d, i) => shape[off + i] === d);
}

export function requireFiniteNumber(v: unknown, op: string, name: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new NinodesError('INVALID_ARGUMENT', `${op}: '${name}' must be a finite number`, { value: v, where: `${op}(${name})` });
  }
  return v;
}

export function requireDTypeIn<T extends DType>(t: unknown, allowed: readonly T[], op: string, name: string): Tensor<T> {
  if (!(t instanceof Tensor)) {
    throw new NinodesError('INVALID_ARGUMENT', `${op}: '${name}' must be a Tensor`, { value: typeof t, where: `${op}(${name})` });
  }
  if (!(allowed as readonly string[]).includes(t.dtype)) {
    throw new NinodesError('DTYPE_MISMATCH', `${op}: '${name}' has dtype ${t.dtype}; supported: ${allowed.join(', ')}`, {
      value: t.dtype,
      where: `${op}(${name})`,
    });
  }
  return t as Tensor<T>;
}
