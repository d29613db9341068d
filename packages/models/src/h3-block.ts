import { type LinearPrecision, Tensor } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';
import { type H3Config, rotDim } from './h3-config.js';
import type { SequenceSplit, Shard } from '@ninodes/quant';
import { checkH3Shard, h3LinearSpec } from './h3-layout.js';
import { h3BlockLinears } from './h3-tensors.js';
import type { ModSegment } from './h3-streams.js';
import type { LinearOp, LinearProvider } from './linear-provider.js';
import { type OpProfiler, timed, timedAsync } from './op-profile.js';
import type { Workspace } from './workspace.js';
import { attention, gatedResidual, modulate, qkNormRope, rmsNorm, rmsNormModulate, silu, swiglu } from './ops.js';

/** Reads a non-linear parameter (norm weight, buffer) as f32, by its name without the file prefix. */
export type ParameterReader = (name: string) => Tensor<'f32'>;

/** The layout helpers' output: `out` (reused buffer, its size checked) or fresh memory. */
function layoutOut(out: Tensor<'f32'> | undefined, n: number, where: string): Float32Array {
  if (out === undefined) return new Float32Array(n);
  if (out.numel !== n) throw new ModelsError('SHAPE_MISMATCH', `${where}: out holds ${out.numel} values, needs ${n}`, { value: out.shape, where });
  return out.data;
}

/** [S, H, D] columns [offset, offset + H·D) of a [S, W] matrix, or its transpose [H, S, D]; into `out` when given. */
export function splitHeads(x: Float32Array, s: number, width: number, offset: number, heads: number, hd: number, headsFirst: boolean, out?: Tensor<'f32'>): Tensor<'f32'> {
  const dst = layoutOut(out, s * heads * hd, 'splitHeads');
  // One memcpy per head row (TypedArray.set), not a JS loop per element.
  for (let t = 0; t < s; t++) {
    for (let h = 0; h < heads; h++) {
      const src = t * width + offset + h * hd;
      dst.set(x.subarray(src, src + hd), headsFirst ? (h * s + t) * hd : (t * heads + h) * hd);
    }
  }
  const shape = headsFirst ? [heads, s, hd] : [s, heads, hd];
  return out === undefined ? Tensor.fromArray('f32', shape, dst) : out.reshape(shape);
}

/** [S, H, D] -> [H, S, D]; into `out` when given. */
export function headsFirst(x: Tensor<'f32'>, out?: Tensor<'f32'>): Tensor<'f32'> {
  const [s, h, d] = x.shape as [number, number, number];
  return splitHeads(x.data, s, h * d, 0, h, d, true, out);
}

/**
 * An op's output must be [rows, N] for the N its spec declares: a narrower op (a shard built for
 * other widths) would otherwise leave part of the block's buffers unread or misaligned.
 */
export function checkWidth(op: LinearOp, y: Tensor<'f32'>, rows: number, n = op.spec.outFeatures): Tensor<'f32'> {
  if (y.shape.length !== 2 || y.shape[0] !== rows || y.shape[1] !== n || y.numel !== rows * n) {
    throw new ModelsError('LINEAR_WIDTH_MISMATCH', `linear '${op.spec.name}' returned [${y.shape.join(', ')}], the block needs [${rows}, ${n}]`, {
      value: y.shape,
      where: op.spec.name,
      hint: 'the provider built an op for other widths (a shard of another size, or a wrong layer)',
    });
  }
  return y;
}

/** Chunk c of width d from row 0 of an adaLN output (zero-copy view). */
function chunk(mod: Tensor<'f32'>, c: number, d: number): Tensor<'f32'> {
  return mod.view('f32', [d], mod.byteOffset + c * d * 4);
}

/** What a block saw and produced, for capture mode. */
export interface BlockTrace {
  readonly attnOut: Tensor<'f32'>;
  readonly mlpOut: Tensor<'f32'>;
  readonly afterAttn: Tensor<'f32'>;
}

/**
 * One MiniMax-H3 `DiTBlock` on video tokens (adaLN modality row 0): RMSNorm → modulate → qkv →
 * per-head q/k RMSNorm → split-half RoPE (one fused pass) on the first rot dims → attention → out_proj → gated
 * residual; then RMSNorm → modulate → fc1 [gate | up] → silu(gate)·up → fc2 → gated residual.
 */
export class H3Block {
  readonly index: number;
  readonly linears: { readonly adaln: LinearOp; readonly qkv: LinearOp; readonly out: LinearOp; readonly fc1: LinearOp; readonly fc2: LinearOp };
  /** Heads this rank attends over (all of them unless sharded). */
  readonly localHeads: number;
  /** Sequence parallelism: the token rows this rank owns between the column and row layers. */
  readonly sequence: SequenceSplit | undefined;
  private readonly config: H3Config;
  private readonly params: ParameterReader;
  /** Receives per-op wall times when set (bench); undefined costs nothing. */
  profiler: OpProfiler | undefined;
  /**
   * What attention computes in: 'bf16' is kernels' bf16 attention (q, k, v rounded to bf16, PyTorch's
   * bf16 SDPA; needs bf16 units, else BACKEND_UNAVAILABLE), 'f32' (default) the f32 kernel.
   */
  attentionPrecision: LinearPrecision = 'f32';

  /**
   * With a `shard`, the block is one tensor-parallel rank's part: its heads (heads / size) and its
   * slice of the MLP (ffn / size); out_proj and fc2 give partial sums, which the provider's ops
   * reduce inside their forward (the block just calls it). With a `sequence` split as well (of the
   * same rank and size), the block holds only its own token rows between its linears: norms,
   * modulation and gated residuals run on those rows, and the provider's column and row ops must
   * work on sequence-parallel rows (LinearOp.sequenceParallel: they gather and reduce-scatter rows).
   */
  constructor(config: H3Config, index: number, provider: LinearProvider, params: ParameterReader, prefix = '', profiler?: OpProfiler, shard?: Shard, sequence?: SequenceSplit) {
    this.config = config;
    this.profiler = profiler;
    this.index = index;
    this.params = params;
    const local = shard === undefined || shard.size === 1 ? undefined : checkH3Shard(config, shard);
    this.localHeads = local === undefined ? config.heads : config.heads / local.size;
    const ops = h3BlockLinears(config, index).map((l) => provider.linear(h3LinearSpec(config, l, prefix, local)));
    const [adaln, qkv, out, fc1, fc2] = ops as [LinearOp, LinearOp, LinearOp, LinearOp, LinearOp];
    this.linears = { adaln, qkv, out, fc1, fc2 };
    this.sequence = checkSequence(local, sequence, [qkv, out, fc1, fc2], index);
  }

  /**
   * x [S, hidden], tEmb [M, tDim] (before SiLU; the curve form takes it as is), angles [S, ≥ rot]
   * -> new x [S, hidden]. Without `segments` every row reads adaLN row 0 (video, first timestep);
   * with them each run of rows reads its own row (timestep row · 3 + modality). With a `workspace`
   * (buffers reused across blocks and steps, one forward at a time) the activations and the returned
   * x live in its buffers, valid until the next block of the same parity; it is not used with a
   * trace (which keeps the block's outputs).
   */
  async forward(
    x: Tensor<'f32'>,
    tEmb: Tensor<'f32'>,
    angles: Tensor<'f32'>,
    trace?: (t: BlockTrace) => void,
    segments?: readonly ModSegment[],
    workspace?: Workspace,
  ): Promise<Tensor<'f32'>> {
    const { hidden: d, headDim: hd, eps, qkEps } = this.config;
    const heads = this.localHeads;
    const s = x.shape[0] as number;
    if (x.rank !== 2 || x.shape[1] !== d) {
      throw new ModelsError('SHAPE_MISMATCH', `block ${this.index}: x must be [S, ${d}], got [${x.shape.join(', ')}]`, { value: x.shape, where: `blocks.${this.index}` });
    }
    // The rows [a, b) this rank computes the row-wise work of (all of them without a sequence split);
    // under a split x, the residual stream, holds only these rows.
    const { start: a, stop: b } = this.sequence?.rows(s) ?? { start: 0, stop: s };
    const split = a !== 0 || b !== s;
    const mine = (t: Tensor<'f32'>): Tensor<'f32'> => (split ? t.rows(a, b) : t);
    const p = `blocks.${this.index}`;
    const inner = heads * hd;
    const prof = this.profiler;
    // Buffers shared by every block (they run one after another): the block's output alternates
    // between two, so a block never writes the tensor it was given.
    const ws = trace === undefined ? workspace : undefined;
    const buf = (key: string, shape: readonly number[]): Tensor<'f32'> | undefined => ws?.f32(`block.${key}`, shape);
    const lin = async (op: LinearOp, v: Tensor<'f32'>, key: string): Promise<Tensor<'f32'>> => {
      const rows = v.shape[0] as number;
      const out = buf(key, [rows, op.spec.outFeatures]);
      return checkWidth(op, await timedAsync(prof, 'linear', () => op.forward(v, out)), rows);
    };
    const t2 = tEmb.reshape([-1, tEmb.shape[tEmb.rank - 1] as number]);
    const segs = segments ?? [{ start: 0, stop: s, row: 0 }];
    // The segments' parts in the own rows, counted from a: the row-wise ops run on those.
    const own = segs.flatMap((seg) => (Math.min(seg.stop, b) > Math.max(seg.start, a) ? [{ start: Math.max(seg.start, a) - a, stop: Math.min(seg.stop, b) - a, row: seg.row }] : []));
    const whole = own.length === 1 && own[0]?.start === 0 && own[0].stop === b - a;
    // The adaLN output holds three modality rows (6·hidden each) per timestep; only the run of
    // modalities [lo, hi] this forward reads is computed (a video-only forward: one third of the
    // block's biggest linear; a tensor-parallel gather splits it across the ranks). Ops without
    // forwardRows compute all three.
    const modalities = segs.map((seg) => seg.row % 3);
    const adaln = this.linears.adaln;
    const forwardRows = adaln.forwardRows?.bind(adaln);
    const partial = forwardRows !== undefined && (Math.min(...modalities) > 0 || Math.max(...modalities) < 2);
    const lo = partial ? Math.min(...modalities) : 0;
    const span = partial ? Math.max(...modalities) - lo + 1 : 3;
    const adalnIn = this.config.curveGrid === undefined ? timed(prof, 'elementwise', () => silu(t2, buf('silu_t', t2.shape))) : t2;
    const mod = forwardRows !== undefined && partial
      ? checkWidth(
          adaln,
          await timedAsync(prof, 'linear', () => forwardRows(adalnIn, 6 * d * lo, 6 * d * (lo + span), buf(`adaln${span}`, [t2.shape[0] as number, 6 * d * span]))),
          t2.shape[0] as number,
          6 * d * span,
        )
      : await lin(adaln, adalnIn, 'adaln');
    // Chunk c of a segment's adaLN row (timestep t = row / 3, modality m = row % 3): the output is
    // [M, span·6·hidden] with modality m's six chunks at (span·6t + 6(m − lo) + c)·hidden.
    const at = (seg: ModSegment, c: number): number => 6 * span * Math.floor(seg.row / 3) + 6 * ((seg.row % 3) - lo) + c;
    // Each segment's rows are written straight into their rows of `dst` (a workspace buffer, else
    // fresh); v and dst are the own rows, as `own` counts them.
    const perRows = (v: Tensor<'f32'>, dst: Tensor<'f32'> | undefined, f: (rows: Tensor<'f32'>, seg: ModSegment, out: Tensor<'f32'> | undefined) => Tensor<'f32'>): Tensor<'f32'> => {
      if (whole) return f(v, own[0] as ModSegment, dst);
      const out = dst ?? Tensor.zeros('f32', [v.shape[0] as number, v.shape[1] as number]);
      for (const seg of own) f(v.rows(seg.start, seg.stop), seg, out.rows(seg.start, seg.stop));
      return out;
    };
    // A row-wise result [S, W]: `f` writes the own rows into the given view (undefined: where it
    // likes, without a split). Under a split the other rows stay as they were.
    const rowWise = (key: string, shape: readonly number[], f: (dst: Tensor<'f32'> | undefined) => Tensor<'f32'>): Tensor<'f32'> => {
      const dst = buf(key, shape) ?? (split ? Tensor.zeros('f32', shape) : undefined);
      if (dst === undefined || !split) return f(dst);
      if (b > a) f(dst.rows(a, b));
      return dst;
    };
    const ownBuf = (key: string, shape: readonly number[]): Tensor<'f32'> | undefined => {
      const t = buf(key, shape);
      return t === undefined ? undefined : mine(t);
    };
    const modulateRows = (v: Tensor<'f32'>, c: number, dst: Tensor<'f32'> | undefined): Tensor<'f32'> =>
      perRows(v, dst, (r, seg, o) => modulate(r, chunk(mod, at(seg, c), d), chunk(mod, at(seg, c + 1), d), o));
    const gateRows = (base: Tensor<'f32'>, out: Tensor<'f32'>, c: number, dst?: Tensor<'f32'>): Tensor<'f32'> =>
      perRows(base, dst, (r, seg, o) => gatedResidual(r, whole ? out : out.rows(seg.start, seg.stop), chunk(mod, at(seg, c), d), o));

    // One fused pass (RMSNorm then modulate, same bits) when one modality row covers every own token.
    const normModulate = (v: Tensor<'f32'>, weight: string, c: number): Tensor<'f32'> =>
      rowWise('h', v.shape, (dst) =>
        whole
          ? timed(prof, 'norm', () => rmsNormModulate(mine(v), this.params(weight), chunk(mod, at(own[0] as ModSegment, c), d), chunk(mod, at(own[0] as ModSegment, c + 1), d), eps, dst))
          : timed(prof, 'elementwise', () => modulateRows(timed(prof, 'norm', () => rmsNorm(mine(v), this.params(weight), eps, ownBuf('norm', v.shape))), c, dst)),
      );
    const h1 = normModulate(x, `${p}.norm1.weight`, 0);
    const qkv = await lin(this.linears.qkv, h1, 'qkv');
    const rot = rotDim(this.config);
    const headsMajor = [heads, s, hd];
    // One pass from the qkv projection to heads-first q, k, v: per-head q/k RMSNorm, RoPE and the
    // transpose, bit for bit the separate ops (kernels' qkNormRope).
    const qOut = buf('q', headsMajor);
    const kOut = buf('k', headsMajor);
    const vOut = buf('v', headsMajor);
    const { q, k, v } = timed(prof, 'rope', () =>
      qkNormRope(qkv, this.params(`${p}.attn.q_norm.weight`), this.params(`${p}.attn.k_norm.weight`), angles, {
        heads,
        rotDim: rot,
        eps: qkEps,
        ...(qOut && kOut && vOut ? { out: { q: qOut, k: kOut, v: vOut } } : {}),
      }),
    );
    // Attention writes [S, heads·D] itself (mergeHeads): the out projection's input, no transpose pass.
    const attOut = buf('merged', [s, inner]);
    const att = await timedAsync(prof, 'attention', () =>
      attention(q, k, v, { scale: 1 / Math.sqrt(hd), precision: this.attentionPrecision, mergeHeads: true, ...(attOut ? { out: attOut } : {}) }),
    );
    const attnOut = await lin(this.linears.out, att, 'attn_out');
    const x1 = timed(prof, 'elementwise', () => rowWise('x1', x.shape, (dst) => gateRows(mine(x), mine(attnOut), 2, dst)));

    const h2 = normModulate(x1, `${p}.norm2.weight`, 3);
    const f1 = await lin(this.linears.fc1, h2, 'fc1');
    const mlpOut = await lin(this.linears.fc2, timed(prof, 'elementwise', () => swiglu(f1, buf('swiglu', [s, (f1.shape[1] as number) / 2]))), 'fc2');
    // Blocks alternate between two output buffers: the input x (the previous block's output) stays intact.
    const x2 = timed(prof, 'elementwise', () => rowWise(`x.${this.index % 2}`, x.shape, (dst) => gateRows(mine(x1), mine(mlpOut), 5, dst)));
    trace?.({ attnOut, mlpOut, afterAttn: x1 });
    return x2;
  }
}

/**
 * The block's sequence split, checked against its shard and its ops: a split needs a shard of the
 * same rank and size, and the column and row ops must work on sequence-parallel rows exactly when
 * the block does (a plain op would read rows this rank never filled, or leave rows unreduced).
 * A split of one rank is no split.
 */
function checkSequence(shard: Shard | undefined, sequence: SequenceSplit | undefined, ops: readonly LinearOp[], index: number): SequenceSplit | undefined {
  const split = sequence === undefined || sequence.size === 1 ? undefined : sequence;
  if (split !== undefined && (shard === undefined || shard.rank !== split.rank || shard.size !== split.size)) {
    throw new ModelsError('INVALID_SHARD', `a sequence split of rank ${split.rank} of ${split.size} needs a shard of the same rank and size, got ${shard === undefined ? 'none' : `rank ${shard.rank} of ${shard.size}`}`, {
      value: { sequence: [split.rank, split.size], shard },
      where: `blocks.${index}`,
      hint: 'pass the shard and the sequence split of the same communicator',
    });
  }
  for (const op of ops) {
    if ((op.sequenceParallel === true) !== (split !== undefined)) {
      throw new ModelsError('INVALID_SHARD', `linear '${op.spec.name}' ${op.sequenceParallel === true ? 'works on sequence-parallel rows, the model has no sequence split' : 'does not work on sequence-parallel rows, the model has a sequence split'}`, {
        value: { sequenceParallel: op.sequenceParallel === true, split: split !== undefined },
        where: op.spec.name,
        hint: 'give the model a sequence split exactly when the provider was made with sequence: true',
      });
    }
  }
  return split;
}
