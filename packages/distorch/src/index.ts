export { DISTORCH_ERROR_CODES, type DistorchErrorCode, type DistorchThrownCode } from './error-codes.js';
export { ALLOCATION_ERROR_CODES, AllocationError, type AllocationErrorCode } from './allocation-error.js';
export { allocationSpecSchema, validateAllocationSpec, type AllocationMode, type AllocationSpec, type ExpertSpec } from './allocation-spec.js';
export { tokenize, type Token, type TokenKind } from './allocation-tokens.js';
export { parseAllocation, type DeviceCapacity, type ParseAllocationOptions, type ParsedAllocation } from './parse-allocation.js';
export { formatAllocation, formatAllocationBytes, plainDecimal } from './format-allocation.js';
export { computeAccount, computeLoadAccount, storedBytesAccount, type TensorAccount } from './memory-account.js';
export { estimateActivationBytes, latentTokens, type LatentSize } from './activation-estimate.js';
export { machineDevices } from './machine-devices.js';
export {
  computeDeviceBytes,
  planPlacement,
  type DevicePlacement,
  type FillOrder,
  type GroupPlacement,
  type Placement,
  type PlanDevice,
  type PlanOptions,
} from './plan-placement.js';
export { deviceMap, type DeviceMapValue } from './device-map.js';
export { formatPlacement } from './format-placement.js';
export {
  StreamingExecutor,
  type GroupFootprint,
  type GroupLoader,
  type LoadOptions,
  type LoadedGroup,
  type ResidentProbe,
  type StepStats,
  type StreamingExecutorOptions,
} from './streaming-executor.js';
export { fileGroupLoader, type FileGroupLoader, type LoadedTensor } from './file-group-loader.js';
export { opGroupLoader, type OpGroupLoader, type OpGroupLoaderOptions, type PreparableOp } from './op-group-loader.js';
export { StagedSource } from './staged-source.js';
