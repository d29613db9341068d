// Converts a checkpoint to a GGUF file with Q8_0 or Q4_K linears, the tensor choices of city96's
// ComfyUI-GGUF converter where it has one, streamed one tensor at a time.
import { BLOCK_DTYPES, type DType, Tensor, byteSizeOf, isBlockDType, numelOf, quantizeGguf } from '@ninodes/kernels';
import type { CheckpointSource, TensorEntry, TensorSource } from '@ninodes/memory';
import { GgufCheckpoint } from './gguf-checkpoint.js';
import { type GgufEntry, ggmlTypeIdOf, writeGguf } from './gguf-writer.js';
import type { QuantizeOptions, QuantizeReport } from './quantize-types.js';
import { ConversionRun, FLOAT_SOURCE, keepReason, sourceF32 } from './quantize-rules.js';
import { QuantError } from './error-codes.js';

/** city96's QUANTIZATION_THRESHOLD: tensors of at most this many elements stay F32. */
export const GGUF_SMALL_TENSOR = 1024;

/** llama.cpp's `general.file_type` (enum llama_ftype) for a file whose linears are all one type. */
const FILE_TYPE = { q8_0: 7, q4_k: 14 } as const; // MOSTLY_Q8_0, MOSTLY_Q4_K_S

/** Keys the converter writes itself; a GGUF source's own values of them are not copied. */
const OWN_KEYS = new Set(['general.architecture', 'general.quantization_version', 'general.file_type', 'general.alignment']);

type GgufTarget = 'q8_0' | 'q4_k';

/** The source's metadata as GGUF entries: a GGUF source's typed values, else strings. */
function sourceMetadata(source: CheckpointSource): GgufEntry[] {
  if (source instanceof GgufCheckpoint) {
    // orig_shape overrides describe the source's stored layout, which is not the one written here.
    return [...source.header.metadata].filter(([k]) => !OWN_KEYS.has(k) && !k.startsWith('comfy.gguf.orig_shape.'));
  }
  return Object.entries(source.metadata)
    .filter(([k]) => !OWN_KEYS.has(k))
    .map(([k, v]) => [k, { type: 'string', value: v }]);
}

/**
 * Writes `target` as GGUF v3: a 2-D `.weight` with more than 1024 elements whose rows hold whole
 * blocks (32 values for Q8_0, 256 for Q4_K) and that is no fp32 island (norms, embeddings,
 * patch/output projections, H3's text stream, `skip`) becomes `format`, encoded as ggml's reference
 * quantizers do. 1-D tensors and tensors of at most 1024 elements become F32 (city96 keeps them
 * F32); every other tensor keeps its stored dtype (F32/F16/BF16, or its GGUF block type). Metadata:
 * general.architecture, general.quantization_version 2, general.file_type, then the source's.
 */
export async function quantizeToGguf(
  source: CheckpointSource,
  target: string,
  options: QuantizeOptions & { format: GgufTarget },
  started: number,
): Promise<QuantizeReport> {
  const { format } = options;
  const block = BLOCK_DTYPES[format].blockElements;
  const run = new ConversionRun(source, options);
  const { names, kept, layers, plan } = run;

  for (const e of run.entries) {
    const isFloat = FLOAT_SOURCE.has(e.dtype) || isBlockDType(e.dtype);
    if (!isFloat && ggmlTypeIdOf(e.dtype) === undefined) {
      const layer = e.name.replace(/\.(?:weight|comfy_quant|weight_scale|scale_weight|input_scale)$/, '');
      throw new QuantError('GGUF_UNSUPPORTED_TENSOR_TYPE', `${e.name} is ${e.dtype}, which a GGUF file cannot hold`, {
        value: e.dtype,
        where: e.name,
        hint: names.has(`${layer}.comfy_quant`) ? 'the source is already quantized (int8 / fp8): convert the float checkpoint instead' : 'GGUF stores f32, f16, bf16, the GGUF block types and integers',
      });
    }
    const isWeight = e.name.endsWith('.weight');
    const layer = isWeight ? e.name.slice(0, -'.weight'.length) : '';
    const numel = numelOf(e.shape);
    const k = e.shape[e.shape.length - 1] ?? 1;
    const reason = !isWeight
      ? undefined
      : !isFloat
        ? `already ${e.dtype}`
        : e.shape.length !== 2
          ? 'not a 2-D linear weight'
          : (keepReason(layer, options) ??
            (numel <= GGUF_SMALL_TENSOR ? `${numel} elements (at most ${GGUF_SMALL_TENSOR} stay F32, as city96's converter keeps them)` : undefined) ??
            (k % block !== 0 ? `input size ${k} is not a multiple of the ${format} block (${block})` : undefined));
    if (isWeight && reason !== undefined) kept.push({ name: layer, reason });

    if (!isWeight || reason !== undefined) {
      plan.push(keptTensor(run, e));
      continue;
    }

    layers.push({ name: layer, format, shape: [e.shape[0] as number, k] });
    plan.push({
      name: e.name,
      dtype: format,
      shape: e.shape,
      data: async () => {
        run.consumed(e.name);
        const w = await sourceF32(await run.read(e.name), e);
        const q = await quantizeGguf(w, format);
        run.peakHeld = Math.max(run.peakHeld, q.byteLength + (w.dtype === source.entry(e.name).dtype ? 0 : w.byteLength));
        run.done(e.byteLength, { kind: 'quantized', name: layer, format });
        return q;
      },
    });
  }

  const architecture = options.architecture ?? source.metadata['general.architecture'] ?? 'unknown';
  const metadata: GgufEntry[] = [
    ['general.architecture', { type: 'string', value: architecture }],
    ['general.quantization_version', { type: 'u32', value: 2 }],
    ['general.file_type', { type: 'u32', value: FILE_TYPE[format] }],
    ...sourceMetadata(source),
  ];
  const seen = new Set(metadata.map(([k]) => k));
  for (const [k, v] of Object.entries(options.metadata ?? {})) {
    if (seen.has(k)) metadata.splice(metadata.findIndex(([key]) => key === k), 1, [k, { type: 'string', value: v }]);
    else metadata.push([k, { type: 'string', value: v }]);
  }
  const result = await writeGguf(target, plan, metadata);
  return run.finish(result, format, started);
}

/** What a kept tensor is written as: F32 for 1-D and small tensors, else its stored dtype. */
function keptDtype(dtype: DType, shape: readonly number[]): DType {
  const isFloat = FLOAT_SOURCE.has(dtype) || isBlockDType(dtype);
  if (!isFloat) return dtype;
  if (shape.length <= 1 || numelOf(shape) <= GGUF_SMALL_TENSOR) return 'f32';
  if (isBlockDType(dtype)) {
    // A block tensor whose torch shape does not keep whole blocks per row (a ComfyUI orig_shape
    // override) would need the override again: decode it instead.
    try {
      byteSizeOf(dtype, shape);
    } catch {
      return 'f32';
    }
  }
  return dtype;
}

function keptTensor(run: ConversionRun, e: TensorEntry): TensorSource {
  const dtype = keptDtype(e.dtype, e.shape);
  return {
    name: e.name,
    dtype,
    shape: e.shape,
    data: async () => {
      run.consumed(e.name);
      let t: Tensor;
      if (dtype === e.dtype) {
        const stored = await run.read(e.name);
        t = stored.shape.join() === e.shape.join() ? stored : stored.reshape(e.shape);
      } else {
        t = await sourceF32(await run.read(e.name), e);
      }
      run.done(e.byteLength, { kind: 'kept', name: e.name, ...(dtype !== e.dtype ? { note: `${e.dtype} written as ${dtype}` } : {}) });
      return t;
    },
  };
}
