// Every error code memory throws, with what it means; memory re-throws the codes of kernels and
// device too. tools/repo-checks fails on a code that is in no list or that nothing throws.
import type { DeviceThrownCode } from '@ninodes/device';
import { NinodesError, type CodedError } from '@ninodes/kernels';

export const MEMORY_ERROR_CODES = {
  // The safetensors header, one code per rule (safetensors-header.ts; the meanings are its messages).
  SAFETENSORS_NO_LENGTH: 'the file is shorter than the 8-byte header length',
  SAFETENSORS_HEADER_TOO_LARGE: "the header length exceeds 100,000,000 bytes (Hugging Face's MAX_HEADER_SIZE)",
  SAFETENSORS_HEADER_PAST_END: 'the header length points past the end of the file',
  SAFETENSORS_HEADER_NOT_UTF8: 'the header is not valid UTF-8',
  SAFETENSORS_HEADER_NOT_JSON: 'the header is not valid JSON',
  SAFETENSORS_HEADER_NOT_OBJECT: "the header is not a JSON object starting with '{'",
  SAFETENSORS_ENTRY_NOT_OBJECT: 'a tensor entry is not an object with exactly dtype, shape and data_offsets',
  SAFETENSORS_UNKNOWN_DTYPE: 'a tensor has a dtype safetensors does not define',
  SAFETENSORS_INVALID_SHAPE: 'a shape is not an array of non-negative integers',
  SAFETENSORS_INVALID_OFFSETS: 'data_offsets is not [begin, end] with integers 0 <= begin <= end',
  SAFETENSORS_OFFSETS_PAST_END: 'data_offsets reach past the end of the data region',
  SAFETENSORS_SIZE_MISMATCH: 'the byte length differs from elements × dtype size',
  SAFETENSORS_OVERLAP: 'two tensors share bytes',
  SAFETENSORS_HOLE: 'bytes between tensors belong to no tensor',
  SAFETENSORS_TRAILING_BYTES: 'the data region is longer than its tensors',
  SAFETENSORS_DUPLICATE_KEY: 'the header names one key twice in an object (a tensor, a field of one, or a metadata key): which one counts is undefined',
  SAFETENSORS_INVALID_METADATA: '__metadata__ is not an object of string values',
  // Sharded checkpoints and the writer.
  SAFETENSORS_INDEX_INVALID: 'a *.safetensors.index.json is not JSON of the expected form, or names a file outside its folder',
  SAFETENSORS_INDEX_MISSING_TENSOR: "the index puts a tensor in a shard that does not hold it",
  SAFETENSORS_DUPLICATE_NAME: 'a tensor name given to the writer is repeated or reserved (__metadata__)',
  SAFETENSORS_UNSUPPORTED_DTYPE: 'the writer was given a dtype safetensors cannot store',
  SAFETENSORS_WRITE_MISMATCH: "a tensor's data differs from the dtype, shape or size declared for it",
  // Checkpoints.
  TENSOR_NOT_FOUND: 'a checkpoint lacks a tensor that was asked for or that the model or format needs',
  RANGE_NOT_BLOCK_ALIGNED: 'a row or column range (a shard) would split the blocks of a block-quantized tensor',
  // Sizes, budgets and the weight cache.
  BYTE_SIZE_INVALID: "a byte size string ('2gb', '512MiB') does not parse",
  BYTE_SIZE_TOO_LARGE: 'a byte size exceeds 2^53 bytes',
  CACHE_PENDING: 'a weight still being materialized asynchronously was acquired synchronously',
  CACHE_PINNED: 'a weight in use was invalidated',
  CACHE_UNKNOWN_DEVICE: 'the weight cache has no budget for the device asked for',
  CACHE_UNKNOWN_WEIGHT: 'a weight that was never registered with the cache was asked for',
  PRESSURE_UNREADABLE: 'system memory (/proc/meminfo or the cgroup limit) cannot be read',
} as const;

export type MemoryErrorCode = keyof typeof MEMORY_ERROR_CODES;
/** What memory may throw: its own codes and those of the packages below it. */
export type MemoryThrownCode = MemoryErrorCode | DeviceThrownCode;

/** NinodesError for the codes memory may throw. */
export const MemoryError: CodedError<MemoryThrownCode> = NinodesError;
