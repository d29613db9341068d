// The ops of a DiT forward on a Vulkan device, each the counterpart of a CPU op in ../ops and
// ../linear.ts and tested against it (vulkan-ops.test.ts). Shapes are checked here, with the CPU
// ops' error codes; the native side checks every buffer against the same sizes again before it
// records anything (native/src/vulkan/ops.cc).
import { KernelsError } from '../error-codes.js';
import { Tensor } from '../tensor.js';
import type { DeviceTensor, VulkanDevice } from './vulkan-device.js';

/** Weight formats the Vulkan linear reads directly (dequantized as each tile loads). */
export const VULKAN_LINEAR_FORMATS = ['f32', 'bf16', 'f8_e4m3fn', 'f8_e5m2', 'q8_0'] as const;
export type VulkanLinearFormat = (typeof VULKAN_LINEAR_FORMATS)[number];

const LINEAR_SHADERS: Record<VulkanLinearFormat, string> = {
  f32: 'linear_f32',
  bf16: 'linear_bf16',
  f8_e4m3fn: 'linear_e4m3',
  f8_e5m2: 'linear_e5m2',
  q8_0: 'linear_q8_0',
};

/** Push constants: integers as they are, `{ f }` as float32 bits. */
function words(...values: Array<number | { f: number }>): Uint32Array {
  const out = new Uint32Array(values.length);
  const floats = new Float32Array(out.buffer);
  values.forEach((v, i) => {
    if (typeof v === 'number') out[i] = v;
    else floats[i] = v.f;
  });
  return out;
}

function deviceOf(op: string, ...tensors: Array<DeviceTensor | undefined | null>): VulkanDevice {
  const first = tensors.find((t) => t !== undefined && t !== null);
  if (first === undefined || first === null) throw new KernelsError('INVALID_ARGUMENT', `${op}: no device tensor given`, { where: op });
  for (const t of tensors) {
    if (t !== undefined && t !== null && t.buffer.device !== first.buffer.device) {
      throw new KernelsError('INVALID_ARGUMENT', `${op}: tensors on ${first.device} and ${t.device}`, { value: [first.device, t.device], where: op, hint: 'upload every operand to the same device' });
    }
  }
  return first.buffer.device;
}

function requireDtype(t: DeviceTensor, dtypes: readonly string[], op: string, name: string): void {
  if (!dtypes.includes(t.dtype)) {
    throw new KernelsError('DTYPE_MISMATCH', `${op}: '${name}' is ${t.dtype}, expected ${dtypes.join(' or ')}`, { value: t.dtype, where: `${op}(${name})` });
  }
}

function requireShape(t: DeviceTensor, shape: readonly number[], op: string, name: string): void {
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    throw new KernelsError('SHAPE_MISMATCH', `${op}: '${name}' is [${t.shape.join(', ')}], expected [${shape.join(', ')}]`, { value: t.shape, where: `${op}(${name})` });
  }
}

function lastDim(t: DeviceTensor, op: string, name: string): number {
  if (t.shape.length === 0) throw new KernelsError('SHAPE_MISMATCH', `${op}: '${name}' is a scalar, expected at least one dimension`, { value: t.shape, where: `${op}(${name})` });
  return t.shape[t.shape.length - 1] as number;
}

export interface VulkanLinearOptions {
  /** Per-tensor weight scale of an fp8 weight (the checkpoint's `weight_scale`); default 1. */
  scale?: number;
}

/** y = x·Wᵀ (+ bias): x f32 [..., K], W [N, K] in any VulkanLinearFormat, f32 accumulation. */
export async function vkLinear(x: DeviceTensor, w: DeviceTensor, bias?: DeviceTensor | null, options: VulkanLinearOptions = {}): Promise<DeviceTensor<'f32'>> {
  const op = 'vkLinear';
  const device = deviceOf(op, x, w, bias);
  requireDtype(x, ['f32'], op, 'x');
  requireDtype(w, VULKAN_LINEAR_FORMATS, op, 'w');
  if (w.shape.length !== 2) throw new KernelsError('SHAPE_MISMATCH', `${op}: the weight is [${w.shape.join(', ')}], expected [N, K]`, { value: w.shape, where: `${op}(w)` });
  const [n, k] = w.shape as [number, number];
  if (lastDim(x, op, 'x') !== k) throw new KernelsError('SHAPE_MISMATCH', `${op}: x's last dim ${lastDim(x, op, 'x')} is not the weight's K = ${k}`, { value: x.shape, where: `${op}(x)` });
  if (bias) {
    requireDtype(bias, ['f32'], op, 'bias');
    requireShape(bias, [n], op, 'bias');
  }
  const scale = options.scale ?? 1;
  if (!(typeof scale === 'number' && Number.isFinite(scale) && scale > 0)) {
    throw new KernelsError('INVALID_ARGUMENT', `${op}: scale must be a positive finite number`, { value: scale, where: `${op}(options.scale)` });
  }
  const m = k === 0 ? 0 : x.numel / k;
  const y = device.empty('f32', [...x.shape.slice(0, -1), n]);
  await device.run([
    { op: LINEAR_SHADERS[w.dtype as VulkanLinearFormat], buffers: [x.buffer.id, w.buffer.id, (bias ?? y).buffer.id, y.buffer.id], push: words(m, n, k, bias ? 1 : 0, { f: scale }) },
  ]);
  return y;
}

/** The convrot group: activations are rotated per 256 values before they are quantized. */
const CONVROT_GROUP = 256;

/**
 * int8 convrot linear (ComfyUI int8_tensorwise + convrot): x rotated by the regular Hadamard
 * transform per group of 256, quantized per row (absmax / 127, round half to even), multiplied with
 * the rotated int8 weight [N, K] in int32, y = float(acc)·(x_scale·w_scale) + bias: the CPU
 * backend's bits. Needs shaderFloat64 (BACKEND_UNAVAILABLE otherwise).
 */
export async function vkInt8Linear(x: DeviceTensor, qw: DeviceTensor, wScale: DeviceTensor, bias?: DeviceTensor | null): Promise<DeviceTensor<'f32'>> {
  const op = 'vkInt8Linear';
  const device = deviceOf(op, x, qw, wScale, bias);
  requireDtype(x, ['f32'], op, 'x');
  requireDtype(qw, ['i8'], op, 'qw');
  if (qw.shape.length !== 2) throw new KernelsError('SHAPE_MISMATCH', `${op}: the weight is [${qw.shape.join(', ')}], expected [N, K]`, { value: qw.shape, where: `${op}(qw)` });
  const [n, k] = qw.shape as [number, number];
  if (lastDim(x, op, 'x') !== k) throw new KernelsError('SHAPE_MISMATCH', `${op}: x's last dim ${lastDim(x, op, 'x')} is not the weight's K = ${k}`, { value: x.shape, where: `${op}(x)` });
  requireDtype(wScale, ['f32'], op, 'wScale');
  if (wScale.numel !== n) throw new KernelsError('SHAPE_MISMATCH', `${op}: wScale has ${wScale.numel} values for ${n} rows`, { value: wScale.shape, where: `${op}(wScale)` });
  if (bias) {
    requireDtype(bias, ['f32'], op, 'bias');
    requireShape(bias, [n], op, 'bias');
  }
  if (k % CONVROT_GROUP !== 0) throw new KernelsError('GROUP_MISMATCH', `${op}: K = ${k} is not a multiple of the convrot group ${CONVROT_GROUP}`, { value: k, where: `${op}(x)` });
  if (!device.float64) throw new KernelsError('BACKEND_UNAVAILABLE', `${op}: ${device.id} lacks shaderFloat64, which the exact activation quantizer needs`, { value: device.id, where: op, hint: 'run the int8 layers on the CPU' });
  const m = k === 0 ? 0 : x.numel / k;
  const groups = k / CONVROT_GROUP;
  const y = device.empty('f32', [...x.shape.slice(0, -1), n]);
  const rotated = device.empty('f32', [m, k]);
  const amax = device.empty('f32', [m, groups]);
  const qx = device.empty('i8', [m, k]);
  const xScale = device.empty('f32', [m]);
  try {
    await device.run([
      { op: 'int8_rotate', buffers: [x.buffer.id, rotated.buffer.id, amax.buffer.id], push: words(m, k) },
      { op: 'int8_quantize', buffers: [rotated.buffer.id, amax.buffer.id, qx.buffer.id, xScale.buffer.id], push: words(m, k, Math.max(groups, 1)) },
      { op: 'int8_matmul', buffers: [qx.buffer.id, qw.buffer.id, xScale.buffer.id, wScale.buffer.id, (bias ?? y).buffer.id, y.buffer.id], push: words(m, n, k, bias ? 1 : 0) },
    ]);
  } catch (error) {
    y.free();
    throw error;
  } finally {
    rotated.free();
    amax.free();
    qx.free();
    xScale.free();
  }
  return y;
}

export interface VulkanRmsNormOptions {
  weight?: DeviceTensor | null;
  eps?: number;
  /** Then x·(1 + scale) + shift, shift and scale [D]: rmsNormModulate. */
  modulate?: { shift: DeviceTensor; scale: DeviceTensor };
}

/** RMSNorm over the last dim (rmsNorm / rmsNormModulate). */
export async function vkRmsNorm(x: DeviceTensor, options: VulkanRmsNormOptions = {}): Promise<DeviceTensor<'f32'>> {
  const op = 'vkRmsNorm';
  const { weight, modulate } = options;
  const device = deviceOf(op, x, weight, modulate?.shift, modulate?.scale);
  requireDtype(x, ['f32'], op, 'x');
  const dim = lastDim(x, op, 'x');
  for (const [name, t] of [['weight', weight], ['shift', modulate?.shift], ['scale', modulate?.scale]] as const) {
    if (t) {
      requireDtype(t, ['f32'], op, name);
      requireShape(t, [dim], op, name);
    }
  }
  const eps = options.eps ?? 1e-6;
  if (!(typeof eps === 'number' && Number.isFinite(eps))) throw new KernelsError('INVALID_ARGUMENT', `${op}: eps must be a finite number`, { value: eps, where: `${op}(eps)` });
  const rows = dim === 0 ? 0 : x.numel / dim;
  const y = device.empty('f32', x.shape);
  const flags = (weight ? 1 : 0) | (modulate ? 2 : 0);
  const any = y.buffer.id;
  await device.run([
    {
      op: 'rms_norm',
      buffers: [x.buffer.id, weight?.buffer.id ?? any, modulate?.shift.buffer.id ?? any, modulate?.scale.buffer.id ?? any, y.buffer.id],
      push: words(rows, dim, flags, { f: eps }),
    },
  ]);
  return y;
}

const ELEMENTWISE = { silu: 0, gelu: 1, add: 2, mul: 3, gatedResidual: 4, modulate: 5 } as const;

async function elementwise(op: keyof typeof ELEMENTWISE, a: DeviceTensor, b?: DeviceTensor, c?: DeviceTensor): Promise<DeviceTensor<'f32'>> {
  const where = `vk.${op}`;
  const device = deviceOf(where, a, b, c);
  for (const [name, t] of [['a', a], ['b', b], ['c', c]] as const) if (t) requireDtype(t, ['f32'], where, name);
  // b and c broadcast over the leading dims of a: their shapes are a trailing part of a's.
  for (const [name, t] of [['b', b], ['c', c]] as const) {
    if (!t) continue;
    const tail = a.shape.slice(a.shape.length - t.shape.length);
    if (t.shape.length > a.shape.length || tail.some((d, i) => d !== t.shape[i]) || (t.numel === 0 && a.numel !== 0)) {
      throw new KernelsError('SHAPE_MISMATCH', `${where}: '${name}' [${t.shape.join(', ')}] does not broadcast to [${a.shape.join(', ')}]`, { value: t.shape, where: `${where}(${name})` });
    }
  }
  const y = device.empty('f32', a.shape);
  await device.run([{ op: 'elementwise', buffers: [a.buffer.id, (b ?? y).buffer.id, (c ?? y).buffer.id, y.buffer.id], push: words(a.numel, ELEMENTWISE[op], b?.numel ?? 1, c?.numel ?? 1) }]);
  return y;
}

export const vkSilu = (x: DeviceTensor): Promise<DeviceTensor<'f32'>> => elementwise('silu', x);
/** GELU, tanh approximation (the CPU's gelu). */
export const vkGelu = (x: DeviceTensor): Promise<DeviceTensor<'f32'>> => elementwise('gelu', x);
export const vkAdd = (a: DeviceTensor, b: DeviceTensor): Promise<DeviceTensor<'f32'>> => elementwise('add', a, b);
export const vkMul = (a: DeviceTensor, b: DeviceTensor): Promise<DeviceTensor<'f32'>> => elementwise('mul', a, b);
/** x + branch·gate, gate broadcast over branch's leading dims. */
export const vkGatedResidual = (x: DeviceTensor, branch: DeviceTensor, gate: DeviceTensor): Promise<DeviceTensor<'f32'>> => {
  if (branch.shape.length !== x.shape.length || branch.shape.some((d, i) => d !== x.shape[i])) {
    throw new KernelsError('SHAPE_MISMATCH', `vk.gatedResidual: branch [${branch.shape.join(', ')}] is not x's shape [${x.shape.join(', ')}]`, { value: branch.shape, where: 'vk.gatedResidual(branch)' });
  }
  return elementwise('gatedResidual', x, branch, gate);
};
/** x·(1 + scale) + shift, shift and scale broadcast over x's leading dims. */
export const vkModulate = (x: DeviceTensor, shift: DeviceTensor, scale: DeviceTensor): Promise<DeviceTensor<'f32'>> => elementwise('modulate', x, shift, scale);

/**
 * Split-half RoPE of x [S, H, D] on its first rotDim dims, angles (a host tensor) [S, rotDim] or
 * [S, rotDim / 2]: the CPU's ropeSplitHalf. cos / sin are rounded from double on the host, as the
 * CPU does (a shader's cos of a large angle is far less exact).
 */
export async function vkRopeSplitHalf(x: DeviceTensor, angles: Tensor, rotDim: number): Promise<DeviceTensor<'f32'>> {
  const op = 'vkRopeSplitHalf';
  const device = deviceOf(op, x);
  requireDtype(x, ['f32'], op, 'x');
  if (x.shape.length !== 3) throw new KernelsError('SHAPE_MISMATCH', `${op}: x is [${x.shape.join(', ')}], expected [S, H, D]`, { value: x.shape, where: `${op}(x)` });
  const [s, h, d] = x.shape as [number, number, number];
  if (!Number.isSafeInteger(rotDim) || rotDim < 0 || rotDim % 2 !== 0 || rotDim > d) {
    throw new KernelsError('INVALID_ARGUMENT', `${op}: rotDim ${rotDim} must be even and at most the head dim ${d}`, { value: rotDim, where: `${op}(rotDim)` });
  }
  const half = rotDim / 2;
  if (!(angles instanceof Tensor) || angles.dtype !== 'f32' || angles.shape.length !== 2 || angles.shape[0] !== s || (angles.shape[1] !== rotDim && angles.shape[1] !== half)) {
    throw new KernelsError('SHAPE_MISMATCH', `${op}: angles must be f32 [${s}, ${rotDim}] or [${s}, ${half}]`, { value: angles instanceof Tensor ? angles.shape : angles, where: `${op}(angles)` });
  }
  const width = angles.shape[1] as number;
  const a = angles.data as Float32Array;
  const cs = new Float32Array(s * half);
  const sn = new Float32Array(s * half);
  for (let i = 0; i < s; i++) {
    for (let j = 0; j < half; j++) {
      const ang = a[i * width + j] as number;
      cs[i * half + j] = Math.cos(ang);
      sn[i * half + j] = Math.sin(ang);
    }
  }
  const dcs = await device.upload(Tensor.fromArray('f32', [s, half], cs));
  const dsn = await device.upload(Tensor.fromArray('f32', [s, half], sn));
  const y = device.empty('f32', x.shape);
  try {
    await device.run([{ op: 'rope', buffers: [x.buffer.id, dcs.buffer.id, dsn.buffer.id, y.buffer.id], push: words(s, h, d, rotDim) }]);
  } finally {
    dcs.free();
    dsn.free();
  }
  return y;
}

export interface VulkanAttentionOptions {
  scale?: number;
  /** Write [S, H·D] instead of [H, S, D]. */
  mergeHeads?: boolean;
}

/** softmax(q·kᵀ·scale)·v per head, q [H, S, D], k / v [H, T, D], D ≤ 256; flash-style, O(S·D) memory. */
export async function vkAttention(q: DeviceTensor, k: DeviceTensor, v: DeviceTensor, options: VulkanAttentionOptions = {}): Promise<DeviceTensor<'f32'>> {
  const op = 'vkAttention';
  const device = deviceOf(op, q, k, v);
  for (const [name, t] of [['q', q], ['k', k], ['v', v]] as const) {
    requireDtype(t, ['f32'], op, name);
    if (t.shape.length !== 3) throw new KernelsError('SHAPE_MISMATCH', `${op}: '${name}' is [${t.shape.join(', ')}], expected rank 3`, { value: t.shape, where: `${op}(${name})` });
  }
  const [h, s, d] = q.shape as [number, number, number];
  const t = k.shape[1] as number;
  if (k.shape[0] !== h || k.shape[2] !== d) requireShape(k, [h, t, d], op, 'k');
  requireShape(v, [h, t, d], op, 'v');
  const scale = options.scale ?? (d === 0 ? 1 : 1 / Math.sqrt(d));
  if (!(typeof scale === 'number' && Number.isFinite(scale))) throw new KernelsError('INVALID_ARGUMENT', `${op}: scale must be a finite number`, { value: scale, where: `${op}(options.scale)` });
  const y = device.empty('f32', options.mergeHeads === true ? [s, h * d] : [h, s, d]);
  await device.run([{ op: 'attention', buffers: [q.buffer.id, k.buffer.id, v.buffer.id, y.buffer.id], push: words(h, s, t, d, { f: scale }, options.mergeHeads === true ? 1 : 0) }]);
  return y;
}
