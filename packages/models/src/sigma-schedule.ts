import { NinodesError } from '@ninodes/kernels';

/**
 * Flow-matching sigmas of H3's sampler: s_i = 1 − i/N for i = 0..N, then the time shift
 * sigma_i = shift·s_i / (1 + (shift − 1)·s_i). Returns N + 1 values from 1 down to 0.
 */
export function flowSigmas(steps: number, shift: number): Float64Array {
  if (!Number.isSafeInteger(steps) || steps < 1) {
    throw new NinodesError('INVALID_ARGUMENT', `steps must be a positive integer, got ${String(steps)}`, { value: steps, where: 'steps', hint: 'use 1 or more steps (default 8)' });
  }
  if (!Number.isFinite(shift) || shift <= 0) {
    throw new NinodesError('INVALID_ARGUMENT', `shift must be a positive number, got ${String(shift)}`, { value: shift, where: 'shift', hint: 'H3 uses shift 12' });
  }
  const out = new Float64Array(steps + 1);
  for (let i = 0; i <= steps; i++) {
    const s = 1 - i / steps;
    out[i] = (shift * s) / (1 + (shift - 1) * s);
  }
  return out;
}
