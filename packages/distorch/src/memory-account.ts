import { isBlockDType } from '@ninodes/kernels';
import { type ComputeMode, type LayoutLinear, type LayoutTensor, type RunFormatOptions, preparedKindOf, preparingBytes, runFormatOf, tensorResidentBytes } from '@ninodes/quant';

/**
 * Bytes one tensor of a group occupies once prepared for compute. The planner sums it per device,
 * so its totals are what a run holds. `owner` is the linear the tensor belongs to (its weight,
 * bias or a sidecar such as weight_scale), undefined for norms and buffers.
 */
export type TensorAccount = (tensor: LayoutTensor, owner: LayoutLinear | undefined) => number;

/** The bytes as stored in the file: what a streamed group costs to read. */
export const storedBytesAccount: TensorAccount = (tensor) => tensor.byteLength;

/** quant's memory account (tensorResidentBytes) for a run in `compute` mode, as a TensorAccount. */
export function computeAccount(compute: ComputeMode, options: RunFormatOptions = {}): TensorAccount {
  return (tensor, owner) => tensorResidentBytes(tensor, owner, compute, options);
}

/**
 * What a tensor holds while its group is being loaded for a run in `compute` mode, at most (the
 * planner's staging reserve; opGroupLoader's footprint counts the same): a weight that converts
 * (or is stored as GGUF blocks that decode to f32, see decodesBlocks) is read into a buffer of its stored bytes and prepared beside it,
 * holding quant's residentBytes + preparingBytes (the f32 intermediate); anything else holds what
 * computeAccount says.
 */
export function computeLoadAccount(compute: ComputeMode, options: RunFormatOptions = {}): TensorAccount {
  const prepared = computeAccount(compute, options);
  return (tensor, owner) => {
    if (owner === undefined || tensor.name.slice(owner.name.length + 1) !== 'weight') return prepared(tensor, owner);
    const mode = owner.fp32Island ? 'auto' : compute;
    const shape = [owner.outFeatures, owner.inFeatures];
    const converts = runFormatOf(owner.storedFormat, mode, owner.inFeatures, options) !== owner.storedFormat || decodesBlocks(tensor.dtype);
    return prepared(tensor, owner) + (converts ? tensor.byteLength + preparingBytes(owner.storedFormat, mode, shape, options) : 0);
  };
}

/**
 * A GGUF block type that runs as f32 even as stored (no integer kernel: q4_1, q2_k, iq4_xs...);
 * q8_0 / q4_0 / q4_k / q5_k / q6_k stay as stored and are multiplied where they are.
 */
export function decodesBlocks(dtype: string): boolean {
  return isBlockDType(dtype) && preparedKindOf(dtype) === 'f32';
}
