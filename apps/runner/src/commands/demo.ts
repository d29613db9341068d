import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NinodesError, type Tensor } from '@ninodes/kernels';
import { openSafetensors } from '@ninodes/memory';
import { z } from 'zod';
import { defineCommand } from '../command.js';
import { psnr } from '../psnr.js';
import { type RunReport, runReportSchema } from '../run-report.js';
import { formatTable } from '../table.js';
import { demoTp2Row, runDemoTp2 } from './demo-tp.js';

const CLI = fileURLToPath(new URL('./cli.js', import.meta.url));

/** Each configuration runs in its own process, so its peak memory is its own. */
function runChild(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [CLI, 'run', ...args], { stdio: ['ignore', 'ignore', 'inherit'], env });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) resolvePromise();
      else reject(new NinodesError('DEMO_RUN_FAILED', `ninodes run ${args.join(' ')} exited with ${signal ?? code}`, { value: args, hint: 'its error is printed above' }));
    });
  });
}

function readLatent(dir: string): Float32Array {
  const source = openSafetensors(join(dir, 'latent.safetensors'));
  try {
    return Float32Array.from((source.tensor('latent') as Tensor<'f32'>).data);
  } finally {
    source.close();
  }
}

export const demo = defineCommand({
  name: 'demo',
  summary: 'run the embedded h3-tiny model fp32, int8 convrot and int8 convrot over two tensor-parallel ranks side by side',
  usage: 'ninodes demo [--out <dir>] [--steps N] [--threads N]',
  options: {
    out: { type: 'string', value: '<dir>', description: 'directory for the two runs (<dir>/fp32, <dir>/int8_convrot, <dir>/int8_convrot-tp2; the demo replaces its own earlier runs there)' },
    steps: { type: 'string', value: 'N', description: 'denoising steps, 1 to 100' },
    threads: { type: 'string', value: 'N', description: 'native threads (0: one per core)' },
  },
  positionals: [0, 0],
  examples: ['ninodes demo', 'ninodes demo --steps 4 --out /tmp/demo'],
  schema: z.object({
    out: z.string().min(1).default('ninodes-demo'),
    steps: z.coerce.number().int().positive().max(100).default(8),
    threads: z.coerce.number().int().nonnegative().max(1024).default(0),
    positionals: z.array(z.string()).length(0),
  }),
  async run(args, context) {
    const configs = ['fp32', 'int8_convrot'] as const;
    const reports = new Map<string, RunReport>();
    for (const quant of configs) {
      context.stderr.write(`\n== h3-tiny ${quant}\n`);
      const dir = resolve(args.out, quant);
      await runChild(['--preset', 'h3-tiny', '--quant', quant, '--steps', String(args.steps), '--threads', String(args.threads), '--out', dir, '--force'], context.env);
      reports.set(quant, runReportSchema.parse(JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'))));
    }
    context.stderr.write('\n== h3-tiny int8_convrot --tp 2\n');
    const tpDir = resolve(args.out, 'int8_convrot-tp2');
    const tp = await runDemoTp2((a) => runChild(a, context.env), ['--preset', 'h3-tiny', '--quant', 'int8_convrot', '--steps', String(args.steps), '--threads', String(args.threads)], tpDir);
    const fp32 = reports.get('fp32')!;
    const reference = readLatent(resolve(args.out, 'fp32'));
    const rows = configs.map((quant) => {
      const r = reports.get(quant)!;
      const quality = quant === 'fp32' ? 'reference' : `${psnr(reference, readLatent(resolve(args.out, quant))).toFixed(1)} dB`;
      return [
        quant,
        `${r.timing.meanStepSeconds.toFixed(3)} s`,
        `${(fp32.timing.meanStepSeconds / r.timing.meanStepSeconds).toFixed(2)}x`,
        `${(r.memory.peakAnonBytes / 2 ** 20).toFixed(0)} MiB`,
        `${(r.memory.peakFileBytes / 2 ** 20).toFixed(0)} MiB`,
        quality,
        join(resolve(args.out, quant), 'preview.png'),
      ];
    });
    context.stdout.write(
      `\nh3-tiny, ${fp32.config.steps} steps, latent [${fp32.config.latentShape.join(', ')}], seed ${fp32.config.seed}, ${fp32.config.threads} threads\n\n` +
        `${formatTable(['QUANT', 'STEP (steady)', 'SPEED-UP', 'PEAK ANON', 'PEAK FILE', 'PSNR vs fp32', 'PREVIEW'], [...rows, demoTp2Row(tp, fp32, reports.get('int8_convrot')!, tpDir)])}\n`,
    );
    return 0;
  },
});
