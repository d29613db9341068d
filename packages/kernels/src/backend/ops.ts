// The ops a backend can run, each with one signature every backend implements and one plan (the
// shape, dtype and argument checks) that runs once, before any backend sees the operands. The
// signatures are the reference ops' minus `out` (a result lands in the owning backend's memory).
import { optionsOf, requireF32, requireFiniteNumber, requireRowScale, requireTensor } from '../arg-checks.js';
import { type Int8LinearQuantizedOptions, checkBias, checkWeightScale, int8Dims, linearDims } from '../linear-checks.js';
import { type HadamardOptions, resolveHadamard } from '../hadamard-options.js';
import { type AttentionOptions, planAttention } from '../ops/attention.js';
import { planSwiglu } from '../ops/activations.js';
import { planBinary, planModulate, planTernary } from '../ops/elementwise.js';
import { planNorm, planRows } from '../ops/norms.js';
import { planRope } from '../ops/rope.js';
import { type CastTarget, requireCastTarget } from '../reference/cast.js';
import type { LinearOptions } from '../linear.js';
import type { Tensor } from '../tensor.js';

/** What each op takes and returns, whichever backend runs it. */
export interface OpSignatures {
  add(a: Tensor<'f32'>, b: Tensor<'f32'>): Tensor<'f32'>;
  mul(a: Tensor<'f32'>, b: Tensor<'f32'>): Tensor<'f32'>;
  addcmul(x: Tensor<'f32'>, a: Tensor<'f32'>, b: Tensor<'f32'>): Tensor<'f32'>;
  modulate(x: Tensor<'f32'>, shift: Tensor<'f32'>, scale: Tensor<'f32'>): Tensor<'f32'>;
  scale(x: Tensor<'f32'>, s: number): Tensor<'f32'>;
  silu(x: Tensor<'f32'>): Tensor<'f32'>;
  gelu(x: Tensor<'f32'>): Tensor<'f32'>;
  swiglu(x: Tensor<'f32'>): Tensor<'f32'>;
  rmsNorm(x: Tensor<'f32'>, weight?: Tensor<'f32'> | null, eps?: number): Tensor<'f32'>;
  layerNorm(x: Tensor<'f32'>, weight?: Tensor<'f32'> | null, bias?: Tensor<'f32'> | null, eps?: number): Tensor<'f32'>;
  softmax(x: Tensor<'f32'>): Tensor<'f32'>;
  ropeSplitHalf(x: Tensor<'f32'>, angles: Tensor<'f32'>, rotDim: number): Tensor<'f32'>;
  attention(q: Tensor<'f32'>, k: Tensor<'f32'>, v: Tensor<'f32'>, opts?: Omit<AttentionOptions, 'out'>): Tensor<'f32'>;
  linear(x: Tensor, w: Tensor, bias?: Tensor, options?: Omit<LinearOptions, 'out'>): Tensor<'f32'>;
  int8LinearQuantized(qx: Tensor, xScale: Tensor, qw: Tensor, wScale: Tensor, options?: Omit<Int8LinearQuantizedOptions, 'out' | 'backend'>): Tensor<'f32'>;
  hadamard(x: Tensor, opts?: Omit<HadamardOptions, 'out'>): Tensor<'f32'>;
  cast(x: Tensor, to: CastTarget): Tensor;
}

export type OpName = keyof OpSignatures;
export type OpArgs<K extends OpName> = Parameters<OpSignatures[K]>;
export type OpResult<K extends OpName> = ReturnType<OpSignatures[K]>;

/** A backend's implementation of one op: synchronous or not, as its device runs. */
export type OpImpl<K extends OpName> = (...args: OpArgs<K>) => OpResult<K> | Promise<OpResult<K>>;

/** The ops a backend implements; an op it lacks is one it does not support. */
export type BackendOps = { readonly [K in OpName]?: OpImpl<K> };

export const OP_NAMES = [
  'add', 'mul', 'addcmul', 'modulate', 'scale', 'silu', 'gelu', 'swiglu', 'rmsNorm', 'layerNorm', 'softmax',
  'ropeSplitHalf', 'attention', 'linear', 'int8LinearQuantized', 'hadamard', 'cast',
] as const satisfies readonly OpName[];

type Plan<K extends OpName> = (...args: OpArgs<K>) => void;

// Each op's checks, shared by every backend: the plan functions the CPU ops already run (a CPU op
// checks again inside; the cost is a few comparisons), so a device backend gets operands it can trust.
const PLANS: { readonly [K in OpName]: Plan<K> } = {
  add: (a, b) => void planBinary('add', a, b),
  mul: (a, b) => void planBinary('mul', a, b),
  addcmul: (x, a, b) => void planTernary('addcmul', ['x', 'a', 'b'], x, a, b),
  modulate: (x, shift, scale) => void planModulate(x, shift, scale),
  scale: (x, s) => {
    requireF32(x, 'scale', 'x');
    requireFiniteNumber(s, 'scale', 's');
  },
  silu: (x) => void requireF32(x, 'silu', 'x'),
  gelu: (x) => void requireF32(x, 'gelu', 'x'),
  swiglu: (x) => void planSwiglu(x),
  rmsNorm: (x, weight, eps = 1e-6) => void planNorm('rmsNorm', x, weight ?? undefined, undefined, eps),
  layerNorm: (x, weight, bias, eps = 1e-5) => void planNorm('layerNorm', x, weight ?? undefined, bias ?? undefined, eps),
  softmax: (x) => void planRows('softmax', x),
  ropeSplitHalf: (x, angles, rotDim) => void planRope(x, angles, rotDim),
  attention: (q, k, v, opts) => void planAttention(q, k, v, opts),
  linear: (x, w, bias) => {
    const d = linearDims(x, w, 'linear', ['f32', 'bf16']);
    checkBias(bias, d.n, 'linear');
  },
  int8LinearQuantized: (qx, xScale, qw, wScale, options) => {
    const { m, n } = int8Dims(qx, qw, 'int8LinearQuantized');
    requireRowScale(xScale, m, 'int8LinearQuantized xScale');
    checkWeightScale(wScale, n, 'int8LinearQuantized wScale');
    checkBias(optionsOf(options, 'int8LinearQuantized options').bias, n, 'int8LinearQuantized');
  },
  hadamard: (x, opts) => void resolveHadamard(x, opts),
  cast: (x, to) => {
    requireTensor(x, 'cast');
    requireCastTarget(to);
  },
};

/** Runs op `name`'s shared checks on its arguments (throws the op's coded errors). */
export function planOp<K extends OpName>(name: K, args: OpArgs<K>): void {
  (PLANS[name] as Plan<K>)(...args);
}

/**
 * Whether an op's options ask for bf16 multiply precision (linear, attention): the rounding of a
 * CPU's bf16 units, which not every CPU has and the reference does not model.
 */
export function asksBf16Units<K extends OpName>(op: K, args: OpArgs<K>): boolean {
  if (op === 'linear') return (args as OpArgs<'linear'>)[3]?.precision === 'bf16';
  if (op === 'attention') return (args as OpArgs<'attention'>)[3]?.precision === 'bf16';
  return false;
}
