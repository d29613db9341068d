/** `--case`: narrows the selected suites to the named cases, so one number can be re-measured alone. */
import { BenchError } from './error-codes.js';
import type { Suite } from './suite.js';

export function selectCases(suites: readonly Suite[], names: readonly string[]): Suite[] {
  if (names.length === 0) return [...suites];
  const available = suites.flatMap((s) => s.cases.map((c) => c.name));
  for (const name of names) {
    if (!available.includes(name)) {
      throw new BenchError('BENCH_UNKNOWN_CASE', `no case named ${name} in the selected suites`, {
        value: name,
        where: '--case',
        hint: `available: ${available.join(', ')}`,
      });
    }
  }
  return suites
    .map((s) => ({ ...s, cases: s.cases.filter((c) => names.includes(c.name)) }))
    .filter((s) => s.cases.length > 0);
}
