import { ModelsError } from './error-codes.js';
import type { CheckpointSource, TensorEntry } from '@ninodes/memory';
import { type FormatDetection, type FusedLayout, type LayoutGroup, type LayoutLinear, type LayoutTensor, type LinearSpec, type ModelLayout, type ParallelRole, type Shard, checkShardRank, detectFormats } from '@ninodes/quant';
import { resolveH3Config } from './detect-architecture.js';
import type { H3Config } from './h3-config.js';
import { tensorGroup } from './tensor-group.js';
import { type H3LinearLayer, H3_LINEAR_SIDECARS, h3Linears, h3Parameters } from './h3-tensors.js';

/** Architecture id of the H3 video path in a ModelLayout. */
export const H3_ARCHITECTURE = 'minimax-h3';

/** Group names before the blocks, in the order the forward runs them. */
export const H3_PRE_GROUPS = ['time_embedder', 'rope', 'video_patch_proj'] as const;
/**
 * The groups before the blocks for a config, in the order the forward runs them: the text stream
 * (condition_proj, each refiner block, the refiner's final norm as `token_refiner`) when there is
 * one, the time embedder (`adaln_t_table` in the curve form), rope, the patch projections. A
 * video-only full-form config gives H3_PRE_GROUPS.
 */
export function h3PreGroups(config: H3Config): string[] {
  const out: string[] = [];
  if (config.textDim !== undefined) {
    out.push('condition_proj');
    for (let i = 0; i < (config.refinerLayers ?? 0); i++) out.push(`token_refiner.blocks.${i}`);
    out.push('token_refiner');
  }
  out.push(config.curveGrid === undefined ? 'time_embedder' : 'adaln_t_table', 'rope', 'video_patch_proj');
  if (config.audioChannels !== undefined) out.push('audio_patch_proj');
  return out;
}

/** Group names after the blocks. */
export const H3_POST_GROUPS = ['final_layer'] as const;

/**
 * How an H3 linear splits across tensor-parallel ranks (Megatron): qkv and fc1 by output rows (qkv
 * by heads in each of q, k, v; fc1 by its slice of each of gate and up), out_proj and fc2 by input
 * columns (their partial outputs are summed), the adaLN projections by output rows with the
 * modulation rows gathered (the biggest linear of a block, run on one row per timestep), the text
 * stream's linears gathered too, everything else (embedders, final projection) whole.
 */
export function h3ParallelRole(config: H3Config, layer: Pick<H3LinearLayer, 'name' | 'block'>): { role: ParallelRole; fused: FusedLayout } {
  // A block's adaLN output holds three modality parts (video, text, audio; 6·hidden each) per
  // timestep row: each rank takes its slice of every part, so a forward that reads one modality
  // (forwardRows) splits that work evenly. The final layer's has no modality parts.
  if (layer.name.endsWith('adaln_proj.linear')) return { role: 'gathered', fused: layer.block === undefined ? { kind: 'none' } : { kind: 'parts', parts: 3 } };
  // The text stream (its projection and refiner blocks) runs whole on every rank, once per step:
  // its weights split by output rows, its outputs gathered.
  if (layer.name === 'condition_proj' || layer.name.startsWith('token_refiner.')) return { role: 'gathered', fused: { kind: 'none' } };
  if (layer.block !== undefined) {
    if (layer.name.endsWith('.attn.qkv_proj')) return { role: 'column', fused: { kind: 'qkv', heads: config.heads, headDim: config.headDim } };
    if (layer.name.endsWith('.mlp.fc1')) return { role: 'column', fused: { kind: 'halves' } };
    if (layer.name.endsWith('.attn.out_proj') || layer.name.endsWith('.mlp.fc2')) return { role: 'row', fused: { kind: 'none' } };
  }
  return { role: 'replicated', fused: { kind: 'none' } };
}

/**
 * The LinearSpec a model asks its provider for: the whole layer, or with a shard of a world of more
 * than one rank, the rank's local part (column: N / size output rows; row: K / size input columns)
 * with `shard` set so the provider (and a tensor-parallel wrapper) knows which part. A `gathered`
 * layer is asked for whole: the model reads its whole output, however the provider computes it.
 */
export function h3LinearSpec(config: H3Config, layer: H3LinearLayer, prefix = '', shard?: Shard): LinearSpec {
  const whole: LinearSpec = { name: `${prefix}${layer.name}`, inFeatures: layer.inFeatures, outFeatures: layer.outFeatures, bias: layer.bias };
  if (shard === undefined) return whole;
  const { role, fused } = h3ParallelRole(config, layer);
  if (role === 'replicated' || role === 'gathered') return whole;
  const part = { rank: shard.rank, size: shard.size, role, fused };
  return role === 'column'
    ? { ...whole, outFeatures: layer.outFeatures / shard.size, shard: part }
    : { ...whole, inFeatures: layer.inFeatures / shard.size, shard: part };
}

/** Throws INVALID_SHARD unless `shard` is a rank of a world that splits H3's heads and MLP evenly. */
export function checkH3Shard(config: H3Config, shard: Shard): Shard {
  const { rank, size } = shard;
  checkShardRank(rank, size, 'shard');
  if (config.heads % size !== 0 || config.ffn % size !== 0) {
    throw new ModelsError('INVALID_SHARD', `${size} ranks do not split ${config.heads} heads and an MLP of ${config.ffn} evenly`, {
      value: { size, heads: config.heads, ffn: config.ffn },
      where: 'shard',
      hint: 'choose a tensor-parallel size that divides both',
    });
  }
  return shard;
}

/** An H3 ModelLayout plus the file's tensors no group reads. */
export interface H3Layout extends ModelLayout {
  readonly config: H3Config;
  /** Tensors of the file the video forward never reads (text refiner, audio, other prefixes). */
  readonly unusedTensors: readonly LayoutTensor[];
}

export interface H3LayoutOptions {
  /** Detected from the checkpoint when omitted (with `prefix`). */
  readonly config?: H3Config;
  readonly prefix?: string;
  /** Formats already detected (skips detection). */
  readonly detection?: FormatDetection;
}

function layoutTensor(e: TensorEntry): LayoutTensor {
  return { name: e.name, dtype: e.dtype, shape: e.shape, byteLength: e.byteLength };
}

/**
 * The ModelLayout of an H3 checkpoint: groups `h3PreGroups(config)` (video-only: `time_embedder`, `rope`, `video_patch_proj`),
 * `blocks.0` … `blocks.{layers-1}`, `final_layer` in forward order; each with the tensors it reads as
 * stored (weights, biases, quant sidecars, norms, buffers; bytes of their file spans) and its linears
 * (stored format, parallel role, fused layout, fp32 island). Reads headers only.
 */
export function h3Layout(source: CheckpointSource, options: H3LayoutOptions = {}): H3Layout {
  const { config, prefix } = resolveH3Config(source, options);
  const detection = options.detection ?? detectFormats(source);
  const groups = new Map<string, { kind: LayoutGroup['kind']; tensors: LayoutTensor[]; linears: LayoutLinear[] }>();
  for (const name of h3PreGroups(config)) groups.set(name, { kind: 'pre', tensors: [], linears: [] });
  for (let i = 0; i < config.layers; i++) groups.set(`blocks.${i}`, { kind: 'block', tensors: [], linears: [] });
  for (const name of H3_POST_GROUPS) groups.set(name, { kind: 'post', tensors: [], linears: [] });
  const group = (name: string): { tensors: LayoutTensor[]; linears: LayoutLinear[] } => {
    const g = groups.get(tensorGroup(name));
    if (g === undefined) throw new ModelsError('INTERNAL', `H3 tensor ${name} has no execution group`, { value: name });
    return g;
  };
  const used = new Set<string>();
  const take = (key: string, into: LayoutTensor[]): void => {
    if (used.has(key) || !source.has(key)) return;
    used.add(key);
    into.push(layoutTensor(source.entry(key)));
  };
  for (const l of h3Linears(config)) {
    const name = `${prefix}${l.name}`;
    const layer = detection.layers.get(name);
    if (layer === undefined) {
      throw new ModelsError('TENSOR_NOT_FOUND', `${source.path} has no tensor ${name}.weight, which the H3 video model needs`, { value: `${name}.weight`, where: source.path });
    }
    const g = group(l.name);
    const { role, fused } = h3ParallelRole(config, l);
    g.linears.push({ name, inFeatures: l.inFeatures, outFeatures: l.outFeatures, bias: l.bias, storedFormat: layer.format, role, fused, fp32Island: l.fp32Island });
    // The detected file names first (legacy scale names included), then any other sidecar present.
    for (const key of Object.values(layer.tensors)) if (key !== undefined) take(key, g.tensors);
    for (const s of H3_LINEAR_SIDECARS) take(`${name}.${s}`, g.tensors);
  }
  for (const p of h3Parameters(config)) {
    const key = `${prefix}${p.name}`;
    if (!source.has(key)) throw new ModelsError('TENSOR_NOT_FOUND', `${source.path} has no tensor ${key}, which the H3 video model needs`, { value: key, where: source.path });
    take(key, group(p.name).tensors);
  }
  const unusedTensors = source.entries().filter((e) => !used.has(e.name)).map(layoutTensor);
  return {
    architecture: H3_ARCHITECTURE,
    prefix,
    config,
    groups: [...groups].map(([name, g]) => ({ name, kind: g.kind, tensors: g.tensors, linears: g.linears })),
    unusedTensors,
  };
}

/** The ModelLayout of a checkpoint of an architecture ninodes runs (today: MiniMax-H3). */
export function layoutOf(source: CheckpointSource, options: H3LayoutOptions = {}): H3Layout {
  return h3Layout(source, options);
}
