export { buildInfo, type BuildInfo, type SimdPath } from './build-info.js';
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
export { NinodesError, fromNativeError, isNinodesError, type CodedError, type NinodesErrorDetails } from './errors.js';
export { KERNELS_ERROR_CODES, type KernelsErrorCode } from './error-codes.js';
export { terminalSafe, terminalSafeLines } from './terminal-safe.js';
export { fsError, isSystemError, makeDirectories, openRegularFile, readSmallFile, rethrowFs } from './fs-errors.js';
export {
  HOST_TAG,
  createExclusiveFile,
  createTempDir,
  createTempFile,
  liveTemps,
  processAlive,
  registerTemp,
  releaseTemp,
  removeLiveTemps,
  removeTemp,
  sweepStaleTemps,
  tempName,
  tempOwner,
} from './temp-files.js';
export { removeTempsOnSignals } from './temp-signals.js';
export { writeFileAtomically, writeFileAtomicallySync, type WriteBytes } from './atomic-file.js';
export { isFileLock, tryLock, waitLock, type FileLock, type LockOwner } from './file-lock.js';
export { Tensor, tensorAllocations, type StorageOwner, type TensorOptions, type TensorStorage, type TypedArrayOf } from './tensor.js';
export * from './backend/index.js';
export {
  hipProbe,
  nvmlProbe,
  type HipDeviceRecord,
  type HipProbeResult,
  type NvmlDeviceRecord,
  type NvmlProbeResult,
} from './probe-gpu.js';
export { MappedFile, adviseFile, fileIdentity, mallocTrim, pageSize, type FileIdentity, type MadviseAdvice, type MapFileOptions } from './io-mmap.js';
// kernels-B: GGUF block decode, fp32 transformer ops
export { dequantize, dequantizeSync, type DequantizeOptions, type DequantizeResult, type DequantizeTarget } from './gguf-dequantize.js';
export { GGUF_QUANTIZE_TARGETS, quantizeGguf, quantizeGgufSync, type GgufQuantizeTarget } from './gguf-quantize.js';
export { GGUF_LINEAR_DTYPES, ggufLinear, ggufLinearKernel, isGgufLinearDType, type GgufLinearDType, type GgufLinearKernel, type GgufLinearOptions } from './gguf-linear.js';
export { DEQUANTIZE_SOURCES, GGML_TYPE_DTYPES, type DequantizeSource } from './gguf-dtypes.js';
export { gelu, silu, swiglu } from './ops/activations.js';
export { attention, attentionNaive, type AttentionOptions } from './ops/attention.js';
export { causalAttention, type CausalAttentionOptions } from './ops/causal-attention.js';
export { type Conv1dOptions, conv1d, convTranspose1d } from './ops/conv1d.js';
export { add, addcmul, modulate, mul, scale } from './ops/elementwise.js';
export { layerNorm, rmsNorm, softmax } from './ops/norms.js';
export { gatedResidual, qkNormRope, rmsNormModulate, type QkNormRopeOptions } from './ops/fused-elementwise.js';
export { ropeSplitHalf } from './ops/rope.js';
// kernels-A: threads, native memory, conversions, matmul, int8, Hadamard, reference backend
export { getThreads, setThreads } from './threads.js';
export { allocateNative, nativeBytes } from './native-memory.js';
export { cast, castAsync, type CastSource, type CastTarget } from './cast.js';
export { absMaxAsync, decodeFp8, encodeFp8, encodeFp8Async, type DecodeFp8Options, type EncodeFp8Options, type Fp8Format } from './fp8.js';
export { hadamard, hadamardSync, type HadamardOptions } from './hadamard.js';
export { BF16_FEW_ROWS, PackedLinearWeight, linear, packLinearWeight, packedLinearBytes, unpackLinearWeight, type LinearOptions, type LinearPrecision } from './linear.js';
export {
  dequantizeInt8Accumulators,
  int8Backend,
  int8Backends,
  int8Linear,
  int8LinearAccumulators,
  int8LinearQuantized,
  int8Matmul,
  quantizeRowsInt8,
  quantizeWeightInt8,
  quantizeWeightInt8Async,
  type Int8BackendChoice,
  type Int8BackendName,
  type Int8AccumulatorOptions,
  type Int8LinearOptions,
  type Int8LinearQuantizedOptions,
  type Int8MatmulOptions,
  type QuantizeRowsOptions,
  type QuantizeWeightOptions,
} from './int8.js';
export * as reference from './reference/index.js';
// tp: Gloo collectives
export {
  CommError,
  Communicator,
  createCommunicator,
  type CommArray,
  type CommErrorCode,
  type CommGatherArray,
  type CommStats,
  type CommStore,
  type CommunicatorOptions,
  type ReduceOp,
} from './comm.js';
// Vulkan: device listing, device tensors with explicit transfers, and the ops of a forward.
export { vulkanDeviceMemory, vulkanProbe, vulkanValidation, type VulkanDeviceRecord, type VulkanHeap, type VulkanProbeResult, type VulkanValidationReport } from './vulkan/vulkan-probe.js';
export { VulkanBuffer, VulkanDevice } from './vulkan/vulkan-device.js';
export { openVulkanDevice } from './vulkan/vulkan-backend.js';
export {
  VULKAN_LINEAR_FORMATS,
  vkAdd,
  vkAddcmul,
  vkAttention,
  vkGatedResidual,
  vkGelu,
  vkInt8Linear,
  vkInt8LinearQuantized,
  vkLayerNorm,
  vkLinear,
  vkModulate,
  vkMul,
  vkRmsNorm,
  vkRopeSplitHalf,
  vkScale,
  vkSilu,
  vkSoftmax,
  vkSwiglu,
  type VulkanAttentionOptions,
  type VulkanLinearFormat,
  type VulkanLinearOptions,
  type VulkanRmsNormOptions,
} from './vulkan/vulkan-ops.js';
export { closest } from './suggest.js';
