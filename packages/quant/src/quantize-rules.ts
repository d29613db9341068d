// What the converters share: which layers stay as stored, and how a source tensor is read as f32.
import { type DType, Tensor, dequantize, isBlockDType } from '@ninodes/kernels';
import type { CheckpointSource, TensorEntry, TensorSource } from '@ninodes/memory';
import { toF32 } from './materialize.js';
import type { QuantizeOptions, QuantizeProgress, QuantizeReport, QuantizeTarget, QuantizedLayerReport } from './quantize-types.js';

/** Layers kept unless `quantizeIslands`: norms, embeddings, patch/in/out projections (fp32 islands). */
const DEFAULT_KEEP: readonly [RegExp, string][] = [
  [/(?:^|[._])(?:[a-z]*norm[a-z0-9]*|ln_?\d*)(?:$|[._])/i, 'norm'],
  [/(?:^|[._])(?:[a-z_]*embed(?:ding|der|s)?|[a-z_]*_emb|pos_emb|wte|wpe)(?:$|[._])/i, 'embedding'],
  [/(?:^|[._])(?:[a-z_]*patch_(?:proj|embed)[a-z_]*|final_layer|proj_out|img_in|txt_in)(?:$|[._])/i, 'fp32 island (patch/out projection)'],
  // MiniMax-H3's text stream stays as stored, as ComfyUI's converter leaves it (its pruned int8 file
  // holds 200 int8 linears: qkv/out/fc1/fc2 of the 50 blocks, nothing of condition_proj or the refiner).
  [/(?:^|[._])(?:condition_proj|token_refiner)(?:$|[._])/i, 'text stream (condition_proj / token refiner)'],
];

/** Below this many input columns a layer is a low-rank projection (H3's rank-8 curve adaLN): int8 saves nothing. */
export const LOW_RANK_COLUMNS = 16;

export function keepReason(layer: string, options: Pick<QuantizeOptions, 'skip' | 'quantizeIslands'>): string | undefined {
  for (const s of options.skip ?? []) {
    if (typeof s === 'string' ? layer === s || layer.includes(s) : s.test(layer)) return 'skipped by request';
  }
  if (options.quantizeIslands) return undefined;
  for (const [re, why] of DEFAULT_KEEP) if (re.test(layer)) return why;
  return undefined;
}

export const FLOAT_SOURCE: ReadonlySet<DType> = new Set(['f32', 'f16', 'bf16']);

/** A source tensor (as read from the checkpoint, or by a converter's `read`) as f32 of its entry's shape. */
export async function sourceF32(t: Tensor, entry: TensorEntry): Promise<Tensor<'f32'>> {
  if (isBlockDType(t.dtype)) {
    const d = (await dequantize(t as never, 'f32')) as Tensor<'f32'>;
    return d.reshape(entry.shape);
  }
  return toF32(t).reshape(entry.shape);
}

/**
 * After a tensor is converted and written, its source pages are dropped (mmap sources that offer
 * `advise`) so resident memory tracks the layer being converted, not everything read so far.
 */
function dropPages(source: CheckpointSource, name: string): void {
  source.advise?.(name, 'dontneed');
}

/**
 * One conversion's bookkeeping, shared by the safetensors and GGUF converters: the source's entries,
 * the plan handed to the writer, the report's lists and counters, and the page dropping that keeps
 * resident memory at about one layer (the writer copies a tensor's bytes after data() returns, so a
 * source tensor's pages are dropped when the next one is requested, and the last after the write).
 */
export class ConversionRun {
  readonly entries: readonly TensorEntry[];
  readonly names: ReadonlySet<string>;
  readonly sourceBytes: number;
  readonly layers: QuantizedLayerReport[] = [];
  readonly kept: { name: string; reason: string }[] = [];
  readonly plan: TensorSource[] = [];
  /** Source bytes consumed so far. */
  bytesRead = 0;
  /** Most bytes of converted tensors held at once. */
  peakHeld = 0;
  /** Reads a source tensor: the options' `read` (a LoRA merge's patching reader), else the source. */
  readonly read: (name: string) => Promise<Tensor> | Tensor;
  private index = 0;
  private previous: string | undefined;

  constructor(
    private readonly source: CheckpointSource,
    private readonly options: Pick<QuantizeOptions, 'read' | 'onProgress'>,
  ) {
    this.entries = source.entries();
    this.names = new Set(this.entries.map((e) => e.name));
    this.sourceBytes = this.entries.reduce((a, e) => a + e.byteLength, 0);
    this.read = options.read ?? ((name: string) => source.tensor(name));
  }

  /** Called as the writer asks for `name`: the previous tensor's pages go. */
  consumed(name: string): void {
    if (this.previous !== undefined) dropPages(this.source, this.previous);
    this.previous = name;
  }

  /** Counts `bytes` of source as read and reports one converted or kept tensor. */
  done(bytes: number, event: Omit<QuantizeProgress, 'index' | 'total' | 'bytesRead' | 'sourceBytes'>): void {
    this.bytesRead += bytes;
    this.options.onProgress?.({ ...event, index: this.index++, total: this.entries.length, bytesRead: this.bytesRead, sourceBytes: this.sourceBytes });
  }

  /** After the write: the last tensor's pages go too, and the report of the conversion started at `started`. */
  finish(written: { readonly path: string; readonly bytes: number }, target: QuantizeTarget, started: number): QuantizeReport {
    if (this.previous !== undefined) dropPages(this.source, this.previous);
    this.previous = undefined;
    return {
      path: written.path,
      target,
      layers: this.layers,
      kept: this.kept,
      sourceBytes: this.sourceBytes,
      bytesWritten: written.bytes,
      seconds: (performance.now() - started) / 1000,
      peakHeldBytes: this.peakHeld,
    };
  }
}
