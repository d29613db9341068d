import { type LinearPrecision, NinodesError, Tensor, buildInfo, cast, decodeFp8, encodeFp8, int8Linear, linear, quantizeWeightInt8 } from '@ninodes/kernels';
import type { CheckpointSource, WeightCache, WeightDescriptor } from '@ninodes/memory';
import { type DetectedLayer, type FormatDetection, detectFormats } from './detect-formats.js';
import type { LinearOp, LinearProvider, LinearSpec } from './linear-op.js';
import { dequantizeInt8, materializeF32, rowScales, toF32, weight2d } from './materialize.js';
import { CONVROT_GROUP, type WeightFormat, weightFormatInfo } from './weight-format.js';
import { fp8Scale, relativeError } from './quant-math.js';

export type ComputeMode = 'auto' | 'f32' | 'bf16' | 'int8_convrot' | 'f8_e4m3fn';

/**
 * Materialized weights live in @ninodes/memory's weight cache instead of inside each op: every
 * forward takes a lease (materializing on a miss, within the device budget) and releases it when done,
 * so weights can be evicted between uses. Register `op.weightDescriptor()` of every op under `model`
 * with `weights.registerModel` before the first forward.
 */
export interface LinearCacheOptions {
  // The cache holds this package's prepared weights; their type is internal.
  readonly weights: WeightCache<any>;
  readonly model: string;
  /** Device whose budget the weights count against (default 'cpu'). */
  readonly device?: string;
}

export interface LinearProviderOptions {
  /** 'auto' runs each layer in the format detected in the file; a forced format converts at materialization. */
  compute?: ComputeMode;
  /** GGUF Q8_0/Q6_K layers are requantized to int8 rowwise (faster W8A8); the added error is reported. */
  requantizeGguf?: boolean;
  /** Formats already detected (skips detection). */
  detection?: FormatDetection;
  /** File name used for format words when detecting. */
  filename?: string;
  cache?: LinearCacheOptions;
}

/** A LinearOp with the extras quant offers: patching and requantization error. */
export interface QuantLinearOp extends LinearOp {
  readonly format: string;
  /** The detected storage format of the layer in the file. */
  readonly storedFormat: WeightFormat;
  /**
   * How a float layer multiplies: 'bf16' when the run asked for bf16 compute and the CPU has bf16
   * units (input rounded to bf16, PyTorch's bf16 mode), else 'f32' (bf16 weights widened exactly).
   */
  readonly precision: LinearPrecision;
  /** Relative Frobenius error the conversion to the run format added (0 when run as stored). */
  conversionError(): Promise<number>;
  /** Replaces the weight (e.g. LoRA-patched f32 [N, K]); it is converted to the op's run format. */
  replaceWeight(w: Tensor<'f32'>): Promise<void>;
  /** Drops materialized state; the next forward reloads from the source. */
  release(): void;
  /** Cache key and materialized bytes of this op's weight (register it with the weight cache). */
  weightDescriptor(): WeightDescriptor;
  /**
   * The int8 operands when the op runs W8A8 (else undefined), for callers that drive the kernels
   * themselves, e.g. row-parallel int8 with a shared activation scale and int32 accumulators.
   */
  int8Weight(): Promise<{ q: Tensor<'i8'>; scale: Tensor<'f32'>; convrot: number | false } | undefined>;
}

/** The provider quant builds: LinearProvider plus the detection it used and richer ops. */
export interface QuantLinearProvider extends LinearProvider {
  readonly detection: FormatDetection;
  linear(spec: LinearSpec): QuantLinearOp;
}

type Prepared =
  | { kind: 'f32'; w: Tensor<'f32'> }
  | { kind: 'bf16'; w: Tensor<'bf16'> }
  | { kind: 'int8'; q: Tensor<'i8'>; scale: Tensor<'f32'>; convrot: number | false }
  | { kind: 'fp8'; w: Tensor<'f8_e4m3fn' | 'f8_e5m2'>; scale: number };

function preparedBytes(p: Prepared): number {
  if (p.kind === 'int8') return p.q.byteLength + p.scale.byteLength;
  return p.w.byteLength;
}

/**
 * What float layers multiply in for a compute mode: bf16 compute ('bf16', PyTorch's bf16 mode)
 * runs on the CPU's bf16 units where it has them; everything else, and every CPU without them,
 * multiplies in f32 (bf16 weights widened exactly).
 */
export function floatPrecision(compute: ComputeMode): LinearPrecision {
  return compute === 'bf16' && buildInfo().bf16Units ? 'bf16' : 'f32';
}

function runFormatOf(layer: DetectedLayer, mode: ComputeMode, requantizeGguf: boolean): string {
  if (mode !== 'auto') return mode === 'int8_convrot' && (layer.shape[1] ?? 0) % CONVROT_GROUP !== 0 ? 'int8_rowwise' : mode;
  if (requantizeGguf && (layer.format === 'q8_0' || layer.format === 'q6_k')) return 'int8_rowwise';
  return layer.format;
}

class QuantLinear implements QuantLinearOp {
  readonly format: string;
  readonly storedFormat: WeightFormat;
  readonly precision: LinearPrecision;
  private prepared: Promise<Prepared> | undefined;
  private bias: Tensor<'f32'> | undefined;
  private error: Promise<number> | undefined;
  private patched = false;

  constructor(
    readonly spec: LinearSpec,
    private readonly source: CheckpointSource,
    private readonly layer: DetectedLayer,
    private readonly options: LinearProviderOptions,
  ) {
    this.storedFormat = layer.format;
    this.format = runFormatOf(layer, options.compute ?? 'auto', options.requantizeGguf ?? false);
    this.precision = floatPrecision(options.compute ?? 'auto');
  }

  async forward(x: Tensor<'f32'>): Promise<Tensor<'f32'>> {
    const k = this.spec.inFeatures;
    if (x.dtype !== 'f32' || x.shape.length !== 2 || x.shape[1] !== k) {
      throw new NinodesError('SHAPE_MISMATCH', `linear '${this.spec.name}' takes f32 [M, ${k}], got ${x.dtype} [${x.shape.join(', ')}]`, {
        value: x.shape,
        where: this.spec.name,
      });
    }
    const bias = this.biasTensor();
    return this.withPrepared(async (p) => {
      switch (p.kind) {
        case 'f32':
          return linear(x, p.w, bias);
        case 'bf16':
          return linear(x, p.w, bias, { precision: this.precision });
        case 'int8': {
          const r = await int8Linear(x, p.q, p.scale, { convrot: p.convrot, ...(bias ? { bias } : {}) });
          return r.y;
        }
        case 'fp8':
          // No fp8 gemm on the CPU: decode per call so only the fp8 bytes stay resident.
          return linear(x, decodeFp8(p.w, { scale: p.scale }), bias);
      }
    });
  }

  async materializedWeight(): Promise<Tensor<'f32'>> {
    return this.withPrepared(async (p) => {
      switch (p.kind) {
        case 'f32':
          // Possibly a read-only mmap view: hand out a copy the caller may patch in place.
          return p.w.copy();
        case 'bf16':
          return cast(p.w, 'f32') as Tensor<'f32'>;
        case 'fp8':
          return decodeFp8(p.w, { scale: p.scale });
        case 'int8':
          return dequantizeInt8(p.q, p.scale, p.convrot);
      }
    });
  }

  int8Weight(): Promise<{ q: Tensor<'i8'>; scale: Tensor<'f32'>; convrot: number | false } | undefined> {
    return this.withPrepared(async (p) => (p.kind === 'int8' ? { q: p.q, scale: p.scale, convrot: p.convrot } : undefined));
  }

  weightDescriptor(): WeightDescriptor {
    return { key: this.cacheKey(), bytes: this.estimateBytes() };
  }

  conversionError(): Promise<number> {
    this.error ??= (async () => {
      if (this.format === this.storedFormat) return 0;
      const original = await materializeF32(this.source, this.layer);
      return relativeError(await this.materializedWeight(), original);
    })();
    return this.error;
  }

  async replaceWeight(w: Tensor<'f32'>): Promise<void> {
    const { outFeatures: n, inFeatures: k } = this.spec;
    if (w.dtype !== 'f32' || w.shape.length !== 2 || w.shape[0] !== n || w.shape[1] !== k) {
      throw new NinodesError('SHAPE_MISMATCH', `replacement weight for '${this.spec.name}' must be f32 [${n}, ${k}]`, { value: w.shape, where: this.spec.name });
    }
    // A patched weight is this op's own: it bypasses the shared cache.
    this.prepared = Promise.resolve(this.convert(w));
    this.patched = true;
    this.error = undefined;
  }

  release(): void {
    this.prepared = undefined;
    this.patched = false;
    this.bias = undefined;
  }

  private biasTensor(): Tensor<'f32'> | undefined {
    if (!this.spec.bias) return undefined;
    this.bias ??= toF32(this.source.tensor(this.layer.tensors.bias as string)).reshape([this.spec.outFeatures]);
    return this.bias;
  }

  private cacheKey(): string {
    return `${this.spec.name}@${this.format}`;
  }

  /** Runs `use` with the prepared weight: from the cache under a lease, or memoized in the op. */
  private async withPrepared<R>(use: (p: Prepared) => Promise<R>): Promise<R> {
    const cache = this.options.cache;
    if (cache === undefined || this.patched) return use(await this.prepare());
    const lease = await cache.weights.acquireAsync(cache.device ?? 'cpu', cache.model, this.cacheKey(), () => this.load());
    try {
      return await use(lease.value as Prepared);
    } finally {
      lease.release();
    }
  }

  private prepare(): Promise<Prepared> {
    if (this.prepared === undefined) {
      this.prepared = this.load();
      // A failed load is not kept: the next call retries and reports again.
      this.prepared.catch(() => {
        this.prepared = undefined;
      });
    }
    return this.prepared;
  }

  private estimateBytes(): number {
    const { outFeatures: n, inFeatures: k } = this.spec;
    if (this.format === 'f32' || weightFormatInfo(this.storedFormat).family === 'gguf') return 4 * n * k;
    if (this.format === 'bf16' || this.format === 'f16') return 2 * n * k;
    return n * k + 4 * n;
  }

  private async load(): Promise<Prepared> {
    const layer = this.layer;
    if (this.format === layer.format) {
      const info = weightFormatInfo(layer.format);
      const w = weight2d(this.source, layer);
      switch (info.family) {
        case 'float':
          if (w.dtype === 'bf16') return { kind: 'bf16', w: w as Tensor<'bf16'> };
          return { kind: 'f32', w: toF32(w) };
        case 'int8':
          return { kind: 'int8', q: w as Tensor<'i8'>, scale: rowScales(this.source, layer), convrot: info.convrot };
        case 'fp8': {
          const s = layer.tensors.weightScale;
          const scale = s === undefined ? 1 : (toF32(this.source.tensor(s)).copy().data as Float32Array)[0] as number;
          return { kind: 'fp8', w: w as Tensor<'f8_e4m3fn' | 'f8_e5m2'>, scale };
        }
        case 'gguf':
          return { kind: 'f32', w: await materializeF32(this.source, layer) };
      }
    }
    return this.convert(await materializeF32(this.source, layer));
  }

  private convert(w: Tensor<'f32'>): Prepared {
    switch (this.format) {
      case 'f32':
        return { kind: 'f32', w };
      case 'bf16':
        return { kind: 'bf16', w: cast(w, 'bf16') as Tensor<'bf16'> };
      case 'int8_convrot':
      case 'int8_rowwise':
      case 'int8_tensorwise_convrot':
      case 'int8_tensorwise': {
        // Re-quantized weights always get per-row scales (never less accurate than one scale).
        const convrot = weightFormatInfo(this.format).convrot;
        const { q, scale } = quantizeWeightInt8(w, { convrot });
        return { kind: 'int8', q, scale, convrot };
      }
      case 'f8_e4m3fn':
      case 'f8_e5m2': {
        const scale = fp8Scale(w, this.format);
        return { kind: 'fp8', w: encodeFp8(w, this.format, { scale, mode: 'clamp' }), scale };
      }
      default: {
        // Run as stored: keep whatever materialized form the stored format uses (GGUF: f32).
        const info = weightFormatInfo(this.format);
        if (info.family === 'gguf' || info.family === 'float') return { kind: 'f32', w };
        throw new NinodesError('UNSUPPORTED_COMPUTE', `layer '${this.spec.name}' cannot run as ${this.format}`, { value: this.format, where: this.spec.name });
      }
    }
  }
}

/**
 * Builds linear ops for a checkpoint: each layer runs in the format detected in the file ('auto'), or
 * is converted to a forced compute format when it is first materialized. Ops are lazy: nothing is
 * read until the first forward.
 */
export function createLinearProvider(source: CheckpointSource, options: LinearProviderOptions = {}): QuantLinearProvider {
  const detection = options.detection ?? detectFormats(source, options.filename === undefined ? {} : { filename: options.filename });
  return {
    detection,
    linear(spec: LinearSpec): QuantLinearOp {
      const layer = detection.layers.get(spec.name);
      if (layer === undefined) {
        throw new NinodesError('LAYER_NOT_FOUND', `no weight '${spec.name}.weight' in ${source.path}`, { value: spec.name, where: source.path, hint: 'check the model\'s key names against the checkpoint' });
      }
      const n = layer.shape[0];
      const k = layer.shape.slice(1).reduce((a, b) => a * b, 1);
      if (n !== spec.outFeatures || k !== spec.inFeatures) {
        throw new NinodesError('SHAPE_MISMATCH', `layer '${spec.name}' is [${layer.shape.join(', ')}] in the file, the model expects [${spec.outFeatures}, ${spec.inFeatures}]`, {
          value: layer.shape,
          where: spec.name,
        });
      }
      if (spec.bias !== (layer.tensors.bias !== undefined)) {
        throw new NinodesError('BIAS_MISMATCH', `layer '${spec.name}' ${spec.bias ? 'needs a bias the file lacks' : 'has a bias the model does not use'}`, { where: spec.name });
      }
      return new QuantLinear(spec, source, layer, options);
    },
  };
}
