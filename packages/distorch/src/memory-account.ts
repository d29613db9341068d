import type { LayoutGroup, LayoutLinear, LayoutTensor } from '@ninodes/quant';

/**
 * Bytes one tensor of a group occupies once prepared for compute. The planner sums it per device,
 * so its totals are what a run holds. `owner` is the linear the tensor belongs to (its weight,
 * bias or a sidecar such as weight_scale), undefined for norms and buffers.
 */
export type TensorAccount = (tensor: LayoutTensor, owner: LayoutLinear | undefined) => number;

/**
 * The account of the bytes as stored in the file: right for a run that computes in the stored
 * format (f32 as f32, int8 as int8). Swap in the compute-format account when the run converts.
 */
export const storedBytesAccount: TensorAccount = (tensor) => tensor.byteLength;

/** The linear a tensor belongs to (`<linear>.weight`, `<linear>.bias`, `<linear>.weight_scale` ...). */
export function ownerOf(group: LayoutGroup, tensor: LayoutTensor, prefix = ''): LayoutLinear | undefined {
  for (const l of group.linears) {
    const base = `${prefix}${l.name}.`;
    if (tensor.name.startsWith(base) && !tensor.name.slice(base.length).includes('.')) return l;
  }
  return undefined;
}
