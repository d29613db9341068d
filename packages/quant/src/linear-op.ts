import type { Tensor } from '@ninodes/kernels';
import type { LinearShard } from './parallel-shard.js';

export type { LinearShard } from './parallel-shard.js';

/** What a model declares for one linear layer. */
export interface LinearSpec {
  /** Checkpoint prefix of the layer, e.g. 'blocks.0.attn.qkv_proj' (weight at `${name}.weight`). */
  readonly name: string;
  readonly inFeatures: number; // K
  readonly outFeatures: number; // N
  readonly bias: boolean;
  /**
   * Set for a tensor-parallel rank's part of the layer: `inFeatures`/`outFeatures` are then the local
   * widths (column: N / size rows; row: K / size columns). Absent: the whole layer.
   */
  readonly shard?: LinearShard;
}

/**
 * One linear layer as the model sees it (ComfyUI's "custom operations"): the model never knows how
 * the weight is stored, placed or split.
 */
export interface LinearOp {
  readonly spec: LinearSpec;
  /** Weight format this op runs, e.g. 'f32', 'bf16', 'int8_convrot', 'f8_e4m3fn', 'q4_k'. */
  readonly format: string;
  /**
   * x [M, K] f32 -> y [M, N] f32. With `out` ([M, N] f32, disjoint from x) an op may write y there
   * and return it, so a caller that reuses buffers allocates nothing per call; an op that cannot
   * (a wrapper that reduces, a streamed weight) returns a tensor of its own: use the returned one.
   */
  forward(x: Tensor<'f32'>, out?: Tensor<'f32'>): Promise<Tensor<'f32'>>;
  /**
   * Output features [start, stop) of forward(x) only: y [M, stop - start], each value bit for bit the
   * one forward gives (the same dot product over the same weight row). For a layer whose caller
   * reads part of the output (H3's adaLN: one modality's rows of three). `out` as in forward. Absent
   * on ops that cannot compute a part (a gathering wrapper): call forward and read the part.
   */
  forwardRows?(x: Tensor<'f32'>, start: number, stop: number, out?: Tensor<'f32'>): Promise<Tensor<'f32'>>;
  /** The weight as the kernel uses it, dequantized to f32 [N, K] (LoRA patching, error reports); a tensor the caller owns. */
  materializedWeight(): Promise<Tensor<'f32'>>;
  /**
   * A row-parallel op's bias [N], which its forward does not add: the caller adds it once, after the
   * partial outputs are reduced. Undefined when the op adds its own bias or has none.
   */
  deferredBias?(): Tensor<'f32'> | undefined;
  /**
   * True on a tensor-parallel column- or row-parallel op that works on sequence-parallel rows (see
   * SequenceSplit): x and y keep every row's place ([S, ·]), but a column-parallel forward reads only
   * this rank's rows of x (it gathers the others) and returns every row of y; a row-parallel forward
   * returns y whose own rows hold the reduced output (its other rows unspecified). A model run
   * with a SequenceSplit needs such ops for its blocks' column and row layers, and only there.
   */
  readonly sequenceParallel?: boolean;
}

export interface LinearProvider {
  /** Builds (lazily: nothing is read until forward) the op for one layer. */
  linear(spec: LinearSpec): LinearOp;
}
