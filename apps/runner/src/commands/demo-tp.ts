// The demo's TP2 row: the int8 convrot run again, split over two tensor-parallel ranks on this
// machine (`run --tp 2`), beside the single-rank runs. With int8 convrot the two ranks' latents and
// the single-rank latent are the same bytes, so the row shows the hashes' agreement, not a PSNR.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunReport } from '../run-report.js';
import { runReportSchema } from '../run-report.js';

/** Runs `ninodes run ... --tp 2` through `runChild` into `dir`; its report. */
export async function runDemoTp2(runChild: (args: string[]) => Promise<void>, baseArgs: readonly string[], dir: string): Promise<RunReport> {
  await runChild([...baseArgs, '--tp', '2', '--out', dir, '--force']);
  return runReportSchema.parse(JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')));
}

/** The table row: step time, speed-up over fp32, the largest rank's peak memory, whether the hashes equal the single-rank int8 run's. */
export function demoTp2Row(tp: RunReport, fp32: RunReport, int8: RunReport, dir: string): string[] {
  const ranks = tp.tp?.ranks ?? [];
  const maxOf = (f: (r: (typeof ranks)[number]) => number): number => Math.max(...ranks.map(f));
  const same = ranks.length === 2 && ranks.every((r) => r.latentSha256 === int8.output.latentSha256);
  return [
    'int8_convrot TP2',
    `${tp.timing.meanStepSeconds.toFixed(3)} s`,
    `${(fp32.timing.meanStepSeconds / tp.timing.meanStepSeconds).toFixed(2)}x`,
    `${(maxOf((r) => r.peakAnonBytes) / 2 ** 20).toFixed(0)} MiB/rank`,
    `${(maxOf((r) => r.peakFileBytes) / 2 ** 20).toFixed(0)} MiB/rank`,
    same ? 'int8 bytes (2 ranks)' : 'HASHES DIFFER',
    join(dir, 'preview.png'),
  ];
}
