import { describe, expect, it } from 'vitest';
import { steadyStepMean } from './run-report.js';

describe('steadyStepMean', () => {
  it('drops the first and last step', () => {
    expect(steadyStepMean([10, 1, 2, 3, 20])).toBe(2);
  });
  it('never counts the warm-up step of a run of two, and uses the only step of a run of one', () => {
    expect(steadyStepMean([4, 6])).toBe(6);
    expect(steadyStepMean([7])).toBe(7);
    expect(steadyStepMean([])).toBe(0);
  });
});
