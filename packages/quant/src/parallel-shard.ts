// Tensor-parallel vocabulary shared by ModelLayout (model-layout.ts) and LinearSpec (linear-op.ts).
import { QuantError } from './error-codes.js';

/** How a linear splits across tensor-parallel ranks (Megatron's column/row parallelism). */
export type ParallelRole =
  | 'column' // output rows split: each rank computes its slice of y; no reduction
  | 'row' // input columns split: each rank computes a partial y; partial sums are reduced
  | 'gathered' // output rows split as `column`, the ranks' slices of y concatenated (allgather): the
  // model sees the whole output. For big layers on few rows (adaLN: one row per timestep), where the
  // weight is worth splitting and the output is cheap to send; exact for every format.
  | 'replicated'; // every rank holds the whole layer

/**
 * How the output rows of a fused linear are laid out, so a column split keeps each segment's
 * meaning: a rank of a `qkv` layer takes its heads' rows from each of q, k and v; a rank of a
 * `halves` layer (fc1 = [gate | up]) takes its slice of each half; a rank of a `parts` layer its
 * slice of each of `parts` equal parts (H3's block adaLN: one part per modality, so a forward that
 * needs one modality's rows splits that work evenly across the ranks).
 */
export type FusedLayout =
  | { readonly kind: 'none' }
  | { readonly kind: 'qkv'; readonly heads: number; readonly headDim: number }
  | { readonly kind: 'halves' }
  | { readonly kind: 'parts'; readonly parts: number };

/** This process's part of a tensor-parallel world. */
export interface Shard {
  readonly rank: number;
  readonly size: number;
}

/**
 * The one check that `rank` is a rank of a world of `size` (an integer in [0, size), size >= 1):
 * INVALID_SHARD naming `where` otherwise. Every shard, sequence split and plan asks it.
 */
export function checkShardRank(rank: number, size: number, where: string): void {
  if (!Number.isSafeInteger(size) || size < 1 || !Number.isSafeInteger(rank) || rank < 0 || rank >= size) {
    throw new QuantError('INVALID_SHARD', `${where}: rank ${rank} of ${size} is not a rank of the world`, { value: { rank, size }, where, hint: 'rank must be an integer in [0, size)' });
  }
}

/**
 * The part of a layer one tensor-parallel rank holds: `column` takes the rank's output rows (a `qkv`
 * layer its heads' rows of each of q, k, v; a `halves` layer its slice of each half), `row` the
 * rank's input columns (its partial output is reduced by the caller or by a wrapping op),
 * `gathered` the rows of `column` (its caller concatenates the ranks' outputs), `replicated` the
 * whole layer.
 */
export interface LinearShard extends Shard {
  readonly role: ParallelRole;
  readonly fused: FusedLayout;
}

