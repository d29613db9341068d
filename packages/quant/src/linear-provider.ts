import { type GgufLinearDType, type LinearPrecision, Tensor, absMaxAsync, buildInfo, castAsync, decodeFp8, dequantize, encodeFp8Async, ggufLinear, int8Linear, linear, quantizeWeightInt8Async } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';
import { type CheckpointSource, WeightCache, type WeightDescriptor, copyColumnRange } from '@ninodes/memory';
import { type DetectedLayer, type FormatDetection, detectFormats } from './detect-formats.js';
import type { Int8Operands, LinearProvider, LinearSpec, PreparedLinearOp } from './linear-op.js';
import { type LayerSlice, type ShardGeometry, shardGeometry } from './linear-shard.js';
import { biasF32, dequantizeInt8, materializeF32, rowScales, toF32, toF32Async, weight2d } from './materialize.js';
import { type ComputeMode, type PreparedData, type PreparedWeight, floatPrecision, preparedKindOf, preparedWeight, preparingBytes, residentBytes, runFormatOf, transientBytes } from './memory-account.js';
import { Bf16Weight } from './bf16-weight.js';
import { SharedScratch } from './shared-scratch.js';
import { type WeightFormat, weightFormatInfo } from './weight-format.js';
import { absMax, fp8ScaleOfAbsMax, relativeError } from './quant-math.js';
import type { WeightPatcher } from './weight-patcher.js';

export type { ComputeMode } from './memory-account.js';
export { floatPrecision } from './memory-account.js';


/**
 * Materialized weights live in @ninodes/memory's weight cache instead of inside each op: every
 * forward takes a lease (materializing on a miss, within the device budget) and releases it when done,
 * so weights can be evicted between uses. Register `op.weightDescriptor()` of every op under `model`
 * with `weights.registerModel` before the first forward.
 */
export interface LinearCacheOptions {
  /** Create it with `createPreparedWeightCache` (its dispose frees evicted weights). */
  readonly weights: WeightCache<PreparedWeight>;
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
  /**
   * Patches (LoRA) applied in fp32 to a layer's weight each time it is prepared, before it is
   * converted to the run format: a quantized layer is dequantized, patched and quantized again with
   * new scales (ComfyUI's convert_weight / set_weight for quantized layers).
   */
  patcher?: WeightPatcher;
}

/** quant's op: the PreparedLinearOp contract plus patching and the conversion error. */
export interface QuantLinearOp extends PreparedLinearOp {
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
  /** Drops materialized state (disposing what it held) and any replacement; the next forward reloads from the source. */
  release(): void;
  /**
   * Drops the prepared weight, own or cached (not a replacement), so the next use prepares it again
   * with the patcher's current patches (after a LoRA's strength changed).
   */
  invalidate(): void;
  /** What the memory account says this op allocates per call beyond its prepared weight. */
  readonly transientBytes: number;
  /** Cache key and materialized bytes of this op's weight (register it with the weight cache). */
  weightDescriptor(): WeightDescriptor;
}

/** The provider quant builds: LinearProvider plus the detection it used and richer ops. */
export interface QuantLinearProvider extends LinearProvider {
  readonly detection: FormatDetection;
  linear(spec: LinearSpec): QuantLinearOp;
  /** Invalidates the ops built for these layers (e.g. what `LoraPatcher.setStrength` returns); returns how many. */
  repatch(layers: Iterable<string>): number;
}

/** A weight cache for prepared linear weights: evicted weights are disposed. */
export function createPreparedWeightCache(budgets: Readonly<Record<string, number>>): WeightCache<PreparedWeight> {
  return new WeightCache<PreparedWeight>({ budgets, dispose: (p) => p.dispose() });
}

/**
 * What attention computes in by default for a compute mode: bf16 (q, k, v rounded to bf16, f32
 * softmax and accumulation) where the CPU has bf16 units and the mode's activations are no finer
 * already: bf16 compute, and int8 convrot, whose linears quantize every activation row to 8 bits
 * (bf16 keeps 8 significant bits of each value). On h3-tiny at 768 tokens int8 convrot with bf16
 * attention is 2.7e-2 from float64 against 3.2e-2 with f32 attention, and the step 10 % faster.
 * fp32 and fp8 compute, and CPUs without bf16 units, keep f32 attention.
 */
export function attentionPrecisionFor(compute: ComputeMode): LinearPrecision {
  return (compute === 'bf16' || compute === 'int8_convrot') && buildInfo().bf16Units ? 'bf16' : 'f32';
}

type Prepared = PreparedWeight;

class QuantLinear implements QuantLinearOp {
  readonly preparedLinear = true;
  readonly format: string;
  readonly storedFormat: WeightFormat;
  readonly precision: LinearPrecision;
  readonly residentBytes: number;
  readonly transientBytes: number;
  readonly preparingBytes: number;
  private readonly runFormat: WeightFormat;
  private readonly slice: LayerSlice | undefined;
  private prepared: Promise<Prepared> | undefined;
  /** The memoized prepared weight once loaded (no cache), for heldBytes and dispose. */
  private held: Prepared | undefined;
  private bias: Tensor<'f32'> | undefined;
  private error: Promise<number> | undefined;
  /** A replacement weight (LoRA-patched f32 [N, K]): the source of every later materialization. */
  private patch: Tensor<'f32'> | undefined;

  constructor(
    readonly spec: LinearSpec,
    private readonly source: CheckpointSource,
    private readonly layer: DetectedLayer,
    private readonly options: LinearProviderOptions,
    geometry: ShardGeometry,
    globalK: number,
    /** The provider's buffer for fp8 weights decoded per call (its ops run one at a time). */
    private readonly decoded: SharedScratch<'f32'>,
  ) {
    this.storedFormat = layer.format;
    this.slice = geometry.slice;
    const compute = options.compute ?? 'auto';
    this.precision = floatPrecision(compute);
    const requantizeGguf = { requantizeGguf: options.requantizeGguf ?? false };
    // The run format follows the whole layer's K: a row-parallel slice must rotate with the same groups.
    this.runFormat = runFormatOf(layer.format, compute, globalK, requantizeGguf);
    this.format = this.runFormat;
    const local = [geometry.n, geometry.k] as const;
    this.residentBytes = residentBytes(layer.format, compute, local, requantizeGguf);
    this.transientBytes = transientBytes(layer.format, compute, local, requantizeGguf);
    this.preparingBytes = preparingBytes(layer.format, compute, local, requantizeGguf);
    const group = weightFormatInfo(this.runFormat).convrot;
    if (this.slice?.columns !== undefined && group !== false && geometry.k % group !== 0) {
      throw new QuantError('SHARD_NOT_GROUP_ALIGNED', `layer '${spec.name}': a row-parallel slice of ${geometry.k} input columns splits the ${group}-column convrot groups`, {
        value: { columns: this.slice.columns, group },
        where: spec.name,
        hint: `each rank's input slice (K / tensor-parallel size) must be a multiple of ${group}`,
      });
    }
  }

  private get rowParallel(): boolean {
    return this.slice?.columns !== undefined;
  }

  forward(x: Tensor<'f32'>, out?: Tensor<'f32'>): Promise<Tensor<'f32'>> {
    return this.run(x, undefined, out);
  }

  async forwardRows(x: Tensor<'f32'>, start: number, stop: number, out?: Tensor<'f32'>): Promise<Tensor<'f32'>> {
    const n = this.spec.outFeatures;
    if (!Number.isInteger(start) || !Number.isInteger(stop) || start < 0 || stop <= start || stop > n) {
      throw new QuantError('SHAPE_MISMATCH', `linear '${this.spec.name}': output rows [${start}, ${stop}) are not a non-empty part of [0, ${n})`, {
        value: { start, stop },
        where: this.spec.name,
        hint: `pass 0 <= start < stop <= ${n}`,
      });
    }
    return this.run(x, start === 0 && stop === n ? undefined : [start, stop], out);
  }

  private readRows: [number, number] | undefined;

  rowsRead(): readonly [number, number] | undefined {
    return this.slice === undefined ? this.readRows : undefined;
  }

  /** forward over output rows `part` (all when undefined): the weight's rows, row scales and bias sliced as views. */
  private async run(x: Tensor<'f32'>, part: readonly [number, number] | undefined, out: Tensor<'f32'> | undefined): Promise<Tensor<'f32'>> {
    const k = this.spec.inFeatures;
    if (x.dtype !== 'f32' || x.shape.length !== 2 || x.shape[1] !== k) {
      throw new QuantError('SHAPE_MISMATCH', `linear '${this.spec.name}' takes f32 [M, ${k}], got ${x.dtype} [${x.shape.join(', ')}]`, {
        value: x.shape,
        where: this.spec.name,
      });
    }
    const [a, b] = part ?? [0, this.spec.outFeatures];
    this.readRows = this.readRows === undefined ? [a, b] : [Math.min(this.readRows[0], a), Math.max(this.readRows[1], b)];
    // Row-parallel partial outputs are summed by the caller, who adds the bias once (deferredBias).
    const whole = this.rowParallel ? undefined : this.biasTensor();
    // Row views of [N, ...] tensors: no copy, the same bytes the whole forward reads.
    const pick = <T extends Tensor>(t: T): T => (part === undefined ? t : (t.rows(part[0], part[1]) as T));
    const bias = whole === undefined ? undefined : pick(whole);
    return this.withPrepared(async (p) => {
      switch (p.kind) {
        case 'f32':
          return linear(x, pick(p.w), bias, out ? { out } : {});
        case 'bf16': {
          const options = { precision: this.precision, ...(out ? { out } : {}) };
          // Some output rows (forwardRows) take the plain weight's row views; the whole output may
          // run on the packed copy (bf16 precision), which the weight makes on its first many-row call.
          if (part !== undefined) return p.w.withPlain((w) => linear(x, pick(w), bias, options));
          return p.w.use(x.shape[0] as number, this.precision === 'bf16', (w) => linear(x, w, bias, options));
        }
        case 'int8': {
          // The row scales int8Linear returns are not needed here: with `out`, they go to a scratch
          // kept for this row count, so a steady-state call allocates nothing. A call that overlaps
          // another one of this op (the native side writes the scales) gets fresh ones.
          const scratch = out && !this.rowScalesBusy ? this.rowScaleScratch(x.shape[0] as number) : undefined;
          if (scratch) this.rowScalesBusy = true;
          try {
            const r = await int8Linear(x, pick(p.q), pick(p.scale), { convrot: p.convrot, ...(bias ? { bias } : {}), ...(out ? { out } : {}), ...(scratch ? { xScaleOut: scratch } : {}) });
            return r.y;
          } finally {
            if (scratch) this.rowScalesBusy = false;
          }
        }
        case 'fp8': {
          // No fp8 gemm on the CPU: decode per call so only the fp8 bytes stay resident
          // (transientBytes), into the provider's shared buffer: fresh memory per call cost a page
          // fault every 4 KiB, ~40x the decode itself.
          const w = pick(p.w);
          const into = this.decoded.take(w.shape[0] as number, w.shape[1] as number);
          try {
            return await linear(x, decodeFp8(w, { scale: p.scale, out: into }), bias, out ? { out } : {});
          } finally {
            this.decoded.release(into);
          }
        }
        case 'gguf':
          // On the stored blocks (row views of a mapped file): no f32 copy of the weight.
          return ggufLinear(x, pick(p.w), bias, out ? { out } : {});
      }
    });
  }

  private rowScales: Tensor<'f32'> | undefined;
  private rowScalesBusy = false;

  private rowScaleScratch(rows: number): Tensor<'f32'> {
    if (this.rowScales?.shape[0] !== rows) this.rowScales = Tensor.zeros('f32', [rows, 1]);
    return this.rowScales;
  }

  deferredBias(): Tensor<'f32'> | undefined {
    return this.rowParallel ? this.biasTensor() : undefined;
  }

  addedBias(): Tensor<'f32'> | undefined {
    return this.rowParallel ? undefined : this.biasTensor();
  }

  async materializedWeight(): Promise<Tensor<'f32'>> {
    return this.withPrepared(async (p) => {
      switch (p.kind) {
        case 'f32':
          // Possibly a read-only mmap view: hand out a copy the caller may patch in place.
          return p.w.copy();
        case 'bf16':
          return p.w.withPlain(async (w) => (await castAsync(w, 'f32')) as Tensor<'f32'>);
        case 'fp8':
          return decodeFp8(p.w, { scale: p.scale });
        case 'int8':
          return dequantizeInt8(p.q, p.scale, p.convrot);
        case 'gguf':
          return (await dequantize(p.w, 'f32')) as Tensor<'f32'>;
      }
    });
  }

  async prepare(): Promise<void> {
    await this.withPrepared(async () => undefined);
  }

  int8Operands(): Promise<Int8Operands | undefined> {
    const bias = this.rowParallel ? undefined : this.biasTensor();
    return this.withPrepared(async (p) => (p.kind === 'int8' ? { q: p.q, scale: p.scale, convrot: p.convrot, ...(bias ? { bias } : {}) } : undefined));
  }

  heldBytes(): number {
    const cache = this.options.cache;
    // With a weight cache the op holds nothing itself: what it holds is the cache's entry.
    if (cache !== undefined) return cache.weights.has(cache.device ?? 'cpu', cache.model, this.cacheKey()) ? this.residentBytes : 0;
    return this.held?.bytes ?? 0;
  }

  weightDescriptor(): WeightDescriptor {
    return { key: this.cacheKey(), bytes: this.residentBytes };
  }

  conversionError(): Promise<number> {
    this.error ??= (async () => {
      if (this.format === this.storedFormat && !this.patched) return 0;
      // Against the patched f32 weight: the error of the conversion, not the size of the patch.
      const original = await this.sourceF32(this.slice);
      return relativeError(await this.materializedWeight(), original);
    })();
    return this.error;
  }

  async replaceWeight(w: Tensor<'f32'>): Promise<void> {
    const { outFeatures: n, inFeatures: k } = this.spec;
    if (w.dtype !== 'f32' || w.shape.length !== 2 || w.shape[0] !== n || w.shape[1] !== k) {
      throw new QuantError('SHAPE_MISMATCH', `replacement weight for '${this.spec.name}' must be f32 [${n}, ${k}]`, { value: w.shape, where: this.spec.name });
    }
    // The patch becomes the op's source: a cached weight is dropped and rebuilt from it (still
    // counted and evictable); an eviction later rebuilds it from the patch again, not from the file.
    this.invalidate();
    this.patch = w;
  }

  invalidate(): void {
    const cache = this.options.cache;
    if (cache !== undefined) cache.weights.invalidate(cache.model, this.cacheKey());
    this.dropHeld();
    this.error = undefined;
  }

  release(): void {
    this.dropHeld();
    this.patch = undefined;
    this.bias = undefined;
  }

  private dropHeld(): void {
    const held = this.held;
    this.prepared = undefined;
    this.held = undefined;
    held?.dispose();
  }

  private biasTensor(): Tensor<'f32'> | undefined {
    if (!this.spec.bias) return undefined;
    // A row-parallel slice keeps every output row, so its (deferred) bias is the whole bias.
    this.bias ??= biasF32(this.source, this.layer, this.rowParallel ? undefined : this.slice);
    return this.bias;
  }

  private cacheKey(): string {
    const shard = this.spec.shard;
    const part = this.slice === undefined || shard === undefined ? '' : `#${shard.role}${shard.rank}/${shard.size}`;
    return `${this.spec.name}@${this.format}${part}`;
  }

  /** Runs `use` with the prepared weight: from the cache under a lease, or memoized in the op. */
  private async withPrepared<R>(use: (p: Prepared) => Promise<R>): Promise<R> {
    const cache = this.options.cache;
    if (cache === undefined) return use(await this.memoized());
    const lease = await cache.weights.acquireAsync(cache.device ?? 'cpu', cache.model, this.cacheKey(), () => this.load());
    try {
      return await use(lease.value);
    } finally {
      lease.release();
    }
  }

  private memoized(): Promise<Prepared> {
    if (this.prepared === undefined) {
      const loading = this.load();
      this.prepared = loading;
      loading.then(
        (p) => {
          if (this.prepared === loading) this.held = p;
        },
        // A failed load is not kept: the next call retries and reports again.
        () => {
          if (this.prepared === loading) this.prepared = undefined;
        },
      );
    }
    return this.prepared;
  }

  private get patched(): boolean {
    return this.options.patcher?.has(this.spec.name) ?? false;
  }

  /**
   * The layer (or `slice` of it) in f32, with the patcher's patches added: an owned copy when patched
   * (a stored f32 weight materializes as a read-only view of the file).
   */
  private async sourceF32(slice: LayerSlice | undefined): Promise<Tensor<'f32'>> {
    const w = await materializeF32(this.source, this.layer, slice);
    const patcher = this.options.patcher;
    if (patcher === undefined || !patcher.has(this.spec.name)) return w;
    const own = this.layer.format === 'f32' ? w.copy() : w;
    await patcher.apply(this.spec.name, own, slice);
    return own;
  }

  private async load(): Promise<Prepared> {
    if (this.patch !== undefined) return await this.convert(this.patch, true);
    const layer = this.layer;
    const slice = this.slice;
    if (this.format === layer.format && !this.patched) {
      const info = weightFormatInfo(layer.format);
      const w = weight2d(this.source, layer, slice);
      switch (info.family) {
        case 'float':
          if (w.dtype === 'bf16') {
            // Once it is packed, the mapped pages of the view are no longer read: drop them from the
            // process (page cache may keep them), so what stays resident is the packed copy.
            // (A shard's rows are one view of the file or a copy; its columns always a copy.)
            const name = layer.tensors.weight;
            const rows = slice?.columns === undefined && slice?.rows?.length === 1 ? slice.rows[0] : undefined;
            const view = slice === undefined || rows !== undefined;
            const dropped = view ? () => this.source.advise?.(name, 'dontneed', rows) : undefined;
            return preparedWeight({ kind: 'bf16', w: new Bf16Weight(w as Tensor<'bf16'>, dropped ? { dropped } : {}) });
          }
          return preparedWeight({ kind: 'f32', w: await toF32Async(w) });
        case 'int8':
          return preparedWeight({ kind: 'int8', q: w as Tensor<'i8'>, scale: rowScales(this.source, layer, slice), convrot: info.convrot });
        case 'fp8': {
          const s = layer.tensors.weightScale;
          const scale = s === undefined ? 1 : (toF32(this.source.tensor(s)).copy().data as Float32Array)[0] as number;
          return preparedWeight({ kind: 'fp8', w: w as Tensor<'f8_e4m3fn' | 'f8_e5m2'>, scale });
        }
        case 'gguf':
          // Block types ggufLinear multiplies stay as stored (a view of the file where it can be).
          if (preparedKindOf(layer.format) === 'gguf') return preparedWeight({ kind: 'gguf', w: w as Tensor<GgufLinearDType> });
          return preparedWeight({ kind: 'f32', w: await materializeF32(this.source, layer, slice) });
      }
    }
    if (slice?.columns !== undefined && weightFormatInfo(this.format).family === 'int8') {
      // Row-parallel int8: every rank must hold the whole row's weight scale (their int32
      // accumulators are summed), so the whole layer is quantized once and the columns kept.
      const whole = await this.convert(await this.sourceF32(undefined), false);
      if (whole.kind !== 'int8') throw new QuantError('INTERNAL', `layer '${this.spec.name}' did not quantize to int8`, { where: this.spec.name });
      const [a, b] = slice.columns;
      const q = copyColumnRange(whole.q, `${this.spec.name}.weight`, a, b) as Tensor<'i8'>;
      const scale = whole.scale;
      return preparedWeight({ kind: 'int8', q, scale, convrot: whole.convrot });
    }
    if (slice !== undefined && (this.format === 'f8_e4m3fn' || this.format === 'f8_e5m2')) {
      // One per-tensor scale for the layer: measured on a shard it would differ between ranks and
      // from the unsplit layer's. The whole layer's absmax is read in row blocks, never all at once.
      const scale = await wholeFp8Scale(this.source, layer, this.format);
      const w = await this.sourceF32(slice);
      const q = await encodeFp8Async(w, this.format, { scale, mode: 'clamp' });
      w.dispose();
      return preparedWeight({ kind: 'fp8', w: q, scale });
    }
    return await this.convert(await this.sourceF32(slice), false);
  }

  /**
   * `w` converted to the run format; `borrowed`: w is the caller's and is never disposed. Casts, int8
   * quantization and fp8 encoding run on a worker thread: a streamed weight converts while the model computes.
   */
  private async convert(w: Tensor<'f32'>, borrowed: boolean): Promise<Prepared> {
    const data = await (async (): Promise<PreparedData> => {
      switch (this.format) {
        case 'f32':
          return { kind: 'f32', w };
        case 'bf16':
          return { kind: 'bf16', w: new Bf16Weight((await castAsync(w, 'bf16')) as Tensor<'bf16'>) };
        case 'int8_convrot':
        case 'int8_rowwise':
        case 'int8_tensorwise_convrot':
        case 'int8_tensorwise': {
          // Re-quantized weights always get per-row scales (never less accurate than one scale).
          const convrot = weightFormatInfo(this.format).convrot;
          const { q, scale } = await quantizeWeightInt8Async(w, { convrot });
          return { kind: 'int8', q, scale, convrot };
        }
        case 'f8_e4m3fn':
        case 'f8_e5m2': {
          // The absmax and the encoding on worker threads too (fp8Scale's value, encodeFp8's bits).
          const scale = fp8ScaleOfAbsMax(await absMaxAsync(w), this.format);
          return { kind: 'fp8', w: await encodeFp8Async(w, this.format, { scale, mode: 'clamp' }), scale };
        }
        default: {
          // Run as stored: keep whatever materialized form the stored format uses (GGUF: f32).
          const info = weightFormatInfo(this.format);
          if (info.family === 'gguf' || info.family === 'float') return { kind: 'f32', w };
          throw new QuantError('UNSUPPORTED_COMPUTE', `layer '${this.spec.name}' cannot run as ${this.format}`, { value: this.format, where: this.spec.name });
        }
      }
    })();
    // The f32 intermediate of a conversion goes now, not when the GC finds it: a streamed run
    // converts weights every step and the budget counts resident memory.
    if (!borrowed && data.kind !== 'f32') w.dispose();
    // Only an f32 result is `w` itself; every other kind is a new tensor the prepared weight owns.
    return preparedWeight(data, { borrowed: borrowed && data.kind === 'f32' });
  }
}

/** The per-tensor fp8 scale of a whole layer, its absmax taken over blocks of about 4 Mi values. */
async function wholeFp8Scale(source: CheckpointSource, layer: DetectedLayer, format: 'f8_e4m3fn' | 'f8_e5m2'): Promise<number> {
  const n = layer.shape[0] as number;
  const k = layer.shape.slice(1).reduce((a, b) => a * b, 1);
  const block = Math.max(1, Math.floor(2 ** 22 / Math.max(k, 1)));
  let m = 0;
  for (let a = 0; a < n; a += block) {
    const part = await materializeF32(source, layer, { rows: [[a, Math.min(n, a + block)]] });
    m = Math.max(m, absMax(part));
    part.dispose();
  }
  return fp8ScaleOfAbsMax(m, format);
}

/**
 * Builds linear ops for a checkpoint: each layer runs in the format detected in the file ('auto'), or
 * is converted to a forced compute format when it is first materialized. Ops are lazy: nothing is
 * read until the first forward.
 */
export function createLinearProvider(source: CheckpointSource, options: LinearProviderOptions = {}): QuantLinearProvider {
  const detection = options.detection ?? detectFormats(source, options.filename === undefined ? {} : { filename: options.filename });
  const built = new Map<string, QuantLinear[]>();
  const decoded = new SharedScratch('f32');
  return {
    detection,
    repatch(layers: Iterable<string>): number {
      let n = 0;
      for (const name of layers) {
        for (const op of built.get(name) ?? []) {
          op.invalidate();
          n++;
        }
      }
      return n;
    },
    linear(spec: LinearSpec): QuantLinearOp {
      const layer = detection.layers.get(spec.name);
      if (layer === undefined) {
        throw new QuantError('TENSOR_NOT_FOUND', `no weight '${spec.name}.weight' in ${source.path}`, { value: spec.name, where: source.path, hint: 'check the model\'s key names against the checkpoint' });
      }
      const n = layer.shape[0] as number;
      const k = layer.shape.slice(1).reduce((a, b) => a * b, 1);
      const geometry = shardGeometry(spec.name, n, k, spec.shard);
      if (geometry.n !== spec.outFeatures || geometry.k !== spec.inFeatures) {
        const part = geometry.slice === undefined ? '' : ` (rank ${spec.shard?.rank} of ${spec.shard?.size}, ${spec.shard?.role}: [${geometry.n}, ${geometry.k}])`;
        throw new QuantError('SHAPE_MISMATCH', `layer '${spec.name}' is [${layer.shape.join(', ')}] in the file${part}, the model expects [${spec.outFeatures}, ${spec.inFeatures}]`, {
          value: layer.shape,
          where: spec.name,
        });
      }
      if (spec.bias !== (layer.tensors.bias !== undefined)) {
        throw new QuantError('BIAS_MISMATCH', `layer '${spec.name}' ${spec.bias ? 'needs a bias the file lacks' : 'has a bias the model does not use'}`, { where: spec.name });
      }
      const op = new QuantLinear(spec, source, layer, options, geometry, k, decoded);
      built.set(spec.name, [...(built.get(spec.name) ?? []), op]);
      return op;
    },
  };
}
