export type { CheckpointSource, TensorEntry } from './checkpoint-source.js';
export { formatByteSize, parseByteSize } from './byte-size.js';
export { parseKbTable, processMemory, processMemoryFrom, systemMemory, type ProcessMemory, type SystemMemory } from './process-memory.js';
export { SAFETENSORS_DTYPES, isSafetensorsDType, safetensorsDTypeOf, type SafetensorsDType } from './safetensors-dtype.js';
export { MAX_HEADER_BYTES, SAFETENSORS_ERRORS, parseHeader, readHeaderLength, type SafetensorsErrorCode, type SafetensorsHeader } from './safetensors-header.js';
export { SafetensorsFile, type OpenSafetensorsOptions } from './safetensors-file.js';
export { ShardedSafetensors, openSafetensors } from './sharded-safetensors.js';
export { buildHeader, tensorSources, writeSafetensors, type TensorSource, type WriteSafetensorsOptions, type WriteSafetensorsResult } from './safetensors-writer.js';
