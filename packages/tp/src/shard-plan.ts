// A tensor-parallel plan read off a ModelLayout's parallel roles: which part of every linear each
// rank holds, validated for the whole model before anything is read (a run that cannot split fails
// at once, naming the layer), and what each rank holds in bytes by the memory account the ops use.
import { BLOCK_DTYPES, NinodesError, isBlockDType } from '@ninodes/kernels';
import { TpError } from './error-codes.js';
import {
  type ComputeMode,
  type LayerSlice,
  type LayoutLinear,
  type LinearShard,
  type ModelLayout,
  type WeightFormat,
  checkShardRank,
  linearResidentBytes,
  ownerOf,
  runFormatOf,
  shardGeometry,
  tensorResidentBytes,
  weightFormatInfo,
} from '@ninodes/quant';

/** One linear in the plan: the rank-independent split and the local widths every rank gets. */
export interface PlannedLinear {
  readonly name: string;
  readonly group: string;
  readonly role: LayoutLinear['role'];
  readonly fused: LayoutLinear['fused'];
  readonly storedFormat: LayoutLinear['storedFormat'];
  /** The whole layer, as in the file. */
  readonly outFeatures: number;
  readonly inFeatures: number;
  /** What one rank holds (equal on every rank; the whole layer when replicated). */
  readonly localOut: number;
  readonly localIn: number;
  readonly bias: boolean;
  /**
   * A row-parallel layer run by exchange (sequence-parallel plans only): every rank holds the whole
   * weight and takes its K / world input columns of every row as `row` does; the ranks swap slices
   * (all-to-all) instead of reducing partial sums. See shardPlan.
   */
  readonly exchange: boolean;
}

export interface RankBytes {
  readonly rank: number;
  /** Linear weights (prepared, by the memory account) and biases of the rank's slices. */
  readonly shardedBytes: number;
  /** Replicated and exchanged linears, norms, embeddings and buffers every rank holds whole. */
  readonly replicatedBytes: number;
  readonly totalBytes: number;
}

export interface ShardPlan {
  readonly world: number;
  readonly architecture: string;
  readonly compute: ComputeMode;
  /** Made for sequence-parallel ranks (ShardPlanOptions.sequence). */
  readonly sequence: boolean;
  /** Every linear of the layout, in forward order. */
  readonly linears: readonly PlannedLinear[];
  /** What one rank holds, per rank. */
  readonly ranks: readonly RankBytes[];
  /** What a single-rank run holds for the same layout (the comparison for ranks[i].totalBytes). */
  readonly singleRankBytes: number;
  /** The linear named `name` (checkpoint name, prefix included), or undefined. */
  linear(name: string): PlannedLinear | undefined;
  /** The LinearShard `rank` passes to the linear provider for `name` (replicated when unplanned). */
  shardOf(name: string, rank: number): LinearShard;
  /** The rows / columns of the file's [N, K] weight `rank` reads (undefined: the whole weight, exchanged layers too). */
  sliceOf(name: string, rank: number): LayerSlice | undefined;
}

export interface ShardPlanOptions {
  /** The compute mode the run uses (decides the run format, hence convrot alignment and bytes). Default 'auto'. */
  readonly compute?: ComputeMode;
  readonly requantizeGguf?: boolean;
  /**
   * The ranks run sequence parallel (parallelLinearProvider's `sequence`, which must match). Row-parallel
   * layers whose input slices are small beside their output are then exchanged: each rank holds the
   * whole weight (1 - 1/world of it more than its slice) and sends (world - 1) K / world² input
   * values per token row, where a reduce-scatter of the partial sums sends (world - 1) N / world²
   * sums of four bytes. Chosen where the values move at most a quarter of those bytes: int8 runs
   * with K <= N (H3's out_proj, K = N = hidden; the values go as int8), float runs with 4 K <= N.
   * fc2 (K = ffn > N) stays reduced. Default false.
   */
  readonly sequence?: boolean;
}

/** `run`: the format the layer computes in (runFormatOf, over its whole K). */
function checkRowSlice(l: LayoutLinear, world: number, run: WeightFormat, exchange: boolean): void {
  const localIn = l.inFeatures / world;
  const group = weightFormatInfo(run).convrot;
  if (group !== false && localIn % group !== 0) {
    throw new TpError(
      'SHARD_NOT_GROUP_ALIGNED',
      `layer '${l.name}' (${run}, K = ${l.inFeatures}): over ${world} ranks each rank's input slice is ${localIn} columns, which splits the ${group}-column convrot groups`,
      { value: { inFeatures: l.inFeatures, world, group }, where: l.name, hint: `use a tensor-parallel size N with K / N a multiple of ${group} (K = ${l.inFeatures})` },
    );
  }
  // A row-parallel rank reads whole quant blocks of its columns: blocks run along K. (An exchanged
  // layer reads the whole weight.)
  if (!exchange && isBlockDType(l.storedFormat)) {
    const block = BLOCK_DTYPES[l.storedFormat].blockElements;
    if (localIn % block !== 0) {
      throw new TpError(
        'RANGE_NOT_BLOCK_ALIGNED',
        `layer '${l.name}' (${l.storedFormat}, K = ${l.inFeatures}): each rank's input slice of ${localIn} columns splits the ${block}-element quant blocks`,
        { value: { inFeatures: l.inFeatures, world, block }, where: l.name, hint: `use a tensor-parallel size N with K / N a multiple of ${block}` },
      );
    }
  }
}

/**
 * Whether a sequence-parallel row layer is worth holding whole: its input slices (one byte a value
 * when the run is int8, four otherwise) must move at most a quarter of the bytes a reduce-scatter of
 * its four-byte partial sums does, i.e. K · slice bytes <= N. The whole weight costs each rank
 * (1 - 1/world) of it again, and a GEMM over the whole K reads all of it: measured on h3-small at
 * TP2 (K = N), int8 out_proj exchanged cut the collectives' time per step by a quarter, while fp32,
 * which only halves the bytes, ran ~3 % slower per step.
 */
function exchangePays(l: LayoutLinear, run: WeightFormat): boolean {
  const sliceBytes = weightFormatInfo(run).family === 'int8' ? 1 : 4;
  return sliceBytes * l.inFeatures <= l.outFeatures;
}

/**
 * The tensor-parallel plan of `layout` over `world` ranks: column-parallel and gathered linears split
 * by output rows (qkv by heads in each of q, k, v; fc1 by its slice of each half), row-parallel ones
 * by input columns (with `sequence`, the narrow ones exchanged: held whole), the rest replicated. Throws SHARD_NOT_DIVISIBLE (heads, ffn or a width that does not
 * divide), SHARD_NOT_GROUP_ALIGNED (a row-parallel int8 convrot slice that is not a multiple of the
 * 256-column group) or RANGE_NOT_BLOCK_ALIGNED (GGUF), naming the first layer that fails.
 */
export function shardPlan(layout: ModelLayout, world: number, options: ShardPlanOptions = {}): ShardPlan {
  if (!Number.isSafeInteger(world) || world < 1) {
    throw new TpError('INVALID_ARGUMENT', `tensor-parallel size must be a positive integer, got ${world}`, { value: world, where: 'world', hint: 'e.g. --tp 2' });
  }
  const compute = options.compute ?? 'auto';
  const requantizeGguf = options.requantizeGguf ?? false;
  const sequence = options.sequence === true;
  const linears: PlannedLinear[] = [];
  const byName = new Map<string, PlannedLinear>();
  let sharded = 0;
  let replicated = 0;
  let single = 0;
  for (const group of layout.groups) {
    for (const l of group.linears) {
      const shard: LinearShard = { rank: 0, size: world, role: l.role, fused: l.fused };
      // quant's geometry is the one definition of a split (the provider slices by it too).
      const geometry = shardGeometry(l.name, l.outFeatures, l.inFeatures, shard);
      let exchange = false;
      if (l.role === 'row') {
        const run = runFormatOf(l.storedFormat, compute, l.inFeatures, { requantizeGguf });
        exchange = sequence && world > 1 && exchangePays(l, run);
        checkRowSlice(l, world, run, exchange);
      }
      const planned: PlannedLinear = {
        name: l.name,
        group: group.name,
        role: l.role,
        fused: l.fused,
        storedFormat: l.storedFormat,
        outFeatures: l.outFeatures,
        inFeatures: l.inFeatures,
        localOut: geometry.n,
        localIn: geometry.k,
        bias: l.bias,
        exchange,
      };
      linears.push(planned);
      byName.set(l.name, planned);
      const full = linearResidentBytes(l, compute, { requantizeGguf });
      single += full;
      if (l.role === 'replicated' || planned.exchange) {
        replicated += full;
      } else {
        // Row-parallel ranks hold every output row's bias (added once after the reduction).
        sharded += linearResidentBytes(l, compute, { requantizeGguf }, [geometry.n, geometry.k]);
      }
    }
    for (const t of group.tensors) {
      if (ownerOf(group, t) !== undefined) continue; // counted with its linear
      const bytes = tensorResidentBytes(t, undefined, compute, { requantizeGguf });
      replicated += bytes;
      single += bytes;
    }
  }
  const ranks: RankBytes[] = Array.from({ length: world }, (_, rank) => ({ rank, shardedBytes: sharded, replicatedBytes: replicated, totalBytes: sharded + replicated }));
  const unplanned = (name: string): NinodesError =>
    new TpError('LAYER_NOT_IN_PLAN', `layer '${name}' is not a linear of the ${layout.architecture} layout this plan was made from`, { value: name, where: name });
  const checkRank = (rank: number): void => {
    checkShardRank(rank, world, 'rank');
  };
  return {
    world,
    architecture: layout.architecture,
    compute,
    sequence,
    linears,
    ranks,
    singleRankBytes: single,
    linear: (name) => byName.get(name),
    shardOf(name, rank) {
      checkRank(rank);
      const l = byName.get(name);
      if (l === undefined) throw unplanned(name);
      return { rank, size: world, role: l.role, fused: l.fused };
    },
    sliceOf(name, rank) {
      checkRank(rank);
      const l = byName.get(name);
      if (l === undefined) throw unplanned(name);
      if (l.exchange) return undefined;
      return shardGeometry(name, l.outFeatures, l.inFeatures, { rank, size: world, role: l.role, fused: l.fused }).slice;
    },
  };
}
