import type { ModelLayout } from '@ninodes/quant';
import type { Placement } from './plan-placement.js';

/** accelerate's device value: a CUDA/ROCm ordinal, or 'cpu' / 'disk' / 'mps' / 'xpu:N'. */
export type DeviceMapValue = number | string;

function value(device: string): DeviceMapValue {
  // PyTorch's ROCm builds address AMD GPUs through the cuda API, so hip:N is ordinal N too.
  const m = /^(cuda|hip):(\d+)$/.exec(device);
  return m === null ? device : Number(m[2]);
}

/**
 * The placement as a Hugging Face accelerate `device_map`: module name -> device. A group whose
 * tensors all live under `<group name>.` on one device is one entry (`"blocks.12": 0`); otherwise
 * each tensor's module (its name less the last part) gets its own entry. Names carry the layout's
 * key prefix without its trailing dot (`model.diffusion_model.blocks.12`).
 */
export function deviceMap(layout: ModelLayout, placement: Placement): Record<string, DeviceMapValue> {
  const out: Record<string, DeviceMapValue> = {};
  const prefix = layout.prefix;
  for (const g of layout.groups) {
    const devices = new Set(g.tensors.map((t) => placement.tensorDevices[t.name]));
    const under = g.tensors.every((t) => t.name.startsWith(`${prefix}${g.name}.`));
    if (devices.size === 1 && under) {
      out[`${prefix}${g.name}`] = value([...devices][0] as string);
      continue;
    }
    for (const t of g.tensors) {
      const module = t.name.slice(0, Math.max(0, t.name.lastIndexOf('.')));
      out[module] = value(placement.tensorDevices[t.name] as string);
    }
  }
  return out;
}
