import { show } from './arg-checks.js';
import { KernelsError } from './error-codes.js';
import { callNative } from './native-addon.js';

/**
 * Sets the intra-op thread count of the native pool and of oneDNN (OpenMP); 0 = one per core.
 * Returns the count now in effect. Hand-written kernels and the int8 path give bit-identical
 * results for any count.
 */
export function setThreads(n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > 1024) {
    throw new KernelsError('INVALID_ARGUMENT', `setThreads: ${show(n)} is not an integer in 0..1024`, { value: n, hint: '0 means one thread per core' });
  }
  return callNative('setThreads', (addon) => addon.setComputeThreads(n));
}

/** Threads the native kernels and oneDNN use now. */
export function getThreads(): number {
  return callNative('getThreads', (addon) => addon.getComputeThreads());
}
