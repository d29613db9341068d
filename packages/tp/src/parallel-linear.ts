// Row- and column-parallel linears over a rank's local op (quant's provider given a LinearShard).
// Column-parallel and replicated layers need nothing from the other ranks: the local op is the
// answer. Gathered layers (column-split, asked for whole) concatenate the ranks' outputs. Row-parallel
// layers compute a partial output and reduce it; the bias is added once, after the reduction. With
// int8 weights the ranks first agree on each row's activation scale (allreduce MAX of the per-row
// absmax of the rotated activations) and reduce the exact int32 accumulators, so the output has the
// unsplit layer's bits.
//
// With sequence parallelism (Megatron-SP, `sequence: true`) the ranks hold only their own token
// rows (quant's sequenceRows) between a block's row- and column-parallel layers: a row-parallel
// layer reduce-scatters its sums (each rank receives its own rows, and runs the epilogue on those
// alone), a column-parallel layer quantizes (int8) or copies (float) only its own rows and gathers
// the others before its GEMM. Every rank still computes the exact sums of every row, so the bits
// are those of the plain path. A row layer the plan marks `exchange` (H3's out_proj) is held whole
// instead: the ranks swap their input slices (all-to-all) and each runs the unsplit layer on its
// own rows, so no partial sums travel at all.
import {
  type Communicator,
  Tensor,
  add,
  dequantizeInt8Accumulators,
  int8LinearAccumulators,
  int8LinearQuantized,
  quantizeRowsInt8,
} from '@ninodes/kernels';
import { copyColumnRange } from '@ninodes/memory';
import { TpError } from './error-codes.js';
import { type Int8Operands, type LinearOp, type LinearProvider, type LinearSpec, SharedScratch, isPreparedLinearOp, sequenceCounts, sequenceRows } from '@ninodes/quant';
import type { ShardPlan } from './shard-plan.js';

/**
 * An op split across ranks runs int8 exactly only through quant's declared PreparedLinearOp contract
 * (its int8 operands: the ranks share each row's activation scale and reduce int32 sums). An int8
 * op without it would silently take the float path, so it is refused when it is wrapped.
 */
function requireInt8Contract(op: LinearOp): void {
  if (op.format.startsWith('int8') && !isPreparedLinearOp(op)) {
    throw new TpError('INVALID_ARGUMENT', `linear '${op.spec.name}' runs ${op.format} but does not declare quant's PreparedLinearOp contract (no int8 operands)`, {
      value: op.format,
      where: op.spec.name,
      hint: "build its ops with a provider whose ops are PreparedLinearOps (quant's createLinearProvider)",
    });
  }
}

/** The int8 operands of an op that runs W8A8, undefined for a float op (see requireInt8Contract). */
async function int8OperandsOf(op: LinearOp): Promise<Int8Operands | undefined> {
  return isPreparedLinearOp(op) ? op.int8Operands() : undefined;
}

/**
 * The scratch a provider's row- and (sequence-parallel) column-parallel layers share (they run one
 * at a time): the int32 accumulators [M, N] (1.5 MB at M = 256, N = 1536), quantized slices, row
 * scales. A steady-state step allocates none of them, which otherwise cost a rank several garbage
 * collections per step.
 */
interface RowScratch {
  readonly acc: SharedScratch<'i32'>;
  /** A row-parallel layer's quantized slice, or a column-parallel layer's gathered int8 rows. */
  readonly q: SharedScratch<'i8'>;
  /** An exchanged row layer's int8 slices received from the ranks, then its own rows whole. */
  readonly swap: SharedScratch<'i8'>;
  /** A sequence-parallel column layer's gathered int8 row scales [S, 1]. */
  readonly scales: SharedScratch<'f32'>;
  /**
   * f32 rows: a float layer's reduced partial sums (before the bias goes on into the output), or an
   * int8 convrot layer's rotated input slice (rotated once, for the scale and the GEMM), or a
   * sequence-parallel float column layer's gathered rows, or a float exchanged row layer's slices
   * received and its own rows whole.
   */
  readonly rows: SharedScratch<'f32'>;
}

const rowScratch = (): RowScratch => ({ acc: new SharedScratch('i32'), q: new SharedScratch('i8'), swap: new SharedScratch('i8'), scales: new SharedScratch('f32'), rows: new SharedScratch('f32') });

/** A row-parallel op's input: this rank's slice f32 [M, K / size]; returns that K / size. */
function checkRowInput(spec: LinearSpec, x: Tensor): number {
  const k = spec.inFeatures;
  if (x.dtype !== 'f32' || x.shape.length !== 2 || x.shape[1] !== k) {
    throw new TpError('SHAPE_MISMATCH', `row-parallel linear '${spec.name}' takes this rank's input slice f32 [M, ${k}], got ${x.dtype} [${x.shape.join(', ')}]`, {
      value: x.shape,
      where: spec.name,
    });
  }
  return k;
}

class RowParallelLinear implements LinearOp {
  readonly spec: LinearSpec;
  readonly format: string;

  constructor(
    private readonly local: LinearOp,
    private readonly comm: Communicator,
    private readonly scratch: RowScratch,
    /** Sequence parallel: y's own rows hold the output (reduce-scatter), its other rows are unspecified. */
    readonly sequenceParallel: boolean,
  ) {
    this.spec = local.spec;
    this.format = local.format;
  }

  /** Sums of every rank's partial output, in place: every row (allreduce), or this rank's rows (reduce-scatter). */
  private reduce(data: Float32Array | Int32Array, m: number): Promise<void> {
    if (!this.sequenceParallel) return this.comm.allreduce(data, 'sum');
    return this.comm.reduceScatter(data, sequenceCounts(m, this.comm.size, this.spec.outFeatures));
  }

  /** The rows whose reduced output this rank finishes: its own (sequence parallel) or all of them. */
  private finished(m: number): { start: number; stop: number } {
    return this.sequenceParallel ? sequenceRows(m, this.comm.rank, this.comm.size) : { start: 0, stop: m };
  }

  async forward(x: Tensor<'f32'>, out?: Tensor<'f32'>): Promise<Tensor<'f32'>> {
    const k = checkRowInput(this.spec, x);
    const bias = this.local.deferredBias?.();
    const int8 = await int8OperandsOf(this.local);
    if (int8 !== undefined) {
      // The unsplit layer's scale of a row is max(absmax(row·H) / 127, 1e-30); the rotation works per
      // 256-column group, so each rank's slice rotates to the slice of the full rotation, and the max
      // of the ranks' scales is the full row's scale, exactly.
      const convrot = int8.convrot;
      const m = x.shape[0] as number;
      // The scale pass keeps the rotated slice (x·H per group, the bits int8Linear's own rotation
      // gives), so the GEMM below quantizes those rows as they are instead of rotating them again.
      // Only the scales are wanted from it; its integers go to scratch.
      const rotated = convrot === false ? undefined : this.scratch.rows.take(m, k);
      const y = out ?? Tensor.zeros('f32', [m, this.spec.outFeatures]);
      try {
        const qOut = this.scratch.q.take(m, k);
        let xScale: Tensor<'f32'>;
        try {
          xScale = quantizeRowsInt8(x, { convrot, qOut, ...(rotated ? { rotated } : {}) }).scale;
        } finally {
          this.scratch.q.release(qOut);
        }
        await this.comm.allreduce(xScale.data, 'max');
        // int8Linear's quantization and GEMM with the shared scale, without its epilogue: the slice
        // quantized as the unsplit layer would, and only its exact int32 accumulators (a y of the
        // partial sum would be thrown away).
        const acc = this.scratch.acc.take(m, this.spec.outFeatures);
        try {
          await int8LinearAccumulators(rotated ?? x, int8.q, { convrot: false, xScale, accOut: acc });
          // Integer sums are exact: the reduced accumulators are the unsplit layer's.
          await this.reduce(acc.data, m);
          const { start, stop } = this.finished(m);
          if (stop > start) await dequantizeInt8Accumulators(acc.rows(start, stop), xScale.rows(start, stop), int8.scale, bias, y.rows(start, stop));
        } finally {
          this.scratch.acc.release(acc);
        }
      } finally {
        if (rotated) this.scratch.rows.release(rotated);
      }
      return y;
    }
    // Float weights: partial products summed in fp32 across ranks, then the bias once.
    const m = x.shape[0] as number;
    if (bias === undefined) {
      const y = await this.local.forward(x, out);
      await this.reduce(y.data, m);
      return y;
    }
    // With a bias the sums go to scratch and kernels' add writes sum + bias into the output (native,
    // in one pass; the same f32 additions as a loop here, which cost ~0.6 ms per [256, 1536] call).
    const sum = this.scratch.rows.take(m, this.spec.outFeatures);
    try {
      await this.local.forward(x, sum);
      await this.reduce(sum.data, m);
      if (!this.sequenceParallel) return add(sum, bias, out);
      const y = out ?? Tensor.zeros('f32', [m, this.spec.outFeatures]);
      const { start, stop } = this.finished(m);
      if (stop > start) add(sum.rows(start, stop), bias, y.rows(start, stop));
      return y;
    } finally {
      this.scratch.rows.release(sum);
    }
  }

  materializedWeight(): Promise<Tensor<'f32'>> {
    return this.local.materializedWeight();
  }
}

/**
 * A row-parallel layer run by exchange under sequence parallelism: the rank holds the whole layer;
 * x [S, K / size] is its input columns of every row (its heads' attention output). The ranks swap
 * slices with one all-to-all, so each gets every column of its own rows, and each runs the unsplit
 * layer on those rows: y's own rows hold the output (its other rows untouched), with one rank's bits
 * and no sums across ranks. Int8 weights swap the slices quantized with the rows' shared scales (the
 * same agreement RowParallelLinear makes, then quantization as int8Linear's of the whole row), one
 * byte an element: for H3's out_proj (K = N) about 1/(4·size) of the bytes a reduce-scatter of its
 * int32 sums moves. Float weights swap f32 slices (1/size of them).
 */
class ExchangedRowLinear implements LinearOp {
  readonly format: string;
  readonly sequenceParallel = true;

  constructor(
    /** quant's op of the whole layer. */
    private readonly whole: LinearOp,
    private readonly comm: Communicator,
    private readonly scratch: RowScratch,
    /** What the model sees: the row shard's spec (K / size input columns). */
    readonly spec: LinearSpec,
  ) {
    this.format = whole.format;
  }

  async forward(x: Tensor<'f32'>, out?: Tensor<'f32'>): Promise<Tensor<'f32'>> {
    const k = checkRowInput(this.spec, x);
    const { rank, size } = this.comm;
    const m = x.shape[0] as number;
    const { start, stop } = sequenceRows(m, rank, size);
    const own = stop - start;
    const counts = sequenceCounts(m, size, k);
    const y = out ?? Tensor.zeros('f32', [m, this.spec.outFeatures]);
    const int8 = await int8OperandsOf(this.whole);
    if (int8 !== undefined) {
      // As RowParallelLinear: the slice's rotation is the full rotation's slice, the max of the ranks'
      // row scales is the full row's scale; quantizing the rotated slice with it gives the whole
      // row's int8 values, column for column.
      const rotated = int8.convrot === false ? undefined : this.scratch.rows.take(m, k);
      const q = this.scratch.q.take(m, k);
      const swap = this.scratch.swap.take(2 * own, k * size);
      try {
        const xScale = quantizeRowsInt8(x, { convrot: int8.convrot, qOut: q, ...(rotated ? { rotated } : {}) }).scale;
        await this.comm.allreduce(xScale.data, 'max');
        quantizeRowsInt8(rotated ?? x, { convrot: false, scale: xScale, qOut: q });
        const received = swap.rows(0, own);
        const rows = swap.rows(own, 2 * own);
        await this.comm.allToAll(q.data, received.data, counts);
        interleave(received.data, rows.data, own, k, size);
        if (own > 0) await int8LinearQuantized(rows, xScale.rows(start, stop), int8.q, int8.scale, { ...(int8.bias ? { bias: int8.bias } : {}), out: y.rows(start, stop) });
      } finally {
        this.scratch.swap.release(swap);
        this.scratch.q.release(q);
        if (rotated) this.scratch.rows.release(rotated);
      }
      return y;
    }
    const swap = this.scratch.rows.take(2 * own, k * size);
    try {
      const received = swap.rows(0, own);
      const rows = swap.rows(own, 2 * own);
      await this.comm.allToAll(x.data, received.data, counts);
      interleave(received.data, rows.data, own, k, size);
      if (own > 0) {
        const target = y.rows(start, stop);
        const got = await this.whole.forward(rows, target);
        if (got !== target) target.data.set(got.data);
      }
    } finally {
      this.scratch.rows.release(swap);
    }
    return y;
  }

  /** This rank's input columns of the weight [N, K / size], as a row-parallel op's (its spec's shape). */
  async materializedWeight(): Promise<Tensor<'f32'>> {
    const whole = await this.whole.materializedWeight();
    const k = this.spec.inFeatures;
    try {
      return copyColumnRange(whole, this.spec.name, this.comm.rank * k, (this.comm.rank + 1) * k) as Tensor<'f32'>;
    } finally {
      whole.dispose();
    }
  }
}

/**
 * [size][own][k] (rank q's slice of each own row, as allToAll leaves them) -> [own][size·k] (every
 * row's columns in rank order: the whole layer's input rows).
 */
function interleave<T extends Int8Array | Float32Array>(from: T, to: T, own: number, k: number, size: number): void {
  for (let q = 0; q < size; q++) {
    for (let i = 0; i < own; i++) to.set(from.subarray((q * own + i) * k, (q * own + i + 1) * k), (i * size + q) * k);
  }
}

/**
 * A column-parallel layer under sequence parallelism: x [S, K] holds this rank's rows only; the
 * ranks gather each other's rows and each computes its output columns for every row. Int8 weights
 * gather the rows quantized (a quarter of the bytes, and each rank rotates and quantizes only its
 * own rows: per-row scales need nothing of the other rows, so the gathered rows are the ones
 * int8Linear quantizes from the whole x); other formats gather the f32 rows.
 */
class ColumnSequenceLinear implements LinearOp {
  readonly spec: LinearSpec;
  readonly format: string;
  readonly sequenceParallel = true;

  constructor(
    private readonly local: LinearOp,
    private readonly comm: Communicator,
    private readonly scratch: RowScratch,
  ) {
    this.spec = local.spec;
    this.format = local.format;
  }

  async forward(x: Tensor<'f32'>, out?: Tensor<'f32'>): Promise<Tensor<'f32'>> {
    const k = this.spec.inFeatures;
    if (x.dtype !== 'f32' || x.shape.length !== 2 || x.shape[1] !== k) {
      throw new TpError('SHAPE_MISMATCH', `column-parallel linear '${this.spec.name}' takes f32 [S, ${k}] (this rank's rows filled), got ${x.dtype} [${x.shape.join(', ')}]`, {
        value: x.shape,
        where: this.spec.name,
      });
    }
    const { rank, size } = this.comm;
    const s = x.shape[0] as number;
    const { start, stop } = sequenceRows(s, rank, size);
    const int8 = await int8OperandsOf(this.local);
    if (int8 !== undefined) {
      const q = this.scratch.q.take(s, k);
      const scale = this.scratch.scales.take(s, 1);
      try {
        if (stop > start) quantizeRowsInt8(x.rows(start, stop), { convrot: int8.convrot, qOut: q.rows(start, stop), scaleOut: scale.rows(start, stop) });
        await this.comm.allgatherInto(q.data, sequenceCounts(s, size, k));
        await this.comm.allgatherInto(scale.data, sequenceCounts(s, size, 1));
        return await int8LinearQuantized(q, scale, int8.q, int8.scale, { ...(int8.bias ? { bias: int8.bias } : {}), ...(out ? { out } : {}) });
      } finally {
        this.scratch.scales.release(scale);
        this.scratch.q.release(q);
      }
    }
    const rows = this.scratch.rows.take(s, k);
    try {
      if (stop > start) rows.data.set(x.rows(start, stop).data, start * k);
      await this.comm.allgatherInto(rows.data, sequenceCounts(s, size, k));
      return await this.local.forward(rows, out);
    } finally {
      this.scratch.rows.release(rows);
    }
  }

  materializedWeight(): Promise<Tensor<'f32'>> {
    return this.local.materializedWeight();
  }
}

/**
 * A `gathered` layer: this rank computes its slice of the output columns (its rows of the weight,
 * bias included) and the ranks concatenate their slices, so every rank gets the whole output. No
 * arithmetic crosses ranks (each output element is computed whole by one rank, with the row scale of
 * the whole input), so the bytes are the unsplit layer's for every format. With a `parts` layout
 * (H3's block adaLN, one part per modality) each rank holds its slice of every part, so
 * `forwardRows` over whole parts (the modalities a forward reads) splits that work evenly too.
 */
class GatheredLinear implements LinearOp {
  readonly spec: LinearSpec;
  readonly format: string;
  /** Equal parts of the output, each split across the ranks (1: one plain split). */
  private readonly parts: number;

  constructor(
    private readonly local: LinearOp,
    private readonly comm: Communicator,
    whole: LinearSpec,
  ) {
    this.spec = whole;
    this.format = local.format;
    const fused = local.spec.shard?.fused;
    this.parts = fused?.kind === 'parts' ? fused.parts : 1;
  }

  forward(x: Tensor<'f32'>, out?: Tensor<'f32'>): Promise<Tensor<'f32'>> {
    return this.gather(x, 0, this.parts, out);
  }

  /**
   * Output features [start, stop): over whole parts, each rank computes its slice of those parts
   * only; otherwise the whole output is computed and the range copied out (same bits either way).
   */
  async forwardRows(x: Tensor<'f32'>, start: number, stop: number, out?: Tensor<'f32'>): Promise<Tensor<'f32'>> {
    const n = this.spec.outFeatures;
    if (!Number.isInteger(start) || !Number.isInteger(stop) || start < 0 || stop <= start || stop > n) {
      throw new TpError('SHAPE_MISMATCH', `linear '${this.spec.name}': output features [${start}, ${stop}) are not a non-empty part of [0, ${n})`, {
        value: { start, stop },
        where: this.spec.name,
        hint: `pass 0 <= start < stop <= ${n}`,
      });
    }
    const part = n / this.parts;
    if (start % part === 0 && stop % part === 0) return this.gather(x, start / part, stop / part, out);
    const all = await this.gather(x, 0, this.parts);
    const m = all.shape[0] as number;
    const w = stop - start;
    const y = out ?? Tensor.zeros('f32', [m, w]);
    for (let i = 0; i < m; i++) y.data.set(all.data.subarray(i * n + start, i * n + stop), i * w);
    return y;
  }

  /** Parts [p0, p1) of the output: this rank's slices of them, allgathered and put in order. */
  private async gather(x: Tensor<'f32'>, p0: number, p1: number, out?: Tensor<'f32'>): Promise<Tensor<'f32'>> {
    const w = this.comm.size;
    const len = this.spec.outFeatures / this.parts / w; // one rank's slice of one part
    const whole = p0 === 0 && p1 === this.parts;
    const local = whole ? await this.local.forward(x) : await this.localRows(x, p0 * len, p1 * len);
    const m = local.shape[0] as number;
    const all = await this.comm.allgather(local.data);
    local.dispose();
    const parts = p1 - p0;
    const width = parts * len * w;
    const y = out ?? Tensor.zeros('f32', [m, width]);
    // [rank][row][part][len] -> [row][part][rank][len]
    const dst = y.data;
    for (let r = 0; r < w; r++) {
      for (let i = 0; i < m; i++) {
        for (let p = 0; p < parts; p++) {
          const from = ((r * m + i) * parts + p) * len;
          dst.set(all.subarray(from, from + len), i * width + (p * w + r) * len);
        }
      }
    }
    return y;
  }

  private localRows(x: Tensor<'f32'>, start: number, stop: number): Promise<Tensor<'f32'>> {
    const rows = this.local.forwardRows;
    if (rows !== undefined) return rows.call(this.local, x, start, stop);
    return this.local.forward(x).then((all) => {
      const m = all.shape[0] as number;
      const n = all.shape[1] as number;
      const y = Tensor.zeros('f32', [m, stop - start]);
      for (let i = 0; i < m; i++) y.data.set(all.data.subarray(i * n + start, i * n + stop), i * (stop - start));
      all.dispose();
      return y;
    });
  }

  /** The whole weight [N, K]: a collective, every rank must call it. */
  async materializedWeight(): Promise<Tensor<'f32'>> {
    const part = await this.local.materializedWeight();
    const all = await this.comm.allgather(part.data);
    part.dispose();
    const { outFeatures: n, inFeatures: k } = this.spec;
    const w = this.comm.size;
    const len = n / this.parts / w;
    // Rank r's rows: its slice of each part in turn -> the file's row order.
    const out = new Float32Array(n * k);
    for (let r = 0; r < w; r++) {
      for (let p = 0; p < this.parts; p++) out.set(all.subarray((r * this.parts + p) * len * k, (r * this.parts + p + 1) * len * k), (p * w + r) * len * k);
    }
    return Tensor.fromArray('f32', [n, k], out);
  }
}

function checkShardComm(local: LinearOp, comm: Communicator): void {
  const shard = local.spec.shard;
  if (shard !== undefined && (shard.size !== comm.size || shard.rank !== comm.rank)) {
    throw new TpError('SHARD_COMM_MISMATCH', `linear '${local.spec.name}' is rank ${shard.rank} of ${shard.size}, the communicator rank ${comm.rank} of ${comm.size}`, {
      value: { shard: [shard.rank, shard.size], comm: [comm.rank, comm.size] },
      where: local.spec.name,
    });
  }
}

/**
 * Wraps a rank's local op by its shard's role: row-parallel ops reduce across `comm` (int8 through
 * shared activation scales and int32 accumulators), column-parallel and replicated ops are returned
 * as they are (a `gathered` layer's local op too: `gatheredLinear` concatenates its outputs). With
 * `sequence`, row- and column-parallel ops work on sequence-parallel rows (LinearOp.sequenceParallel).
 */
export function parallelLinear(local: LinearOp, comm: Communicator, options: { sequence?: boolean } = {}): LinearOp {
  return byRole(local, comm, rowScratch(), options.sequence === true && comm.size > 1);
}

/** parallelLinear with the scratch of a provider's row- and column-parallel layers. */
function byRole(local: LinearOp, comm: Communicator, scratch: RowScratch, sequence: boolean): LinearOp {
  const role = local.spec.shard?.role;
  if (role === 'row' || (sequence && role === 'column')) {
    checkShardComm(local, comm);
    requireInt8Contract(local);
  }
  if (role === 'row') return new RowParallelLinear(local, comm, scratch, sequence);
  if (role === 'column' && sequence) return new ColumnSequenceLinear(local, comm, scratch);
  return local;
}

/**
 * The whole layer `whole` from a rank's local op of its `gathered` (or column, fused 'none' or
 * 'parts') shard: forward concatenates the ranks' output columns (allgather), so every rank gets
 * [M, N]; forwardRows over whole parts computes only those.
 */
export function gatheredLinear(local: LinearOp, comm: Communicator, whole: LinearSpec): LinearOp {
  const shard = local.spec.shard;
  const plain = shard?.fused.kind === 'none' || shard?.fused.kind === 'parts';
  if (shard === undefined || (shard.role !== 'gathered' && shard.role !== 'column') || !plain || local.spec.outFeatures * comm.size !== whole.outFeatures || local.spec.inFeatures !== whole.inFeatures) {
    throw new TpError('SHAPE_MISMATCH', `linear '${local.spec.name}' [${local.spec.outFeatures}, ${local.spec.inFeatures}] is not one of ${comm.size} row slices (plain, or of equal parts) of [${whole.outFeatures}, ${whole.inFeatures}]`, {
      value: { local: local.spec, whole },
      where: local.spec.name,
    });
  }
  checkShardComm(local, comm);
  return new GatheredLinear(local, comm, whole);
}

export interface ParallelProviderOptions {
  /** quant's provider over the checkpoint: given a spec with a shard, it reads only that slice. */
  readonly provider: LinearProvider;
  readonly plan: ShardPlan;
  readonly comm: Communicator;
  /**
   * Sequence parallelism (Megatron-SP): the row- and column-parallel ops work on this rank's token
   * rows (see LinearOp.sequenceParallel); the model must be run with the matching SequenceSplit
   * (`sequenceSplit(comm)`), and the plan made with the same `sequence`. Default false: every rank
   * holds every row.
   */
  readonly sequence?: boolean;
}

/**
 * A LinearProvider for one rank: each spec the model asks for (whole widths, or already local with
 * the matching shard) becomes this rank's local op of the plan's split, wrapped by parallelLinear.
 * The returned op's spec carries the local widths.
 */
export function parallelLinearProvider(options: ParallelProviderOptions): LinearProvider {
  const { provider, plan, comm } = options;
  if (plan.sequence !== (options.sequence === true)) {
    throw new TpError('SHARD_COMM_MISMATCH', `the plan was made ${plan.sequence ? 'with' : 'without'} sequence parallelism, the provider is asked ${options.sequence === true ? 'with' : 'without'}`, {
      value: { plan: plan.sequence, provider: options.sequence === true },
      hint: 'pass the same `sequence` to shardPlan and parallelLinearProvider',
    });
  }
  // One rank holds every row: nothing to split.
  const sequence = options.sequence === true && comm.size > 1;
  if (plan.world !== comm.size) {
    throw new TpError('SHARD_COMM_MISMATCH', `the plan splits over ${plan.world} ranks, the communicator has ${comm.size}`, {
      value: { plan: plan.world, comm: comm.size },
      hint: 'make the plan with the world size the ranks were started with',
    });
  }
  const scratch = rowScratch();
  return {
    linear(spec: LinearSpec): LinearOp {
      const planned = plan.linear(spec.name);
      if (planned === undefined) {
        throw new TpError('LAYER_NOT_IN_PLAN', `the model asked for linear '${spec.name}', which the ${plan.architecture} layout of this plan does not have`, { value: spec.name, where: spec.name });
      }
      const shard = plan.shardOf(spec.name, comm.rank);
      const whole = spec.shard === undefined && spec.inFeatures === planned.inFeatures && spec.outFeatures === planned.outFeatures;
      const local =
        spec.shard !== undefined &&
        spec.shard.role === shard.role &&
        spec.shard.rank === shard.rank &&
        spec.shard.size === shard.size &&
        spec.inFeatures === planned.localIn &&
        spec.outFeatures === planned.localOut;
      if (!whole && !local) {
        throw new TpError(
          'SHAPE_MISMATCH',
          `linear '${spec.name}' [${spec.outFeatures}, ${spec.inFeatures}] is neither the whole layer [${planned.outFeatures}, ${planned.inFeatures}] nor rank ${comm.rank}'s ${shard.role} part [${planned.localOut}, ${planned.localIn}]`,
          { value: { out: spec.outFeatures, in: spec.inFeatures, shard: spec.shard }, where: spec.name },
        );
      }
      const localSpec: LinearSpec = { ...spec, inFeatures: planned.localIn, outFeatures: planned.localOut, shard };
      // An exchanged row layer reads the whole weight and answers as the row shard.
      if (planned.exchange && sequence) {
        const whole: LinearSpec = { name: spec.name, inFeatures: planned.inFeatures, outFeatures: planned.outFeatures, bias: spec.bias };
        const op = provider.linear(whole);
        requireInt8Contract(op);
        return new ExchangedRowLinear(op, comm, scratch, localSpec);
      }
      // Asked whole, a gathered layer answers whole; asked for the local part, the caller gathers.
      if (shard.role === 'gathered' && whole && comm.size > 1) return gatheredLinear(provider.linear(localSpec), comm, spec);
      return byRole(provider.linear(localSpec), comm, scratch, sequence);
    },
  };
}
