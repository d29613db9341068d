// The Vulkan backend of the compute-device seam: which seam ops a Vulkan device runs (the vk*
// functions of vulkan-ops.ts) and on which operands, and the one way to open and register vk:N.
import type { Backend } from '../backend/backend.js';
import { type BackendOps, type OpArgs, type OpName, asksBf16Units } from '../backend/ops.js';
import { listDevices, registerDevice } from '../backend/registry.js';
import { KernelsError } from '../error-codes.js';
import { VulkanDevice } from './vulkan-device.js';
import { vkAdd, vkAddcmul, vkAttention, vkGelu, vkInt8LinearQuantized, vkLayerNorm, vkLinear, vkModulate, vkMul, vkRmsNorm, vkRopeSplitHalf, vkScale, vkSilu, vkSoftmax, vkSwiglu } from './vulkan-ops.js';

/** The longest head the attention shader holds (its per-invocation accumulators). */
const MAX_HEAD_DIM = 256;

const VULKAN_OPS: BackendOps = {
  add: (a, b) => vkAdd(a, b),
  mul: (a, b) => vkMul(a, b),
  addcmul: (x, a, b) => vkAddcmul(x, a, b),
  modulate: (x, shift, scale) => vkModulate(x, shift, scale),
  scale: (x, s) => vkScale(x, s),
  swiglu: (x) => vkSwiglu(x),
  layerNorm: (x, weight, bias, eps) => vkLayerNorm(x, weight, bias, eps ?? 1e-5),
  softmax: (x) => vkSoftmax(x),
  silu: (x) => vkSilu(x),
  gelu: (x) => vkGelu(x),
  rmsNorm: (x, weight, eps) => vkRmsNorm(x, { weight: weight ?? null, eps: eps ?? 1e-6 }),
  ropeSplitHalf: (x, angles, rotDim) => vkRopeSplitHalf(x, angles, rotDim),
  attention: (q, k, v, opts) => vkAttention(q, k, v, { ...(opts?.scale === undefined ? {} : { scale: opts.scale }), mergeHeads: opts?.mergeHeads === true }),
  linear: (x, w, bias) => vkLinear(x, w, bias ?? null),
  int8LinearQuantized: (qx, xScale, qw, wScale, options) => vkInt8LinearQuantized(qx, xScale, qw, wScale, options?.bias ?? null),
};

/** Whether vk runs `op` on these operands: bf16 multiply precision (a CPU's bf16 units) and heads past 256 it does not. */
function supportsOp<K extends OpName>(op: K, args: OpArgs<K>): boolean {
  if (VULKAN_OPS[op] === undefined || asksBf16Units(op, args)) return false;
  if (op === 'attention') return ((args as OpArgs<'attention'>)[0].shape[2] ?? 0) <= MAX_HEAD_DIM;
  return true;
}

function vulkanBackend(device: VulkanDevice): Backend {
  return {
    name: device.name,
    device,
    ops: VULKAN_OPS,
    supportsOp,
    // Weights are kept as the shaders read them: f32 4 B, bf16 2 B, int8 1 B + an f32 scale per row, fp8 1 B.
    preparedWeightBytes: (w) => {
      const [n, k] = w.shape;
      return w.kind === 'f32' ? 4 * n * k : w.kind === 'bf16' ? 2 * n * k : w.kind === 'int8' ? n * k + 4 * n : n * k;
    },
    // An op's promise resolves after its submission has finished on the device.
    synchronize: async () => {},
  };
}

const opened = new Map<number, VulkanDevice>();

/**
 * Opens vk:`index` (once per process) and registers it as the compute device 'vk:N', so
 * `toDevice(t, 'vk:N')`, `toHost` and `runOp` reach it. VULKAN_UNAVAILABLE where no loader or
 * driver is usable, VULKAN_DEVICE_NOT_FOUND for an index past the devices present.
 */
export function openVulkanDevice(index = 0): VulkanDevice {
  if (!Number.isSafeInteger(index) || index < 0) {
    throw new KernelsError('INVALID_ARGUMENT', `a Vulkan device index must be a non-negative integer, not ${String(index)}`, { value: index, where: 'openVulkanDevice' });
  }
  let device = opened.get(index);
  if (device === undefined) {
    device = new VulkanDevice(index, vulkanBackend);
    opened.set(index, device);
  }
  if (!listDevices().includes(device)) registerDevice(device);
  return device;
}
