#!/usr/bin/env node
import { isNinodesError, removeTempsOnSignals } from '@ninodes/kernels';
import { parseCli, USAGE } from './args.js';
import { runBench } from './run-bench.js';
import { selectCases } from './select-cases.js';
import { SUITES } from './suites/index.js';

// SIGINT/SIGTERM remove the run's scratch directory (registered by runBench) before the process dies.
removeTempsOnSignals(process.stderr);

async function main(): Promise<number> {
  const opts = parseCli(process.argv.slice(2), SUITES.map((s) => s.name));
  if (opts.help) {
    console.log(USAGE);
    return 0;
  }
  const suites = selectCases(SUITES.filter((s) => opts.suites.includes(s.name)), opts.cases);
  const t0 = Date.now();
  const outcome = await runBench({
    suites,
    quick: opts.quick,
    outDir: opts.outDir,
    compare: opts.compare,
    log: (line) => console.error(line),
  });
  const targets = outcome.results.cases.flatMap((c) => c.targets);
  const slower = outcome.results.cases.filter((c) => c.comparison?.verdict === 'slower');
  console.log(`wrote ${outcome.files.results}, ${outcome.files.summary}, ${outcome.files.report}`);
  console.log(`${outcome.results.cases.length} case instances, ${outcome.failed} failed; targets ${targets.filter((t) => t.met === true).length}/${targets.length} met` + (opts.compare ? `; ${slower.length} slower than baseline` : ''));
  const seconds = (Date.now() - t0) / 1000;
  // --quick promises every suite in under 3 minutes; say so loudly when a suite's quick sizes break it.
  if (opts.quick && seconds > 180) console.error(`warning: --quick took ${seconds.toFixed(0)} s, over its 3-minute promise; shrink the slowest suite's quick sizes`);
  // A broken suite fails the run (CI runs --quick); slow numbers alone do not.
  return outcome.failed > 0 ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    console.error(isNinodesError(e) ? e.format() : e instanceof Error ? (e.stack ?? e.message) : String(e));
    process.exitCode = 1;
  },
);
