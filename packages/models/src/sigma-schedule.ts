import { ModelsError } from './error-codes.js';

/**
 * Flow-matching sigmas of H3's sampler: s_i = 1 − i/N for i = 0..N, then the time shift
 * sigma_i = shift·s_i / (1 + (shift − 1)·s_i). Returns N + 1 values from 1 down to 0.
 */
export function flowSigmas(steps: number, shift: number): Float64Array {
  if (!Number.isSafeInteger(steps) || steps < 1) {
    throw new ModelsError('INVALID_ARGUMENT', `steps must be a positive integer, got ${String(steps)}`, { value: steps, where: 'steps', hint: 'use 1 or more steps (default 8)' });
  }
  if (!Number.isFinite(shift) || shift <= 0) {
    throw new ModelsError('INVALID_ARGUMENT', `shift must be a positive number, got ${String(shift)}`, { value: shift, where: 'shift', hint: 'H3 uses shift 12' });
  }
  // A shift so large (or small) that every step but one sits at sigma ~1 (or ~0) gives pure noise
  // (or one jump) without any error: refuse it. The limit is where the first interior sigma passes
  // 0.999 (the last one drops below 0.001): shift in [1/(999(N-1)), 999(N-1)] for N steps.
  if (steps >= 2) {
    const max = 999 * (steps - 1);
    const min = 1 / max;
    if (shift > max || shift < min) {
      throw new ModelsError('SHIFT_OUT_OF_RANGE', `shift ${String(shift)} collapses the ${steps}-step schedule (every step at one noise level)`, {
        value: shift,
        where: 'shift',
        hint: `for ${steps} steps use a shift between ${min.toPrecision(3)} and ${max}; H3 uses 12`,
      });
    }
  }
  const out = new Float64Array(steps + 1);
  for (let i = 0; i <= steps; i++) {
    const s = 1 - i / steps;
    out[i] = (shift * s) / (1 + (shift - 1) * s);
  }
  return out;
}
