import { type DType, Tensor, encodeFp8, isBlockDType, quantizeWeightInt8 } from '@ninodes/kernels';
import { type CheckpointSource, writeSafetensors } from '@ninodes/memory';
import { encodeComfyQuant } from './comfy-quant-config.js';
import { fp8Scale } from './quant-math.js';
import { quantizeToGguf } from './quantize-gguf.js';
import { ConversionRun, FLOAT_SOURCE, LOW_RANK_COLUMNS, keepReason, sourceF32 } from './quantize-rules.js';
import { QUANTIZE_TARGETS, type QuantizeOptions, type QuantizeReport } from './quantize-types.js';
import { CONVROT_GROUP, type WeightFormat } from './weight-format.js';
import { QuantError } from './error-codes.js';

export { QUANTIZE_TARGETS, type QuantizeOptions, type QuantizeProgress, type QuantizeReport, type QuantizeTarget, type QuantizedLayerReport } from './quantize-types.js';

/**
 * Converts a checkpoint to int8 (convrot) or scaled fp8 the way ComfyUI stores it: `<l>.weight` I8 or
 * F8, `<l>.weight_scale` F32 ([N, 1] int8, scalar fp8), `<l>.comfy_quant` U8 JSON. Everything else is
 * copied as is (GGUF block tensors are decoded to f32, which safetensors can hold). Targets `q8_0`
 * and `q4_k` write a GGUF file instead (see quantizeToGguf). Streaming: each layer is read,
 * converted and written before the next is touched, into a temporary file renamed over `target`
 * only when complete.
 */
export async function quantize(source: CheckpointSource, target: string, options: QuantizeOptions): Promise<QuantizeReport> {
  const started = performance.now();
  const { format } = options;
  if (!QUANTIZE_TARGETS.includes(format)) {
    throw new QuantError('UNSUPPORTED_QUANTIZE_TARGET', `cannot quantize to '${format}'`, { value: format, hint: `targets: ${QUANTIZE_TARGETS.join(', ')}` });
  }
  if (format === 'q8_0' || format === 'q4_k') return quantizeToGguf(source, target, { ...options, format }, started);
  const run = new ConversionRun(source, options);
  const { names, kept, layers, plan } = run;
  let held = 0;

  for (const e of run.entries) {
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
          run.consumed(e.name);
          const stored = await run.read(e.name);
          const t = outDtype === e.dtype ? stored : await sourceF32(stored, e);
          run.done(e.byteLength, { kind: 'kept', name: e.name, ...(outDtype !== e.dtype ? { note: `${e.dtype} decoded to f32` } : {}) });
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
        run.consumed(e.name);
        const w = await sourceF32(await run.read(e.name), e);
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
        run.peakHeld = Math.max(run.peakHeld, held);
        run.done(e.byteLength, { kind: 'quantized', name: layer, format: layerFormat, ...(note ? { note } : {}) });
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

  // A quantized checkpoint quantized again converts nothing: refuse it rather than write a copy
  // under the new format's name (int8 -> fp8 would report "wrote (fp8)" with no fp8 layer in it).
  const already = kept.find((k) => k.reason === 'already quantized' || k.reason.startsWith('already '));
  if (layers.length === 0 && already !== undefined) {
    throw new QuantError('ALREADY_QUANTIZED', `${source.path}: no float linear to quantize to ${format}: ${already.name} is ${already.reason}${kept.length > 1 ? ` (and ${kept.length - 1} more kept)` : ''}`, {
      value: already.name,
      where: source.path,
      hint: 'quantize the float (f32, bf16, f16) or GGUF checkpoint this one was made from',
    });
  }

  // The u8 quant markers (odd lengths) go last, so they cannot push the bf16/f16/f32 tensors after
  // them to offsets no typed view can read. The rest keeps its order (a scale is computed with its weight).
  plan.sort((a, b) => Number(a.name.endsWith('.comfy_quant')) - Number(b.name.endsWith('.comfy_quant')));
  const metadata = { ...source.metadata, ...options.metadata };
  const result = await writeSafetensors(target, plan, Object.keys(metadata).length > 0 ? { metadata } : {});
  return run.finish(result, format, started);
}
