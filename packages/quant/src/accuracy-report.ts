import { Tensor, decodeFp8, encodeFp8, int8Linear, linear, quantizeWeightInt8 } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';
import type { CheckpointSource } from '@ninodes/memory';
import { type FormatDetection, detectFormats } from './detect-formats.js';
import { materializeF32, toF32 } from './materialize.js';
import { fp8Scale, relativeError } from './quant-math.js';
import { CONVROT_GROUP } from './weight-format.js';

export type AccuracyFormat = 'int8_rowwise' | 'int8_convrot' | 'f8_e4m3fn' | 'f8_e5m2';

export interface AccuracyOptions {
  /** Layers to measure (default: every 2-D weight in the file). */
  layers?: readonly string[];
  formats?: readonly AccuracyFormat[];
  /** Sampled input rows per layer (default 32). */
  samples?: number;
  seed?: number;
  /**
   * Fraction of input channels given a large magnitude (default 0.01, at least one channel), as real
   * transformer activations have: the outliers convrot spreads over its group.
   */
  outlierFraction?: number;
  /** Magnitude multiplier of the outlier channels (default 20). */
  outlierScale?: number;
  detection?: FormatDetection;
  /** Real activations per layer name ([M, K] f32), used instead of sampled ones (calibration data). */
  inputs?: Readonly<Record<string, Tensor<'f32'>>>;
}

export interface AccuracyRow {
  readonly layer: string;
  readonly shape: readonly [number, number];
  /** Relative Frobenius error of y against the f32 linear on the same inputs, per format. */
  readonly error: Readonly<Partial<Record<AccuracyFormat, number>>>;
  /** Formats not applicable to the layer and why (convrot needs K % 256 == 0). */
  readonly notes: Readonly<Partial<Record<AccuracyFormat, string>>>;
}

/** mulberry32 + Box–Muller: a seeded standard normal stream (the report must be reproducible). */
export function normalStream(seed: number): () => number {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  let spare: number | undefined;
  return () => {
    if (spare !== undefined) {
      const s = spare;
      spare = undefined;
      return s;
    }
    const u = Math.max(uniform(), 1e-300);
    const v = uniform();
    const r = Math.sqrt(-2 * Math.log(u));
    spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  };
}

/** Sampled activations [m, k]: standard normal with a few outlier channels. */
export function sampleActivations(m: number, k: number, options: { seed?: number; outlierFraction?: number; outlierScale?: number } = {}): Tensor<'f32'> {
  const next = normalStream(options.seed ?? 145);
  const outliers = Math.max(1, Math.round(k * (options.outlierFraction ?? 0.01)));
  const scale = new Float32Array(k).fill(1);
  for (let i = 0; i < outliers; i++) scale[Math.floor(((i + 0.5) * k) / outliers)] = options.outlierScale ?? 20;
  const x = new Float32Array(m * k);
  for (let r = 0; r < m; r++) for (let c = 0; c < k; c++) x[r * k + c] = next() * (scale[c] as number);
  return Tensor.fromArray('f32', [m, k], x);
}

/**
 * Per-layer error of each quantized linear (bias included) against the f32 linear of the file's
 * weight (materialized in f32 first, so a quantized file is measured against its own dequantized
 * weight), on sampled activations or the `inputs` given. fp8 is weight-only (decoded weights, f32
 * activations), as it runs on the CPU.
 */
export async function accuracyReport(source: CheckpointSource, options: AccuracyOptions = {}): Promise<AccuracyRow[]> {
  const detection = options.detection ?? detectFormats(source);
  const formats = options.formats ?? ['int8_rowwise', 'int8_convrot', 'f8_e4m3fn'];
  const names = options.layers ?? [...detection.layers.values()].filter((l) => l.shape.length === 2).map((l) => l.name);
  const rows: AccuracyRow[] = [];
  for (const [i, name] of names.entries()) {
    const layer = detection.layers.get(name);
    if (layer === undefined) throw new QuantError('TENSOR_NOT_FOUND', `no layer '${name}' in ${source.path}`, { value: name, where: source.path });
    const w = await materializeF32(source, layer);
    const [n, k] = w.shape as [number, number];
    const given = options.inputs?.[name];
    if (given !== undefined && (given.shape.length !== 2 || given.shape[1] !== k)) {
      throw new QuantError('SHAPE_MISMATCH', `inputs for '${name}' are [${given.shape.join(', ')}], the layer takes [M, ${k}]`, { value: given.shape, where: name });
    }
    const x = given ?? sampleActivations(options.samples ?? 32, k, { seed: (options.seed ?? 145) + i, ...pick(options) });
    const bias = layer.tensors.bias === undefined ? undefined : toF32(source.tensor(layer.tensors.bias)).reshape([n]);
    const ref = await linear(x, w, bias);
    const error: Partial<Record<AccuracyFormat, number>> = {};
    const notes: Partial<Record<AccuracyFormat, string>> = {};
    for (const f of formats) {
      if (f === 'int8_convrot' && k % CONVROT_GROUP !== 0) {
        notes[f] = `input size ${k} is not a multiple of ${CONVROT_GROUP}`;
        continue;
      }
      let y: Tensor<'f32'>;
      if (f === 'int8_rowwise' || f === 'int8_convrot') {
        const convrot = f === 'int8_convrot' ? CONVROT_GROUP : false;
        const { q, scale } = quantizeWeightInt8(w, { convrot });
        y = (await int8Linear(x, q, scale, { convrot, ...(bias ? { bias } : {}) })).y;
      } else {
        const s = fp8Scale(w, f);
        y = await linear(x, decodeFp8(encodeFp8(w, f, { scale: s, mode: 'clamp' }), { scale: s }), bias);
      }
      error[f] = relativeError(y, ref);
    }
    rows.push({ layer: name, shape: [n, k], error, notes });
  }
  return rows;
}

function pick(o: AccuracyOptions): { outlierFraction?: number; outlierScale?: number } {
  return { ...(o.outlierFraction === undefined ? {} : { outlierFraction: o.outlierFraction }), ...(o.outlierScale === undefined ? {} : { outlierScale: o.outlierScale }) };
}
