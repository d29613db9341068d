import { KernelsError } from '../error-codes.js';
import { Tensor } from '../tensor.js';
import { callNativeAsync } from '../native-addon.js';
import { outputF32, requireF32, requireRank } from '../arg-checks.js';
import type { LinearPrecision } from '../linear.js';

export interface AttentionOptions {
  /** Score scale; default 1/√D. */
  scale?: number;
  /** Where the result goes ([H, S, D] f32, or [S, H·D] with `mergeHeads`; see outputF32); default a fresh tensor. */
  out?: Tensor<'f32'>;
  /**
   * Write the output as [S, H·D] (each query's heads side by side, the layout an output projection
   * reads) instead of [H, S, D]: the same values, no separate transpose pass. Not for attentionNaive.
   */
  mergeHeads?: boolean;
  /**
   * 'f32' (default): everything in f32. 'bf16': q, k, v rounded to bf16 (nearest even), q·kᵀ and
   * P·V on the CPU's bf16 units with f32 accumulation, the softmax in f32 and its exps rounded to
   * bf16 for P·V — PyTorch's bf16 SDPA on CPU. Needs `buildInfo().bf16Units`, else
   * BACKEND_UNAVAILABLE (never a silent switch).
   */
  precision?: LinearPrecision;
}

export interface AttentionPlan {
  q: Tensor<'f32'>;
  k: Tensor<'f32'>;
  v: Tensor<'f32'>;
  heads: number;
  seqQ: number;
  seqK: number;
  headDim: number;
  scale: number;
}

export function planAttention(q: unknown, k: unknown, v: unknown, opts: AttentionOptions | undefined): AttentionPlan {
  const op = 'attention';
  const tq = requireF32(q, op, 'q');
  const tk = requireF32(k, op, 'k');
  const tv = requireF32(v, op, 'v');
  requireRank(tq, 3, op, 'q');
  requireRank(tk, 3, op, 'k');
  requireRank(tv, 3, op, 'v');
  const [heads, seqQ, headDim] = tq.shape as [number, number, number];
  const [kh, seqK, kd] = tk.shape as [number, number, number];
  if (kh !== heads || kd !== headDim || tv.shape[0] !== heads || tv.shape[1] !== seqK || tv.shape[2] !== headDim) {
    throw new KernelsError('SHAPE_MISMATCH', `${op}: q [${tq.shape.join(', ')}], k [${tk.shape.join(', ')}], v [${tv.shape.join(', ')}] do not agree`, {
      value: { q: tq.shape, k: tk.shape, v: tv.shape },
      where: op,
      hint: 'q [H, S, D], k and v [H, T, D]',
    });
  }
  const scale = opts?.scale ?? (headDim === 0 ? 1 : 1 / Math.sqrt(headDim));
  if (typeof scale !== 'number' || !Number.isFinite(scale)) {
    throw new KernelsError('INVALID_ARGUMENT', `${op}: scale must be a finite number`, { value: scale, where: `${op}(opts.scale)` });
  }
  return { q: tq, k: tk, v: tv, heads, seqQ, seqK, headDim, scale };
}

/**
 * softmax(q·kᵀ·scale)·v per head, q [H,S,D], k/v [H,T,D] -> [H,S,D]. Tiled flash-style with an
 * online softmax: O(S·D) memory, fp32 accumulation, parallel over heads and query blocks, the same
 * bits for any thread count. With T = 0 the output is zeros. `precision: 'bf16'` runs the bf16
 * kernel (see AttentionOptions.precision).
 */
export async function attention(q: Tensor<'f32'>, k: Tensor<'f32'>, v: Tensor<'f32'>, opts?: AttentionOptions): Promise<Tensor<'f32'>> {
  const p = planAttention(q, k, v, opts);
  const precision = opts?.precision ?? 'f32';
  if (precision !== 'f32' && precision !== 'bf16') {
    throw new KernelsError('INVALID_ARGUMENT', `attention: precision must be 'f32' or 'bf16', got '${String(precision)}'`, { value: precision, where: 'attention(opts.precision)' });
  }
  const merge = opts?.mergeHeads ?? false;
  if (typeof merge !== 'boolean') {
    throw new KernelsError('INVALID_ARGUMENT', `attention: mergeHeads must be a boolean, got ${String(merge)}`, { value: merge, where: 'attention(opts.mergeHeads)' });
  }
  const shape = merge ? [p.seqQ, p.heads * p.headDim] : p.q.shape;
  const out = outputF32(opts?.out, shape, 'attention', [p.q, p.k, p.v]);
  await callNativeAsync('attention', (n) =>
    precision === 'bf16'
      ? n.attentionBf16(p.q.data, p.k.data, p.v.data, out.data, p.heads, p.seqQ, p.seqK, p.headDim, p.scale, merge)
      : n.attentionF32(p.q.data, p.k.data, p.v.data, out.data, p.heads, p.seqQ, p.seqK, p.headDim, p.scale, merge),
  );
  return out;
}

/**
 * The textbook attention that materializes the S×T score matrix per head (O(S·T) memory). Exists
 * as the benchmark baseline for `attention`; use `attention`.
 */
export async function attentionNaive(q: Tensor<'f32'>, k: Tensor<'f32'>, v: Tensor<'f32'>, opts?: AttentionOptions): Promise<Tensor<'f32'>> {
  const p = planAttention(q, k, v, opts);
  if (opts?.mergeHeads === true) {
    throw new KernelsError('INVALID_ARGUMENT', 'attentionNaive: mergeHeads is not supported (it writes [H, S, D])', { value: true, where: 'attentionNaive(opts.mergeHeads)', hint: 'use attention for a merged [S, H·D] output' });
  }
  const out = Tensor.zeros('f32', p.q.shape);
  await callNativeAsync('attentionNaive', (n) =>
    n.attentionNaiveF32(p.q.data, p.k.data, p.v.data, out.data, p.heads, p.seqQ, p.seqK, p.headDim, p.scale),
  );
  return out;
}
