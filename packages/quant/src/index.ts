export { QUANT_ERROR_CODES, type QuantErrorCode, type QuantThrownCode } from './error-codes.js';
export {
  GGML_TYPE_NAMES,
  GGML_TYPE_TO_DTYPE,
  GGUF_VALUE_TYPE,
  ggmlTypeNameOf,
  ggufValueToString,
  plainGgufValue,
  type GgufPlainValue,
  type GgufArrayItems,
  type GgufValue,
  type GgufValueTypeName,
} from './gguf-types.js';
export { GgufNeedMoreBytes, parseGguf, type GgufHeader, type GgufTensorInfo, type ParseGgufOptions } from './gguf-parser.js';
export { GgufCheckpoint, readGgufHeader, type OpenGgufOptions } from './gguf-checkpoint.js';
export { buildGgufHeader, ggmlTypeIdOf, writeGguf, type GgufEntry, type WriteGgufOptions, type WriteGgufResult } from './gguf-writer.js';
export {
  CONVROT_GROUP,
  FLOAT_FORMATS,
  FP8_FORMATS,
  GGUF_FORMATS,
  INT8_FORMATS,
  WEIGHT_FORMATS,
  WEIGHT_FORMAT_INFO,
  bytesPerParameter,
  isWeightFormat,
  scaleBytes,
  weightBytes,
  weightFormatInfo,
  type FloatFormat,
  type Fp8Format,
  type Int8Format,
  type LinearPath,
  type Materialization,
  type WeightFormat,
  type WeightFormatInfo,
} from './weight-format.js';
export {
  comfyQuantConfigSchema,
  encodeComfyQuant,
  parseComfyQuantBytes,
  parseComfyQuantJson,
  quantizationMetadataSchema,
  type ComfyQuantConfig,
} from './comfy-quant-config.js';
export {
  detectFormats,
  formatHintFromFilename,
  type DetectOptions,
  type DetectedLayer,
  type DetectionSource,
  type FilenameHint,
  type FormatConflict,
  type FormatDetection,
} from './detect-formats.js';
export { Bf16Weight, type Bf16WeightOptions } from './bf16-weight.js';
export { isPreparedLinearOp, type Int8Operands, type LinearOp, type LinearProvider, type LinearShard, type LinearSpec, type PreparedLinearOp } from './linear-op.js';
export { deviceLinearProvider } from './device-linear-provider.js';
export { sequenceCounts, sequenceRows, type RowRange, type SequenceSplit } from './sequence-split.js';
export { SharedScratch } from './shared-scratch.js';
export { type LayerSlice, type ShardGeometry, shardGeometry } from './linear-shard.js';
export {
  linearResidentBytes,
  preparedKindOf,
  preparedWeight,
  preparingBytes,
  residentBytes,
  tensorResidentBytes,
  runFormatOf,
  transientBytes,
  type PreparedData,
  type PreparedKind,
  type PreparedWeight,
  type RunFormatOptions,
} from './memory-account.js';
export { createLinearProvider, createPreparedWeightCache, attentionPrecisionFor, floatPrecision, type ComputeMode, type LinearCacheOptions, type LinearProviderOptions, type QuantLinearOp, type QuantLinearProvider } from './linear-provider.js';
export { biasF32, concatRows, dequantizeInt8, materializeF32, readF32, readScalar, rowScales, toF32, weight2d } from './materialize.js';
export { FP8_MAX, absMax, fp8Scale, maxRelError, relativeError } from './quant-math.js';
export {
  QUANTIZE_TARGETS,
  quantize,
  type QuantizeOptions,
  type QuantizeProgress,
  type QuantizeReport,
  type QuantizeTarget,
  type QuantizedLayerReport,
} from './quantize.js';
export { accuracyReport, normalStream, sampleActivations, type AccuracyFormat, type AccuracyOptions, type AccuracyRow } from './accuracy-report.js';
export { randomBlockTensor } from './synthetic-blocks.js';
export { openCheckpoint } from './open-checkpoint.js';
export { checkShardRank } from './parallel-shard.js';
export { ownerOf, type FusedLayout, type GroupHooks, type LayoutGroup, type LayoutLinear, type LayoutTensor, type ModelLayout, type ParallelRole, type Shard } from './model-layout.js';
export type { WeightPatcher } from './weight-patcher.js';
export { readLoraFile, type LoraFile, type LoraKeyStyle, type LoraModule, type ReadLoraOptions } from './lora-file.js';
export { loraTargets, mapLora, type LoraDelta, type LoraMapping, type LoraTarget } from './lora-map.js';
export { LoraPatcher, type LoraApplied } from './lora-patcher.js';
export { COMPUTE_MODES, suggestFormatName } from './format-names.js';
export { MERGE_FORMATS, mergeLora, type MergeFormat, type MergeOptions, type MergeReport } from './merge-lora.js';
export { type FileKind, fileKind } from './file-kind.js';
