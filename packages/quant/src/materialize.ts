import { Tensor, cast, castAsync, decodeFp8, dequantize, hadamard, isBlockDType } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';
import type { CheckpointSource } from '@ninodes/memory';
import type { DetectedLayer } from './detect-formats.js';
import type { LayerSlice } from './linear-shard.js';
import { weightFormatInfo } from './weight-format.js';

/** A float tensor (f32/f16/bf16, or i8/u8/f8 decoded plainly) as f32; f32 stays a zero-copy view. */
export function toF32(t: Tensor): Tensor<'f32'> {
  if (t.dtype === 'f32') return t as Tensor<'f32'>;
  return cast(t, 'f32') as Tensor<'f32'>;
}

/** toF32 with the conversion on a worker thread (a weight's worth of elements; the same bits). */
export async function toF32Async(t: Tensor): Promise<Tensor<'f32'>> {
  if (t.dtype === 'f32') return t as Tensor<'f32'>;
  return (await castAsync(t, 'f32')) as Tensor<'f32'>;
}

/** Reads a scalar (or single-element) f32/f16/bf16 tensor. */
export function readScalar(source: CheckpointSource, name: string): number {
  const t = toF32(source.tensor(name));
  if (t.numel !== 1) {
    throw new QuantError('SHAPE_MISMATCH', `${name} should hold one value, it holds ${t.numel}`, { value: t.shape, where: name });
  }
  return (t.copy().data as Float32Array)[0] as number;
}

/** Rows of segments `rows` of `t` (outermost dimension), concatenated into a new tensor (one segment: a view). */
export function concatRows(t: Tensor, rows: readonly (readonly [number, number])[]): Tensor {
  if (rows.length === 1) {
    const [a, b] = rows[0] as readonly [number, number];
    return t.rows(a, b);
  }
  return joinRows(rows.map(([a, b]) => t.rows(a, b)));
}

function joinRows(parts: readonly Tensor[]): Tensor {
  const first = parts[0] as Tensor;
  const rest = first.shape.slice(1);
  const total = parts.reduce((a, p) => a + (p.shape[0] as number), 0);
  const out = new Uint8Array(parts.reduce((a, p) => a + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p.bytes(), at);
    at += p.byteLength;
  }
  return new Tensor(first.dtype, [total, ...rest], out.buffer);
}

/**
 * The per-row [N, 1] f32 scale of an int8 layer; a tensorwise scalar is repeated on every row. With a
 * slice, the scales of its output rows (a row-parallel slice keeps every row).
 */
export function rowScales(source: CheckpointSource, layer: DetectedLayer, slice?: LayerSlice): Tensor<'f32'> {
  const n = layer.shape[0] as number;
  const name = layer.tensors.weightScale;
  if (name === undefined) throw new QuantError('TENSOR_NOT_FOUND', `layer '${layer.name}' has no weight_scale`, { where: layer.name });
  const s = toF32(source.tensor(name));
  let full: Tensor<'f32'>;
  if (s.numel === n && n !== 1) full = s.reshape([n, 1]);
  else if (s.numel === 1) {
    const v = (s.copy().data as Float32Array)[0] as number;
    full = Tensor.fromArray('f32', [n, 1], new Float32Array(n).fill(v));
  } else throw new QuantError('SHAPE_MISMATCH', `weight_scale of '${layer.name}' has ${s.numel} values for ${n} rows`, { value: s.shape, where: name });
  return slice?.rows === undefined ? full : (concatRows(full, slice.rows) as Tensor<'f32'>);
}

/** The bias [N] as f32 (a slice's output rows of it); undefined when the layer has none. */
export function biasF32(source: CheckpointSource, layer: DetectedLayer, slice?: LayerSlice): Tensor<'f32'> | undefined {
  const name = layer.tensors.bias;
  if (name === undefined) return undefined;
  const b = toF32(source.tensor(name)).reshape([layer.shape[0] as number]);
  return slice?.rows === undefined ? b : (toF32(concatRows(b, slice.rows)) as Tensor<'f32'>).reshape([-1]);
}

/**
 * The stored weight as a 2-D [N, K] tensor (GGUF orig_shape / conv shapes folded to rows). With a
 * slice, only the slice is read: output-row segments as zero-copy views of the file (several
 * segments are joined into one copy and the mapped pages dropped again), or input columns copied by
 * `tensorColumns` (2-D weights only).
 */
export function weight2d(source: CheckpointSource, layer: DetectedLayer, slice?: LayerSlice): Tensor {
  const name = layer.tensors.weight;
  const n = layer.shape[0] as number;
  const k = layer.shape.slice(1).reduce((a, b) => a * b, 1);
  if (slice?.columns !== undefined) {
    if (layer.shape.length !== 2) {
      throw new QuantError('UNSUPPORTED_SHARD', `layer '${layer.name}' is [${layer.shape.join(', ')}]; column ranges need a 2-D weight`, { value: layer.shape, where: layer.name });
    }
    const [a, b] = slice.columns;
    return source.tensorColumns(name, a, b).reshape([n, b - a]);
  }
  if (slice?.rows !== undefined) {
    const parts = slice.rows.map(([a, b]) => {
      const t = source.tensorRows(name, a, b);
      return isBlockDType(t.dtype) ? t : t.reshape([b - a, k]);
    });
    if (parts.length === 1) return parts[0] as Tensor;
    const joined = joinRows(parts);
    // The copy faulted the segments' pages into this process: drop them, the copy is what stays.
    source.advise?.(name, 'dontneed');
    return joined;
  }
  const t = source.tensor(name);
  if (isBlockDType(t.dtype)) return t.shape.length === 2 && t.shape[0] === n ? t : t.reshape([n, k]);
  return t.reshape([n, k]);
}

/**
 * The weight dequantized to f32 [N, K] exactly as the layer's kernel sees it: int8 × row scale (and
 * rotated back for convrot, so it is comparable with the original), fp8 × weight_scale, GGUF blocks
 * decoded with ggml's arithmetic, floats cast.
 */
export async function materializeF32(source: CheckpointSource, layer: DetectedLayer, slice?: LayerSlice): Promise<Tensor<'f32'>> {
  const f = weightFormatInfo(layer.format);
  const w = weight2d(source, layer, slice);
  const [n, k] = w.shape as [number, number];
  switch (f.family) {
    case 'float':
      return toF32Async(w);
    case 'fp8': {
      const scale = layer.tensors.weightScale === undefined ? 1 : readScalar(source, layer.tensors.weightScale);
      return decodeFp8(w as Tensor<'f8_e4m3fn' | 'f8_e5m2'>, { scale });
    }
    case 'gguf': {
      const d = (await dequantize(w as never, 'f32')) as Tensor<'f32'>;
      return d.shape.length === 2 ? d : d.reshape([n, k]);
    }
    case 'int8':
      return dequantizeInt8(w as Tensor<'i8'>, rowScales(source, layer, slice), f.convrot);
  }
}

/** q × row scale as f32 [N, K]; convrot rows are rotated back (W = (W·Hᵀ)·H, H orthogonal). */
export async function dequantizeInt8(q: Tensor<'i8'>, scale: Tensor<'f32'>, convrot: number | false): Promise<Tensor<'f32'>> {
  const [n, k] = q.shape as [number, number];
  const qd = q.data;
  const s = scale.data;
  const out = new Float32Array(n * k);
  for (let r = 0; r < n; r++) {
    const sr = s[r] as number;
    for (let c = 0; c < k; c++) out[r * k + c] = (qd[r * k + c] as number) * sr;
  }
  const deq = Tensor.fromArray('f32', [n, k], out);
  return convrot === false ? deq : hadamard(deq, { group: convrot });
}

/**
 * Any checkpoint tensor as f32 in its torch shape (`entry(name).shape`): floats cast, fp8 decoded
 * plainly (no scale), GGUF blocks dequantized. For non-linear parameters (norms, embeddings, tables).
 */
export async function readF32(source: CheckpointSource, name: string): Promise<Tensor<'f32'>> {
  const shape = source.entry(name).shape;
  const t = source.tensor(name);
  if (isBlockDType(t.dtype)) return ((await dequantize(t as never, 'f32')) as Tensor<'f32'>).reshape(shape);
  if (t.dtype === 'f8_e4m3fn' || t.dtype === 'f8_e5m2') return decodeFp8(t as Tensor<'f8_e4m3fn'>).reshape(shape);
  return toF32(t).reshape(shape);
}
