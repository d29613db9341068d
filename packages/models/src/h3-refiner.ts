import type { LinearPrecision, Tensor } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';
import { type ParameterReader, checkWidth, headsFirst, mergeHeads, splitHeads } from './h3-block.js';
import type { H3Config } from './h3-config.js';
import { h3LinearSpec } from './h3-layout.js';
import { h3RefinerLinears } from './h3-tensors.js';
import type { LinearOp, LinearProvider } from './linear-provider.js';
import { add, attention, rmsNorm, swiglu } from './ops.js';

/**
 * One block of H3's token refiner (the text stream after `condition_proj`): pre-norm attention with
 * per-head q/k RMSNorm and no RoPE over the text rows alone, then a SwiGLU MLP, plain residuals
 * (no adaLN). Its linears are replicated under tensor parallelism.
 */
export class H3RefinerBlock {
  readonly index: number;
  readonly linears: { readonly qkv: LinearOp; readonly out: LinearOp; readonly fc1: LinearOp; readonly fc2: LinearOp };
  private readonly config: H3Config;
  private readonly params: ParameterReader;
  /** What attention computes in (see H3Block.attentionPrecision). */
  attentionPrecision: LinearPrecision = 'f32';

  constructor(config: H3Config, index: number, provider: LinearProvider, params: ParameterReader, prefix = '') {
    this.config = config;
    this.index = index;
    this.params = params;
    const [qkv, out, fc1, fc2] = h3RefinerLinears(config, index).map((l) => provider.linear(h3LinearSpec(config, l, prefix))) as [LinearOp, LinearOp, LinearOp, LinearOp];
    this.linears = { qkv, out, fc1, fc2 };
  }

  /** x [L, hidden] -> [L, hidden]. */
  async forward(x: Tensor<'f32'>): Promise<Tensor<'f32'>> {
    const { hidden: d, heads, headDim: hd, eps, qkEps } = this.config;
    const s = x.shape[0] as number;
    if (x.rank !== 2 || x.shape[1] !== d) {
      throw new ModelsError('SHAPE_MISMATCH', `refiner block ${this.index}: x must be [L, ${d}], got [${x.shape.join(', ')}]`, { value: x.shape, where: `token_refiner.blocks.${this.index}` });
    }
    const p = `token_refiner.blocks.${this.index}`;
    const lin = async (op: LinearOp, v: Tensor<'f32'>): Promise<Tensor<'f32'>> => checkWidth(op, await op.forward(v), v.shape[0] as number);
    const inner = heads * hd;
    const qkv = (await lin(this.linears.qkv, rmsNorm(x, this.params(`${p}.norm1.weight`), eps))).data;
    const q = headsFirst(rmsNorm(splitHeads(qkv, s, 3 * inner, 0, heads, hd, false), this.params(`${p}.attn.q_norm.weight`), qkEps));
    const k = headsFirst(rmsNorm(splitHeads(qkv, s, 3 * inner, inner, heads, hd, false), this.params(`${p}.attn.k_norm.weight`), qkEps));
    const v = splitHeads(qkv, s, 3 * inner, 2 * inner, heads, hd, true);
    const att = await attention(q, k, v, { scale: 1 / Math.sqrt(hd), precision: this.attentionPrecision });
    const x1 = add(await lin(this.linears.out, mergeHeads(att)), x);
    const f1 = await lin(this.linears.fc1, rmsNorm(x1, this.params(`${p}.norm2.weight`), eps));
    return add(await lin(this.linears.fc2, swiglu(f1)), x1);
  }
}
