import { Tensor, causalAttention, dequantizeSync, isBlockDType, mul, ropeSplitHalf } from '@ninodes/kernels';
import type { CheckpointSource } from '@ninodes/memory';
import { type ComputeMode, type GroupHooks, createLinearProvider, openCheckpoint } from '@ninodes/quant';
import { ModelsError } from './error-codes.js';
import { inGroup } from './group-hooks.js';
import type { LinearOp, LinearProvider } from './linear-provider.js';
import { add, castF32, rmsNorm, silu } from './ops.js';
import { type Qwen3Config, type Qwen3LayerNames, type Qwen3Naming, type Qwen3ResolveOptions, qwen3EmbedName, qwen3LayerLinears, qwen3LayerNames, qwen3LayerNorms, resolveQwen3Config } from './qwen3-config.js';
import { QWEN3_EMBED_GROUP, qwen3LayerGroup } from './qwen3-layout.js';

export interface Qwen3EncoderOptions extends Qwen3ResolveOptions {
  /**
   * Run the first `outputLayer` layers and return their output (stable-diffusion.cpp's `out_layers`:
   * 50 for H3 over an untruncated Qwen3-VL-32B). Default: every layer of the file.
   */
  readonly outputLayer?: number;
  /** Awaited around `embed_tokens` and every `layers.N` (see qwen3Layout). */
  readonly hooks?: GroupHooks;
}

type Qwen3LayerOps = Readonly<Record<'q' | 'k' | 'v' | 'o' | 'gate' | 'up' | 'down', LinearOp>>;

/**
 * RoPE angles [S, D/2] of positions 0..S-1 as Hugging Face's Qwen3 computes them, in float32 at each
 * step: inv_freq = 1 / base^(2i/D), angle = position · inv_freq.
 */
export function qwen3RopeAngles(seq: number, headDim: number, base: number): Tensor<'f32'> {
  const half = headDim / 2;
  const inv = new Float32Array(half);
  for (let i = 0; i < half; i++) inv[i] = Math.fround(1 / Math.fround(base ** Math.fround((2 * i) / headDim)));
  const angles = new Float32Array(seq * half);
  for (let s = 0; s < seq; s++) for (let i = 0; i < half; i++) angles[s * half + i] = s * (inv[i] as number);
  return Tensor.fromArray('f32', [seq, half], angles);
}

/**
 * The Qwen3 language model as a text encoder: token ids -> the hidden state after its last layer
 * (no final norm, as MiniMax-H3 reads it). Linears come from the injected provider (every stored
 * format, streamed or not); norms and token embedding rows are read from the checkpoint and cast to
 * f32. Prefill only, causal attention over the prompt.
 */
export class Qwen3TextEncoder {
  readonly config: Qwen3Config;
  readonly naming: Qwen3Naming;
  readonly prefix: string;
  /** Layers run (Qwen3EncoderOptions.outputLayer). */
  readonly outputLayer: number;
  private readonly source: CheckpointSource;
  private readonly layers: readonly { names: Qwen3LayerNames; ops: Qwen3LayerOps }[];
  private readonly params = new Map<string, Tensor<'f32'>>();
  private hooks: GroupHooks | undefined;

  private constructor(source: CheckpointSource, provider: LinearProvider, config: Qwen3Config, naming: Qwen3Naming, prefix: string, outputLayer: number) {
    this.source = source;
    this.config = config;
    this.naming = naming;
    this.prefix = prefix;
    this.outputLayer = outputLayer;
    this.layers = Array.from({ length: outputLayer }, (_, i) => {
      const names = qwen3LayerNames(naming, prefix, i);
      const ops = Object.fromEntries(qwen3LayerLinears(config, names).map((l) => [l.key, provider.linear({ name: l.name, inFeatures: l.inFeatures, outFeatures: l.outFeatures, bias: false })]));
      return { names, ops: ops as unknown as Qwen3LayerOps };
    });
  }

  /**
   * Builds the encoder over an open checkpoint; checks every tensor it will read exists with the
   * expected shape (TENSOR_NOT_FOUND / SHAPE_MISMATCH name it). Reads no weight.
   */
  static create(source: CheckpointSource, provider: LinearProvider, options: Qwen3EncoderOptions = {}): Qwen3TextEncoder {
    const { config, naming, prefix } = resolveQwen3Config(source, options);
    const outputLayer = options.outputLayer ?? config.layers;
    if (!Number.isSafeInteger(outputLayer) || outputLayer < 1 || outputLayer > config.layers) {
      throw new ModelsError('INVALID_CONFIG', `output layer ${String(outputLayer)} is not one of the file's layers 1..${config.layers}`, { value: outputLayer, where: 'outputLayer', hint: `pass 1..${config.layers}, or nothing for the last` });
    }
    const expect = (name: string, shape: readonly number[]): void => {
      if (!source.has(name)) throw new ModelsError('TENSOR_NOT_FOUND', `${source.path} has no tensor ${name}, which the Qwen3 text encoder needs`, { value: name, where: source.path });
      const got = source.entry(name).shape;
      if (got.length !== shape.length || got.some((d, i) => d !== shape[i])) {
        throw new ModelsError('SHAPE_MISMATCH', `${source.path}: ${name} is [${got.join(', ')}], the Qwen3 config needs [${shape.join(', ')}]`, { value: got, where: name });
      }
    };
    expect(qwen3EmbedName(naming, prefix), [config.vocab, config.hidden]);
    for (let i = 0; i < outputLayer; i++) {
      const names = qwen3LayerNames(naming, prefix, i);
      for (const l of qwen3LayerLinears(config, names)) expect(`${l.name}.weight`, [l.outFeatures, l.inFeatures]);
      for (const n of qwen3LayerNorms(config, names)) expect(n.name, [n.length]);
    }
    const encoder = new Qwen3TextEncoder(source, provider, config, naming, prefix, outputLayer);
    encoder.setHooks(options.hooks);
    return encoder;
  }

  /** Every linear op, layer by layer (what distorch's opGroupLoader prepares ahead of use). */
  allLinears(): LinearOp[] {
    return this.layers.flatMap((l) => Object.values(l.ops));
  }

  setHooks(hooks: GroupHooks | undefined): void {
    this.hooks = hooks;
  }

  private param(name: string): Tensor<'f32'> {
    let t = this.params.get(name);
    if (t === undefined) {
      t = castF32(this.source.tensor(name));
      this.params.set(name, t);
    }
    return t;
  }

  private group<R>(name: string, body: () => Promise<R> | R): Promise<R> {
    return inGroup(this.hooks, name, body);
  }

  /** The embedding rows of `ids` [S, hidden] f32 (only those rows of the table are read). */
  private embed(ids: readonly number[]): Tensor<'f32'> {
    const { vocab, hidden } = this.config;
    const name = qwen3EmbedName(this.naming, this.prefix);
    const out = new Float32Array(ids.length * hidden);
    ids.forEach((id, s) => {
      if (!Number.isSafeInteger(id) || id < 0 || id >= vocab) {
        throw new ModelsError('TOKEN_OUT_OF_RANGE', `token ${String(id)} at position ${s} is outside the vocabulary of ${vocab}`, { value: id, where: `ids[${s}]`, hint: "use the text encoder's own tokenizer" });
      }
      const row = this.source.tensorRows(name, id, id + 1);
      out.set((isBlockDType(row.dtype) ? dequantizeSync(row, 'f32') : castF32(row)).data, s * hidden);
    });
    return Tensor.fromArray('f32', [ids.length, hidden], out);
  }

  /** Token ids [S] -> hidden states [S, hidden] after `outputLayer` layers. */
  async encode(ids: readonly number[]): Promise<Tensor<'f32'>> {
    if (!Array.isArray(ids) || ids.length === 0) {
      throw new ModelsError('INVALID_ARGUMENT', 'the text encoder needs at least one token', { value: ids, where: 'ids', hint: 'tokenize a non-empty prompt' });
    }
    const { heads, kvHeads, headDim, eps, ropeTheta } = this.config;
    const s = ids.length;
    let x = await this.group(QWEN3_EMBED_GROUP, async () => this.embed(ids));
    const angles = qwen3RopeAngles(s, headDim, ropeTheta);
    for (let i = 0; i < this.layers.length; i++) {
      const { names, ops } = this.layers[i]!;
      const xin = x;
      x = await this.group(qwen3LayerGroup(i), async () => {
        const h = rmsNorm(xin, this.param(`${names.inputNorm}.weight`), eps);
        const headsOf = async (op: LinearOp, n: number, norm: string | undefined): Promise<Tensor<'f32'>> => {
          const y = (await op.forward(h)).reshape([s * n, headDim]);
          if (norm === undefined) return y.reshape([s, n, headDim]);
          return ropeSplitHalf(rmsNorm(y, this.param(`${norm}.weight`), eps).reshape([s, n, headDim]), angles, headDim);
        };
        const q = await headsOf(ops.q, heads, names.qNorm);
        const k = await headsOf(ops.k, kvHeads, names.kNorm);
        const v = await headsOf(ops.v, kvHeads, undefined);
        const x1 = add(xin, await ops.o.forward(causalAttention(q, k, v)));
        const h2 = rmsNorm(x1, this.param(`${names.postNorm}.weight`), eps);
        const m = mul(silu(await ops.gate.forward(h2)), await ops.up.forward(h2));
        return add(x1, await ops.down.forward(m));
      });
    }
    return x;
  }
}

export interface OpenQwen3EncoderOptions extends Qwen3EncoderOptions {
  /** Run format of the linears ('auto' = as stored). Default 'auto'. */
  readonly compute?: ComputeMode;
  /** Use this provider instead of building one from `compute`. */
  readonly provider?: LinearProvider;
  /** Wraps the opened checkpoint before anything reads it (distorch's StagedSource). */
  readonly wrapSource?: (source: CheckpointSource) => CheckpointSource;
}

export interface OpenedQwen3Encoder {
  readonly encoder: Qwen3TextEncoder;
  readonly source: CheckpointSource;
  readonly provider: LinearProvider;
  close(): void;
}

/** Opens a text encoder file (safetensors or GGUF) with linear ops in `compute`; closes it again on failure. */
export function openQwen3Encoder(path: string, options: OpenQwen3EncoderOptions = {}): OpenedQwen3Encoder {
  const opened = openCheckpoint(path);
  let source: CheckpointSource = opened;
  try {
    if (options.wrapSource !== undefined) source = options.wrapSource(opened);
    const provider = options.provider ?? createLinearProvider(source, { compute: options.compute ?? 'auto' });
    const encoder = Qwen3TextEncoder.create(source, provider, options);
    return { encoder, source, provider, close: () => source.close() };
  } catch (error) {
    source.close();
    throw error;
  }
}
