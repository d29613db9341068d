/**
 * End to end through a test-only suite: real timing (no timing assertions, only consistency of what
 * is reported with the samples), a real child for peak memory, a missing peer, a broken case, the
 * three outputs, --compare, and the report opened in headless Chromium.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NinodesError } from '@ninodes/kernels';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCharts } from './charts.js';
import { compareCase } from './compare.js';
import { ResultsSchema, type Results } from './results-schema.js';
import { runBench, type BenchOutcome } from './run-bench.js';
import type { Params, Suite } from './suite.js';

/** Deterministic data (an LCG) so error metrics are reproducible. */
function lcgArray(n: number, seed = 1): Float64Array {
  const a = new Float64Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    // Values of many magnitudes, so a naive float64 sum really rounds.
    a[i] = Math.tan(s) * (1 + (i % 7));
  }
  return a;
}

function naiveSum(a: Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] as number;
  return s;
}

/** Neumaier-compensated sum: the reference the naive sum's error is measured against. */
function compensatedSum(a: Float64Array): number {
  let s = 0;
  let c = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const t = s + x;
    c += Math.abs(s) >= Math.abs(x) ? s - t + x : x - t + s;
    s = t;
  }
  return s + c;
}

const testSuite: Suite = {
  name: 'toy',
  description: 'Test-only suite: summing a Float64Array against memcpy, Array.reduce and an absent peer.',
  cases: [
    {
      name: 'sum_f64',
      description: 'naive float64 sum',
      params: { full: [{ n: 1 << 16 }], quick: [{ n: 4096 }, { n: 100_003 }] },
      work: (p) => ({ bytes: (p.n as number) * 8, flops: p.n as number }),
      targets: [
        { source: 'test issue', description: 'no slower than 1000x memcpy', on: { ratio: 'memcpy' }, op: '<=', value: 1000 },
        { source: 'test issue', description: 'error at most 1e-6 on the large size', on: { metric: 'abs_error' }, op: '<=', value: 1e-6, when: { n: 100_003 } },
        { source: 'test issue', description: 'against a peer that is not installed', on: { ratio: 'absent' }, op: '<=', value: 1 },
      ],
      setup: async (p: Params, ctx) => {
        const a = lcgArray(p.n as number);
        return {
          run: () => naiveSum(a),
          against: {
            memcpy: { kind: 'bound', contender: ctx.peers.memcpy((p.n as number) * 8) },
            reduce: { kind: 'baseline', contender: { run: () => a.reduce((x, y) => x + y, 0) } },
            absent: { kind: 'peer', contender: { missing: 'test: this peer is never installed' } },
            crashing: { kind: 'peer', contender: { time: async () => Promise.reject(new NinodesError('TEST_PEER_CRASH', 'peer crashed')) } },
            torch: { kind: 'peer', contender: await ctx.peers.python('torch.linear', { m: 8, n: 8, k: 8, threads: 1 }) },
          },
          metrics: () => ({ abs_error: { value: Math.abs(naiveSum(a) - compensatedSum(a)), unit: 'abs', better: 'lower' } }),
        };
      },
    },
    {
      name: 'step',
      description: 'a model step stand-in, with peak memory of a child',
      params: { full: [], quick: [{ model: 'tiny', format: 'f32' }, { model: 'tiny', format: 'int8' }] },
      setup: (p, ctx) => {
        const mib = p.format === 'f32' ? 64 : 16;
        return {
          run: async () => naiveSum(lcgArray(2000)),
          metrics: async () => {
            const r = await ctx.peakMemoryOfScript(`import { buildInfo } from '@ninodes/kernels';\nbuildInfo();\nBuffer.alloc(${mib} << 20, 1);`);
            return { peak_rss: { value: r.peakBytes, unit: 'bytes', better: 'lower' } };
          },
        };
      },
    },
    {
      name: 'leaky',
      description: 'a case whose dispose throws',
      params: { full: [], quick: [{ n: 2 }] },
      setup: () => ({
        run: () => naiveSum(lcgArray(64)),
        dispose: () => {
          throw new NinodesError('TEST_LEAK', 'could not free');
        },
      }),
    },
    {
      name: 'broken',
      description: 'a case whose setup throws',
      params: { full: [], quick: [{ n: 1 }] },
      targets: [{ source: 'test issue', description: 'never measured', on: { time: 'median' }, op: '<=', value: 1 }],
      setup: () => {
        throw new NinodesError('TEST_BROKEN', 'this case is broken on purpose');
      },
    },
  ],
  charts: [
    { kind: 'throughput', title: 'sum throughput against memcpy and peers', cases: ['sum_f64'] },
    { kind: 'ratio', title: 'sum against others', cases: ['sum_f64'] },
    { kind: 'time', title: 'step time per model and format', cases: ['step'], x: 'model', color: 'format' },
    { kind: 'metric', title: 'peak memory per model and format', metric: 'peak_rss', x: 'model', color: 'format' },
    { kind: 'metric', title: 'sum error per size', metric: 'abs_error', x: 'n' },
  ],
};

const budget = { warmup: 1, minRuns: 5, maxRuns: 20, seconds: 0.05, inner: 1 };
const sortedMedian = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? (s[(n - 1) / 2] as number) : ((s[n / 2 - 1] as number) + (s[n / 2] as number)) / 2;
};

describe('runBench with a test-only suite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ninodes-bench-e2e-'));
  let first: BenchOutcome;
  let results: Results;

  beforeAll(async () => {
    first = await runBench({ suites: [testSuite], quick: true, outDir: join(dir, 'a'), budget });
    results = first.results;
  });
  afterAll(() => {
    // Keep the directory when asked, to look at the report and screenshot by hand.
    if (!process.env.NINODES_KEEP_BENCH_OUTPUT) rmSync(dir, { recursive: true, force: true });
    else console.log(`bench test output kept in ${dir}`);
  });

  it('writes results.json that validates against the schema', () => {
    for (const f of Object.values(first.files)) expect(existsSync(f)).toBe(true);
    const parsed = ResultsSchema.parse(JSON.parse(readFileSync(first.files.results, 'utf8')));
    expect(parsed.cases.map((c) => c.key)).toEqual(['sum_f64[n=4096]', 'sum_f64[n=100003]', 'step[model=tiny,format=f32]', 'step[model=tiny,format=int8]', 'leaky[n=2]', 'broken[n=1]']);
    expect(parsed.env.cpu.logicalCores).toBeGreaterThan(0);
    expect(parsed.env.peers.memcpy?.available).toBe(true);
  });

  it('reports statistics and per-pair ratios that follow from the samples', () => {
    for (const c of results.cases.filter((x) => x.case === 'sum_f64')) {
      const ours = c.contenders[0];
      expect(ours?.name).toBe('ours');
      expect(ours?.samples.length).toBeGreaterThanOrEqual(budget.minRuns);
      expect(ours?.stats?.median).toBeCloseTo(sortedMedian(ours?.samples ?? []), 15);
      const n = c.parameters.n as number;
      expect(ours?.throughput).toEqual([
        { unit: 'GB/s', value: expect.closeTo((n * 8) / (ours?.stats?.median as number) / 1e9, 9) },
        { unit: 'GFLOP/s', value: expect.closeTo(n / (ours?.stats?.median as number) / 1e9, 9) },
      ]);
      for (const k of c.contenders.slice(1).filter((x) => x.status === 'ok')) {
        expect(k.samples.length).toBe(ours?.samples.length);
        const ratios = (ours?.samples ?? []).map((s, i) => s / (k.samples[i] as number));
        expect(c.ratios.find((r) => r.against === k.name)?.timeRatio.median).toBeCloseTo(sortedMedian(ratios), 12);
      }
      expect(c.contenders.find((k) => k.name === 'crashing')).toMatchObject({ status: 'failed', reason: 'TEST_PEER_CRASH: peer crashed', samples: [] });
      expect(c.ratios.map((r) => r.against)).not.toContain('crashing');
      expect(c.contenders.find((k) => k.name === 'absent')).toMatchObject({ status: 'missing', reason: 'test: this peer is never installed', samples: [] });
      expect(c.contenders.find((k) => k.name === 'torch')?.status).toBe(results.env.peers.torch?.available ? 'ok' : 'missing');
      expect(c.metrics.abs_error?.value).toBe(Math.abs(naiveSum(lcgArray(n)) - compensatedSum(lcgArray(n))));
    }
  });

  it('evaluates targets on the instances they apply to, and leaves unmeasurable ones unknown', () => {
    const [small, large] = results.cases;
    expect(small?.targets.map((t) => t.description)).toEqual(['no slower than 1000x memcpy', 'against a peer that is not installed']);
    expect(large?.targets).toHaveLength(3);
    for (const c of [small, large]) {
      const t = c?.targets.find((x) => 'ratio' in x.on && x.on.ratio === 'memcpy');
      const ratio = c?.ratios.find((r) => r.against === 'memcpy')?.timeRatio.median as number;
      expect(t?.measured).toBe(ratio);
      expect(t?.met).toBe(ratio <= 1000);
      expect(c?.targets.find((x) => 'ratio' in x.on && x.on.ratio === 'absent')).toMatchObject({ measured: null, met: null });
    }
    const err = large?.targets.find((x) => 'metric' in x.on);
    expect(err?.met).toBe((large?.metrics.abs_error?.value as number) <= 1e-6);
  });

  it('measures peak memory in a child: 48 MiB more allocated shows as more peak', () => {
    const [f32, int8] = results.cases.filter((c) => c.case === 'step');
    const delta = ((f32?.metrics.peak_rss?.value as number) - (int8?.metrics.peak_rss?.value as number)) / 2 ** 20;
    expect(delta).toBeGreaterThan(40);
    expect(delta).toBeLessThan(80);
  });

  it('records a broken case and a failed dispose as failures, without stopping the run', () => {
    const broken = results.cases.find((c) => c.case === 'broken');
    expect(broken?.error).toBe('TEST_BROKEN: this case is broken on purpose');
    expect(broken?.targets).toEqual([expect.objectContaining({ measured: null, met: null })]);
    const leaky = results.cases.find((c) => c.case === 'leaky');
    expect(leaky?.error).toBe('dispose failed: TEST_LEAK: could not free');
    expect(leaky?.contenders[0]?.samples.length).toBeGreaterThanOrEqual(budget.minRuns);
    expect(first.failed).toBe(2);
  });

  it('summary.md lists every target with its measured value and verdict', () => {
    const md = readFileSync(first.files.summary, 'utf8');
    expect(md).toContain('## toy');
    expect(md).toContain('absent (peer) | missing: test: this peer is never installed');
    expect(md).toContain('FAILED: TEST_BROKEN');
    const targetRows = md.split('\n').filter((l) => l.startsWith('| test issue |'));
    expect(targetRows).toHaveLength(results.cases.reduce((n, c) => n + c.targets.length, 0));
    const t = results.cases[1]?.targets.find((x) => 'metric' in x.on);
    expect(md).toContain(`| test issue | sum_f64 n=100003: error at most 1e-6 on the large size | abs_error <= 1e-6 |`);
    expect(md).toMatch(t?.met ? /error at most 1e-6 on the large size[^\n]*\| met \|/ : /error at most 1e-6 on the large size[^\n]*\| NOT met \|/);
  });

  it('--compare marks every matched case against the baseline by its noise', async () => {
    const second = await runBench({ suites: [testSuite], quick: true, outDir: join(dir, 'b'), budget, compare: first.files.results });
    expect(second.results.options.compare).toBe(first.files.results);
    for (const c of second.results.cases) {
      if (!c.contenders.length) {
        expect(c.comparison).toBeUndefined();
        continue;
      }
      const base = results.cases.find((b) => b.key === c.key);
      expect(c.comparison).toEqual(compareCase(c, base as never));
    }
    expect(readFileSync(second.files.summary, 'utf8')).toContain('Slower than baseline:');
  });

  it('report.html renders every chart in headless Chromium with no console errors', async () => {
    const expected = testSuite.charts?.length ?? 0;
    // Throughput gives two charts here: GFLOP/s for sum_f64 (it declares flops); the request list is 5.
    const built = buildCharts('toy', results.suites[0]?.charts ?? [], results.cases);
    expect(built.length).toBe(expected);
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
      });
      page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
      const requests: string[] = [];
      page.on('request', (r) => requests.push(r.url()));
      await page.goto(`file://${first.files.report}`);
      const charts = await page.$$eval('figure.chart', (figs) =>
        figs.map((f) => {
          const svg = f.querySelector('svg');
          const box = svg?.getBoundingClientRect();
          return {
            id: f.getAttribute('data-chart'),
            width: box?.width ?? 0,
            height: box?.height ?? 0,
            marks: svg ? svg.querySelectorAll('g.role-mark path, g.role-mark line, g.role-mark rect').length : 0,
          };
        }),
      );
      expect(charts.map((c) => c.id)).toEqual(built.map((b) => b.id));
      for (const c of charts) {
        expect(c.marks, `chart ${c.id ?? '?'} has marks`).toBeGreaterThan(0);
        expect(c.width).toBeGreaterThan(100);
        expect(c.height).toBeGreaterThan(50);
      }
      expect(problems).toEqual([]);
      expect(requests.filter((u) => !u.startsWith('file://'))).toEqual([]);
      await page.screenshot({ path: join(dir, 'report.png'), fullPage: true });
      expect(existsSync(join(dir, 'report.png'))).toBe(true);
    } finally {
      await browser.close();
    }
  });
});
