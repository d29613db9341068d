#!/usr/bin/env node
// `node apps/bench/dist/soak-headers.js [--count N] [--seed S] [--batch B]`: damages safetensors and
// GGUF headers at random and reports how each parse ended; exits 1 on any crash, hang or uncoded
// error. Also the batch child it spawns (`--child <fixtures> <seed> <start> <end>`).
import { writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchRoot } from './package-root.js';
import { headerSeeds } from './soak/header-seeds.js';
import { runHeaderBatch, runHeaderSoak } from './soak/header-soak.js';

const argv = process.argv.slice(2);
if (argv[0] === '--child') {
  const [fixtures, seed, start, end] = argv.slice(1);
  runHeaderBatch(headerSeeds(fixtures as string), Number(seed), Number(start), Number(end), (line) => writeSync(1, `${line}\n`));
} else {
  const flag = (name: string, fallback: number): number => {
    const i = argv.indexOf(name);
    const v = i < 0 ? fallback : Number(argv[i + 1]);
    if (!Number.isSafeInteger(v) || v < 0) throw new Error(`${name} expects a non-negative integer, got ${argv[i + 1]}`);
    return v;
  };
  const fixtures = process.env.NINODES_FIXTURES ?? resolve(benchRoot(), '..', '..', '..', 'shared', 'fixtures');
  const report = runHeaderSoak(headerSeeds(fixtures), {
    count: flag('--count', 10_000),
    seed: flag('--seed', 1),
    batch: flag('--batch', 1000),
    entry: fileURLToPath(import.meta.url),
    fixtures,
  });
  const codes = Object.entries(report.coded).sort((a, b) => b[1] - a[1]);
  const lines = [
    `header soak: ${report.mutations} mutated headers (seed ${report.seed}) in ${report.seconds.toFixed(1)} s`,
    `  still valid: ${report.parsed}`,
    `  coded errors: ${codes.reduce((a, [, n]) => a + n, 0)} (${codes.map(([c, n]) => `${c} ${n}`).join(', ')})`,
    `  uncoded errors: ${report.uncoded.length}`,
    `  crashes: ${report.crashes.length}`,
    `  hangs: ${report.hangs.length}`,
    ...[...report.uncoded, ...report.crashes, ...report.hangs].slice(0, 20).map((x) => `  #${x.index} ${x.sample} [${x.ops.join(' ')}]: ${x.detail}`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  process.exitCode = report.uncoded.length + report.crashes.length + report.hangs.length === 0 ? 0 : 1;
}
