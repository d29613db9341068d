import type { LinearPrecision, Tensor } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';
import { type ParameterReader, checkWidth, headsFirst, splitHeads } from './h3-block.js';
import type { H3Config } from './h3-config.js';
import { h3LinearSpec } from './h3-layout.js';
import { h3RefinerLinears } from './h3-tensors.js';
import type { LinearOp, LinearProvider } from './linear-provider.js';
import type { Workspace } from './workspace.js';
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

  /**
   * x [L, hidden] -> [L, hidden]. With a `workspace` (one forward at a time) every activation and the
   * returned x live in its buffers; the output alternates between two by block parity, so a block
   * never writes the x it was given.
   */
  async forward(x: Tensor<'f32'>, workspace?: Workspace): Promise<Tensor<'f32'>> {
    const { hidden: d, heads, headDim: hd, eps, qkEps } = this.config;
    const s = x.shape[0] as number;
    if (x.rank !== 2 || x.shape[1] !== d) {
      throw new ModelsError('SHAPE_MISMATCH', `refiner block ${this.index}: x must be [L, ${d}], got [${x.shape.join(', ')}]`, { value: x.shape, where: `token_refiner.blocks.${this.index}` });
    }
    const p = `token_refiner.blocks.${this.index}`;
    const buf = (key: string, shape: readonly number[]): Tensor<'f32'> | undefined => workspace?.f32(`refiner.${key}`, shape);
    const lin = async (op: LinearOp, v: Tensor<'f32'>, key: string): Promise<Tensor<'f32'>> =>
      checkWidth(op, await op.forward(v, buf(key, [s, op.spec.outFeatures])), v.shape[0] as number);
    const inner = heads * hd;
    const rowsMajor = [s, heads, hd];
    const headsMajor = [heads, s, hd];
    const qkv = (await lin(this.linears.qkv, rmsNorm(x, this.params(`${p}.norm1.weight`), eps, buf('h', x.shape)), 'qkv')).data;
    const qk = (offset: number, name: string): Tensor<'f32'> =>
      headsFirst(rmsNorm(splitHeads(qkv, s, 3 * inner, offset, heads, hd, false, buf('split', rowsMajor)), this.params(`${p}.attn.${name}_norm.weight`), qkEps, buf('normed', rowsMajor)), buf(name, headsMajor));
    const q = qk(0, 'q');
    const k = qk(inner, 'k');
    const v = splitHeads(qkv, s, 3 * inner, 2 * inner, heads, hd, true, buf('v', headsMajor));
    const attOut = buf('merged', [s, inner]);
    const att = await attention(q, k, v, { scale: 1 / Math.sqrt(hd), precision: this.attentionPrecision, mergeHeads: true, ...(attOut ? { out: attOut } : {}) });
    const x1 = add(await lin(this.linears.out, att, 'out'), x, buf('x1', x.shape));
    const f1 = await lin(this.linears.fc1, rmsNorm(x1, this.params(`${p}.norm2.weight`), eps, buf('h', x.shape)), 'fc1');
    return add(await lin(this.linears.fc2, swiglu(f1, buf('swiglu', [s, (f1.shape[1] as number) / 2])), 'fc2'), x1, buf(`x.${this.index % 2}`, x.shape));
  }
}
