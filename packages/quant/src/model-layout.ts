import type { DType } from '@ninodes/kernels';
import type { LinearSpec } from './linear-op.js';
import type { FusedLayout, ParallelRole } from './parallel-shard.js';
import type { WeightFormat } from './weight-format.js';

export type { FusedLayout, LinearShard, ParallelRole, Shard } from './parallel-shard.js';

/*
 * The seam between the rank-4 siblings. models builds a ModelLayout from a checkpoint; distorch
 * places its groups on devices, tp shards its linears across ranks. Neither imports models: they
 * read this description, and the apps hand the result back to models as a LinearProvider and
 * GroupHooks.
 */

/** One tensor a group reads, as stored in the file. */
export interface LayoutTensor {
  readonly name: string;
  readonly dtype: DType;
  /** torch order, outermost first. */
  readonly shape: readonly number[];
  /** Bytes of this tensor's data span in the file. */
  readonly byteLength: number;
}

/** A linear layer with what placement and sharding need to know of it. */
export interface LayoutLinear extends LinearSpec {
  /** Format of the layer as stored (detected from the checkpoint). */
  readonly storedFormat: WeightFormat;
  readonly role: ParallelRole;
  readonly fused: FusedLayout;
  /** Kept in fp32 whatever the run's compute format (ComfyUI builds these modules in float32). */
  readonly fp32Island: boolean;
}

/**
 * One execution group: the unit a model runs between two hooks and the unit a placement moves.
 * `kind` tells the groups before the repeated blocks (embedders), the blocks, and those after
 * (final layer).
 */
export interface LayoutGroup {
  readonly name: string;
  readonly kind: 'pre' | 'block' | 'post';
  /** Every tensor the group reads (linear weights and their sidecars, norms, buffers), in file terms. */
  readonly tensors: readonly LayoutTensor[];
  readonly linears: readonly LayoutLinear[];
}

/** A model as a sequence of execution groups, in the order the forward runs them. */
export interface ModelLayout {
  /** Architecture id, e.g. 'minimax-h3'. */
  readonly architecture: string;
  /** Key prefix of the checkpoint (e.g. 'model.diffusion_model.'), '' when none. */
  readonly prefix: string;
  readonly groups: readonly LayoutGroup[];
}

/**
 * Awaited by the model around each execution group (names as in ModelLayout.groups): an executor
 * prefetches the next groups' weights in `beforeGroup` and releases the last one's in `afterGroup`.
 */
export interface GroupHooks {
  beforeGroup?(name: string): Promise<void> | void;
  afterGroup?(name: string): Promise<void> | void;
}

/** The linear a tensor belongs to (`<linear>.weight`, `<linear>.bias`, `<linear>.weight_scale` ...). Linear names carry the key prefix. */
export function ownerOf(group: LayoutGroup, tensor: LayoutTensor): LayoutLinear | undefined {
  for (const l of group.linears) {
    const base = `${l.name}.`;
    if (tensor.name.startsWith(base) && !tensor.name.slice(base.length).includes('.')) return l;
  }
  return undefined;
}
