import type { CheckpointSource } from '@ninodes/memory';
import { ModelsError } from './error-codes.js';

/**
 * The sizes of a Qwen3 language model (the text side of Qwen3-VL): grouped-query attention with
 * per-head RMSNorm on q and k, split-half RoPE over the whole head, a SwiGLU MLP, pre-norm blocks.
 */
export interface Qwen3Config {
  readonly vocab: number;
  readonly hidden: number;
  readonly layers: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly ffn: number;
  /** RMSNorm epsilon. */
  readonly eps: number;
  /** RoPE base. */
  readonly ropeTheta: number;
}

/**
 * MiniMax-H3's text encoder: Qwen3-VL-32B's language model truncated to 50 layers, exported without
 * the final norm (stable-diffusion.cpp reads the hidden state after layer 50). Qwen3-VL's RoPE base is
 * 5e6; on text tokens its multimodal RoPE (t, h, w sections) is the 1-D RoPE, the three positions
 * being equal.
 */
export const QWEN3_H3: Qwen3Config = { vocab: 151936, hidden: 5120, layers: 50, heads: 64, kvHeads: 8, headDim: 128, ffn: 25600, eps: 1e-6, ropeTheta: 5_000_000 };

/**
 * Tensor names: 'hf' as Hugging Face and ComfyUI's `text_encoders` files store them
 * (`<prefix>layers.N.self_attn.q_proj.weight`, `<prefix>embed_tokens.weight`), 'gguf' as llama.cpp
 * names them (`blk.N.attn_q.weight`, `token_embd.weight`). llama.cpp does not permute Qwen's q/k
 * rows (NEOX-style RoPE), so the weights are the same either way.
 */
export type Qwen3Naming = 'hf' | 'gguf';

/** The checkpoint names of one layer's tensors, without `.weight`. */
export interface Qwen3LayerNames {
  readonly inputNorm: string;
  readonly postNorm: string;
  readonly qNorm: string;
  readonly kNorm: string;
  readonly q: string;
  readonly k: string;
  readonly v: string;
  readonly o: string;
  readonly gate: string;
  readonly up: string;
  readonly down: string;
}

export function qwen3EmbedName(naming: Qwen3Naming, prefix: string): string {
  return naming === 'gguf' ? `${prefix}token_embd.weight` : `${prefix}embed_tokens.weight`;
}

export function qwen3LayerNames(naming: Qwen3Naming, prefix: string, i: number): Qwen3LayerNames {
  if (naming === 'gguf') {
    const b = `${prefix}blk.${i}.`;
    return { inputNorm: `${b}attn_norm`, postNorm: `${b}ffn_norm`, qNorm: `${b}attn_q_norm`, kNorm: `${b}attn_k_norm`, q: `${b}attn_q`, k: `${b}attn_k`, v: `${b}attn_v`, o: `${b}attn_output`, gate: `${b}ffn_gate`, up: `${b}ffn_up`, down: `${b}ffn_down` };
  }
  const b = `${prefix}layers.${i}.`;
  return {
    inputNorm: `${b}input_layernorm`,
    postNorm: `${b}post_attention_layernorm`,
    qNorm: `${b}self_attn.q_norm`,
    kNorm: `${b}self_attn.k_norm`,
    q: `${b}self_attn.q_proj`,
    k: `${b}self_attn.k_proj`,
    v: `${b}self_attn.v_proj`,
    o: `${b}self_attn.o_proj`,
    gate: `${b}mlp.gate_proj`,
    up: `${b}mlp.up_proj`,
    down: `${b}mlp.down_proj`,
  };
}

/** One linear of a layer: its name and its [out, in] widths. */
export interface Qwen3Linear {
  readonly key: keyof Qwen3LayerNames;
  readonly name: string;
  readonly inFeatures: number;
  readonly outFeatures: number;
}

export function qwen3LayerLinears(config: Qwen3Config, names: Qwen3LayerNames): Qwen3Linear[] {
  const { hidden, heads, kvHeads, headDim, ffn } = config;
  return [
    { key: 'q', name: names.q, inFeatures: hidden, outFeatures: heads * headDim },
    { key: 'k', name: names.k, inFeatures: hidden, outFeatures: kvHeads * headDim },
    { key: 'v', name: names.v, inFeatures: hidden, outFeatures: kvHeads * headDim },
    { key: 'o', name: names.o, inFeatures: heads * headDim, outFeatures: hidden },
    { key: 'gate', name: names.gate, inFeatures: hidden, outFeatures: ffn },
    { key: 'up', name: names.up, inFeatures: hidden, outFeatures: ffn },
    { key: 'down', name: names.down, inFeatures: ffn, outFeatures: hidden },
  ];
}

/** The norm weights of a layer with their lengths. */
export function qwen3LayerNorms(config: Qwen3Config, names: Qwen3LayerNames): { name: string; length: number }[] {
  return [
    { name: `${names.inputNorm}.weight`, length: config.hidden },
    { name: `${names.postNorm}.weight`, length: config.hidden },
    { name: `${names.qNorm}.weight`, length: config.headDim },
    { name: `${names.kNorm}.weight`, length: config.headDim },
  ];
}

export interface Qwen3Resolved {
  readonly config: Qwen3Config;
  readonly naming: Qwen3Naming;
  readonly prefix: string;
}

export interface Qwen3ResolveOptions {
  /** Sizes as given (skips detection). */
  readonly config?: Qwen3Config;
  /** RoPE base and RMSNorm epsilon when the file does not say (default: QWEN3_H3's). */
  readonly ropeTheta?: number;
  readonly eps?: number;
}

function positive(n: number): boolean {
  return Number.isSafeInteger(n) && n > 0;
}

/** Throws INVALID_CONFIG unless every size is a positive integer and the heads group. */
export function validateQwen3Config(config: Qwen3Config): Qwen3Config {
  const sizes = ['vocab', 'hidden', 'layers', 'heads', 'kvHeads', 'headDim', 'ffn'] as const;
  const bad = sizes.find((k) => !positive(config[k]));
  const why =
    bad !== undefined
      ? `${bad} must be a positive integer, got ${String(config[bad])}`
      : config.heads % config.kvHeads !== 0
        ? `${config.heads} query heads do not group over ${config.kvHeads} key/value heads`
        : config.headDim % 2 !== 0
          ? `head dim ${config.headDim} is odd (RoPE rotates pairs)`
          : !(config.eps > 0 && Number.isFinite(config.eps)) || !(config.ropeTheta > 1 && Number.isFinite(config.ropeTheta))
            ? `eps ${config.eps} and RoPE base ${config.ropeTheta} must be positive finite numbers (base > 1)`
            : undefined;
  if (why !== undefined) throw new ModelsError('INVALID_CONFIG', `Qwen3 config: ${why}`, { value: config, where: 'Qwen3Config', hint: 'sizes come from the checkpoint; pass none to detect them' });
  return config;
}

function shapeOf(source: CheckpointSource, name: string): readonly number[] {
  if (!source.has(name)) {
    throw new ModelsError('TENSOR_NOT_FOUND', `${source.path} has no tensor ${JSON.stringify(name)}, which a Qwen3 text encoder needs`, { value: name, where: source.path, hint: 'pass the text encoder file (--text-encoder)' });
  }
  return source.entry(name).shape;
}

/** A number from GGUF metadata (`<arch>.rope.freq_base` …) when the file has it. */
function ggufNumber(source: CheckpointSource, key: string): number | undefined {
  const arch = source.metadata['general.architecture'];
  const raw = arch === undefined ? undefined : source.metadata[`${arch}.${key}`];
  const n = raw === undefined ? Number.NaN : Number(raw);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * Finds the naming and key prefix of a Qwen3 language model in a checkpoint (the one tensor named
 * `…embed_tokens.weight` or `…token_embd.weight`) and its sizes from the tensor shapes: vocab and
 * hidden from the embedding, the head dim from q_norm, heads from q_proj's rows, the MLP width from
 * gate_proj, the layer count from the numbered layers (a gap is BLOCK_INDEX_GAP).
 */
export function resolveQwen3Config(source: CheckpointSource, options: Qwen3ResolveOptions = {}): Qwen3Resolved {
  const embeds = source.entries().filter((e) => e.name.endsWith('embed_tokens.weight') || e.name.endsWith('token_embd.weight'));
  if (embeds.length !== 1) {
    throw new ModelsError('ARCHITECTURE_MISMATCH', `${source.path} is not a Qwen3 text encoder: ${embeds.length === 0 ? 'it has no token embedding' : `it has ${embeds.length} token embeddings`}`, {
      value: embeds.map((e) => e.name),
      where: source.path,
      hint: 'pass a Qwen3(-VL) language model file: model.embed_tokens.weight and model.layers.N.* (or llama.cpp blk.N.*)',
    });
  }
  const embed = embeds[0]!.name;
  const naming: Qwen3Naming = embed.endsWith('token_embd.weight') ? 'gguf' : 'hf';
  const prefix = embed.slice(0, embed.length - (naming === 'gguf' ? 'token_embd.weight' : 'embed_tokens.weight').length);
  if (options.config !== undefined) return { config: validateQwen3Config(options.config), naming, prefix };
  const layerKey = naming === 'gguf' ? `${prefix}blk.` : `${prefix}layers.`;
  const indices = new Set<number>();
  for (const e of source.entries()) {
    if (!e.name.startsWith(layerKey)) continue;
    const i = Number(e.name.slice(layerKey.length).split('.')[0]);
    if (Number.isSafeInteger(i) && i >= 0) indices.add(i);
  }
  const layers = indices.size;
  for (let i = 0; i < layers; i++) {
    if (!indices.has(i)) throw new ModelsError('BLOCK_INDEX_GAP', `${source.path}: Qwen3 layer ${i} is missing but layer ${Math.max(...indices)} exists`, { value: i, where: source.path });
  }
  const [vocab, hidden] = shapeOf(source, embed) as [number, number];
  const n0 = qwen3LayerNames(naming, prefix, 0);
  const headDim = shapeOf(source, `${n0.qNorm}.weight`)[0] as number;
  const qRows = shapeOf(source, `${n0.q}.weight`)[0] as number;
  const kRows = shapeOf(source, `${n0.k}.weight`)[0] as number;
  const ffn = shapeOf(source, `${n0.gate}.weight`)[0] as number;
  if (qRows % headDim !== 0 || kRows % headDim !== 0) {
    throw new ModelsError('ARCHITECTURE_INCONSISTENT', `${source.path}: q_proj (${qRows} rows) and k_proj (${kRows} rows) are not whole heads of q_norm's ${headDim}`, { value: { qRows, kRows, headDim }, where: `${n0.q}.weight` });
  }
  const config: Qwen3Config = {
    vocab,
    hidden,
    layers,
    heads: qRows / headDim,
    kvHeads: kRows / headDim,
    headDim,
    ffn,
    eps: options.eps ?? ggufNumber(source, 'attention.layer_norm_rms_epsilon') ?? QWEN3_H3.eps,
    ropeTheta: options.ropeTheta ?? ggufNumber(source, 'rope.freq_base') ?? QWEN3_H3.ropeTheta,
  };
  return { config: validateQwen3Config(config), naming, prefix };
}
