// The one module of argument checks for every op, native and reference alike: each dtype and shape
// is checked in TypeScript before the addon sees a pointer (the addon checks again; this layer gives
// the better message), and a native op and its reference twin reject the same inputs with the same
// codes. Op-specific option checks build on these (linear-checks.ts, fp8-options.ts, hadamard-options.ts).
import type { DType } from './dtype.js';
import { KernelsError } from './error-codes.js';
import { Tensor } from './tensor.js';

/** A Tensor of either module build (ESM or CJS: Tensor's instanceof accepts both). */
export function requireTensor(t: unknown, where: string): asserts t is Tensor {
  if (!(t instanceof Tensor)) {
    throw new KernelsError('INVALID_ARGUMENT', `${where}: expected a Tensor`, { value: t, where, hint: 'pass a Tensor from @ninodes/kernels' });
  }
}

export function requireDType<D extends DType>(t: unknown, allowed: readonly D[], where: string): asserts t is Tensor<D> {
  requireTensor(t, where);
  if (!(allowed as readonly string[]).includes(t.dtype)) {
    throw new KernelsError('DTYPE_MISMATCH', `${where}: dtype ${t.dtype} is not one of ${allowed.join(', ')}`, {
      value: t.dtype,
      where,
      hint: `convert it first (cast) to ${allowed[0]}`,
    });
  }
}

export function matrixDims(t: Tensor, where: string, flatten = false): [number, number] {
  if (t.rank === 2 || (flatten && t.rank >= 1)) {
    const cols = t.shape[t.rank - 1] as number;
    const rows = t.rank === 1 ? 1 : t.shape.slice(0, -1).reduce((a, b) => a * b, 1);
    return [rows, cols];
  }
  throw new KernelsError('SHAPE_MISMATCH', `${where}: expected a ${flatten ? 'tensor of rank >= 1' : 'rank-2 tensor'}, got shape [${t.shape.join(', ')}]`, {
    value: t.shape,
    where,
  });
}

export function requireShape(t: Tensor, shape: readonly number[], where: string, hint?: string): void {
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    throw new KernelsError('SHAPE_MISMATCH', `${where}: expected shape [${shape.join(', ')}], got [${t.shape.join(', ')}]`, {
      value: t.shape,
      where,
      ...(hint === undefined ? {} : { hint }),
    });
  }
}

/** A per-row scale: [M, 1] or [M]. */
export function requireRowScale(t: Tensor, rows: number, where: string): void {
  requireDType(t, ['f32'], where);
  const ok = (t.rank === 2 && t.shape[0] === rows && t.shape[1] === 1) || (t.rank === 1 && t.shape[0] === rows);
  if (!ok) {
    throw new KernelsError('SHAPE_MISMATCH', `${where}: expected a [${rows}, 1] scale, got [${t.shape.join(', ')}]`, { value: t.shape, where });
  }
}

export function requirePositiveScales(values: Float32Array, where: string): void {
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (!(Number.isFinite(v) && v > 0)) {
      throw new KernelsError('INVALID_ARGUMENT', `${where}: scale of row ${i} is ${v}, not a positive finite number`, {
        value: v,
        where: `${where}[${i}]`,
        hint: 'scales come from absmax / 127 and are > 0',
      });
    }
  }
}

export type HadamardOrder = 'regular' | 'sylvester';

export function checkHadamardGroup(cols: number, group: number, order: HadamardOrder, where: string): void {
  const base = order === 'regular' ? 4 : 2;
  let g = group;
  const integer = Number.isSafeInteger(group) && group >= 1 && group <= 2 ** 24;
  while (integer && g > 1 && g % base === 0) g /= base;
  if (!integer || g !== 1) {
    throw new KernelsError('INVALID_ARGUMENT', `${where}: group ${show(group)} is not a power of ${base}`, {
      value: group,
      where,
      hint: order === 'regular' ? 'the regular Hadamard exists for powers of 4 (16, 64, 256, ...)' : 'sylvester order needs a power of 2',
    });
  }
  if (order !== 'regular' && order !== 'sylvester') {
    throw new KernelsError('INVALID_ARGUMENT', `${where}: order must be 'regular' or 'sylvester'`, { value: order, where });
  }
  if (cols % group !== 0) {
    throw new KernelsError('GROUP_MISMATCH', `${where}: last dimension ${cols} is not a multiple of the group ${group}`, {
      value: { cols, group },
      where,
      hint: 'pad K to a multiple of the group, or rotate with a group that divides it',
    });
  }
}

/** A printable form of any value (String() throws on null-prototype objects and symbols' kin). */
export function show(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint' || value === undefined || value === null) return `${value}`;
  return Object.prototype.toString.call(value);
}

/** Options argument: undefined -> {}, an object -> itself, anything else -> INVALID_ARGUMENT. */
export function optionsOf<T extends object>(opts: T | undefined, where: string): Partial<T> {
  if (opts === undefined) return {};
  if (opts === null || typeof opts !== 'object') {
    throw new KernelsError('INVALID_ARGUMENT', `${where}: options must be an object, got ${show(opts)}`, { value: opts, where });
  }
  return opts;
}

// The fp32 transformer ops name an argument as (op, name); `where` is then `op(name)`.

export function requireF32(t: unknown, op: string, name: string): Tensor<'f32'> {
  requireDType(t, ['f32'], `${op}(${name})`);
  return t;
}

export function optionalF32(t: unknown, op: string, name: string): Tensor<'f32'> | undefined {
  return t === undefined || t === null ? undefined : requireF32(t, op, name);
}

export function requireRank(t: Tensor, rank: number | 'atLeast1', op: string, name: string): void {
  const ok = rank === 'atLeast1' ? t.rank >= 1 : t.rank === rank;
  if (!ok) {
    throw new KernelsError('SHAPE_MISMATCH', `${op}: '${name}' must have ${rank === 'atLeast1' ? 'at least 1 dimension' : `${rank} dimensions`}, got [${t.shape.join(', ')}]`, {
      value: t.shape,
      where: `${op}(${name})`,
    });
  }
}

export function lastDim(t: Tensor): number {
  return t.shape[t.shape.length - 1] ?? 1;
}

/** `b` broadcasts over `a` when its shape, without leading 1s, is a suffix of `a`'s shape. */
export function requireSuffixBroadcast(a: Tensor, b: Tensor, op: string, name: string): void {
  const core = [...b.shape];
  while (!suffixMatches(a.shape, core) && core[0] === 1) core.shift();
  if (!suffixMatches(a.shape, core)) {
    throw new KernelsError('SHAPE_MISMATCH', `${op}: '${name}' of shape [${b.shape.join(', ')}] does not broadcast over [${a.shape.join(', ')}]`, {
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
    throw new KernelsError('INVALID_ARGUMENT', `${op}: '${name}' must be a finite number`, { value: v, where: `${op}(${name})` });
  }
  return v;
}

/**
 * The f32 output of an op: `out` when given (checked: f32, exactly `shape`, live, not overlapping
 * any input, since the native passes read inputs while they write), else a fresh zeroed tensor.
 * Callers that run the same shapes every step pass `out` to allocate nothing in the steady state.
 */
export function outputF32(out: unknown, shape: readonly number[], op: string, inputs: readonly (Tensor | null | undefined)[]): Tensor<'f32'> {
  if (out === undefined) return Tensor.zeros('f32', shape);
  const where = `${op}(out)`;
  requireDType(out, ['f32'], where);
  requireShape(out, shape, where);
  if (out.disposed) throw new KernelsError('TENSOR_DISPOSED', `${where}: ${out.toString()} was disposed`, { where, hint: 'pass a live tensor' });
  for (const t of inputs) {
    if (t && t.buffer === out.buffer && out.byteOffset < t.byteOffset + t.byteLength && t.byteOffset < out.byteOffset + out.byteLength) {
      throw new KernelsError('INVALID_ARGUMENT', `${where} overlaps an input`, { where, hint: 'pass memory disjoint from the inputs' });
    }
  }
  return out;
}
