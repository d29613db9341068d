import { matrixDims, optionsOf, outputF32, requireDType, requireShape } from './arg-checks.js';
import {
  type Int8BackendName,
  type Int8AccumulatorOptions,
  type Int8LinearOptions,
  type Int8LinearQuantizedOptions,
  type Int8MatmulOptions,
  type QuantizeRowsOptions,
  type QuantizeWeightOptions,
  checkBackend,
  checkBias,
  checkExternalScale,
  checkInt8K,
  checkWeightScale,
  int8Dims,
  linearDims,
  resolveConvrot,
} from './linear-checks.js';
import { callNative, callNativeAsync } from './native-addon.js';
import { KernelsError } from './error-codes.js';
import { allocateNative } from './native-memory.js';
import { Tensor } from './tensor.js';

export type { Int8AccumulatorOptions, Int8BackendChoice, Int8BackendName, Int8LinearOptions, Int8LinearQuantizedOptions, Int8MatmulOptions, QuantizeRowsOptions, QuantizeWeightOptions } from './linear-checks.js';

function quantize(x: Tensor, group: number, external: Float32Array | undefined, where: string, rotated?: Tensor, qOut?: Tensor<'i8'>, scaleOut?: Tensor<'f32'>): { q: Tensor<'i8'>; scale: Tensor<'f32'> } {
  const [rows, cols] = matrixDims(x, where);
  const q = qOut ?? Tensor.zeros('i8', [rows, cols]);
  const scale = scaleOut ?? Tensor.zeros('f32', [rows, 1]);
  if (external !== undefined) scale.data.set(external);
  callNative(where, (addon) => addon.quantizeRowsInt8(x.bytes(), q.bytes(), scale.bytes(), rows, cols, external !== undefined, group, 'regular', rotated?.bytes() ?? null));
  return { q, scale };
}

/**
 * Per-row int8 quantization (comfy-kitchen): scale = max(absmax / 127, 1e-30), q = clamp(round half
 * to even(x / scale), -128, 127), NaN -> 0. `opts.scale` supplies the [M, 1] scales instead;
 * `opts.convrot` rotates the rows first (x·H per group), as int8Linear does; `opts.rotated` receives
 * the rotated rows; `opts.qOut` / `opts.scaleOut` receive q and the scales (a row range of a bigger
 * buffer: int8LinearQuantized on the gathered rows then gives int8Linear's bits).
 */
export function quantizeRowsInt8(x: Tensor, options?: QuantizeRowsOptions): { q: Tensor<'i8'>; scale: Tensor<'f32'> } {
  requireDType(x, ['f32'], 'quantizeRowsInt8 input');
  const opts = optionsOf(options, 'quantizeRowsInt8 options');
  const [rows, cols] = matrixDims(x, 'quantizeRowsInt8 input');
  const { group } = resolveConvrot(opts.convrot, cols, 'quantizeRowsInt8');
  if (opts.rotated !== undefined) {
    requireDType(opts.rotated, ['f32'], 'quantizeRowsInt8 opts.rotated');
    requireShape(opts.rotated, x.shape, 'quantizeRowsInt8 opts.rotated');
    if (opts.rotated.buffer === x.buffer && opts.rotated.byteOffset < x.byteOffset + x.byteLength && x.byteOffset < opts.rotated.byteOffset + opts.rotated.byteLength) {
      throw new KernelsError('INVALID_ARGUMENT', 'quantizeRowsInt8: opts.rotated overlaps the input', { where: 'quantizeRowsInt8 opts.rotated', hint: 'pass a separate tensor of the same shape' });
    }
  }
  if (opts.qOut !== undefined) {
    requireDType(opts.qOut, ['i8'], 'quantizeRowsInt8 opts.qOut');
    requireShape(opts.qOut, x.shape, 'quantizeRowsInt8 opts.qOut');
    for (const t of [x, opts.rotated, opts.scale]) {
      if (t !== undefined && t.buffer === opts.qOut.buffer && opts.qOut.byteOffset < t.byteOffset + t.byteLength && t.byteOffset < opts.qOut.byteOffset + opts.qOut.byteLength) {
        throw new KernelsError('INVALID_ARGUMENT', 'quantizeRowsInt8: opts.qOut overlaps another tensor of the call', { where: 'quantizeRowsInt8 opts.qOut', hint: 'pass memory disjoint from the inputs' });
      }
    }
  }
  const scaleOut = opts.scaleOut === undefined ? undefined : outputF32(opts.scaleOut, [rows, 1], 'quantizeRowsInt8 scaleOut', [x, opts.rotated, opts.scale, opts.qOut]);
  return quantize(x, group, checkExternalScale(opts.scale, rows, 'quantizeRowsInt8 opts.scale'), 'quantizeRowsInt8', opts.rotated, opts.qOut, scaleOut);
}

/** Offline weight path: rotate rows W·Hᵀ per group (if convrot), then per-output-row absmax/127. */
export function quantizeWeightInt8(w: Tensor, options?: QuantizeWeightOptions): { q: Tensor<'i8'>; scale: Tensor<'f32'> } {
  requireDType(w, ['f32'], 'quantizeWeightInt8 weight');
  const opts = optionsOf(options, 'quantizeWeightInt8 options');
  const [, k] = matrixDims(w, 'quantizeWeightInt8 weight');
  const { group } = resolveConvrot(opts.convrot, k, 'quantizeWeightInt8');
  return quantize(w, group, undefined, 'quantizeWeightInt8');
}

/** `quantizeWeightInt8` on a worker thread (a streamed weight converts while the model computes); the same bits. */
export async function quantizeWeightInt8Async(w: Tensor, options?: QuantizeWeightOptions): Promise<{ q: Tensor<'i8'>; scale: Tensor<'f32'> }> {
  requireDType(w, ['f32'], 'quantizeWeightInt8 weight');
  const opts = optionsOf(options, 'quantizeWeightInt8 options');
  const [rows, cols] = matrixDims(w, 'quantizeWeightInt8 weight');
  const { group } = resolveConvrot(opts.convrot, cols, 'quantizeWeightInt8');
  // Native outputs, every element written: no zeroing of a weight's worth of bytes on this thread.
  const q = allocateNative('i8', [rows, cols]);
  const scale = allocateNative('f32', [rows, 1]);
  await callNativeAsync('quantizeWeightInt8', (n) => n.quantizeWeightInt8Async(w.bytes(), q.bytes(), scale.bytes(), rows, cols, group));
  return { q, scale };
}

/**
 * Exact int32 qx·qwᵀ: qx [M, K] i8, qw [N, K] i8 -> [M, N] i32. Same bits for any thread count and
 * any backend; `options.backend` picks one (a backend this machine cannot run is BACKEND_UNAVAILABLE).
 */
export async function int8Matmul(qx: Tensor, qw: Tensor, options?: Int8MatmulOptions): Promise<Tensor<'i32'>> {
  const { m, k, n } = int8Dims(qx, qw, 'int8Matmul');
  const backend = checkBackend(optionsOf(options, 'int8Matmul options').backend, 'int8Matmul options.backend');
  const acc = Tensor.zeros('i32', [m, n]);
  await callNativeAsync('int8Matmul', (addon) => addon.int8Matmul(qx.bytes(), qw.bytes(), acc.bytes(), m, k, n, backend));
  return acc;
}

/**
 * W8A8 linear (ComfyUI int8 convrot): rotate x (if convrot) -> per-row int8 quantization -> exact
 * int8 matmul -> y = float(acc) * (x_scale * w_scale) + bias, in that float order.
 */
export async function int8Linear(
  x: Tensor,
  qw: Tensor,
  wScale: Tensor,
  options?: Int8LinearOptions,
): Promise<{ y: Tensor<'f32'>; acc?: Tensor<'i32'>; xScale: Tensor<'f32'> }> {
  const d = linearDims(x, qw, 'int8Linear', ['i8']);
  const opts = optionsOf(options, 'int8Linear options');
  checkInt8K(d.k, 'int8Linear');
  checkWeightScale(wScale, d.n, 'int8Linear wScale');
  checkBias(opts.bias, d.n, 'int8Linear');
  const { group, order } = resolveConvrot(opts.convrot, d.k, 'int8Linear');
  const external = checkExternalScale(opts.xScale, d.m, 'int8Linear opts.xScale');
  const backend = checkBackend(opts.backend, 'int8Linear options.backend');
  const y = outputF32(opts.out, d.outShape, 'int8Linear', [x, qw, wScale, opts.bias, opts.xScale]);
  const xScale = outputF32(opts.xScaleOut, [d.m, 1], 'int8Linear xScaleOut', [x, qw, wScale, opts.bias, y]);
  if (external !== undefined) xScale.data.set(external);
  const acc = opts.returnAccumulators === true ? accumulatorsOut(opts.accOut, d.m, d.n, 'int8Linear accOut', [x, qw, wScale, opts.bias, opts.xScale, y, xScale]) : undefined;
  await callNativeAsync('int8Linear', (addon) =>
    addon.int8Linear(
      x.bytes(),
      qw.bytes(),
      wScale.bytes(),
      opts.bias?.bytes() ?? null,
      y.bytes(),
      acc?.bytes() ?? null,
      xScale.bytes(),
      d.m,
      d.k,
      d.n,
      group,
      order,
      external !== undefined,
      backend,
    ),
  );
  return acc === undefined ? { y, xScale } : { y, acc, xScale };
}

/**
 * int8Linear's GEMM and epilogue on rows already quantized (quantizeRowsInt8's q and scale, possibly
 * gathered from other ranks): y = float(qx·qwᵀ) * (xScale * wScale) + bias, the same bits int8Linear
 * gives for the x those rows came from (same convrot, same scales). qx [M, K] i8, xScale [M, 1] f32,
 * qw [N, K] i8, wScale [N] or [N, 1], bias [N]; y into out ([M, N] f32) when given.
 */
export async function int8LinearQuantized(qx: Tensor, xScale: Tensor, qw: Tensor, wScale: Tensor, options?: Int8LinearQuantizedOptions): Promise<Tensor<'f32'>> {
  const { m, k, n } = int8Dims(qx, qw, 'int8LinearQuantized');
  const opts = optionsOf(options, 'int8LinearQuantized options');
  checkExternalScale(xScale, m, 'int8LinearQuantized xScale');
  checkWeightScale(wScale, n, 'int8LinearQuantized wScale');
  checkBias(opts.bias, n, 'int8LinearQuantized');
  const backend = checkBackend(opts.backend, 'int8LinearQuantized options.backend');
  const y = outputF32(opts.out, [m, n], 'int8LinearQuantized', [qx, xScale, qw, wScale, opts.bias]);
  await callNativeAsync('int8LinearQuantized', (addon) =>
    addon.int8LinearQuantized(qx.bytes(), qw.bytes(), wScale.bytes(), opts.bias?.bytes() ?? null, y.bytes(), xScale.bytes(), m, k, n, backend),
  );
  return y;
}

/**
 * int8Linear without the epilogue: rotate x (if convrot), quantize its rows (or take `opts.xScale`)
 * and return only the exact int32 accumulators [M, N] (into `opts.accOut` when given) and the row
 * scales; no y is computed or written. Row-parallel ranks reduce these across ranks before the
 * epilogue (`dequantizeInt8Accumulators`), so int8Linear's y on each rank would be thrown away. The
 * accumulators are int8Linear's (returnAccumulators), bit for bit.
 */
export async function int8LinearAccumulators(
  x: Tensor,
  qw: Tensor,
  options?: Int8AccumulatorOptions,
): Promise<{ acc: Tensor<'i32'>; xScale: Tensor<'f32'> }> {
  const d = linearDims(x, qw, 'int8LinearAccumulators', ['i8']);
  const opts = optionsOf(options, 'int8LinearAccumulators options');
  checkInt8K(d.k, 'int8LinearAccumulators');
  const { group, order } = resolveConvrot(opts.convrot, d.k, 'int8LinearAccumulators');
  const external = checkExternalScale(opts.xScale, d.m, 'int8LinearAccumulators opts.xScale');
  const backend = checkBackend(opts.backend, 'int8LinearAccumulators options.backend');
  const xScale = outputF32(opts.xScaleOut, [d.m, 1], 'int8LinearAccumulators xScaleOut', [x, qw, opts.xScale]);
  if (external !== undefined) xScale.data.set(external);
  const acc = accumulatorsOut(opts.accOut, d.m, d.n, 'int8LinearAccumulators accOut', [x, qw, opts.xScale, xScale]);
  await callNativeAsync('int8LinearAccumulators', (addon) =>
    addon.int8Linear(x.bytes(), qw.bytes(), null, null, null, acc.bytes(), xScale.bytes(), d.m, d.k, d.n, group, order, external !== undefined, backend),
  );
  return { acc, xScale };
}

/** `out` checked as an [m, n] i32 accumulator buffer disjoint from `others`, or a fresh one. */
function accumulatorsOut(out: Tensor | undefined, m: number, n: number, where: string, others: readonly (Tensor | undefined)[]): Tensor<'i32'> {
  if (out === undefined) return Tensor.zeros('i32', [m, n]);
  requireDType(out, ['i32'], where);
  requireShape(out, [m, n], where);
  for (const t of others) {
    if (t && t.buffer === out.buffer && out.byteOffset < t.byteOffset + t.byteLength && t.byteOffset < out.byteOffset + out.byteLength) {
      throw new KernelsError('INVALID_ARGUMENT', `${where} overlaps another tensor of the call`, { where, hint: 'pass memory disjoint from the inputs and outputs' });
    }
  }
  return out as Tensor<'i32'>;
}

/**
 * The epilogue of int8Linear on accumulators computed elsewhere (tensor parallelism: int32 sums
 * reduced across ranks): y = float(acc) * (x_scale * w_scale) + bias, by the native code int8Linear
 * runs (same f32 order, no FMA), so the bits equal int8Linear's y. acc [M, N] i32, xScale [M, 1],
 * wScale [N] or [N, 1], bias [N]; y into `out` ([M, N] f32, see outputF32) when given.
 */
export async function dequantizeInt8Accumulators(acc: Tensor, xScale: Tensor, wScale: Tensor, bias?: Tensor, out?: Tensor): Promise<Tensor<'f32'>> {
  requireDType(acc, ['i32'], 'dequantizeInt8Accumulators acc');
  const [m, n] = matrixDims(acc, 'dequantizeInt8Accumulators acc');
  checkExternalScale(xScale, m, 'dequantizeInt8Accumulators xScale');
  checkWeightScale(wScale, n, 'dequantizeInt8Accumulators wScale');
  checkBias(bias, n, 'dequantizeInt8Accumulators');
  const y = outputF32(out, [m, n], 'dequantizeInt8Accumulators', [acc, xScale, wScale, bias]);
  await callNativeAsync('dequantizeInt8Accumulators', (addon) => addon.int8Dequantize(acc.bytes(), xScale.bytes(), wScale.bytes(), bias?.bytes() ?? null, y.bytes(), m, n));
  return y;
}

/** The int8 GEMM that `'auto'` picks on this machine (shapes with K % 64 != 0 skip `amx`; `vnni` leaves K % 4 != 0 and M < 16 to `onednn`). */
export function int8Backend(): Int8BackendName {
  return callNative('int8Backend', (addon) => addon.int8Backend());
}

/** Every int8 backend this machine can run, fastest first. */
export function int8Backends(): Int8BackendName[] {
  return callNative('int8Backends', (addon) => addon.int8Backends());
}
