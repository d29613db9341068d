// The demo's tensor-parallel row: the trained model split over two rank processes with
// `ninodes run --tp 2`, one seed, beside the one-rank rows. fp32 weights: h3-shapes' hidden width is
// 256, so an int8 convrot row-parallel layer (out_proj, K = 256) cannot give each of two ranks whole
// 256-column groups, and the split is refused up front; fp32 splits exactly in two.
import { spawn } from 'node:child_process';
import { renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Tensor } from '@ninodes/kernels';
import { openSafetensors } from '@ninodes/memory';
import { cleanShapeScore, shapesModelPath } from '@ninodes/models';
import { runReportSchema } from '../run-report.js';
import { RunnerError } from '../error-codes.js';
import { encodePng } from '../png.js';
import { sampleGrid } from '../sample-grid.js';
import { writeNewFile } from '../write-new-file.js';

const CLI = fileURLToPath(new URL('./cli.js', import.meta.url));

/** The files the row adds to the demo's output. */
export const TP_DEMO_FILES = ['f32-tp2.safetensors', 'f32-tp2.png', 'f32-tp2.json'];

export interface TpDemoRow {
  readonly format: 'f32 TP2';
  readonly ranks: number;
  readonly meanStepSeconds: number;
  /** Every rank's peak resident anonymous bytes. */
  readonly peakAnonBytesPerRank: readonly number[];
  /** True when every rank wrote the same latent bytes. */
  readonly hashesEqual: boolean;
  readonly latentSha256: string;
  readonly shapeScore: number;
  /** Seed 0's latent, for the caller's PSNR against the one-rank f32 sample. */
  readonly latent: Tensor<'f32'>;
  /** Share of rank 0's step time in collectives. */
  readonly commShare: number;
}

/**
 * Samples seed 0 with f32 weights over 2 ranks of `threadsPerRank` threads each, writing
 * f32-tp2.safetensors and f32-tp2.json (the run report) into `dir`. Rejects with DEMO_RUN_FAILED
 * when the run fails (its ranks' errors are on stderr).
 */
export async function sampleTensorParallel(options: { dir: string; steps: number; threadsPerRank: number; env: NodeJS.ProcessEnv; cli?: string }): Promise<TpDemoRow> {
  const ranks = 2;
  const out = join(options.dir, '.f32-tp2');
  const args = ['run', '--model', shapesModelPath(), '--quant', 'f32', '--tp', String(ranks), '--threads', String(ranks * options.threadsPerRank), '--seed', '0', '--steps', String(options.steps), '--out', out, '--json'];
  const stdout = await new Promise<string>((resolve, reject) => {
    // --json makes the ranks' progress JSON lines on stderr: kept, and shown only if the run fails.
    const child = spawn(process.execPath, [options.cli ?? CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: options.env });
    let text = '';
    let errors = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.stderr.on('data', (d: Buffer) => (errors += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve(text);
      else {
        const said = errors.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('{')).slice(-20).join('\n');
        reject(new RunnerError('DEMO_RUN_FAILED', `ninodes ${args.join(' ')} exited with ${signal ?? code}${said === '' ? '' : `:\n${said}`}`, { value: args, hint: 'the run\'s own error is quoted above' }));
      }
    });
  });
  try {
    const report = runReportSchema.parse(JSON.parse(stdout));
    const tp = report.tp;
    if (tp === undefined) throw new RunnerError('INTERNAL', 'a --tp run reported no tensor-parallel section', { value: report.config });
    const source = openSafetensors(join(out, 'latent.safetensors'));
    let latent: Tensor<'f32'>;
    try {
      latent = (source.tensor('latent') as Tensor<'f32'>).copy();
    } finally {
      source.close();
    }
    renameSync(join(out, 'latent.safetensors'), join(options.dir, 'f32-tp2.safetensors'));
    renameSync(join(out, 'report.json'), join(options.dir, 'f32-tp2.json'));
    const grid = sampleGrid([latent]);
    writeNewFile(join(options.dir, 'f32-tp2.png'), encodePng(grid.width, grid.height, grid.rgb));
    const steps = report.timing.stepSeconds.reduce((a, b) => a + b, 0);
    return {
      format: 'f32 TP2',
      ranks,
      meanStepSeconds: report.timing.meanStepSeconds,
      peakAnonBytesPerRank: tp.ranks.map((r) => r.peakAnonBytes),
      hashesEqual: tp.ranks.every((r) => r.latentSha256 === tp.ranks[0]?.latentSha256),
      latentSha256: report.output.latentSha256,
      shapeScore: cleanShapeScore([latent]),
      latent,
      commShare: steps > 0 ? (tp.ranks[0]?.commSeconds ?? 0) / steps : 0,
    };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
