import { KernelsError } from '../error-codes.js';
import { linear } from '../linear.js';
import { Tensor } from '../tensor.js';
import { requireF32, requireRank } from '../arg-checks.js';

export interface Conv1dOptions {
  stride?: number;
  /** Zeros added at both ends. */
  padding?: number;
  dilation?: number;
}

function positiveInt(v: unknown, op: string, name: string, min: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
    throw new KernelsError('INVALID_ARGUMENT', `${op}: ${name} must be an integer >= ${min}, got ${String(v)}`, { value: v, where: `${op}(opts.${name})` });
  }
  return v;
}

function checkBias(bias: Tensor<'f32'> | undefined, n: number, op: string): void {
  if (bias !== undefined && (requireF32(bias, op, 'bias').rank !== 1 || bias.shape[0] !== n)) {
    throw new KernelsError('SHAPE_MISMATCH', `${op}: bias [${bias.shape.join(', ')}] must be [${n}]`, { value: bias.shape, where: `${op}(bias)` });
  }
}

/**
 * PyTorch's conv1d on one sequence: x [Cin, L], weight [Cout, Cin, K] -> [Cout, Lout],
 * Lout = ⌊(L + 2·padding − dilation·(K − 1) − 1) / stride⌋ + 1. The windows are gathered (im2col,
 * [Lout, Cin·K]) and multiplied by the weight on the native gemm.
 */
export async function conv1d(x: Tensor<'f32'>, weight: Tensor<'f32'>, bias?: Tensor<'f32'>, opts: Conv1dOptions = {}): Promise<Tensor<'f32'>> {
  const op = 'conv1d';
  requireRank(requireF32(x, op, 'x'), 2, op, 'x');
  requireRank(requireF32(weight, op, 'weight'), 3, op, 'weight');
  const stride = positiveInt(opts.stride ?? 1, op, 'stride', 1);
  const padding = positiveInt(opts.padding ?? 0, op, 'padding', 0);
  const dilation = positiveInt(opts.dilation ?? 1, op, 'dilation', 1);
  const [cin, len] = x.shape as [number, number];
  const [cout, wcin, k] = weight.shape as [number, number, number];
  checkBias(bias, cout, op);
  const span = dilation * (k - 1) + 1;
  if (wcin !== cin || len + 2 * padding < span) {
    throw new KernelsError('SHAPE_MISMATCH', `${op}: x [${x.shape.join(', ')}] and weight [${weight.shape.join(', ')}] do not agree (padding ${padding}, dilation ${dilation})`, {
      value: { x: x.shape, weight: weight.shape },
      where: op,
      hint: 'x [Cin, L], weight [Cout, Cin, K], and L + 2·padding must cover one dilated window',
    });
  }
  const lout = Math.floor((len + 2 * padding - span) / stride) + 1;
  const cols = new Float32Array(lout * cin * k);
  const xs = x.data;
  for (let t = 0; t < lout; t++) {
    const start = t * stride - padding;
    for (let c = 0; c < cin; c++) {
      const row = (t * cin + c) * k;
      for (let j = 0; j < k; j++) {
        const at = start + j * dilation;
        cols[row + j] = at >= 0 && at < len ? (xs[c * len + at] as number) : 0;
      }
    }
  }
  const y = await linear(Tensor.fromArray('f32', [lout, cin * k], cols), weight.reshape([cout, cin * k]), bias);
  return transpose2d(y);
}

/**
 * PyTorch's conv_transpose1d on one sequence (no output padding, dilation 1): x [Cin, L], weight
 * [Cin, Cout, K] -> [Cout, (L − 1)·stride − 2·padding + K]. Each input column times the weight
 * (native gemm, [L, Cout·K]) is added into the output at t·stride (col2im), then `padding` samples
 * are cut from both ends.
 */
export async function convTranspose1d(x: Tensor<'f32'>, weight: Tensor<'f32'>, bias?: Tensor<'f32'>, opts: Omit<Conv1dOptions, 'dilation'> = {}): Promise<Tensor<'f32'>> {
  const op = 'convTranspose1d';
  requireRank(requireF32(x, op, 'x'), 2, op, 'x');
  requireRank(requireF32(weight, op, 'weight'), 3, op, 'weight');
  const stride = positiveInt(opts.stride ?? 1, op, 'stride', 1);
  const padding = positiveInt(opts.padding ?? 0, op, 'padding', 0);
  const [cin, len] = x.shape as [number, number];
  const [wcin, cout, k] = weight.shape as [number, number, number];
  checkBias(bias, cout, op);
  const full = (len - 1) * stride + k;
  if (wcin !== cin || full - 2 * padding < 1) {
    throw new KernelsError('SHAPE_MISMATCH', `${op}: x [${x.shape.join(', ')}] and weight [${weight.shape.join(', ')}] do not agree (stride ${stride}, padding ${padding})`, {
      value: { x: x.shape, weight: weight.shape },
      where: op,
      hint: 'x [Cin, L], weight [Cin, Cout, K]',
    });
  }
  // [Cout·K, Cin]: the gemm's weight rows are (output channel, tap).
  const w = transpose2d(weight.reshape([cin, cout * k]));
  const p = (await linear(transpose2d(x), w)).data; // [L, Cout·K]
  const lout = full - 2 * padding;
  const out = new Float32Array(cout * lout);
  for (let t = 0; t < len; t++) {
    for (let o = 0; o < cout; o++) {
      const src = (t * cout + o) * k;
      for (let j = 0; j < k; j++) {
        const at = t * stride + j - padding;
        if (at >= 0 && at < lout) out[o * lout + at] = (out[o * lout + at] as number) + (p[src + j] as number);
      }
    }
  }
  if (bias !== undefined) for (let o = 0; o < cout; o++) for (let t = 0; t < lout; t++) out[o * lout + t] = (out[o * lout + t] as number) + (bias.data[o] as number);
  return Tensor.fromArray('f32', [cout, lout], out);
}

function transpose2d(x: Tensor<'f32'>): Tensor<'f32'> {
  const [r, c] = x.shape as [number, number];
  const out = new Float32Array(r * c);
  const d = x.data;
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out[j * r + i] = d[i * c + j] as number;
  return Tensor.fromArray('f32', [c, r], out);
}
