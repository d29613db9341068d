/** A whole bench run: environment, every selected suite, the three outputs. */
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTempDir, removeTemp, writeFileAtomically } from '@ninodes/kernels';
import { buildCharts, defaultCharts, renderCharts, type RenderedChart } from './charts.js';
import { applyBaseline, loadBaseline } from './compare.js';
import { captureEnv } from './env.js';
import { measurePeakMemory, measureScriptPeakMemory } from './peak-memory.js';
import { catContender, ddContender, dropFileCache } from './peers/shell-peers.js';
import { memcpyContender } from './peers/memcpy-peer.js';
import { PythonPeer } from './peers/python-peer.js';
import { renderReport } from './report-html.js';
import { ResultsSchema, type CaseResult, type Results } from './results-schema.js';
import { runCase } from './run-case.js';
import { FULL_BUDGET, QUICK_BUDGET, type Budget, type CaseContext, type Suite } from './suite.js';
import { renderSummary } from './summary.js';

export interface BenchOptions {
  suites: readonly Suite[];
  quick: boolean;
  outDir: string;
  /** Path of a previous results.json. */
  compare?: string;
  /** Overrides the default budget (tests use small ones). */
  budget?: Partial<Budget>;
  log?: (line: string) => void;
}

export interface BenchOutcome {
  results: Results;
  files: { results: string; summary: string; report: string };
  /** Cases that threw: the run is a failure when any did. */
  failed: number;
}

export async function runBench(options: BenchOptions): Promise<BenchOutcome> {
  const log = options.log ?? (() => undefined);
  const startedAt = new Date().toISOString();
  const baseline = options.compare ? await loadBaseline(options.compare) : undefined;
  const python = new PythonPeer();
  // Registered with kernels' live temporaries, so a signal that ends the CLI removes it too.
  const tmpDir = createTempDir(tmpdir(), 'ninodes-bench');
  const cases: CaseResult[] = [];
  let env: Results['env'];
  try {
    env = await captureEnv(python);
    const ctx: CaseContext = {
      quick: options.quick,
      threads: env.addon.ok ? env.addon.threads : env.cpu.availableParallelism,
      tmpDir,
      dropFileCache,
      peakMemory: measurePeakMemory,
      peakMemoryOfScript: (source) => measureScriptPeakMemory(source),
      peers: {
        python: (kind, params) => python.job(kind, params),
        memcpy: (bytes) => memcpyContender(bytes),
        cat: async (file) => catContender(file),
        dd: async (file, bs) => ddContender(file, bs),
      },
    };
    const budget: Budget = { ...(options.quick ? QUICK_BUDGET : FULL_BUDGET), ...options.budget };
    for (const suite of options.suites) {
      for (const bench of suite.cases) {
        for (const params of options.quick ? bench.params.quick : bench.params.full) {
          const result = await runCase(suite, bench, params, ctx, budget);
          log(`${suite.name}/${result.key}: ${result.error ? `FAILED ${result.error}` : `${result.contenders[0]?.stats?.median ?? '-'} s median of ${result.contenders[0]?.stats?.n ?? 0}`}`);
          cases.push(result);
        }
      }
    }
  } finally {
    await python.close();
    removeTemp(tmpDir);
  }
  const compared = baseline ? applyBaseline(cases, baseline) : cases;
  const results = ResultsSchema.parse({
    schemaVersion: 1,
    startedAt,
    finishedAt: new Date().toISOString(),
    options: { suites: options.suites.map((s) => s.name), quick: options.quick, compare: options.compare ?? null },
    env,
    suites: options.suites.map((s) => ({ name: s.name, description: s.description, charts: (s.charts ?? defaultCharts(s.name, compared)).map((c) => ({ ...c, ...('cases' in c && c.cases ? { cases: [...c.cases] } : {}) })) })),
    cases: compared,
  });
  const charts = new Map<string, RenderedChart[]>();
  for (const s of results.suites) charts.set(s.name, await renderCharts(buildCharts(s.name, s.charts, results.cases)));
  await mkdir(options.outDir, { recursive: true });
  const files = { results: join(options.outDir, 'results.json'), summary: join(options.outDir, 'summary.md'), report: join(options.outDir, 'report.html') };
  // Atomic: an interrupted run never leaves a partial file.
  await writeFileAtomically(files.results, (write) => write(JSON.stringify(results, null, 2) + '\n'));
  await writeFileAtomically(files.summary, (write) => write(renderSummary(results)));
  await writeFileAtomically(files.report, (write) => write(renderReport(results, charts)));
  return { results, files, failed: results.cases.filter((c) => c.error).length };
}
