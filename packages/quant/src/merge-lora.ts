import { type DType, Tensor, cast, dequantize, encodeFp8, isBlockDType, quantizeWeightInt8 } from '@ninodes/kernels';
import { type CheckpointSource, type TensorEntry, type TensorSource, writeSafetensors } from '@ninodes/memory';
import { type DetectedLayer, detectFormats } from './detect-formats.js';
import { materializeF32, toF32 } from './materialize.js';
import { fp8Scale } from './quant-math.js';
import { type QuantizeTarget, quantize } from './quantize.js';
import type { WeightPatcher } from './weight-patcher.js';
import { weightFormatInfo } from './weight-format.js';
import { QuantError } from './error-codes.js';

/**
 * What `mergeLora` writes. 'keep': every layer in its stored format (a patched quantized layer is
 * quantized again with new scales, as ComfyUI's set_weight does; patched f16 and GGUF layers become
 * f32, the form the run path computes them in). 'f32' / 'bf16': every linear weight in that dtype
 * (quantized layers dequantized, their scales and markers dropped). A quantize target: the patched
 * layers as floats, then the `quantize` converter (already quantized layers it leaves as they are).
 */
export type MergeFormat = 'keep' | 'f32' | 'bf16' | QuantizeTarget;

export const MERGE_FORMATS: readonly MergeFormat[] = ['keep', 'f32', 'bf16', 'int8_convrot', 'int8_rowwise', 'f8_e4m3fn', 'f8_e5m2'];

export interface MergeOptions {
  readonly patcher: WeightPatcher;
  readonly format?: MergeFormat;
  /** Extra `__metadata__` entries (the source's are kept). */
  readonly metadata?: Readonly<Record<string, string>>;
  /** Called after each tensor is produced (index of the source's tensors, its count). */
  readonly onProgress?: (done: number, total: number, name: string) => void;
}

export interface MergeReport {
  readonly path: string;
  readonly format: MergeFormat;
  /** Layers the patcher changed. */
  readonly patched: readonly string[];
  readonly sourceBytes: number;
  readonly bytesWritten: number;
  readonly seconds: number;
  /**
   * Most bytes of computed tensors (patched f32 working copies and their converted forms) the merge
   * held at once: about one layer, never the model.
   */
  readonly peakHeldBytes: number;
}

type ViewMode = 'keep' | 'float' | 'f32' | 'bf16';

/** The tensors one layer becomes, computed together (an int8 weight and its new scale come from one quantization). */
type LayerOutput = Map<string, Tensor>;

interface ViewEntry {
  readonly entry: TensorEntry;
  /** Set for the weight and sidecars of a layer whose tensors are computed. */
  readonly layer?: DetectedLayer;
}

/**
 * A CheckpointSource over `source` whose linear weights are patched and converted as `mode` says,
 * computed one layer at a time when first asked for and dropped once all of its tensors were taken.
 */
class MergedView implements CheckpointSource {
  readonly format = 'safetensors' as const;
  readonly path: string;
  readonly metadata: Readonly<Record<string, string>>;
  private readonly list: TensorEntry[] = [];
  private readonly byName = new Map<string, ViewEntry>();
  private readonly pending = new Map<string, { out: LayerOutput; left: Set<string> }>();
  held = 0;
  peakHeld = 0;
  readonly patched: string[] = [];

  constructor(
    private readonly source: CheckpointSource,
    private readonly patcher: WeightPatcher,
    private readonly mode: ViewMode,
  ) {
    this.path = source.path;
    const detection = detectFormats(source);
    const layers = new Map<string, DetectedLayer>();
    for (const layer of detection.layers.values()) {
      const patched = patcher.has(layer.name);
      if (patched) this.patched.push(layer.name);
      if (layer.shape.length !== 2) continue;
      const converted = mode === 'f32' || mode === 'bf16' ? true : patched;
      if (converted) for (const name of this.layerTensors(layer)) layers.set(name, layer);
    }
    const dropped = new Set<string>();
    for (const e of source.entries()) {
      const layer = layers.get(e.name);
      if (layer === undefined) {
        this.add({ entry: e });
        continue;
      }
      const dtype = this.outDtype(layer, e.name);
      if (dtype === undefined) {
        dropped.add(layer.name);
        continue;
      }
      // A recomputed int8 scale is per row (as every requantization here), an fp8 one a scalar.
      const scaleShape = weightFormatInfo(layer.format).family === 'int8' ? [layer.shape[0] as number, 1] : [];
      const shape = e.name === layer.tensors.weightScale ? scaleShape : e.name === layer.tensors.weight ? [layer.shape[0] as number, layer.shape[1] as number] : e.shape;
      this.add({ entry: { ...e, dtype, shape, byteLength: shape.reduce((a, b) => a * b, 1) * bytesOf(dtype) }, layer });
    }
    this.metadata = withoutQuantMetadata(source.metadata, dropped);
  }

  private add(v: ViewEntry): void {
    this.list.push(v.entry);
    this.byName.set(v.entry.name, v);
  }

  /** The file tensors a computed layer replaces: weight, scales and marker (the bias stays as stored). */
  private layerTensors(layer: DetectedLayer): string[] {
    const names = [layer.tensors.weight];
    if (layer.tensors.weightScale !== undefined) names.push(layer.tensors.weightScale);
    if (layer.tensors.inputScale !== undefined) names.push(layer.tensors.inputScale);
    const marker = `${layer.name}.comfy_quant`;
    if (this.source.has(marker)) names.push(marker);
    return names;
  }

  /** The dtype a layer tensor is written in, or undefined when it is dropped. */
  private outDtype(layer: DetectedLayer, name: string): DType | undefined {
    const info = weightFormatInfo(layer.format);
    const keepQuantized = this.mode === 'keep' && (info.family === 'int8' || info.family === 'fp8');
    if (name !== layer.tensors.weight) {
      if (!keepQuantized) return undefined;
      // The marker and an fp8 input scale are kept as stored; the weight scale is recomputed.
      return name === layer.tensors.weightScale ? 'f32' : this.source.entry(name).dtype;
    }
    if (this.mode === 'f32' || this.mode === 'bf16') return this.mode;
    if (keepQuantized) return info.storage;
    return layer.format === 'bf16' ? 'bf16' : 'f32';
  }

  entries(): readonly TensorEntry[] {
    return this.list;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  entry(name: string): TensorEntry {
    const v = this.byName.get(name);
    if (v === undefined) throw new QuantError('TENSOR_NOT_FOUND', `${name} not in ${this.path}`, { value: name, where: this.path });
    return v.entry;
  }

  /** prepare + tensor: what the writers call. */
  async read(name: string): Promise<Tensor> {
    await this.prepare(name);
    return this.tensor(name);
  }

  tensor(name: string): Tensor {
    const v = this.byName.get(name);
    if (v === undefined) throw new QuantError('TENSOR_NOT_FOUND', `${name} not in ${this.path}`, { value: name, where: this.path });
    if (v.layer === undefined || !this.computed(v.layer, name)) return this.source.tensor(name);
    const p = this.pending.get(v.layer.name);
    if (p === undefined) throw new QuantError('INTERNAL', `merge: '${name}' was requested before its layer was computed`, { where: name });
    return this.take(v.layer.name, p, name);
  }

  /** Computes `layer`'s output tensors (the async part: dequantizing, the LoRA matmul). */
  async prepare(name: string): Promise<void> {
    const v = this.byName.get(name);
    if (v?.layer === undefined || !this.computed(v.layer, name) || this.pending.has(v.layer.name)) return;
    const layer = v.layer;
    const w = await materializeF32(this.source, layer);
    // A stored f32 weight materializes as a view of the file: patch a copy.
    const own = layer.format === 'f32' ? w.copy() : w;
    this.hold(own.byteLength);
    if (this.patcher.has(layer.name)) await this.patcher.apply(layer.name, own);
    const out: LayerOutput = new Map();
    const info = weightFormatInfo(layer.format);
    const dtype = this.outDtype(layer, layer.tensors.weight) as DType;
    if (dtype === 'i8') {
      const { q, scale } = quantizeWeightInt8(own, { convrot: info.convrot });
      out.set(layer.tensors.weight, q);
      out.set(layer.tensors.weightScale as string, scale);
    } else if (dtype === 'f8_e4m3fn' || dtype === 'f8_e5m2') {
      const s = fp8Scale(own, dtype);
      out.set(layer.tensors.weight, encodeFp8(own, dtype, { scale: s, mode: 'clamp' }));
      out.set(layer.tensors.weightScale as string, Tensor.f32([], [s]));
    } else {
      out.set(layer.tensors.weight, dtype === 'bf16' ? cast(own, 'bf16') : own);
    }
    for (const t of out.values()) if (t !== own) this.hold(t.byteLength);
    const left = new Set(out.keys());
    this.pending.set(layer.name, { out, left });
  }

  /** The weight and its scale are computed; a marker or input scale is copied from the source. */
  private computed(layer: DetectedLayer, name: string): boolean {
    return name === layer.tensors.weight || name === layer.tensors.weightScale;
  }

  private hold(bytes: number): void {
    this.held += bytes;
    this.peakHeld = Math.max(this.peakHeld, this.held);
  }

  private take(layer: string, p: { out: LayerOutput; left: Set<string> }, name: string): Tensor {
    const t = p.out.get(name);
    if (t === undefined) throw new QuantError('INTERNAL', `merge: '${name}' was computed without its tensor`, { where: name });
    p.left.delete(name);
    if (p.left.size === 0) {
      // Every tensor of the layer was handed out: nothing of it is held past its write.
      this.pending.delete(layer);
      this.held = 0;
    }
    return t;
  }

  tensorRows(): Tensor {
    throw new QuantError('INTERNAL', 'a merge view is read whole, tensor by tensor', { where: this.path });
  }

  tensorColumns(): Tensor {
    throw new QuantError('INTERNAL', 'a merge view is read whole, tensor by tensor', { where: this.path });
  }

  close(): void {}

  advise(name: string, advice: 'willneed' | 'dontneed'): void {
    if (this.source.has(name)) this.source.advise?.(name, advice);
  }
}

function bytesOf(dtype: DType): number {
  return dtype === 'f32' ? 4 : dtype === 'bf16' || dtype === 'f16' ? 2 : 1;
}

/** `_quantization_metadata` without the layers that are written as floats now (the key dropped when none remain). */
function withoutQuantMetadata(metadata: Readonly<Record<string, string>>, floatLayers: ReadonlySet<string>): Record<string, string> {
  const raw = metadata._quantization_metadata;
  if (raw === undefined || floatLayers.size === 0) return { ...metadata };
  const parsed = JSON.parse(raw) as { layers?: Record<string, unknown> };
  const layers = Object.fromEntries(Object.entries(parsed.layers ?? {}).filter(([k]) => !floatLayers.has(k) && ![...floatLayers].some((l) => l.endsWith(`.${k}`) || k.endsWith(`.${l}`))));
  const { _quantization_metadata: _, ...rest } = metadata;
  return Object.keys(layers).length === 0 ? rest : { ...rest, _quantization_metadata: JSON.stringify({ ...parsed, layers }) };
}

/**
 * Writes `source` with the patcher's patches merged into its linear weights, tensor by tensor into a
 * temporary renamed over `target` only when complete (memory's writeSafetensors): each patched
 * layer is read, dequantized when quantized, patched in fp32 and converted (`options.format`) just
 * before it is written, so the merge holds about one layer, never the model. GGUF block tensors that
 * are not linear weights are decoded to f32 (safetensors cannot hold them).
 */
export async function mergeLora(source: CheckpointSource, target: string, options: MergeOptions): Promise<MergeReport> {
  const started = performance.now();
  const format = options.format ?? 'keep';
  if (!MERGE_FORMATS.includes(format)) {
    throw new QuantError('UNSUPPORTED_QUANTIZE_TARGET', `cannot merge into '${format}'`, { value: format, hint: `formats: ${MERGE_FORMATS.join(', ')}` });
  }
  const quantizeTo = format === 'keep' || format === 'f32' || format === 'bf16' ? undefined : format;
  const view = new MergedView(source, options.patcher, quantizeTo === undefined ? (format as ViewMode) : 'float');
  const entries = view.entries();
  const sourceBytes = source.entries().reduce((a, e) => a + e.byteLength, 0);
  const metadata = { ...view.metadata, ...options.metadata };
  let done = 0;
  if (quantizeTo !== undefined) {
    const report = await quantize(view, target, {
      format: quantizeTo,
      metadata,
      read: (name) => view.read(name),
      onProgress: (e) => options.onProgress?.(++done, entries.length, e.name),
    });
    return { path: report.path, format, patched: view.patched, sourceBytes, bytesWritten: report.bytesWritten, seconds: (performance.now() - started) / 1000, peakHeldBytes: view.peakHeld + report.peakHeldBytes };
  }
  let previous: string | undefined;
  const plan: TensorSource[] = entries.map((e) => {
    const outDtype: DType = isBlockDType(e.dtype) ? 'f32' : e.dtype;
    return {
      name: e.name,
      dtype: outDtype,
      shape: e.shape,
      data: async () => {
        if (previous !== undefined) view.advise(previous, 'dontneed');
        previous = e.name;
        const t = await view.read(e.name);
        const out = isBlockDType(t.dtype) ? ((await dequantize(t as never, 'f32')) as Tensor<'f32'>).reshape(e.shape) : t;
        options.onProgress?.(++done, entries.length, e.name);
        return out;
      },
    };
  });
  // Odd-length u8 markers last, so no float tensor after them lands on an offset no typed view can read.
  plan.sort((a, b) => Number(a.name.endsWith('.comfy_quant')) - Number(b.name.endsWith('.comfy_quant')));
  const result = await writeSafetensors(target, plan, Object.keys(metadata).length > 0 ? { metadata } : {});
  if (previous !== undefined) view.advise(previous, 'dontneed');
  return { path: result.path, format, patched: view.patched, sourceBytes, bytesWritten: result.bytes, seconds: (performance.now() - started) / 1000, peakHeldBytes: view.peakHeld };
}
