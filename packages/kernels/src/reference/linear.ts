import { matrixDims, optionsOf, outputF32, requireDType, requireShape } from '../arg-checks.js';
import {
  type Int8LinearOptions,
  type Int8LinearQuantizedOptions,
  type QuantizeRowsOptions,
  type QuantizeWeightOptions,
  checkBias,
  checkExternalScale,
  checkInt8K,
  checkWeightScale,
  int8Dims,
  linearDims,
  resolveConvrot,
} from '../linear-checks.js';
import { Tensor } from '../tensor.js';
import { bf16ToF32Bits, floatOfBits, roundHalfEven } from './float-bits.js';
import { fwhtInPlace } from './hadamard.js';

const f = Math.fround;

/** Reference fp32 linear: float64 accumulation of x·wᵀ, rounded once, then + bias in float32. */
export function linear(x: Tensor, w: Tensor, bias?: Tensor): Tensor<'f32'> {
  const d = linearDims(x, w, 'linear', ['f32', 'bf16']);
  checkBias(bias, d.n, 'linear');
  const xs = (x as Tensor<'f32'>).data;
  const ws = w.dtype === 'bf16' ? Float32Array.from((w as Tensor<'bf16'>).data, (b) => floatOfBits(bf16ToF32Bits(b))) : (w as Tensor<'f32'>).data;
  const bs = bias === undefined ? undefined : (bias as Tensor<'f32'>).data;
  const y = Tensor.zeros('f32', d.outShape);
  const ys = y.data;
  for (let m = 0; m < d.m; m++) {
    for (let n = 0; n < d.n; n++) {
      let s = 0;
      for (let k = 0; k < d.k; k++) s += (xs[m * d.k + k] as number) * (ws[n * d.k + k] as number);
      ys[m * d.n + n] = bs === undefined ? s : f(s) + (bs[n] as number);
    }
  }
  return y;
}

function quantizeRows(
  rowsData: Float32Array,
  rows: number,
  cols: number,
  group: number,
  external: Float32Array | undefined,
  q: Tensor<'i8'> = Tensor.zeros('i8', [rows, cols]),
  scale: Tensor<'f32'> = Tensor.zeros('f32', [rows, 1]),
): { q: Tensor<'i8'>; scale: Tensor<'f32'> } {
  const qd = q.data;
  const row = new Float32Array(cols);
  for (let r = 0; r < rows; r++) {
    row.set(rowsData.subarray(r * cols, (r + 1) * cols));
    if (group !== 0) fwhtInPlace(row, group, 'regular');
    let s: number;
    if (external !== undefined) {
      s = external[r] as number;
    } else {
      let max = 0;
      for (const v of row) if (Math.abs(v) > max) max = Math.abs(v);
      s = Math.max(f(max / 127), f(1e-30));
    }
    scale.data[r] = s;
    for (let c = 0; c < cols; c++) {
      const v = roundHalfEven(f((row[c] as number) / s));
      qd[r * cols + c] = Number.isNaN(v) ? 0 : Math.min(127, Math.max(-128, v));
    }
  }
  return { q, scale };
}

/** Reference per-row int8 quantization (see the native quantizeRowsInt8; `rotated` is not supported). */
export function quantizeRowsInt8(x: Tensor, options?: QuantizeRowsOptions): { q: Tensor<'i8'>; scale: Tensor<'f32'> } {
  requireDType(x, ['f32'], 'quantizeRowsInt8 input');
  const opts = optionsOf(options, 'quantizeRowsInt8 options');
  const [rows, cols] = matrixDims(x, 'quantizeRowsInt8 input');
  const { group } = resolveConvrot(opts.convrot, cols, 'quantizeRowsInt8');
  if (opts.qOut !== undefined) {
    requireDType(opts.qOut, ['i8'], 'quantizeRowsInt8 opts.qOut');
    requireShape(opts.qOut, [rows, cols], 'quantizeRowsInt8 opts.qOut');
  }
  const scale = opts.scaleOut === undefined ? undefined : outputF32(opts.scaleOut, [rows, 1], 'quantizeRowsInt8 scaleOut', [x, opts.scale, opts.qOut]);
  const external = checkExternalScale(opts.scale, rows, 'quantizeRowsInt8 opts.scale');
  return quantizeRows(x.data, rows, cols, group, external, opts.qOut as Tensor<'i8'> | undefined, scale);
}

/** Reference offline weight quantization (rotation W·Hᵀ per group, then per-row absmax/127). */
export function quantizeWeightInt8(w: Tensor, options?: QuantizeWeightOptions): { q: Tensor<'i8'>; scale: Tensor<'f32'> } {
  requireDType(w, ['f32'], 'quantizeWeightInt8 weight');
  const opts = optionsOf(options, 'quantizeWeightInt8 options');
  const [rows, cols] = matrixDims(w, 'quantizeWeightInt8 weight');
  return quantizeRows(w.data, rows, cols, resolveConvrot(opts.convrot, cols, 'quantizeWeightInt8').group, undefined);
}

/** Reference exact int32 matmul qx·qwᵀ. */
export function int8Matmul(qx: Tensor, qw: Tensor): Tensor<'i32'> {
  const { m, k, n } = int8Dims(qx, qw, 'int8Matmul');
  const a = qx.data, b = qw.data;
  const acc = Tensor.zeros('i32', [m, n]);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let t = 0; t < k; t++) s += (a[i * k + t] as number) * (b[j * k + t] as number);
      acc.data[i * n + j] = s;
    }
  }
  return acc;
}

/** Reference W8A8 linear: same float operation order as the native one, so results are equal. */
export function int8Linear(x: Tensor, qw: Tensor, wScale: Tensor, options?: Int8LinearOptions): { y: Tensor<'f32'>; acc?: Tensor<'i32'>; xScale: Tensor<'f32'> } {
  const d = linearDims(x, qw, 'int8Linear', ['i8']);
  const opts = optionsOf(options, 'int8Linear options');
  checkInt8K(d.k, 'int8Linear');
  checkWeightScale(wScale, d.n, 'int8Linear wScale');
  checkBias(opts.bias, d.n, 'int8Linear');
  const { group } = resolveConvrot(opts.convrot, d.k, 'int8Linear');
  const external = checkExternalScale(opts.xScale, d.m, 'int8Linear opts.xScale');
  const { q, scale } = quantizeRows((x as Tensor<'f32'>).data, d.m, d.k, group, external);
  const acc = int8Matmul(q, qw);
  const y = epilogue(acc, scale, wScale, opts.bias, Tensor.zeros('f32', d.outShape));
  return opts.returnAccumulators === true ? { y, acc, xScale: scale } : { y, xScale: scale };
}

/** Reference int8LinearQuantized: int8Linear's GEMM and epilogue on rows quantized already. */
export function int8LinearQuantized(qx: Tensor, xScale: Tensor, qw: Tensor, wScale: Tensor, options?: Int8LinearQuantizedOptions): Tensor<'f32'> {
  const { m, n } = int8Dims(qx, qw, 'int8LinearQuantized');
  const opts = optionsOf(options, 'int8LinearQuantized options');
  checkExternalScale(xScale, m, 'int8LinearQuantized xScale');
  checkWeightScale(wScale, n, 'int8LinearQuantized wScale');
  checkBias(opts.bias, n, 'int8LinearQuantized');
  const y = outputF32(opts.out, [m, n], 'int8LinearQuantized', [qx, xScale, qw, wScale, opts.bias]);
  return epilogue(int8Matmul(qx, qw), xScale, wScale, opts.bias, y);
}

/** y = float(acc) * (x_scale * w_scale) + bias, each step rounded to f32 in the native order. */
function epilogue(acc: Tensor<'i32'>, xScale: Tensor, wScale: Tensor, bias: Tensor | undefined, y: Tensor<'f32'>): Tensor<'f32'> {
  const [rows, cols] = matrixDims(acc, 'int8 epilogue accumulators');
  const xs = (xScale as Tensor<'f32'>).data;
  const ws = (wScale as Tensor<'f32'>).data;
  const bs = bias === undefined ? undefined : (bias as Tensor<'f32'>).data;
  for (let m = 0; m < rows; m++) {
    for (let n = 0; n < cols; n++) {
      const v = f(f(acc.data[m * cols + n] as number) * f((xs[m] as number) * (ws[n] as number)));
      y.data[m * cols + n] = bs === undefined ? v : v + (bs[n] as number);
    }
  }
  return y;
}
