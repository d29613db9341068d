import { Tensor } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';
import { type H3Config, rotDim } from './h3-config.js';
import type { Shard } from '@ninodes/quant';
import { checkH3Shard, h3LinearSpec } from './h3-layout.js';
import { h3BlockLinears } from './h3-tensors.js';
import type { ModSegment } from './h3-streams.js';
import type { LinearOp, LinearProvider } from './linear-provider.js';
import { type OpProfiler, timed, timedAsync } from './op-profile.js';
import { attention, gatedResidual, modulate, ropeSplitHalf, rmsNorm, rmsNormModulate, silu, swiglu } from './ops.js';

/** Reads a non-linear parameter (norm weight, buffer) as f32, by its name without the file prefix. */
export type ParameterReader = (name: string) => Tensor<'f32'>;

/** [S, H, D] columns [offset, offset + H·D) of a [S, W] matrix, or its transpose [H, S, D]. */
export function splitHeads(x: Float32Array, s: number, width: number, offset: number, heads: number, hd: number, headsFirst: boolean): Tensor<'f32'> {
  const out = new Float32Array(s * heads * hd);
  // One memcpy per head row (TypedArray.set), not a JS loop per element.
  for (let t = 0; t < s; t++) {
    for (let h = 0; h < heads; h++) {
      const src = t * width + offset + h * hd;
      out.set(x.subarray(src, src + hd), headsFirst ? (h * s + t) * hd : (t * heads + h) * hd);
    }
  }
  return Tensor.fromArray('f32', headsFirst ? [heads, s, hd] : [s, heads, hd], out);
}

/** [S, H, D] -> [H, S, D] */
export function headsFirst(x: Tensor<'f32'>): Tensor<'f32'> {
  const [s, h, d] = x.shape as [number, number, number];
  return splitHeads(x.data, s, h * d, 0, h, d, true);
}

/** [H, S, D] -> [S, H·D] */
export function mergeHeads(x: Tensor<'f32'>): Tensor<'f32'> {
  const [h, s, d] = x.shape as [number, number, number];
  const src = x.data;
  const out = new Float32Array(s * h * d);
  for (let hh = 0; hh < h; hh++) {
    for (let t = 0; t < s; t++) {
      const from = (hh * s + t) * d;
      out.set(src.subarray(from, from + d), (t * h + hh) * d);
    }
  }
  return Tensor.fromArray('f32', [s, h * d], out);
}

/**
 * An op's output must be [rows, N] for the N its spec declares: a narrower op (a shard built for
 * other widths) would otherwise leave part of the block's buffers unread or misaligned.
 */
export function checkWidth(op: LinearOp, y: Tensor<'f32'>, rows: number): Tensor<'f32'> {
  const n = op.spec.outFeatures;
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
 * per-head q/k RMSNorm → split-half RoPE on the first rot dims → attention → out_proj → gated
 * residual; then RMSNorm → modulate → fc1 [gate | up] → silu(gate)·up → fc2 → gated residual.
 */
export class H3Block {
  readonly index: number;
  readonly linears: { readonly adaln: LinearOp; readonly qkv: LinearOp; readonly out: LinearOp; readonly fc1: LinearOp; readonly fc2: LinearOp };
  /** Heads this rank attends over (all of them unless sharded). */
  readonly localHeads: number;
  private readonly config: H3Config;
  private readonly params: ParameterReader;
  /** Receives per-op wall times when set (bench); undefined costs nothing. */
  profiler: OpProfiler | undefined;

  /**
   * With a `shard`, the block is one tensor-parallel rank's part: its heads (heads / size) and its
   * slice of the MLP (ffn / size); out_proj and fc2 give partial sums, which the provider's ops
   * reduce inside their forward (the block just calls it).
   */
  constructor(config: H3Config, index: number, provider: LinearProvider, params: ParameterReader, prefix = '', profiler?: OpProfiler, shard?: Shard) {
    this.config = config;
    this.profiler = profiler;
    this.index = index;
    this.params = params;
    const local = shard === undefined || shard.size === 1 ? undefined : checkH3Shard(config, shard);
    this.localHeads = local === undefined ? config.heads : config.heads / local.size;
    const ops = h3BlockLinears(config, index).map((l) => provider.linear(h3LinearSpec(config, l, prefix, local)));
    const [adaln, qkv, out, fc1, fc2] = ops as [LinearOp, LinearOp, LinearOp, LinearOp, LinearOp];
    this.linears = { adaln, qkv, out, fc1, fc2 };
  }

  /**
   * x [S, hidden], tEmb [M, tDim] (before SiLU; the curve form takes it as is), angles [S, ≥ rot]
   * -> new x [S, hidden]. Without `segments` every row reads adaLN row 0 (video, first timestep);
   * with them each run of rows reads its own row (timestep row · 3 + modality).
   */
  async forward(x: Tensor<'f32'>, tEmb: Tensor<'f32'>, angles: Tensor<'f32'>, trace?: (t: BlockTrace) => void, segments?: readonly ModSegment[]): Promise<Tensor<'f32'>> {
    const { hidden: d, headDim: hd, eps, qkEps } = this.config;
    const heads = this.localHeads;
    const s = x.shape[0] as number;
    if (x.rank !== 2 || x.shape[1] !== d) {
      throw new ModelsError('SHAPE_MISMATCH', `block ${this.index}: x must be [S, ${d}], got [${x.shape.join(', ')}]`, { value: x.shape, where: `blocks.${this.index}` });
    }
    const p = `blocks.${this.index}`;
    const inner = heads * hd;
    const prof = this.profiler;
    const lin = async (op: LinearOp, v: Tensor<'f32'>): Promise<Tensor<'f32'>> => checkWidth(op, await timedAsync(prof, 'linear', () => op.forward(v)), v.shape[0] as number);
    const t2 = tEmb.reshape([-1, tEmb.shape[tEmb.rank - 1] as number]);
    const mod = await lin(this.linears.adaln, this.config.curveGrid === undefined ? timed(prof, 'elementwise', () => silu(t2)) : t2);
    const segs = segments ?? [{ start: 0, stop: s, row: 0 }];
    const whole = segs.length === 1 && segs[0]?.start === 0 && segs[0].stop === s;
    // Row r of the [M·3, 6·hidden] view of the adaLN output: chunk c sits at (6r + c)·hidden.
    const perRows = (v: Tensor<'f32'>, f: (rows: Tensor<'f32'>, seg: ModSegment) => Tensor<'f32'>): Tensor<'f32'> => {
      if (whole) return f(v, segs[0] as ModSegment);
      const w = v.shape[1] as number;
      const out = new Float32Array(s * w);
      for (const seg of segs) out.set(f(v.rows(seg.start, seg.stop), seg).data, seg.start * w);
      return Tensor.fromArray('f32', [s, w], out);
    };
    const modulateRows = (v: Tensor<'f32'>, c: number): Tensor<'f32'> => perRows(v, (r, seg) => modulate(r, chunk(mod, 6 * seg.row + c, d), chunk(mod, 6 * seg.row + c + 1, d)));
    const gateRows = (base: Tensor<'f32'>, out: Tensor<'f32'>, c: number): Tensor<'f32'> =>
      whole ? gatedResidual(base, out, chunk(mod, 6 * (segs[0] as ModSegment).row + c, d)) : perRows(base, (r, seg) => gatedResidual(r, out.rows(seg.start, seg.stop), chunk(mod, 6 * seg.row + c, d)));

    // One fused pass (RMSNorm then modulate, same bits) when one modality row covers every token.
    const normModulate = (v: Tensor<'f32'>, weight: string, c: number): Tensor<'f32'> =>
      whole
        ? timed(prof, 'norm', () => rmsNormModulate(v, this.params(weight), chunk(mod, 6 * (segs[0] as ModSegment).row + c, d), chunk(mod, 6 * (segs[0] as ModSegment).row + c + 1, d), eps))
        : timed(prof, 'elementwise', () => modulateRows(timed(prof, 'norm', () => rmsNorm(v, this.params(weight), eps)), c));
    const h1 = normModulate(x, `${p}.norm1.weight`, 0);
    const qkv = (await lin(this.linears.qkv, h1)).data;
    const rot = rotDim(this.config);
    const [qs, ks, v] = timed(prof, 'layout', () => [
      splitHeads(qkv, s, 3 * inner, 0, heads, hd, false),
      splitHeads(qkv, s, 3 * inner, inner, heads, hd, false),
      splitHeads(qkv, s, 3 * inner, 2 * inner, heads, hd, true),
    ]) as [Tensor<'f32'>, Tensor<'f32'>, Tensor<'f32'>];
    const qn = timed(prof, 'norm', () => rmsNorm(qs, this.params(`${p}.attn.q_norm.weight`), qkEps));
    const kn = timed(prof, 'norm', () => rmsNorm(ks, this.params(`${p}.attn.k_norm.weight`), qkEps));
    const qr = timed(prof, 'rope', () => ropeSplitHalf(qn, angles, rot));
    const kr = timed(prof, 'rope', () => ropeSplitHalf(kn, angles, rot));
    const [q, k] = timed(prof, 'layout', () => [headsFirst(qr), headsFirst(kr)]) as [Tensor<'f32'>, Tensor<'f32'>];
    const att = await timedAsync(prof, 'attention', () => attention(q, k, v, { scale: 1 / Math.sqrt(hd) }));
    const attnOut = await lin(this.linears.out, timed(prof, 'layout', () => mergeHeads(att)));
    const x1 = timed(prof, 'elementwise', () => gateRows(x, attnOut, 2));

    const h2 = normModulate(x1, `${p}.norm2.weight`, 3);
    const f1 = await lin(this.linears.fc1, h2);
    const mlpOut = await lin(this.linears.fc2, timed(prof, 'elementwise', () => swiglu(f1)));
    const x2 = timed(prof, 'elementwise', () => gateRows(x1, mlpOut, 5));
    trace?.({ attnOut, mlpOut, afterAttn: x1 });
    return x2;
  }
}
