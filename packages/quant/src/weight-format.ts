import { BLOCK_DTYPES, type BlockDType, type DType, isGgufLinearDType } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';

/** The GGUF block formats the kernels decode (one weight format each). */
export const GGUF_FORMATS = Object.keys(BLOCK_DTYPES) as BlockDType[];

export const FLOAT_FORMATS = ['f32', 'f16', 'bf16'] as const;
export const INT8_FORMATS = ['int8_tensorwise', 'int8_rowwise', 'int8_tensorwise_convrot', 'int8_convrot'] as const;
export const FP8_FORMATS = ['f8_e4m3fn', 'f8_e5m2'] as const;

export type FloatFormat = (typeof FLOAT_FORMATS)[number];
export type Int8Format = (typeof INT8_FORMATS)[number];
export type Fp8Format = (typeof FP8_FORMATS)[number];
/**
 * A weight format. `int8_convrot` is ComfyUI's int8_tensorwise with per-row scales and convrot
 * (the layout comfy-kitchen writes); `int8_tensorwise_convrot` the same with one scalar scale.
 */
export type WeightFormat = FloatFormat | Int8Format | Fp8Format | BlockDType;

export const WEIGHT_FORMATS: readonly WeightFormat[] = [...FLOAT_FORMATS, ...INT8_FORMATS, ...FP8_FORMATS, ...GGUF_FORMATS];

/** How a format's stored weight becomes something a kernel computes with. */
export type Materialization =
  | 'as-stored' // f32: used in place
  | 'cast-f32' // f16/bf16: kernels cast (bf16 may also run the bf16 gemm directly)
  | 'keep-int8' // int8: kept int8, the W8A8 kernel consumes it with its scale
  | 'decode-fp8' // fp8: decoded × weight_scale to f32 (no CPU fp8 gemm)
  | 'keep-blocks' // GGUF q8_0/q4_0/q4_k/q5_k/q6_k: kept as stored, ggufLinear multiplies the blocks
  | 'dequantize-blocks'; // the other GGUF types: kernels dequantize to f32 through the weight cache

/** Which kernel runs the linear. */
export type LinearPath = 'f32-gemm' | 'bf16-gemm' | 'int8-w8a8' | 'int8-w8a8-convrot' | 'gguf-blocks';

export interface WeightFormatInfo {
  readonly format: WeightFormat;
  readonly family: 'float' | 'int8' | 'fp8' | 'gguf';
  /** Storage dtype of `<l>.weight`. */
  readonly storage: DType;
  /** Bytes of the weight storage per parameter, scales excluded (blocks: blockBytes/blockElements). */
  readonly storageBytesPerParameter: number;
  /** weight_scale granularity: one per tensor, one per output row, or none (GGUF scales live in blocks). */
  readonly scale: 'none' | 'tensor' | 'row';
  /** Hadamard group the weights were rotated with, or false. */
  readonly convrot: number | false;
  readonly materialization: Materialization;
  readonly linear: LinearPath;
  /** ComfyUI `comfy_quant` format string, when ComfyUI stores this format with a marker. */
  readonly comfyFormat?: 'int8_tensorwise' | 'float8_e4m3fn' | 'float8_e5m2';
}

export const CONVROT_GROUP = 256;

function info(format: WeightFormat): WeightFormatInfo {
  switch (format) {
    case 'f32':
      return { format, family: 'float', storage: 'f32', storageBytesPerParameter: 4, scale: 'none', convrot: false, materialization: 'as-stored', linear: 'f32-gemm' };
    case 'f16':
      return { format, family: 'float', storage: 'f16', storageBytesPerParameter: 2, scale: 'none', convrot: false, materialization: 'cast-f32', linear: 'f32-gemm' };
    case 'bf16':
      return { format, family: 'float', storage: 'bf16', storageBytesPerParameter: 2, scale: 'none', convrot: false, materialization: 'cast-f32', linear: 'bf16-gemm' };
    case 'int8_tensorwise':
    case 'int8_rowwise':
    case 'int8_tensorwise_convrot':
    case 'int8_convrot': {
      const convrot = format.endsWith('convrot') ? CONVROT_GROUP : false;
      return {
        format,
        family: 'int8',
        storage: 'i8',
        storageBytesPerParameter: 1,
        scale: format === 'int8_tensorwise' || format === 'int8_tensorwise_convrot' ? 'tensor' : 'row',
        convrot,
        materialization: 'keep-int8',
        linear: convrot ? 'int8-w8a8-convrot' : 'int8-w8a8',
        comfyFormat: 'int8_tensorwise',
      };
    }
    case 'f8_e4m3fn':
    case 'f8_e5m2':
      return {
        format,
        family: 'fp8',
        storage: format,
        storageBytesPerParameter: 1,
        scale: 'tensor',
        convrot: false,
        materialization: 'decode-fp8',
        linear: 'f32-gemm',
        comfyFormat: format === 'f8_e4m3fn' ? 'float8_e4m3fn' : 'float8_e5m2',
      };
    default: {
      const b = BLOCK_DTYPES[format];
      const blocks = isGgufLinearDType(format);
      return {
        format,
        family: 'gguf',
        storage: format,
        storageBytesPerParameter: b.blockBytes / b.blockElements,
        scale: 'none',
        convrot: false,
        materialization: blocks ? 'keep-blocks' : 'dequantize-blocks',
        linear: blocks ? 'gguf-blocks' : 'f32-gemm',
      };
    }
  }
}

export const WEIGHT_FORMAT_INFO: Readonly<Record<WeightFormat, WeightFormatInfo>> = Object.freeze(
  Object.fromEntries(WEIGHT_FORMATS.map((f) => [f, Object.freeze(info(f))])) as Record<WeightFormat, WeightFormatInfo>,
);

export function isWeightFormat(s: string): s is WeightFormat {
  return Object.hasOwn(WEIGHT_FORMAT_INFO, s);
}

export function weightFormatInfo(format: string): WeightFormatInfo {
  if (!isWeightFormat(format)) {
    throw new QuantError('UNKNOWN_WEIGHT_FORMAT', `unknown weight format '${format}'`, { value: format, hint: `known: ${WEIGHT_FORMATS.join(', ')}` });
  }
  return WEIGHT_FORMAT_INFO[format];
}

/**
 * Bytes per parameter of a weight in `format`, scales included: the planner's memory factor.
 * With the layer shape [N, K] the scale overhead is exact (rowwise: 4/K; tensorwise: 4/(N·K); an fp8
 * input_scale adds another 4/(N·K) when present); without it, the large-layer limit (storage only).
 */
export function bytesPerParameter(format: WeightFormat, shape?: readonly [number, number], options: { inputScale?: boolean } = {}): number {
  const f = weightFormatInfo(format);
  if (shape === undefined) return f.storageBytesPerParameter;
  const [n, k] = shape;
  const params = n * k;
  if (params === 0) return f.storageBytesPerParameter;
  return f.storageBytesPerParameter + scaleBytes(format, shape, options) / params;
}

/** Total bytes a [N, K] weight takes in `format`, scales included. */
export function weightBytes(format: WeightFormat, shape: readonly [number, number], options: { inputScale?: boolean } = {}): number {
  const [n, k] = shape;
  const f = weightFormatInfo(format);
  const storage = f.family === 'gguf' ? (n * k * BLOCK_DTYPES[format as BlockDType].blockBytes) / BLOCK_DTYPES[format as BlockDType].blockElements : n * k * f.storageBytesPerParameter;
  return storage + scaleBytes(format, shape, options);
}

/**
 * Bytes of a weight's scales: as stored in the file (`weight_scale`: one f32 per row or per tensor;
 * an fp8 `input_scale` adds one more), or as a prepared int8 layer holds them (always one f32 per
 * row: a tensorwise scale is repeated on every row for the kernel). The one place this is computed.
 */
export function scaleBytes(format: WeightFormat, shape: readonly [number, number], options: { inputScale?: boolean; prepared?: boolean } = {}): number {
  const f = weightFormatInfo(format);
  const [n] = shape;
  if (options.prepared === true) return f.family === 'int8' ? 4 * n : 0;
  const weight = f.scale === 'row' ? 4 * n : f.scale === 'tensor' ? 4 : 0;
  return weight + (f.family === 'fp8' && options.inputScale === true ? 4 : 0);
}
