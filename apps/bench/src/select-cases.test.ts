import { describe, expect, it } from 'vitest';
import { selectCases } from './select-cases.js';
import type { Suite } from './suite.js';

const suite = (name: string, cases: string[]): Suite =>
  ({ name, description: name, cases: cases.map((c) => ({ name: c, description: c, params: { full: [{}], quick: [{}] }, setup: () => ({ run: () => undefined }) })) }) as unknown as Suite;

describe('selectCases', () => {
  const suites = [suite('kernels', ['linear_f32', 'linear_int8', 'hadamard']), suite('io', ['open'])];

  it('keeps every case when no names are given', () => {
    expect(selectCases(suites, [])).toEqual(suites);
  });

  it('keeps only the named cases and drops suites left empty', () => {
    const out = selectCases(suites, ['linear_int8']);
    expect(out.map((s) => [s.name, s.cases.map((c) => c.name)])).toEqual([['kernels', ['linear_int8']]]);
  });

  it('rejects a name no selected suite has, listing the available ones', () => {
    expect(() => selectCases(suites, ['linear_fp8'])).toThrow(expect.objectContaining({ code: 'BENCH_UNKNOWN_CASE', value: 'linear_fp8', where: '--case' }));
    expect(() => selectCases([suites[1] as Suite], ['hadamard'])).toThrow(expect.objectContaining({ hint: 'available: open' }));
  });
});
