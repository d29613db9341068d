/**
 * Work formulas and ready-made contenders for the kernel ops the issues compare: a memcpy bound of
 * the op's own byte traffic and the PyTorch CPU equivalent, on the same thread count as ours.
 * A kernels suite case does `against: await linearContenders(ctx, shape, 'f32')` and
 * `work: (p) => linearWork(shape, 'f32')`.
 */
import type { CaseContext, ContenderKind, Contender, Work } from '../suite.js';

export type Against = Record<string, { kind: ContenderKind; contender: Contender }>;

export interface LinearShape {
  /** Rows of x (tokens). */
  m: number;
  /** Output features (rows of W). */
  n: number;
  /** Input features. */
  k: number;
  bias?: boolean;
}

export interface AttentionShape {
  batch: number;
  heads: number;
  seq: number;
  dim: number;
}

export type FloatDType = 'f32' | 'bf16' | 'f16';

const elemBytes = (d: FloatDType): number => (d === 'f32' ? 4 : 2);
const torchDType = (d: FloatDType): string => ({ f32: 'float32', bf16: 'bfloat16', f16: 'float16' })[d];

/** y = x·Wᵀ + b: reads x [m,k], W [n,k], b [n]; writes y [m,n]; 2·m·n·k flops. */
export function linearWork(s: LinearShape, dtype: FloatDType): Work {
  const e = elemBytes(dtype);
  return { bytes: (s.m * s.k + s.n * s.k + (s.bias === false ? 0 : s.n) + s.m * s.n) * e, flops: 2 * s.m * s.n * s.k };
}

/** int8 [m,k] x int8 [k,n] -> int32 [m,n]: the matmul inside an int8 linear (torch._int_mm). */
export function intMmWork(s: LinearShape): Work {
  return { bytes: s.m * s.k + s.k * s.n + 4 * s.m * s.n, flops: 2 * s.m * s.n * s.k };
}

/** softmax(q·kᵀ/√d)·v: reads q, k, v, writes o (each b·h·s·d); 4·b·h·s²·d flops (two matmuls). */
export function attentionWork(s: AttentionShape, dtype: FloatDType): Work {
  const t = s.batch * s.heads * s.seq * s.dim;
  return { bytes: 4 * t * elemBytes(dtype), flops: 4 * s.batch * s.heads * s.seq * s.seq * s.dim };
}

/** The memcpy bound of an op: a plain copy of the same byte traffic. */
export function memcpyBound(ctx: CaseContext, work: Work): Against {
  const contender: Contender = work.bytes === undefined ? { missing: 'the op declares no byte traffic' } : ctx.peers.memcpy(work.bytes);
  return { memcpy: { kind: 'bound', contender } };
}

async function withPeer(ctx: CaseContext, work: Work, kind: string, params: Record<string, unknown>): Promise<Against> {
  // The peer runs on as many threads as ours, or the ratio compares thread counts, not kernels.
  return { ...memcpyBound(ctx, work), torch: { kind: 'peer', contender: await ctx.peers.python(kind, { ...params, threads: ctx.threads }) } };
}

/** memcpy bound and torch.nn.functional.linear for one linear shape. */
export function linearContenders(ctx: CaseContext, s: LinearShape, dtype: FloatDType): Promise<Against> {
  return withPeer(ctx, linearWork(s, dtype), 'torch.linear', { m: s.m, n: s.n, k: s.k, bias: s.bias !== false, dtype: torchDType(dtype) });
}

/** memcpy bound and torch._int_mm for one int8 matmul shape. */
export function intMmContenders(ctx: CaseContext, s: LinearShape): Promise<Against> {
  return withPeer(ctx, intMmWork(s), 'torch.int_mm', { m: s.m, n: s.n, k: s.k });
}

/** memcpy bound and torch.nn.functional.scaled_dot_product_attention for one attention shape. */
export function attentionContenders(ctx: CaseContext, s: AttentionShape, dtype: FloatDType): Promise<Against> {
  return withPeer(ctx, attentionWork(s, dtype), 'torch.sdpa', { ...s, dtype: torchDType(dtype) });
}
