// Every error code tp throws, with what it means; tp re-throws the codes of the packages below it
// too (the shard checks: quant's SHARD_NOT_DIVISIBLE, SHARD_NOT_GROUP_ALIGNED, memory's
// RANGE_NOT_BLOCK_ALIGNED). tools/repo-checks fails on a code that is in no list or that nothing throws.
import { NinodesError, type CodedError } from '@ninodes/kernels';
import type { QuantThrownCode } from '@ninodes/quant';

export const TP_ERROR_CODES = {
  LAYER_NOT_IN_PLAN: 'a linear was asked for that the layout the sharding plan was made from does not have',
  SHARD_COMM_MISMATCH: "a plan's or shard's rank and world size differ from the communicator's",
} as const;

export type TpErrorCode = keyof typeof TP_ERROR_CODES;
/** What tp may throw: its own codes and those of the packages below it. */
export type TpThrownCode = TpErrorCode | QuantThrownCode;

/** NinodesError for the codes tp may throw. */
export const TpError: CodedError<TpThrownCode> = NinodesError;
