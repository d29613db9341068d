import type { CheckpointSource } from '@ninodes/memory';
import { type ComputeMode, type WeightPatcher, attentionPrecisionFor, createLinearProvider, openCheckpoint } from '@ninodes/quant';
import { resolveH3Config } from './detect-architecture.js';
import { H3VideoModel, type H3ModelOptions } from './h3-model.js';
import type { H3Config } from './h3-config.js';
import { type H3LinearLayer, h3Linears } from './h3-tensors.js';
import type { LinearProvider } from './linear-provider.js';

export interface OpenH3ModelOptions extends H3ModelOptions {
  /** Run format of the linears ('auto' = as stored in the file). Default 'auto'. */
  readonly compute?: ComputeMode;
  /**
   * Also convert the fp32 islands (patch embedding, time embedder, output head) and the curve form's
   * rank-8 adaLN to `compute`. Default false: like ComfyUI, they run as stored.
   */
  readonly quantizeIslands?: boolean;
  /** Use this provider instead of building one from `compute`. */
  readonly provider?: LinearProvider;
  /**
   * Weight patches (LoRA) for the built provider, made once the checkpoint is open (a LoRA is mapped
   * against the checkpoint's layer names): applied in fp32 whenever a weight is prepared.
   */
  readonly patcher?: (source: CheckpointSource) => WeightPatcher;
  /**
   * Wraps the opened checkpoint before anything reads it: the model, its linear ops and the
   * returned `source` read through the wrapper (e.g. distorch's StagedSource, which serves streamed
   * weights from host buffers). Closing closes the wrapper.
   */
  readonly wrapSource?: (source: CheckpointSource) => CheckpointSource;
  /** Wraps the linear provider the model gets (e.g. quant's deviceLinearProvider: the linears on a GPU). */
  readonly wrapProvider?: (provider: LinearProvider) => LinearProvider;
}

export interface OpenedH3Model {
  readonly model: H3VideoModel;
  readonly source: CheckpointSource;
  readonly provider: LinearProvider;
  /** Unmaps the checkpoint (the model is unusable afterwards). */
  close(): void;
}

/**
 * Linears a forced compute format leaves as stored: the fp32 islands, and in the curve form the
 * rank-8 adaLN projections, which ComfyUI builds in fp32 (`adaln_dtype`) like the islands and its
 * converter leaves alone (int8 or fp8 would save nothing on 8 input columns).
 */
function keptAsStored(config: H3Config, layer: H3LinearLayer): boolean {
  return layer.fp32Island || (config.curveGrid !== undefined && layer.name.endsWith('adaln_proj.linear'));
}

/** Routes layers by name: those in `names` to `islands`, every other linear to `main`. */
export function islandAwareProvider(main: LinearProvider, islands: LinearProvider, names: ReadonlySet<string>): LinearProvider {
  return { linear: (spec) => (names.has(spec.name) ? islands : main).linear(spec) };
}

/**
 * The composition the runner needs in one call: open the checkpoint, detect the H3 config, build
 * linear ops with @ninodes/quant in the requested format (fp32 islands kept as stored unless asked),
 * and the model over them. The source is closed again if anything fails.
 */
export function openH3Model(path: string, options: OpenH3ModelOptions = {}): OpenedH3Model {
  const opened = openCheckpoint(path);
  let source: CheckpointSource = opened;
  try {
    if (options.wrapSource !== undefined) source = options.wrapSource(opened);
    const { config, prefix } = resolveH3Config(source, options);
    let provider = options.provider;
    if (!provider) {
      const compute = options.compute ?? 'auto';
      const patcher = options.patcher?.(source);
      const patch = patcher === undefined ? {} : { patcher };
      const main = createLinearProvider(source, { compute, ...patch });
      if (compute === 'auto' || options.quantizeIslands) provider = main;
      else {
        const asStored = createLinearProvider(source, { compute: 'auto', detection: main.detection, ...patch });
        const islands = new Set(h3Linears(config).filter((l) => keptAsStored(config, l)).map((l) => `${prefix}${l.name}`));
        provider = islandAwareProvider(main, asStored, islands);
      }
    }
    if (options.wrapProvider !== undefined) provider = options.wrapProvider(provider);
    // bf16 and int8 convrot compute run attention in bf16 where the CPU has bf16 units, as PyTorch's
    // bf16 mode runs SDPA on bf16 q, k, v (attentionPrecisionFor says why int8 does too).
    const attentionPrecision = options.attentionPrecision ?? attentionPrecisionFor(options.compute ?? 'auto');
    const model = H3VideoModel.create(source, provider, { ...options, config, prefix, attentionPrecision });
    return { model, source, provider, close: () => source.close() };
  } catch (error) {
    source.close();
    throw error;
  }
}
