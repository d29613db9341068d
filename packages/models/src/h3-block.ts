import { NinodesError, Tensor } from '@ninodes/kernels';
import { type H3Config, rotDim } from './h3-config.js';
import { h3BlockLinears } from './h3-tensors.js';
import type { LinearOp, LinearProvider } from './linear-provider.js';
import { type OpProfiler, timed, timedAsync } from './op-profile.js';
import { attention, gatedResidual, ropeSplitHalf, rmsNorm, rmsNormModulate, silu, swiglu } from './ops.js';

/** Reads a non-linear parameter (norm weight, buffer) as f32, by its name without the file prefix. */
export type ParameterReader = (name: string) => Tensor<'f32'>;

/** [S, H, D] columns [offset, offset + H·D) of a [S, W] matrix, or its transpose [H, S, D]. */
function splitHeads(x: Float32Array, s: number, width: number, offset: number, heads: number, hd: number, headsFirst: boolean): Tensor<'f32'> {
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
function headsFirst(x: Tensor<'f32'>): Tensor<'f32'> {
  const [s, h, d] = x.shape as [number, number, number];
  return splitHeads(x.data, s, h * d, 0, h, d, true);
}

/** [H, S, D] -> [S, H·D] */
function mergeHeads(x: Tensor<'f32'>): Tensor<'f32'> {
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
  private readonly config: H3Config;
  private readonly params: ParameterReader;
  /** Receives per-op wall times when set (bench); undefined costs nothing. */
  profiler: OpProfiler | undefined;

  constructor(config: H3Config, index: number, provider: LinearProvider, params: ParameterReader, prefix = '', profiler?: OpProfiler) {
    this.config = config;
    this.profiler = profiler;
    this.index = index;
    this.params = params;
    const ops = h3BlockLinears(config, index).map((l) =>
      provider.linear({ name: `${prefix}${l.name}`, inFeatures: l.inFeatures, outFeatures: l.outFeatures, bias: l.bias }),
    );
    const [adaln, qkv, out, fc1, fc2] = ops as [LinearOp, LinearOp, LinearOp, LinearOp, LinearOp];
    this.linears = { adaln, qkv, out, fc1, fc2 };
  }

  /** x [S, hidden], tEmb [1, tDim] (before SiLU), angles [S, ≥ rot] -> new x [S, hidden]. */
  async forward(x: Tensor<'f32'>, tEmb: Tensor<'f32'>, angles: Tensor<'f32'>, trace?: (t: BlockTrace) => void): Promise<Tensor<'f32'>> {
    const { hidden: d, heads, headDim: hd, eps, qkEps } = this.config;
    const s = x.shape[0] as number;
    if (x.rank !== 2 || x.shape[1] !== d) {
      throw new NinodesError('SHAPE_MISMATCH', `block ${this.index}: x must be [S, ${d}], got [${x.shape.join(', ')}]`, { value: x.shape, where: `blocks.${this.index}` });
    }
    const p = `blocks.${this.index}`;
    const inner = heads * hd;
    const prof = this.profiler;
    const lin = (op: LinearOp, v: Tensor<'f32'>): Promise<Tensor<'f32'>> => timedAsync(prof, 'linear', () => op.forward(v));
    const mod = await lin(this.linears.adaln, timed(prof, 'elementwise', () => silu(tEmb.reshape([1, -1]))));
    const [shiftA, scaleA, gateA, shiftM, scaleM, gateM] = [0, 1, 2, 3, 4, 5].map((c) => chunk(mod, c, d)) as Tensor<'f32'>[];

    const h1 = timed(prof, 'norm', () => rmsNormModulate(x, this.params(`${p}.norm1.weight`), shiftA as Tensor<'f32'>, scaleA as Tensor<'f32'>, eps));
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
    const x1 = timed(prof, 'elementwise', () => gatedResidual(x, attnOut, gateA as Tensor<'f32'>));

    const h2 = timed(prof, 'norm', () => rmsNormModulate(x1, this.params(`${p}.norm2.weight`), shiftM as Tensor<'f32'>, scaleM as Tensor<'f32'>, eps));
    const f1 = await lin(this.linears.fc1, h2);
    const mlpOut = await lin(this.linears.fc2, timed(prof, 'elementwise', () => swiglu(f1)));
    const x2 = timed(prof, 'elementwise', () => gatedResidual(x1, mlpOut, gateM as Tensor<'f32'>));
    trace?.({ attnOut, mlpOut, afterAttn: x1 });
    return x2;
  }
}
