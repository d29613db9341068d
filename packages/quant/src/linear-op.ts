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

/** A W8A8 op's int8 operands: q [N, K] (a shard's local part), a scale per row, the convrot group, the bias forward adds. */
export interface Int8Operands {
  readonly q: Tensor<'i8'>;
  readonly scale: Tensor<'f32'>;
  readonly convrot: number | false;
  readonly bias?: Tensor<'f32'>;
}

/**
 * The contract of an op whose weight is prepared explicitly (quant's ops): what a streaming loader,
 * a tensor-parallel wrapper and the memory account use. An op declares it with
 * `preparedLinear: true`; `isPreparedLinearOp` tests that declaration, never the presence of methods.
 */
export interface PreparedLinearOp extends LinearOp {
  readonly preparedLinear: true;
  /** The layer's format in the file ('int8_convrot', 'q4_k', ...). */
  readonly storedFormat: string;
  /** What the memory account says its prepared weight holds, and what preparing it holds beyond that. */
  readonly residentBytes: number;
  readonly preparingBytes: number;
  /** Reads and converts the weight into the run format now (a forward would do it on first use). */
  prepare(): Promise<void>;
  /** Bytes its prepared weight holds now (0 when nothing is prepared). */
  heldBytes(): number;
  /** Drops what is prepared; the next use prepares it again from the source. */
  release(): void;
  /**
   * The int8 operands when the op runs W8A8 (preparing the weight if needed), else undefined: for
   * callers that drive the int8 kernels themselves (row-parallel int8 with a shared activation scale
   * and int32 accumulators). Valid until `release()` or the weight cache evicts the entry.
   */
  int8Operands(): Promise<Int8Operands | undefined>;
  /** A row-parallel shard's bias, which its forward leaves out (see LinearOp.deferredBias). */
  deferredBias(): Tensor<'f32'> | undefined;
  /** The bias [N] forward adds (undefined: none, or a row-parallel shard's, which it defers). */
  addedBias(): Tensor<'f32'> | undefined;
  /**
   * The output rows [start, stop) the forwards so far computed (their hull), in the file's rows;
   * undefined before the first forward and for a shard. A loader reads ahead only those rows.
   */
  rowsRead(): readonly [number, number] | undefined;
}

/** Whether `op` declares the PreparedLinearOp contract. */
export function isPreparedLinearOp(op: LinearOp): op is PreparedLinearOp {
  return (op as Partial<PreparedLinearOp>).preparedLinear === true;
}
