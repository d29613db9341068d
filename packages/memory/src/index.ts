export type { CheckpointSource, TensorEntry } from './checkpoint-source.js';
export { copyColumnRange, readColumnRange, rowRangeSpan, viewRowRange } from './tensor-ranges.js';
export { formatByteSize, parseByteSize } from './byte-size.js';
export {
  parseKbTable,
  processMemory,
  processMemoryFrom,
  residentMemory,
  residentMemoryFrom,
  systemMemory,
  type ProcessMemory,
  type ResidentMemory,
  type SystemMemory,
} from './process-memory.js';
export { SAFETENSORS_DTYPES, isSafetensorsDType, safetensorsDTypeOf, type SafetensorsDType } from './safetensors-dtype.js';
export { MAX_HEADER_BYTES, SAFETENSORS_ERRORS, parseHeader, readHeaderLength, type SafetensorsErrorCode, type SafetensorsHeader } from './safetensors-header.js';
export { SafetensorsFile, type OpenSafetensorsOptions } from './safetensors-file.js';
export { ShardedSafetensors, openSafetensors } from './sharded-safetensors.js';
export { buildHeader, tensorSources, writeSafetensors, type TensorSource, type WriteSafetensorsOptions, type WriteSafetensorsResult } from './safetensors-writer.js';
export { TINY_WEIGHT_BYTES, WeightCache, type CacheStats, type Lease, type LeaseKind, type WeightCacheOptions, type WeightDescriptor } from './weight-cache.js';
export { HostBufferPool, type HostBufferPoolStats, type PooledBuffer } from './host-buffer-pool.js';
export { MemoryPressureMonitor, shrinkCacheOnPressure, type MemoryPressureOptions, type PressureReading } from './memory-pressure.js';
export { mallocTrim } from '@ninodes/kernels';
export { cachePass, patternBytes, patternTensors, readAllTensors, registerCheckpoint, writeFilledCheckpoint, writeSparseCheckpoint, type TensorSpec } from './checkpoint-workload.js';
