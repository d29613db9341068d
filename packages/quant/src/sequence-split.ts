// Sequence parallelism (Megatron-SP), the part both sides of the seam need: which token rows a
// tensor-parallel rank owns between the column- and row-parallel layers, and the one collective a
// model needs itself (gathering the rows back). tp implements SequenceSplit over its communicator;
// models runs the block's row-wise work (norms, modulation, gated residuals) on the own rows only.
import type { Tensor } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';
import { checkShardRank } from './parallel-shard.js';

/** Rows [start, stop) of a sequence. */
export interface RowRange {
  readonly start: number;
  readonly stop: number;
}

/**
 * The rows rank `rank` of `size` owns in a sequence of `tokens` rows: [⌊r·S/n⌋, ⌊(r+1)·S/n⌋). The
 * ranges tile [0, S) in rank order and differ by at most one row (S = 256 over 3 ranks: 85, 85,
 * 86); a rank may own none when S < n.
 */
export function sequenceRows(tokens: number, rank: number, size: number): RowRange {
  checkShardRank(rank, size, 'sequenceRows');
  if (!Number.isSafeInteger(tokens) || tokens < 0) {
    throw new QuantError('INVALID_ARGUMENT', `sequence rows: ${tokens} is not a number of rows`, { value: tokens, where: 'sequenceRows', hint: 'pass the sequence length, an integer >= 0' });
  }
  return { start: Math.floor((rank * tokens) / size), stop: Math.floor(((rank + 1) * tokens) / size) };
}

/** Elements of each rank's rows of an [S, width] row-major matrix, in rank order (a collective's counts). */
export function sequenceCounts(tokens: number, size: number, width: number): number[] {
  return Array.from({ length: size }, (_, r) => {
    const { start, stop } = sequenceRows(tokens, r, size);
    return (stop - start) * width;
  });
}

/**
 * A tensor-parallel rank's share of the token rows (sequence parallelism). Between a block's
 * row-parallel and column-parallel linears each rank holds only `rows(S)` of the hidden state: the
 * row-parallel ops reduce-scatter their sums (each rank receives its own rows), the column-parallel
 * ops gather the rows before their GEMM. A model given one runs its row-wise work on the own rows
 * and calls `gatherRows` where every rank needs every row again.
 */
export interface SequenceSplit {
  readonly rank: number;
  readonly size: number;
  /** This rank's rows of a sequence of `tokens` rows (sequenceRows). */
  rows(tokens: number): RowRange;
  /**
   * A collective (every rank calls it, in the same order): x [S, W] f32 holds this rank's rows;
   * afterwards every row holds its owner's values, on every rank (in place).
   */
  gatherRows(x: Tensor<'f32'>): Promise<void>;
}
