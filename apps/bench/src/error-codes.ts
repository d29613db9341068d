// Every error code the bench throws, with what it means; it re-throws the codes of every package
// too. tools/repo-checks fails on a code that is in no list or that nothing throws.
import type { DistorchThrownCode } from '@ninodes/distorch';
import { NinodesError, type CodedError } from '@ninodes/kernels';
import type { ModelsThrownCode } from '@ninodes/models';
import type { TpThrownCode } from '@ninodes/tp';

export const BENCH_ERROR_CODES = {
  BENCH_BAD_FLAG: 'a bench command-line flag is unknown or has a bad value',
  BENCH_UNKNOWN_SUITE: '--suite names a suite the bench does not have',
  BENCH_UNKNOWN_CASE: '--case names a case that is in none of the selected suites',
  BENCH_BASELINE_UNREADABLE: 'the --compare baseline file cannot be read',
  BENCH_BASELINE_INVALID: 'the --compare baseline is not a results.json of a bench run',
  BENCH_PEER_FAILED: 'a reference peer (a shell tool, the Python peer) failed or could not set up a case',
  BENCH_CHILD_FAILED: 'a child process of a measurement could not start or exited with an error',
  BENCH_CACHE_DROP_FAILED: 'a file could not be dropped from the page cache for a cold-cache case',
  BENCH_PEAK_METHOD_UNAVAILABLE: 'the peak-memory method asked for (GNU time) is not installed',
  BENCH_PEAK_UNMEASURED: 'the OS reported no peak memory for a measured child',
} as const;

export type BenchErrorCode = keyof typeof BENCH_ERROR_CODES;
/** What the bench may throw: its own codes and those of every package. */
export type BenchThrownCode = BenchErrorCode | ModelsThrownCode | DistorchThrownCode | TpThrownCode;

/** NinodesError for the codes the bench may throw. */
export const BenchError: CodedError<BenchThrownCode> = NinodesError;
