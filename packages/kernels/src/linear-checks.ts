// Shape and dtype rules of linear / int8 ops, shared by the native and the reference backend.
import { type HadamardOrder, checkHadamardGroup, matrixDims, requireDType, requirePositiveScales, requireRowScale, requireShape } from './arg-checks.js';
import { KernelsError } from './error-codes.js';
import type { Tensor } from './tensor.js';

export interface LinearDims {
  m: number;
  k: number;
  n: number;
  /** Output shape: x's leading dims, then N. */
  outShape: number[];
}

export const MAX_INT8_K = 131072;

export function linearDims(x: Tensor, w: Tensor, where: string, wDtypes: readonly ('f32' | 'bf16' | 'i8')[]): LinearDims {
  requireDType(x, ['f32'], `${where} input`);
  requireDType(w, wDtypes, `${where} weight`);
  const [m, k] = matrixDims(x, `${where} input`, true);
  const [n, wk] = matrixDims(w, `${where} weight`);
  if (wk !== k) {
    throw new KernelsError('SHAPE_MISMATCH', `${where}: input has K = ${k} but the weight [${w.shape.join(', ')}] has K = ${wk}`, {
      value: { x: x.shape, w: w.shape },
      where,
      hint: 'weights are [N, K] (PyTorch layout), inputs [..., K]',
    });
  }
  return { m, k, n, outShape: [...x.shape.slice(0, -1), n] };
}

export function checkBias(bias: Tensor | undefined, n: number, where: string): void {
  if (bias === undefined) return;
  requireDType(bias, ['f32'], `${where} bias`);
  requireShape(bias, [n], `${where} bias`);
}

export function checkInt8K(k: number, where: string): void {
  if (k > MAX_INT8_K) {
    throw new KernelsError('INVALID_SHAPE', `${where}: K = ${k} exceeds ${MAX_INT8_K}; int32 accumulators could overflow`, { value: k, where });
  }
}

/** qx [M, K] i8 and qw [N, K] i8 with the same K (at most MAX_INT8_K): the operands of an exact int8 GEMM. */
export function int8Dims(qx: Tensor, qw: Tensor, where: string): { m: number; k: number; n: number } {
  requireDType(qx, ['i8'], `${where} qx`);
  requireDType(qw, ['i8'], `${where} qw`);
  const [m, k] = matrixDims(qx, `${where} qx`);
  const [n, wk] = matrixDims(qw, `${where} qw`);
  if (wk !== k) {
    throw new KernelsError('SHAPE_MISMATCH', `${where}: qx has K = ${k} but qw [${qw.shape.join(', ')}] has K = ${wk}`, { value: { qx: qx.shape, qw: qw.shape }, where });
  }
  checkInt8K(k, where);
  return { m, k, n };
}

export interface QuantizeRowsOptions {
  /** Externally supplied per-row scale [M, 1] (tensor parallelism: the allreduce-MAX'd scale). */
  scale?: Tensor;
  /**
   * Rotate each row x·H per group of this size first (regular Hadamard), by the same code int8Linear
   * runs, so a row-parallel rank's rotated slice and its absmax equal the unsplit layer's.
   */
  convrot?: number | false;
  /**
   * Also write the rows as quantized (x·H with `convrot`) into this f32 tensor of x's shape (not x
   * itself): a second quantization of the same rows with other scales then needs no second rotation.
   */
  rotated?: Tensor;
  /** Where the quantized rows go (i8 of x's shape, disjoint from x); default a fresh tensor. */
  qOut?: Tensor;
  /**
   * Where the row scales go ([M, 1] f32, disjoint from the other tensors); default a fresh tensor.
   * With `qOut`, a rank quantizes its rows straight into its slot of a buffer gathered across ranks.
   */
  scaleOut?: Tensor;
}

/** int8LinearQuantized: int8Linear's options once the rows are quantized. */
export interface Int8LinearQuantizedOptions {
  bias?: Tensor;
  /** Where y goes ([M, N] f32, see outputF32); default a fresh tensor. */
  out?: Tensor;
  /** Which exact int8 GEMM runs (default `'auto'`); every backend gives the same bits. */
  backend?: Int8BackendChoice;
}

export interface Int8LinearOptions {
  bias?: Tensor;
  /** Rotate x online by the regular Hadamard with this group size (e.g. 256) before quantizing. */
  convrot?: number | false;
  /** Use this [M, 1] activation scale instead of the per-row absmax. */
  xScale?: Tensor;
  /** Also return the raw int32 accumulators [M, N] (row-parallel reductions). */
  returnAccumulators?: boolean;
  /** Where the returned accumulators go ([M, N] i32, disjoint from the other tensors); default a fresh tensor. */
  accOut?: Tensor;
  /** Which exact int8 GEMM runs (default `'auto'`); every backend gives the same bits. */
  backend?: Int8BackendChoice;
  /** Where y goes ([..., N] f32, see outputF32); default a fresh tensor. */
  out?: Tensor;
  /** Where the returned row scales go ([M, 1] f32, see outputF32); default a fresh tensor. */
  xScaleOut?: Tensor;
}

/** int8LinearAccumulators: int8Linear's options that bear on the accumulators. */
export interface Int8AccumulatorOptions {
  /** Rotate x online by the regular Hadamard with this group size (e.g. 256) before quantizing. */
  convrot?: number | false;
  /** Use this [M, 1] activation scale instead of the per-row absmax. */
  xScale?: Tensor;
  /** Where the accumulators go ([M, N] i32, disjoint from the other tensors); default a fresh tensor. */
  accOut?: Tensor;
  /** Which exact int8 GEMM runs (default `'auto'`); every backend gives the same integers. */
  backend?: Int8BackendChoice;
  /** Where the row scales go ([M, 1] f32, see outputF32); default a fresh tensor. */
  xScaleOut?: Tensor;
}

/**
 * The exact int8 GEMMs: `amx` (hand-written AMX tiles, fused dequant; AMX-INT8 CPUs, K % 64 == 0),
 * `vnni` (hand-written AVX512-VNNI kernel, fused dequant; K % 4 == 0),
 * `onednn` (oneDNN s8s8, where it is exact: VNNI or AMX), `native` (AVX2 or scalar, any CPU).
 */
import type { Int8BackendName } from '@ninodes/native';
export type { Int8BackendName };
/** `'auto'`: the fastest backend that can run the shape (NINODES_INT8_BACKEND overrides). */
export type Int8BackendChoice = Int8BackendName | 'auto';

export interface Int8MatmulOptions {
  backend?: Int8BackendChoice;
}

const BACKEND_CHOICES: readonly Int8BackendChoice[] = ['auto', 'amx', 'vnni', 'onednn', 'native'];

export function checkBackend(value: unknown, where: string): Int8BackendChoice {
  if (value === undefined) return 'auto';
  if (typeof value === 'string' && (BACKEND_CHOICES as readonly string[]).includes(value)) return value as Int8BackendChoice;
  throw new KernelsError('INVALID_ARGUMENT', `${where}: unknown int8 backend ${JSON.stringify(value)}`, {
    value,
    where,
    hint: `one of ${BACKEND_CHOICES.join(', ')}; int8Backends() lists what this machine can run`,
  });
}

export interface QuantizeWeightOptions {
  /** Rotate rows W·Hᵀ per group of this size first (regular Hadamard). */
  convrot?: number | false;
}

export function resolveConvrot(convrot: number | false | undefined, k: number, where: string): { group: number; order: HadamardOrder } {
  if (convrot === undefined || convrot === false) return { group: 0, order: 'regular' };
  checkHadamardGroup(k, convrot, 'regular', `${where} convrot`);
  return { group: convrot, order: 'regular' };
}

export function checkExternalScale(scale: Tensor | undefined, rows: number, where: string): Float32Array | undefined {
  if (scale === undefined) return undefined;
  requireRowScale(scale, rows, where);
  const values = (scale as Tensor<'f32'>).data;
  requirePositiveScales(values, where);
  return values;
}

export function checkWeightScale(wScale: Tensor, n: number, where: string): void {
  requireRowScale(wScale, n, where);
}
