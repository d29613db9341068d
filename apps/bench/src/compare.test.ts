import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyBaseline, compareCase, loadBaseline } from './compare.js';
import type { CaseResult } from './results-schema.js';
import { summarize } from './stats.js';

function caseWith(samples: number[], key = 'op[n=1]'): CaseResult {
  return {
    suite: 's',
    case: 'op',
    key,
    description: '',
    parameters: { n: 1 },
    work: null,
    contenders: [{ name: 'ours', kind: 'ours', status: 'ok', samples, stats: summarize(samples), throughput: [] }],
    ratios: [],
    metrics: {},
    targets: [],
    seconds: 1,
  };
}

describe('compareCase', () => {
  // Spread (IQR / median) of each sample set is 2%: quartiles at 0.99 and 1.01 times the median.
  const around = (m: number) => [0.98, 0.99, 1, 1.01, 1.02].map((f) => f * m);

  it('flags slower only beyond the combined measured noise', () => {
    const base = caseWith(around(1));
    expect(summarize(around(1)).spread).toBeCloseTo(0.02, 12);
    // 3% slower with 4% combined noise: same. 5% slower: slower. 5% faster: faster.
    expect(compareCase(caseWith(around(1.03)), base)).toMatchObject({ verdict: 'same', ratio: expect.closeTo(1.03, 12), noise: expect.closeTo(0.04, 12) });
    expect(compareCase(caseWith(around(1.05)), base)?.verdict).toBe('slower');
    expect(compareCase(caseWith(around(0.95)), base)?.verdict).toBe('faster');
  });

  it('a noisier run needs a bigger difference', () => {
    const noisy = [0.7, 0.9, 1.05, 1.2, 1.4];
    expect(compareCase(caseWith(noisy), caseWith(around(1)))?.verdict).toBe('same');
  });

  it('matches cases by suite and key, leaves unmatched ones alone', () => {
    const out = applyBaseline([caseWith(around(2)), caseWith(around(2), 'op[n=2]')], { cases: [caseWith(around(1))] } as never);
    expect(out[0]?.comparison?.verdict).toBe('slower');
    expect(out[1]?.comparison).toBeUndefined();
  });

  it('rejects a baseline that is not a results.json', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ninodes-cmp-'));
    try {
      writeFileSync(join(dir, 'bad.json'), JSON.stringify({ schemaVersion: 1, cases: 'no' }));
      await expect(loadBaseline(join(dir, 'bad.json'))).rejects.toMatchObject({ code: 'BENCH_BASELINE_INVALID' });
      await expect(loadBaseline(join(dir, 'absent.json'))).rejects.toMatchObject({ code: 'BENCH_BASELINE_UNREADABLE' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
