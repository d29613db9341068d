import { type DType, Tensor, dequantize, encodeFp8, isBlockDType, quantizeWeightInt8 } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';
import { type CheckpointSource, type TensorEntry, type TensorSource, writeSafetensors } from '@ninodes/memory';
import { encodeComfyQuant } from './comfy-quant-config.js';
import { toF32 } from './materialize.js';
import { fp8Scale } from './quant-math.js';
import { CONVROT_GROUP, type WeightFormat } from './weight-format.js';

export type QuantizeTarget = 'int8_convrot' | 'int8_rowwise' | 'f8_e4m3fn' | 'f8_e5m2';

export interface QuantizeOptions {
  format: QuantizeTarget;
  /** Extra layers to keep as they are: exact layer names, substrings, or patterns. */
  skip?: readonly (string | RegExp)[];
  /**
   * Also quantize what is kept by default (norm-like, embedding and fp32-island linears: patch and
   * output projections such as `video_patch_proj`, `final_layer.video_out`). Default false.
   */
  quantizeIslands?: boolean;
  /** Extra `__metadata__` entries (the source's metadata is kept). */
  metadata?: Readonly<Record<string, string>>;
  onProgress?: (event: QuantizeProgress) => void;
}

export interface QuantizeProgress {
  /** 'quantized' after a layer's weight is converted, 'kept' after a tensor is copied. */
  readonly kind: 'quantized' | 'kept';
  readonly name: string;
  readonly index: number;
  readonly total: number;
  /** Source bytes consumed so far (the throughput numerator). */
  readonly bytesRead: number;
  readonly sourceBytes: number;
  readonly format?: WeightFormat;
  readonly note?: string;
}

export interface QuantizedLayerReport {
  readonly name: string;
  readonly format: WeightFormat;
  readonly shape: readonly [number, number];
  /** Why the layer is not in the requested format (e.g. unrotated because K is not a multiple of 256). */
  readonly note?: string;
}

export interface QuantizeReport {
  readonly path: string;
  readonly target: QuantizeTarget;
  readonly layers: readonly QuantizedLayerReport[];
  /** Weights left as they were, and why. */
  readonly kept: readonly { readonly name: string; readonly reason: string }[];
  /** Bytes of tensor data read from the source / written to the target file. */
  readonly sourceBytes: number;
  readonly bytesWritten: number;
  readonly seconds: number;
  /** Most bytes of converted tensors held at once (the streaming bound: about one layer). */
  readonly peakHeldBytes: number;
}

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
const LOW_RANK_COLUMNS = 16;

function keepReason(layer: string, options: QuantizeOptions): string | undefined {
  for (const s of options.skip ?? []) {
    if (typeof s === 'string' ? layer === s || layer.includes(s) : s.test(layer)) return 'skipped by request';
  }
  if (options.quantizeIslands) return undefined;
  for (const [re, why] of DEFAULT_KEEP) if (re.test(layer)) return why;
  return undefined;
}

const FLOAT_SOURCE: ReadonlySet<DType> = new Set(['f32', 'f16', 'bf16']);

async function sourceF32(source: CheckpointSource, entry: TensorEntry): Promise<Tensor<'f32'>> {
  const t = source.tensor(entry.name);
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
 * Converts a checkpoint to int8 (convrot) or scaled fp8 the way ComfyUI stores it: `<l>.weight` I8 or
 * F8, `<l>.weight_scale` F32 ([N, 1] int8, scalar fp8), `<l>.comfy_quant` U8 JSON. Everything else is
 * copied as is (GGUF block tensors are decoded to f32, which safetensors can hold). Streaming: each
 * layer is read, converted and written before the next is touched, into a temporary file renamed
 * over `target` only when complete.
 */
export async function quantize(source: CheckpointSource, target: string, options: QuantizeOptions): Promise<QuantizeReport> {
  const started = performance.now();
  const { format } = options;
  if (!['int8_convrot', 'int8_rowwise', 'f8_e4m3fn', 'f8_e5m2'].includes(format)) {
    throw new QuantError('UNSUPPORTED_QUANTIZE_TARGET', `cannot quantize to '${format}'`, { value: format, hint: 'targets: int8_convrot, int8_rowwise, f8_e4m3fn, f8_e5m2' });
  }
  const entries = source.entries();
  const names = new Set(entries.map((e) => e.name));
  const sourceBytes = entries.reduce((a, e) => a + e.byteLength, 0);
  const layers: QuantizedLayerReport[] = [];
  const kept: { name: string; reason: string }[] = [];
  const plan: TensorSource[] = [];
  let bytesRead = 0;
  let held = 0;
  let peakHeld = 0;
  let index = 0;
  const total = entries.length;
  // The writer copies a tensor's bytes after data() returns: drop each source tensor's pages when the
  // next one is requested, and the last one after the write.
  let previous: string | undefined;
  const consumed = (name: string) => {
    if (previous !== undefined) dropPages(source, previous);
    previous = name;
  };
  const progress = (e: Omit<QuantizeProgress, 'index' | 'total' | 'bytesRead' | 'sourceBytes'>) =>
    options.onProgress?.({ ...e, index: index++, total, bytesRead, sourceBytes });

  for (const e of entries) {
    const isWeight = e.name.endsWith('.weight');
    const layer = isWeight ? e.name.slice(0, -'.weight'.length) : '';
    const quantizable = isWeight && e.shape.length === 2 && (FLOAT_SOURCE.has(e.dtype) || isBlockDType(e.dtype));
    const reason = !isWeight
      ? undefined
      : !quantizable
        ? FLOAT_SOURCE.has(e.dtype) || isBlockDType(e.dtype)
          ? 'not a 2-D linear weight'
          : `already ${e.dtype}`
        : names.has(`${layer}.comfy_quant`) || names.has(`${layer}.weight_scale`) || names.has(`${layer}.scale_weight`)
          ? 'already quantized'
          : (keepReason(layer, options) ?? (!options.quantizeIslands && (e.shape[1] ?? 0) < LOW_RANK_COLUMNS ? `low-rank (${e.shape[1]} input columns)` : undefined));
    if (isWeight && reason !== undefined) kept.push({ name: layer, reason });

    if (!quantizable || reason !== undefined) {
      const outDtype: DType = isBlockDType(e.dtype) ? 'f32' : e.dtype;
      plan.push({
        name: e.name,
        dtype: outDtype,
        shape: e.shape,
        data: async () => {
          consumed(e.name);
          const t = outDtype === e.dtype ? source.tensor(e.name) : await sourceF32(source, e);
          bytesRead += e.byteLength;
          progress({ kind: 'kept', name: e.name, ...(outDtype !== e.dtype ? { note: `${e.dtype} decoded to f32` } : {}) });
          return t;
        },
      });
      continue;
    }

    const [n, k] = e.shape as [number, number];
    let layerFormat: WeightFormat = format;
    let note: string | undefined;
    let conf: Record<string, string | number | boolean>;
    if (format === 'int8_convrot' && k % CONVROT_GROUP !== 0) {
      layerFormat = 'int8_rowwise';
      note = `unrotated: input size ${k} is not a multiple of the convrot group ${CONVROT_GROUP}`;
    }
    if (layerFormat === 'int8_convrot') conf = { format: 'int8_tensorwise', convrot: true, convrot_groupsize: CONVROT_GROUP };
    else if (layerFormat === 'int8_rowwise') conf = { format: 'int8_tensorwise' };
    else conf = { format: layerFormat === 'f8_e4m3fn' ? 'float8_e4m3fn' : 'float8_e5m2' };
    layers.push({ name: layer, format: layerFormat, shape: [n, k], ...(note ? { note } : {}) });

    // The weight's data() converts the layer; its scale follows right after and takes the result.
    let scale: Tensor<'f32'> | undefined;
    const int8 = layerFormat === 'int8_convrot' || layerFormat === 'int8_rowwise';
    const marker = encodeComfyQuant(conf);
    plan.push({
      name: e.name,
      dtype: int8 ? 'i8' : (layerFormat as 'f8_e4m3fn' | 'f8_e5m2'),
      shape: [n, k],
      data: async () => {
        consumed(e.name);
        const w = await sourceF32(source, e);
        let out: Tensor;
        let sc: Tensor<'f32'>;
        if (int8) {
          const r = quantizeWeightInt8(w, { convrot: layerFormat === 'int8_convrot' ? CONVROT_GROUP : false });
          out = r.q;
          sc = r.scale;
        } else {
          const s = fp8Scale(w, layerFormat as 'f8_e4m3fn');
          out = encodeFp8(w, layerFormat as 'f8_e4m3fn' | 'f8_e5m2', { scale: s, mode: 'clamp' });
          sc = Tensor.f32([], [s]);
        }
        scale = sc;
        held = out.byteLength + sc.byteLength + (w.dtype === source.entry(e.name).dtype ? 0 : w.byteLength);
        peakHeld = Math.max(peakHeld, held);
        bytesRead += e.byteLength;
        progress({ kind: 'quantized', name: layer, format: layerFormat, ...(note ? { note } : {}) });
        return out;
      },
    });
    plan.push({
      name: `${layer}.weight_scale`,
      dtype: 'f32',
      shape: int8 ? [n, 1] : [],
      data: () => {
        const s = scale;
        if (s === undefined) throw new QuantError('INTERNAL', `scale of '${layer}' requested before its weight`, { where: layer });
        scale = undefined;
        held = 0;
        return s;
      },
    });
    plan.push({ name: `${layer}.comfy_quant`, dtype: 'u8', shape: [marker.length], data: () => marker });
  }

  // The u8 quant markers (odd lengths) go last, so they cannot push the bf16/f16/f32 tensors after
  // them to offsets no typed view can read. The rest keeps its order (a scale is computed with its weight).
  plan.sort((a, b) => Number(a.name.endsWith('.comfy_quant')) - Number(b.name.endsWith('.comfy_quant')));
  const metadata = { ...source.metadata, ...options.metadata };
  const result = await writeSafetensors(target, plan, Object.keys(metadata).length > 0 ? { metadata } : {});
  if (previous !== undefined) dropPages(source, previous);
  return {
    path: result.path,
    target: format,
    layers,
    kept,
    sourceBytes,
    bytesWritten: result.bytes,
    seconds: (performance.now() - started) / 1000,
    peakHeldBytes: peakHeld,
  };
}
