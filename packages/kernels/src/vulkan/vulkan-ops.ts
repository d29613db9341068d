// The ops of a DiT forward on a Vulkan device, each the counterpart of a CPU op in ../ops and
// ../linear.ts and tested against it (vulkan-ops.test.ts). Shapes are checked here, with the CPU
// ops' error codes; the native side checks every buffer against the same sizes again before it
// records anything (native/src/vulkan/ops.cc).
import { KernelsError } from '../error-codes.js';
import { Tensor } from '../tensor.js';
import { toDevice, toHost } from '../backend/transfer.js';
import { VulkanBuffer, type VulkanDevice, vulkanBufferOf } from './vulkan-device.js';

/** Weight formats the Vulkan linear reads directly (dequantized as each tile loads). */
export const VULKAN_LINEAR_FORMATS = ['f32', 'bf16', 'f8_e4m3fn', 'f8_e5m2', 'q8_0', 'q4_k'] as const;
export type VulkanLinearFormat = (typeof VULKAN_LINEAR_FORMATS)[number];

const LINEAR_SHADERS: Record<VulkanLinearFormat, string> = {
  f32: 'linear_f32',
  bf16: 'linear_bf16',
  f8_e4m3fn: 'linear_e4m3',
  f8_e5m2: 'linear_e5m2',
  q8_0: 'linear_q8_0',
  q4_k: 'linear_q4_k',
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

/** The Vulkan device of an op's first operand; every other operand must be on it (vulkanBufferOf checks). */
function deviceOf(op: string, first: Tensor): VulkanDevice {
  const buffer = first instanceof Tensor && first.storage.kind === 'device' ? first.storage.buffer : undefined;
  if (!(buffer instanceof VulkanBuffer)) {
    throw new KernelsError('DEVICE_MISMATCH', `${op}: the first operand lives on ${first instanceof Tensor ? first.device : 'no device'}, not a Vulkan device`, {
      value: first instanceof Tensor ? first.device : first,
      where: op,
      hint: "copy it first: await toDevice(t, 'vk:0')",
    });
  }
  return buffer.device;
}

/** Buffer ids of the operands, in binding order, each checked to be on `device`. */
function ids(device: VulkanDevice, op: string, operands: Record<string, Tensor>): number[] {
  return Object.entries(operands).map(([name, t]) => vulkanBufferOf(t, device, op, name).id);
}

function requireDtype(t: Tensor, dtypes: readonly string[], op: string, name: string): void {
  if (!dtypes.includes(t.dtype)) {
    throw new KernelsError('DTYPE_MISMATCH', `${op}: '${name}' is ${t.dtype}, expected ${dtypes.join(' or ')}`, { value: t.dtype, where: `${op}(${name})` });
  }
}

function requireShape(t: Tensor, shape: readonly number[], op: string, name: string): void {
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    throw new KernelsError('SHAPE_MISMATCH', `${op}: '${name}' is [${t.shape.join(', ')}], expected [${shape.join(', ')}]`, { value: t.shape, where: `${op}(${name})` });
  }
}

function lastDim(t: Tensor, op: string, name: string): number {
  if (t.shape.length === 0) throw new KernelsError('SHAPE_MISMATCH', `${op}: '${name}' is a scalar, expected at least one dimension`, { value: t.shape, where: `${op}(${name})` });
  return t.shape[t.shape.length - 1] as number;
}

export interface VulkanLinearOptions {
  /** Per-tensor weight scale of an fp8 weight (the checkpoint's `weight_scale`); default 1. */
  scale?: number;
}

/** y = x·Wᵀ (+ bias): x f32 [..., K], W [N, K] in any VulkanLinearFormat, f32 accumulation. */
export async function vkLinear(x: Tensor, w: Tensor, bias?: Tensor | null, options: VulkanLinearOptions = {}): Promise<Tensor<'f32'>> {
  const op = 'vkLinear';
  const device = deviceOf(op, x);
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
    { op: LINEAR_SHADERS[w.dtype as VulkanLinearFormat], buffers: ids(device, op, { x, w, bias: bias ?? y, y }), push: words(m, n, k, bias ? 1 : 0, { f: scale }) },
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
export async function vkInt8Linear(x: Tensor, qw: Tensor, wScale: Tensor, bias?: Tensor | null): Promise<Tensor<'f32'>> {
  const op = 'vkInt8Linear';
  const device = deviceOf(op, x);
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
  if (!device.float64) throw new KernelsError('BACKEND_UNAVAILABLE', `${op}: ${device.name} lacks shaderFloat64, which the exact activation quantizer needs`, { value: device.name, where: op, hint: 'run the int8 layers on the CPU' });
  const m = k === 0 ? 0 : x.numel / k;
  const groups = k / CONVROT_GROUP;
  const y = device.empty('f32', [...x.shape.slice(0, -1), n]);
  const rotated = device.empty('f32', [m, k]);
  const amax = device.empty('f32', [m, groups]);
  const qx = device.empty('i8', [m, k]);
  const xScale = device.empty('f32', [m]);
  try {
    await device.run([
      { op: 'int8_rotate', buffers: ids(device, op, { x, rotated, amax }), push: words(m, k) },
      { op: 'int8_quantize', buffers: ids(device, op, { rotated, amax, qx, xScale }), push: words(m, k, Math.max(groups, 1)) },
      { op: 'int8_matmul', buffers: ids(device, op, { qx, qw, xScale, wScale, bias: bias ?? y, y }), push: words(m, n, k, bias ? 1 : 0) },
    ]);
  } catch (error) {
    y.dispose();
    throw error;
  } finally {
    rotated.dispose();
    amax.dispose();
    qx.dispose();
    xScale.dispose();
  }
  return y;
}

/**
 * int8LinearQuantized on the device: rows already quantized (qx [M, K] i8, xScale [M] or [M, 1]),
 * y = float(qx·qwᵀ)·(x_scale·w_scale) + bias in int32, then f32 without fused multiply-add.
 */
export async function vkInt8LinearQuantized(qx: Tensor, xScale: Tensor, qw: Tensor, wScale: Tensor, bias?: Tensor | null): Promise<Tensor<'f32'>> {
  const op = 'vkInt8LinearQuantized';
  const device = deviceOf(op, qx);
  requireDtype(qx, ['i8'], op, 'qx');
  requireDtype(qw, ['i8'], op, 'qw');
  if (qw.shape.length !== 2) throw new KernelsError('SHAPE_MISMATCH', `${op}: the weight is [${qw.shape.join(', ')}], expected [N, K]`, { value: qw.shape, where: `${op}(qw)` });
  const [n, k] = qw.shape as [number, number];
  if (lastDim(qx, op, 'qx') !== k) throw new KernelsError('SHAPE_MISMATCH', `${op}: qx's last dim ${lastDim(qx, op, 'qx')} is not the weight's K = ${k}`, { value: qx.shape, where: `${op}(qx)` });
  const m = k === 0 ? 0 : qx.numel / k;
  requireDtype(xScale, ['f32'], op, 'xScale');
  requireDtype(wScale, ['f32'], op, 'wScale');
  if (xScale.numel !== m) throw new KernelsError('SHAPE_MISMATCH', `${op}: xScale has ${xScale.numel} values for ${m} rows`, { value: xScale.shape, where: `${op}(xScale)` });
  if (wScale.numel !== n) throw new KernelsError('SHAPE_MISMATCH', `${op}: wScale has ${wScale.numel} values for ${n} rows`, { value: wScale.shape, where: `${op}(wScale)` });
  if (bias) {
    requireDtype(bias, ['f32'], op, 'bias');
    requireShape(bias, [n], op, 'bias');
  }
  const y = device.empty('f32', [...qx.shape.slice(0, -1), n]);
  await device.run([{ op: 'int8_matmul', buffers: ids(device, op, { qx, qw, xScale, wScale, bias: bias ?? y, y }), push: words(m, n, k, bias ? 1 : 0) }]);
  return y;
}

export interface VulkanRmsNormOptions {
  weight?: Tensor | null;
  eps?: number;
  /** Then x·(1 + scale) + shift, shift and scale [D]: rmsNormModulate. */
  modulate?: { shift: Tensor; scale: Tensor };
}

/** RMSNorm over the last dim (rmsNorm / rmsNormModulate). */
export async function vkRmsNorm(x: Tensor, options: VulkanRmsNormOptions = {}): Promise<Tensor<'f32'>> {
  const op = 'vkRmsNorm';
  const { weight, modulate } = options;
  const device = deviceOf(op, x);
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
  await device.run([
    {
      op: 'row_ops',
      buffers: ids(device, op, { x, weight: weight ?? y, shift: modulate?.shift ?? y, scale: modulate?.scale ?? y, y }),
      push: words(rows, dim, flags, { f: eps }),
    },
  ]);
  return y;
}

/** LayerNorm over the last dim, two-pass (biased variance): (x - mean) / sqrt(var + eps) · weight + bias. */
export async function vkLayerNorm(x: Tensor, weight?: Tensor | null, bias?: Tensor | null, eps = 1e-5): Promise<Tensor<'f32'>> {
  return rowOp('vkLayerNorm', 4, x, weight ?? null, bias ?? null, eps);
}

/** Softmax over the last dim. */
export async function vkSoftmax(x: Tensor): Promise<Tensor<'f32'>> {
  return rowOp('vkSoftmax', 8, x, null, null, 0);
}

async function rowOp(op: string, kind: number, x: Tensor, weight: Tensor | null, bias: Tensor | null, eps: number): Promise<Tensor<'f32'>> {
  const device = deviceOf(op, x);
  requireDtype(x, ['f32'], op, 'x');
  const dim = lastDim(x, op, 'x');
  for (const [name, t] of [['weight', weight], ['bias', bias]] as const) {
    if (t) {
      requireDtype(t, ['f32'], op, name);
      requireShape(t, [dim], op, name);
    }
  }
  if (!(typeof eps === 'number' && Number.isFinite(eps))) throw new KernelsError('INVALID_ARGUMENT', `${op}: eps must be a finite number`, { value: eps, where: `${op}(eps)` });
  const y = device.empty('f32', x.shape);
  const rows = dim === 0 ? 0 : x.numel / dim;
  const flags = kind | (weight ? 1 : 0) | (bias ? 2 : 0);
  await device.run([{ op: 'row_ops', buffers: ids(device, op, { x, weight: weight ?? y, bias: bias ?? y, unused: y, y }), push: words(rows, dim, flags, { f: eps }) }]);
  return y;
}

const ELEMENTWISE = { silu: 0, gelu: 1, add: 2, mul: 3, gatedResidual: 4, modulate: 5, scale: 6 } as const;

async function elementwise(op: keyof typeof ELEMENTWISE, a: Tensor, b?: Tensor, c?: Tensor, s = 0): Promise<Tensor<'f32'>> {
  const where = `vk.${op}`;
  const device = deviceOf(where, a);
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
  await device.run([{ op: 'elementwise', buffers: ids(device, where, { a, b: b ?? y, c: c ?? y, y }), push: words(a.numel, ELEMENTWISE[op], b?.numel ?? 1, c?.numel ?? 1, { f: s }) }]);
  return y;
}

export const vkSilu = (x: Tensor): Promise<Tensor<'f32'>> => elementwise('silu', x);
/** GELU, tanh approximation (the CPU's gelu). */
export const vkGelu = (x: Tensor): Promise<Tensor<'f32'>> => elementwise('gelu', x);
export const vkAdd = (a: Tensor, b: Tensor): Promise<Tensor<'f32'>> => elementwise('add', a, b);
export const vkMul = (a: Tensor, b: Tensor): Promise<Tensor<'f32'>> => elementwise('mul', a, b);
/** x + branch·gate, gate broadcast over branch's leading dims. */
export const vkGatedResidual = (x: Tensor, branch: Tensor, gate: Tensor): Promise<Tensor<'f32'>> => {
  if (branch.shape.length !== x.shape.length || branch.shape.some((d, i) => d !== x.shape[i])) {
    throw new KernelsError('SHAPE_MISMATCH', `vk.gatedResidual: branch [${branch.shape.join(', ')}] is not x's shape [${x.shape.join(', ')}]`, { value: branch.shape, where: 'vk.gatedResidual(branch)' });
  }
  return elementwise('gatedResidual', x, branch, gate);
};
/** x + a·b, a and b broadcast over x's leading dims (addcmul). */
export const vkAddcmul = (x: Tensor, a: Tensor, b: Tensor): Promise<Tensor<'f32'>> => elementwise('gatedResidual', x, a, b);
/** x·s. */
export const vkScale = (x: Tensor, s: number): Promise<Tensor<'f32'>> => {
  if (!(typeof s === 'number' && Number.isFinite(s))) throw new KernelsError('INVALID_ARGUMENT', 'vk.scale: s must be a finite number', { value: s, where: 'vk.scale(s)' });
  return elementwise('scale', x, undefined, undefined, s);
};

/** SwiGLU over the last dim: x [..., 2F] as [gate | up] -> silu(gate)·up [..., F]. */
export async function vkSwiglu(x: Tensor): Promise<Tensor<'f32'>> {
  const op = 'vkSwiglu';
  const device = deviceOf(op, x);
  requireDtype(x, ['f32'], op, 'x');
  const width = lastDim(x, op, 'x');
  if (width % 2 !== 0) throw new KernelsError('SHAPE_MISMATCH', `${op}: the last dim ${width} is not even ([gate | up])`, { value: x.shape, where: `${op}(x)` });
  const f = width / 2;
  const y = device.empty('f32', [...x.shape.slice(0, -1), f]);
  if (y.numel > 0) await device.run([{ op: 'elementwise', buffers: ids(device, op, { x, b: y, c: y, y }), push: words(y.numel, 7, f, 1, { f: 0 }) }]);
  return y;
}

/** x·(1 + scale) + shift, shift and scale broadcast over x's leading dims. */
export const vkModulate = (x: Tensor, shift: Tensor, scale: Tensor): Promise<Tensor<'f32'>> => elementwise('modulate', x, shift, scale);

/**
 * Split-half RoPE of x [S, H, D] on its first rotDim dims, angles [S, rotDim] or [S, rotDim / 2]
 * (on the host or the device): the CPU's ropeSplitHalf. cos / sin are rounded from double on the
 * host, as the CPU does (a shader's cos of a large angle is far less exact).
 */
export async function vkRopeSplitHalf(x: Tensor, angles: Tensor, rotDim: number): Promise<Tensor<'f32'>> {
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
  const a = (await toHost(angles)).data as Float32Array;
  const cs = new Float32Array(s * half);
  const sn = new Float32Array(s * half);
  for (let i = 0; i < s; i++) {
    for (let j = 0; j < half; j++) {
      const ang = a[i * width + j] as number;
      cs[i * half + j] = Math.cos(ang);
      sn[i * half + j] = Math.sin(ang);
    }
  }
  const dcs = await toDevice(Tensor.fromArray('f32', [s, half], cs), device.name);
  const dsn = await toDevice(Tensor.fromArray('f32', [s, half], sn), device.name);
  const y = device.empty('f32', x.shape);
  try {
    await device.run([{ op: 'rope', buffers: ids(device, op, { x, cos: dcs, sin: dsn, y }), push: words(s, h, d, rotDim) }]);
  } finally {
    dcs.dispose();
    dsn.dispose();
  }
  return y;
}

export interface VulkanAttentionOptions {
  scale?: number;
  /** Write [S, H·D] instead of [H, S, D]. */
  mergeHeads?: boolean;
}

/** softmax(q·kᵀ·scale)·v per head, q [H, S, D], k / v [H, T, D], D ≤ 256; flash-style, O(S·D) memory. */
export async function vkAttention(q: Tensor, k: Tensor, v: Tensor, options: VulkanAttentionOptions = {}): Promise<Tensor<'f32'>> {
  const op = 'vkAttention';
  const device = deviceOf(op, q);
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
  await device.run([{ op: 'attention', buffers: ids(device, op, { q, k, v, y }), push: words(h, s, t, d, { f: scale }, options.mergeHeads === true ? 1 : 0) }]);
  return y;
}
