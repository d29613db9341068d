import { NinodesError } from '@ninodes/kernels';
import type { DistorchErrorCode } from './error-codes.js';

/** Stable codes of every way an allocation string can be wrong. */
export const ALLOCATION_ERROR_CODES = [
  'ALLOC_EMPTY',
  'ALLOC_SYNTAX',
  'ALLOC_MISSING_COMMA',
  'ALLOC_INVALID_VALUE',
  'ALLOC_NEGATIVE_VALUE',
  'ALLOC_VALUE_OUT_OF_RANGE',
  'ALLOC_MIXED_MODES',
  'ALLOC_DUPLICATE_DEVICE',
  'ALLOC_WILDCARD_TWICE',
  'ALLOC_WILDCARD_IN_RATIO',
  'ALLOC_RATIOS_ZERO',
  'ALLOC_UNKNOWN_DEVICE',
  'ALLOC_DISK_COMPUTE',
  'ALLOC_EXCEEDS_DEVICE',
] as const satisfies readonly DistorchErrorCode[];
export type AllocationErrorCode = (typeof ALLOCATION_ERROR_CODES)[number];

/**
 * A NinodesError that also says where in the allocation string the problem is: `column` is
 * 1-based, as editors count, and the message ends with the string and a caret under that column.
 */
export class AllocationError extends NinodesError {
  declare readonly code: AllocationErrorCode;
  readonly column: number;
  readonly text: string;

  constructor(code: AllocationErrorCode, text: string, column: number, why: string, details: { value: unknown; hint: string }) {
    super(code, `${why} at column ${column} of the allocation string:\n  ${text}\n  ${' '.repeat(Math.max(0, column - 1))}^`, {
      value: details.value,
      where: `allocation column ${column}`,
      hint: details.hint,
    });
    this.column = column;
    this.text = text;
  }
}
