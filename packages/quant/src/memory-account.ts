import { type GgufLinearDType, type LinearPrecision, type Tensor, buildInfo, getDevice, isGgufLinearDType } from '@ninodes/kernels';
import type { LayoutLinear, LayoutTensor } from './model-layout.js';
import type { Bf16Weight } from './bf16-weight.js';
import { QuantError } from './error-codes.js';
import { CONVROT_GROUP, type WeightFormat, weightFormatInfo } from './weight-format.js';

/**
 * How a linear runs: 'auto' runs each layer in the format stored in the file, the others convert
 * the stored weight when it is first materialized.
 */
export type ComputeMode = 'auto' | 'f32' | 'bf16' | 'int8_convrot' | 'f8_e4m3fn';

export interface RunFormatOptions {
  /** GGUF Q8_0/Q6_K layers run as int8 rowwise (see LinearProviderOptions). */
  readonly requantizeGguf?: boolean;
  /** The compute device whose backend holds the prepared weights and says their size (default 'cpu'). */
  readonly device?: string;
}

/**
 * The format a layer stored as `stored` runs in under `compute` ('int8_convrot' on a K that is not a
 * multiple of the convrot group falls back to per-row int8 without rotation).
 */
export function runFormatOf(stored: WeightFormat, compute: ComputeMode, k: number, options: RunFormatOptions = {}): WeightFormat {
  if (compute !== 'auto') return compute === 'int8_convrot' && k % CONVROT_GROUP !== 0 ? 'int8_rowwise' : compute;
  if (options.requantizeGguf === true && (stored === 'q8_0' || stored === 'q6_k')) return 'int8_rowwise';
  return stored;
}

/**
 * What float layers multiply in for a compute mode: bf16 compute ('bf16', PyTorch's bf16 mode)
 * runs on the CPU's bf16 units where it has them; everything else, and every CPU without them,
 * multiplies in f32 (bf16 weights widened exactly).
 */
export function floatPrecision(compute: ComputeMode): LinearPrecision {
  return compute === 'bf16' && buildInfo().bf16Units ? 'bf16' : 'f32';
}

/** What a prepared layer keeps between calls, by kind (see PreparedWeight). */
export type PreparedKind = 'f32' | 'bf16' | 'int8' | 'fp8' | 'gguf';

/** The prepared kind a layer holds when it runs as `run`. */
export function preparedKindOf(run: WeightFormat): PreparedKind {
  const f = weightFormatInfo(run);
  switch (f.family) {
    case 'int8':
      return 'int8';
    case 'fp8':
      return 'fp8';
    case 'gguf':
      // The block types kernels' ggufLinear multiplies stay as stored; the others decode to f32.
      return isGgufLinearDType(run) ? 'gguf' : 'f32';
    case 'float':
      // bf16 stays bf16 (the bf16 gemm runs it); f16 and f32 run as f32.
      return run === 'bf16' ? 'bf16' : 'f32';
  }
}

function checkShape(shape: readonly number[], where: string): [number, number] {
  const [n, k] = shape;
  if (shape.length !== 2 || !Number.isSafeInteger(n) || !Number.isSafeInteger(k) || (n as number) < 0 || (k as number) < 0) {
    throw new QuantError('INVALID_ARGUMENT', `${where}: shape must be [N, K] of non-negative integers, got [${shape.join(', ')}]`, { value: shape, where });
  }
  return [n as number, k as number];
}

/**
 * Bytes a linear of `shape` [N, K] stored as `stored` holds while prepared for compute under
 * `compute`, as the backend of `options.device` keeps it (kernels' preparedWeightBytes; on the CPU:
 * f32 4 B/param, bf16 2 B or oneDNN's padded blocks when it multiplies on bf16 units, int8 1 B + 4 B
 * per row of scales, fp8 1 B, its scale being a number; a GGUF layer run as stored its blocks, Q4_K
 * 0.5625 B/param, which ggufLinear multiplies in place — except the block types without an integer
 * kernel, q4_1 … iq4_xs, decoded to f32). The ops report it as their cache size; the planner sums it.
 */
export function residentBytes(stored: WeightFormat, compute: ComputeMode, shape: readonly number[], options: RunFormatOptions = {}): number {
  const [n, k] = checkShape(shape, 'residentBytes');
  const run = runFormatOf(stored, compute, k, options);
  const kind = preparedKindOf(run);
  const extra = kind === 'bf16' ? { precision: floatPrecision(compute) } : kind === 'gguf' ? { blocks: run as GgufLinearDType } : {};
  return getDevice(options.device ?? 'cpu').backend().preparedWeightBytes({ kind, shape: [n, k], ...extra });
}

/** Bytes an f32 tensor of `shape` takes in the buffers of `options.device` (default 'cpu'). */
function f32Bytes(shape: readonly number[], options: RunFormatOptions): number {
  return getDevice(options.device ?? 'cpu').bufferType.allocSize('f32', shape);
}

/**
 * Bytes a linear holds prepared for a run in `compute` mode: its weight (residentBytes; an fp32
 * island runs as stored) and its f32 bias, at `shape` [N, K] (a shard's local widths) or whole, in
 * the buffers of `options.device`.
 */
export function linearResidentBytes(linear: LayoutLinear, compute: ComputeMode, options: RunFormatOptions = {}, shape: readonly [number, number] = [linear.outFeatures, linear.inFeatures]): number {
  return residentBytes(linear.storedFormat, linear.fp32Island ? 'auto' : compute, shape, options) + (linear.bias ? f32Bytes([shape[0]], options) : 0);
}

/**
 * The memory account of one layout tensor for a run in `compute` mode: the one that distorch's
 * planner and tp's shard plan both sum, so their totals agree with each other and with the ops. A
 * linear's weight costs its residentBytes (scale sidecars included, so they cost nothing more), its
 * bias an f32 tensor of its outputs; every other tensor (norms, buffers) is held in f32 by the
 * model, whatever its stored dtype (on the CPU 4 B/element: the device's buffer type says). `owner` is the linear the tensor belongs to (ownerOf), if any.
 */
export function tensorResidentBytes(tensor: LayoutTensor, owner: LayoutLinear | undefined, compute: ComputeMode, options: RunFormatOptions = {}): number {
  if (owner === undefined) return f32Bytes(tensor.shape, options);
  const part = tensor.name.slice(owner.name.length + 1);
  if (part === 'weight') return residentBytes(owner.storedFormat, owner.fp32Island ? 'auto' : compute, [owner.outFeatures, owner.inFeatures], options);
  if (part === 'bias') return f32Bytes([owner.outFeatures], options);
  return 0;
}

/**
 * Bytes a linear allocates for its weight on every call and frees after it: fp8 decodes the weight
 * to f32 (N·K·4) per forward, since the CPU has no fp8 gemm; the other kinds use the prepared weight
 * as it is. Activation-sized temporaries (M rows) are not included, nor ggufLinear's bounded
 * scratch (per worker thread 16 unpacked weight rows, about 16·K·1.4 bytes, kept between calls).
 */
export function transientBytes(stored: WeightFormat, compute: ComputeMode, shape: readonly number[], options: RunFormatOptions = {}): number {
  const [n, k] = checkShape(shape, 'transientBytes');
  return preparedKindOf(runFormatOf(stored, compute, k, options)) === 'fp8' ? 4 * n * k : 0;
}

/**
 * Bytes a linear holds while its weight is being prepared, beyond the `residentBytes` it keeps
 * after: converting to a run kind other than f32 widens a weight not stored in f32 to an f32
 * intermediate first (N·K·4: cast, int8 dequantized, GGUF decoded), which is freed once the result
 * exists; the conversion holds both at its peak. Run as stored, converted to f32 (the widened weight
 * is the result) or from an f32 weight (read where it is), nothing more. Not counted: a loader's
 * buffer holding the stored bytes, and the f32 copy a LoRA patch of an f32 weight makes.
 */
export function preparingBytes(stored: WeightFormat, compute: ComputeMode, shape: readonly number[], options: RunFormatOptions = {}): number {
  const [n, k] = checkShape(shape, 'preparingBytes');
  const run = runFormatOf(stored, compute, k, options);
  if (run === stored || stored === 'f32' || preparedKindOf(run) === 'f32') return 0;
  return 4 * n * k;
}

/** The data of a prepared weight, by kind. */
export type PreparedData =
  | { readonly kind: 'f32'; readonly w: Tensor<'f32'> }
  | { readonly kind: 'bf16'; readonly w: Bf16Weight }
  | { readonly kind: 'int8'; readonly q: Tensor<'i8'>; readonly scale: Tensor<'f32'>; readonly convrot: number | false }
  | { readonly kind: 'fp8'; readonly w: Tensor<'f8_e4m3fn' | 'f8_e5m2'>; readonly scale: number }
  | { readonly kind: 'gguf'; readonly w: Tensor<GgufLinearDType> };

/**
 * A linear's weight as its kernel uses it. It owns its tensors: `dispose()` frees those with native or
 * mapped storage at once (the weight cache calls it on eviction); `bytes` is what it holds, which
 * `residentBytes` predicts.
 */
export type PreparedWeight = PreparedData & {
  readonly bytes: number;
  dispose(): void;
};

/** Wraps prepared data; `borrowed` tensors (the caller's, e.g. a LoRA-patched weight) are not disposed. */
export function preparedWeight(data: PreparedData, options: { borrowed?: boolean } = {}): PreparedWeight {
  if (data.kind === 'bf16') {
    // What it holds changes when it packs (the plain tensor goes): `bytes` reads it now.
    const w = data.w;
    return {
      ...data,
      get bytes() {
        return w.bytes;
      },
      dispose: () => w.dispose(),
    };
  }
  const tensors: Tensor[] = data.kind === 'int8' ? [data.q, data.scale] : [data.w];
  const bytes = tensors.reduce((a, t) => a + t.byteLength, 0);
  let disposed = false;
  return {
    ...data,
    bytes,
    dispose() {
      if (disposed || options.borrowed === true) return;
      disposed = true;
      for (const t of tensors) t.dispose();
    },
  };
}
