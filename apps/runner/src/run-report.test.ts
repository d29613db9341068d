import { describe, expect, it } from 'vitest';
import { steadyStepMean } from './run-report.js';

describe('steadyStepMean', () => {
  it('drops the first and last step', () => {
    expect(steadyStepMean([10, 1, 2, 3, 20])).toBe(2);
  });
  it('uses every step when there are fewer than three', () => {
    expect(steadyStepMean([4, 6])).toBe(5);
    expect(steadyStepMean([])).toBe(0);
  });
});
