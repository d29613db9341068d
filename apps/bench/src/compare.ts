/**
 * `--compare baseline.json`: a case is slower when its median time exceeds the baseline's by more
 * than the noise both runs measured (sum of their relative IQRs), so a noisy case needs a bigger
 * difference before it is flagged, and a quiet one is flagged on a small but real change.
 */
import { readFile } from 'node:fs/promises';
import { BenchError } from './error-codes.js';
import { ResultsSchema, type CaseResult, type Comparison, type Results } from './results-schema.js';

export function compareCase(current: CaseResult, baseline: CaseResult): Comparison | undefined {
  const cur = current.contenders[0]?.stats;
  const base = baseline.contenders[0]?.stats;
  if (!cur || !base || cur.median === null || base.median === null || base.median <= 0) return undefined;
  const ratio = cur.median / base.median;
  const noise = (cur.spread ?? 0) + (base.spread ?? 0);
  const verdict = ratio - 1 > noise ? 'slower' : 1 - ratio > noise ? 'faster' : 'same';
  return { baselineMedian: base.median, currentMedian: cur.median, ratio, noise, verdict };
}

/** Adds `comparison` to every current case that has a counterpart (same suite and key) in the baseline. */
export function applyBaseline(cases: CaseResult[], baseline: Results): CaseResult[] {
  const byKey = new Map(baseline.cases.map((c) => [`${c.suite}/${c.key}`, c]));
  return cases.map((c) => {
    const b = byKey.get(`${c.suite}/${c.key}`);
    const comparison = b ? compareCase(c, b) : undefined;
    return comparison ? { ...c, comparison } : c;
  });
}

export async function loadBaseline(file: string): Promise<Results> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (e) {
    throw new BenchError('BENCH_BASELINE_UNREADABLE', `cannot read baseline ${file}`, { value: file, where: '--compare', hint: 'pass a results.json written by a previous bench run', cause: e });
  }
  const parsed = ResultsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new BenchError('BENCH_BASELINE_INVALID', `baseline ${file} is not a bench results.json: ${issue?.message ?? ''}`, { value: issue?.path.join('.'), where: '--compare', hint: 'pass a results.json written by a previous bench run (schemaVersion 1)' });
  }
  return parsed.data;
}
