export { buildInfo, type BuildInfo } from './build-info.js';
export {
  BLOCK_DTYPES,
  DTYPES,
  ELEMENT_DTYPES,
  assertDType,
  byteSizeOf,
  isBlockDType,
  isDType,
  isElementDType,
  numelOf,
  type BlockDType,
  type DType,
  type ElementDType,
} from './dtype.js';
export { NinodesError, fromNativeError, isNinodesError, type NinodesErrorDetails } from './errors.js';
export { Tensor, type StorageOwner, type TensorOptions, type TypedArrayOf } from './tensor.js';
export {
  hipProbe,
  nvmlProbe,
  type HipDeviceRecord,
  type HipProbeResult,
  type NvmlDeviceRecord,
  type NvmlProbeResult,
} from './probe-gpu.js';
export { MappedFile, fileIdentity, mallocTrim, pageSize, type FileIdentity, type MadviseAdvice, type MapFileOptions } from './io-mmap.js';
