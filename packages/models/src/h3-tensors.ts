import { type H3Config, patchDim, pddHeads } from './h3-config.js';

/** A linear layer of the H3 video path, in checkpoint terms (weight [out, in] at `${name}.weight`). */
export interface H3LinearLayer {
  readonly name: string;
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly bias: boolean;
  /** Stored fp32 in real checkpoints (ComfyUI builds these modules with dtype float32). */
  readonly fp32Island: boolean;
  /** Transformer block index, or undefined for the embedders and the final layer. */
  readonly block: number | undefined;
}

/** A non-linear parameter (norm weight, buffer) the H3 video path reads straight from the checkpoint. */
export interface H3Parameter {
  readonly name: string;
  readonly shape: readonly number[];
  readonly kind: 'norm' | 'buffer';
  readonly block: number | undefined;
}

/** The linears of block `i`, in execution order. */
export function h3BlockLinears(config: H3Config, i: number): H3LinearLayer[] {
  const inner = config.heads * config.headDim;
  const p = `blocks.${i}`;
  return [
    { name: `${p}.adaln_proj.linear`, inFeatures: config.tDim, outFeatures: 18 * config.hidden, bias: true, fp32Island: false, block: i },
    { name: `${p}.attn.qkv_proj`, inFeatures: config.hidden, outFeatures: 3 * inner, bias: false, fp32Island: false, block: i },
    { name: `${p}.attn.out_proj`, inFeatures: inner, outFeatures: config.hidden, bias: false, fp32Island: false, block: i },
    { name: `${p}.mlp.fc1`, inFeatures: config.hidden, outFeatures: 2 * config.ffn, bias: false, fp32Island: false, block: i },
    { name: `${p}.mlp.fc2`, inFeatures: config.ffn, outFeatures: config.hidden, bias: false, fp32Island: false, block: i },
  ];
}

/** The linears of token refiner block `i` (text stream; no adaLN, no RoPE). */
export function h3RefinerLinears(config: H3Config, i: number): H3LinearLayer[] {
  const inner = config.heads * config.headDim;
  const p = `token_refiner.blocks.${i}`;
  return [
    { name: `${p}.attn.qkv_proj`, inFeatures: config.hidden, outFeatures: 3 * inner, bias: false, fp32Island: false, block: undefined },
    { name: `${p}.attn.out_proj`, inFeatures: inner, outFeatures: config.hidden, bias: false, fp32Island: false, block: undefined },
    { name: `${p}.mlp.fc1`, inFeatures: config.hidden, outFeatures: 2 * config.ffn, bias: false, fp32Island: false, block: undefined },
    { name: `${p}.mlp.fc2`, inFeatures: config.ffn, outFeatures: config.hidden, bias: false, fp32Island: false, block: undefined },
  ];
}

/**
 * Every linear of the H3 model the config describes: the video path always; `condition_proj` and
 * the token refiner with a text stream, `audio_patch_proj` / `final_layer.audio_out` with an audio
 * stream, no time embedder in the curve form, n·C output rows with a PDD head bank of n heads.
 */
export function h3Linears(config: H3Config): H3LinearLayer[] {
  const out: H3LinearLayer[] = [{ name: 'video_patch_proj', inFeatures: patchDim(config), outFeatures: config.hidden, bias: true, fp32Island: true, block: undefined }];
  if (config.audioChannels !== undefined) {
    out.push({ name: 'audio_patch_proj', inFeatures: config.audioChannels, outFeatures: config.hidden, bias: true, fp32Island: true, block: undefined });
  }
  if (config.textDim !== undefined) {
    out.push({ name: 'condition_proj', inFeatures: config.textDim, outFeatures: config.hidden, bias: true, fp32Island: false, block: undefined });
    for (let i = 0; i < (config.refinerLayers ?? 0); i++) out.push(...h3RefinerLinears(config, i));
  }
  if (config.curveGrid === undefined) {
    out.push(
      { name: 'time_embedder.proj_in', inFeatures: config.freqDim, outFeatures: config.timeHidden, bias: true, fp32Island: true, block: undefined },
      { name: 'time_embedder.proj_out', inFeatures: config.timeHidden, outFeatures: config.tDim, bias: true, fp32Island: true, block: undefined },
    );
  }
  for (let i = 0; i < config.layers; i++) out.push(...h3BlockLinears(config, i));
  const n = pddHeads(config);
  out.push(
    { name: 'final_layer.adaln_proj.linear', inFeatures: config.tDim, outFeatures: 2 * config.hidden, bias: true, fp32Island: false, block: undefined },
    { name: 'final_layer.video_out', inFeatures: config.hidden, outFeatures: n * patchDim(config), bias: true, fp32Island: true, block: undefined },
  );
  if (config.audioChannels !== undefined) {
    out.push({ name: 'final_layer.audio_out', inFeatures: config.hidden, outFeatures: n * config.audioChannels, bias: true, fp32Island: true, block: undefined });
  }
  return out;
}

/** Norm weights and buffers of the H3 video path. */
export function h3Parameters(config: H3Config): H3Parameter[] {
  const out: H3Parameter[] = [{ name: 'rope.inv_freq', shape: [config.ropeLen], kind: 'buffer', block: undefined }];
  if (config.curveGrid !== undefined) out.push({ name: 'adaln_t_table', shape: [config.curveGrid, config.tDim], kind: 'buffer', block: undefined });
  if (config.textDim !== undefined) {
    for (let i = 0; i < (config.refinerLayers ?? 0); i++) {
      const p = `token_refiner.blocks.${i}`;
      out.push(
        { name: `${p}.norm1.weight`, shape: [config.hidden], kind: 'norm', block: undefined },
        { name: `${p}.norm2.weight`, shape: [config.hidden], kind: 'norm', block: undefined },
        { name: `${p}.attn.q_norm.weight`, shape: [config.headDim], kind: 'norm', block: undefined },
        { name: `${p}.attn.k_norm.weight`, shape: [config.headDim], kind: 'norm', block: undefined },
      );
    }
    out.push({ name: 'token_refiner.final_norm.weight', shape: [config.hidden], kind: 'norm', block: undefined });
  }
  for (let i = 0; i < config.layers; i++) {
    out.push(
      { name: `blocks.${i}.norm1.weight`, shape: [config.hidden], kind: 'norm', block: i },
      { name: `blocks.${i}.norm2.weight`, shape: [config.hidden], kind: 'norm', block: i },
      { name: `blocks.${i}.attn.q_norm.weight`, shape: [config.headDim], kind: 'norm', block: i },
      { name: `blocks.${i}.attn.k_norm.weight`, shape: [config.headDim], kind: 'norm', block: i },
    );
  }
  out.push({ name: 'final_layer.norm.weight', shape: [config.hidden], kind: 'norm', block: undefined });
  return out;
}

/** One tensor of an H3 checkpoint as the synthetic writer lays it out: name, stored dtype, shape. */
export interface H3TensorSpec {
  readonly name: string;
  /** fp32 islands and buffers are stored f32, everything else bf16 (as in real H3 checkpoints). */
  readonly dtype: 'f32' | 'bf16';
  readonly shape: readonly number[];
  readonly kind: 'weight' | 'bias' | 'norm' | 'buffer';
}

/**
 * Every tensor of the H3 video path in file order: the linears (weight, then bias) in execution
 * order, then the norm weights and buffers. The one source of the real key layout for synthetic
 * checkpoints and the io / quant benchmarks.
 */
export function h3TensorSpecs(config: H3Config, prefix = ''): H3TensorSpec[] {
  const out: H3TensorSpec[] = [];
  for (const l of h3Linears(config)) {
    const dtype = l.fp32Island ? 'f32' : 'bf16';
    out.push({ name: `${prefix}${l.name}.weight`, dtype, shape: [l.outFeatures, l.inFeatures], kind: 'weight' });
    if (l.bias) out.push({ name: `${prefix}${l.name}.bias`, dtype, shape: [l.outFeatures], kind: 'bias' });
  }
  for (const p of h3Parameters(config)) out.push({ name: prefix + p.name, dtype: p.kind === 'buffer' ? 'f32' : 'bf16', shape: p.shape, kind: p.kind });
  return out;
}

/** Suffixes a quantized linear stores beside its weight (int8/fp8 scales, ComfyUI's quant marker). */
export const H3_LINEAR_SIDECARS = ['weight', 'bias', 'weight_scale', 'scale_weight', 'input_scale', 'scale_input', 'comfy_quant'] as const;

/**
 * Checkpoint keys the H3 video forward does not read: a real H3 file's text refiner, audio and
 * condition tensors (and anything else). `prefix` is the key prefix the checkpoint uses
 * (e.g. 'model.diffusion_model.'); keys outside it are unused too.
 */
export function h3UnusedKeys(names: Iterable<string>, config: H3Config, prefix = ''): string[] {
  const used = new Set<string>();
  for (const l of h3Linears(config)) for (const s of H3_LINEAR_SIDECARS) used.add(`${prefix}${l.name}.${s}`);
  for (const p of h3Parameters(config)) used.add(`${prefix}${p.name}`);
  const unused: string[] = [];
  for (const n of names) if (!used.has(n)) unused.push(n);
  return unused;
}
