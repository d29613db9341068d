import type { CheckpointSource, TensorEntry } from '@ninodes/memory';
import { type FormatDetection, type LayoutGroup, type LayoutLinear, type LayoutTensor, type ModelLayout, type ParallelRole, detectFormats } from '@ninodes/quant';
import { ModelsError } from './error-codes.js';
import { type Qwen3Config, type Qwen3Linear, type Qwen3Naming, type Qwen3ResolveOptions, qwen3EmbedName, qwen3LayerLinears, qwen3LayerNames, qwen3LayerNorms, resolveQwen3Config } from './qwen3-config.js';

/** Architecture id of a Qwen3 text encoder in a ModelLayout. */
export const QWEN3_ARCHITECTURE = 'qwen3';

/** The group before the layers: the token embedding (read row by row, one row per token). */
export const QWEN3_EMBED_GROUP = 'embed_tokens';

/** Group name of layer i, as the encoder's hooks see it. */
export function qwen3LayerGroup(i: number): string {
  return `layers.${i}`;
}

/** Megatron's split of a Qwen3 layer: q, k, v, gate, up by output rows; o and down by input columns. */
export function qwen3ParallelRole(linear: Pick<Qwen3Linear, 'key'>): ParallelRole {
  return linear.key === 'o' || linear.key === 'down' ? 'row' : 'column';
}

export interface Qwen3Layout extends ModelLayout {
  readonly config: Qwen3Config;
  readonly naming: Qwen3Naming;
}

export interface Qwen3LayoutOptions extends Qwen3ResolveOptions {
  readonly detection?: FormatDetection;
}

function layoutTensor(e: TensorEntry): LayoutTensor {
  return { name: e.name, dtype: e.dtype, shape: e.shape, byteLength: e.byteLength };
}

/**
 * The ModelLayout of a Qwen3 text encoder: `embed_tokens`, then `layers.0` … `layers.{n-1}`, each
 * with the tensors it reads as stored (linear weights and their quant sidecars, norms) and its
 * linears (stored format, parallel role). Nothing after the layers: H3's export has no final norm
 * (a file that has one keeps it unread). Reads headers only.
 */
export function qwen3Layout(source: CheckpointSource, options: Qwen3LayoutOptions = {}): Qwen3Layout {
  const { config, naming, prefix } = resolveQwen3Config(source, options);
  const detection = options.detection ?? detectFormats(source);
  const embed = qwen3EmbedName(naming, prefix);
  const groups: LayoutGroup[] = [{ name: QWEN3_EMBED_GROUP, kind: 'pre', tensors: [layoutTensor(source.entry(embed))], linears: [] }];
  for (let i = 0; i < config.layers; i++) {
    const names = qwen3LayerNames(naming, prefix, i);
    const tensors: LayoutTensor[] = [];
    const linears: LayoutLinear[] = [];
    for (const l of qwen3LayerLinears(config, names)) {
      const layer = detection.layers.get(l.name);
      if (layer === undefined) {
        throw new ModelsError('TENSOR_NOT_FOUND', `${source.path} has no tensor ${l.name}.weight, which the Qwen3 text encoder needs`, { value: `${l.name}.weight`, where: source.path });
      }
      linears.push({ name: l.name, inFeatures: l.inFeatures, outFeatures: l.outFeatures, bias: false, storedFormat: layer.format, role: qwen3ParallelRole(l), fused: { kind: 'none' }, fp32Island: false });
      for (const key of Object.values(layer.tensors)) if (key !== undefined && source.has(key)) tensors.push(layoutTensor(source.entry(key)));
    }
    for (const n of qwen3LayerNorms(config, names)) {
      if (!source.has(n.name)) throw new ModelsError('TENSOR_NOT_FOUND', `${source.path} has no tensor ${n.name}, which the Qwen3 text encoder needs`, { value: n.name, where: source.path });
      tensors.push(layoutTensor(source.entry(n.name)));
    }
    groups.push({ name: qwen3LayerGroup(i), kind: 'block', tensors, linears });
  }
  return { architecture: QWEN3_ARCHITECTURE, prefix, config, naming, groups };
}
