import type { Tensor } from '@ninodes/kernels';
import type { LayerSlice } from './linear-shard.js';

/**
 * Changes a layer's weight in fp32 while it is prepared, before it is converted to the run format
 * (ComfyUI's weight patches: LoRA). The linear provider calls it on every materialization, so a
 * weight streamed in again, or prepared by a tensor-parallel rank, gets the same patch.
 */
export interface WeightPatcher {
  /** Whether `layer` (checkpoint name, prefix included) has a patch with a non-zero strength. */
  has(layer: string): boolean;
  /**
   * Adds the patch of `layer` to `w` in place: f32 [n, k], the whole [N, K] weight or, with `slice`,
   * the rows / columns of it a shard holds (in the slice's order).
   */
  apply(layer: string, w: Tensor<'f32'>, slice?: LayerSlice): Promise<void>;
}
