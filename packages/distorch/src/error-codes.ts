// Every error code distorch throws, with what it means; distorch re-throws the codes of the
// packages below it too. tools/repo-checks fails on a code that is in no list or that nothing throws.
import { NinodesError, type CodedError } from '@ninodes/kernels';
import type { QuantThrownCode } from '@ninodes/quant';

export const DISTORCH_ERROR_CODES = {
  // Allocation strings (AllocationError: the column in the string is on the error).
  ALLOC_EMPTY: 'the allocation string is empty',
  ALLOC_SYNTAX: 'an unexpected character in the allocation string',
  ALLOC_MISSING_COMMA: "an allocation entry has no ',' between device and amount",
  ALLOC_INVALID_VALUE: 'an allocation amount is not a byte size, percentage, fraction or *',
  ALLOC_NEGATIVE_VALUE: 'an allocation amount is negative',
  ALLOC_VALUE_OUT_OF_RANGE: 'an allocation percentage or fraction is outside its range',
  ALLOC_MIXED_MODES: 'an allocation string mixes bytes, ratios and fractions',
  ALLOC_DUPLICATE_DEVICE: 'a device appears twice in an allocation string',
  ALLOC_WILDCARD_TWICE: "'*' appears more than once in an allocation string",
  ALLOC_WILDCARD_IN_RATIO: "'*' (the rest of 100%) appears in a ratio allocation whose other shares exceed 100%, or after a percentage ('25%*')",
  ALLOC_RATIOS_ZERO: 'the ratios of an allocation sum to zero',
  ALLOC_UNKNOWN_DEVICE: 'an allocation names a device that is unknown or not present here',
  ALLOC_DISK_COMPUTE: "'disk' is named as the compute device",
  ALLOC_EXCEEDS_DEVICE: "an allocation gives a device more bytes than it has",
  ALLOC_INVALID_SPEC: 'a structured (JSON) allocation does not match its schema',
  // Planning and streaming.
  PLAN_INVALID: 'a placement cannot be planned from these inputs (budget, devices, layout)',
  MACHINE_DIR_INVALID: 'a recorded machine directory lacks proc/ and sys/',
  EXECUTOR_INVALID: 'the streaming executor was given an impossible budget, prefetch depth or placement',
  EXECUTOR_NOT_READY: 'a group was asked for outside its beforeGroup/afterGroup window',
  EXECUTOR_UNKNOWN_GROUP: 'the model ran a group that is not in the layout the executor was planned for',
} as const;

export type DistorchErrorCode = keyof typeof DISTORCH_ERROR_CODES;
/** What distorch may throw: its own codes and those of the packages below it. */
export type DistorchThrownCode = DistorchErrorCode | QuantThrownCode;

/** NinodesError for the codes distorch may throw. */
export const DistorchError: CodedError<DistorchThrownCode> = NinodesError;
