import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { defaultCacheDir } from '@ninodes/device';
import { buildInfo, int8Backend, setThreads } from '@ninodes/kernels';
import { tensorSources, writeSafetensors } from '@ninodes/memory';
import { type OpenedH3Model, ensureSyntheticCheckpoint, flowSigmas, openH3Model, runSampler } from '@ninodes/models';
import type { ComputeMode } from '@ninodes/quant';
import { cpus } from 'node:os';
import { z } from 'zod';
import { defineCommand } from '../command.js';
import { writeNewFile } from '../write-new-file.js';
import { checkRunFits } from '../run-size.js';
import { readLatentFile } from '../latent-file.js';
import { stageOutput } from '../output-dir.js';
import { samplePeakMemory } from '../peak-memory.js';
import { latentPreviewPng } from '../preview.js';
import { type RunReport, runReportSchema, steadyStepMean } from '../run-report.js';

const QUANT_TO_COMPUTE: Record<RunReport['config']['quant'], ComputeMode> = {
  fp32: 'f32',
  bf16: 'bf16',
  int8_convrot: 'int8_convrot',
  fp8: 'f8_e4m3fn',
};

const positiveInt = z.coerce.number().int().positive();

/** Everything `run` writes into --out; an existing --out holding anything else is never replaced. */
export const RUN_FILES = ['latent.safetensors', 'preview.png', 'report.json'] as const;

export const runSchema = z
  .object({
    model: z.string().min(1).optional(),
    preset: z.enum(['h3-tiny', 'h3-small']).optional(),
    latent: z.string().min(1).optional(),
    frames: positiveInt.default(3),
    height: positiveInt.default(32),
    width: positiveInt.default(32),
    steps: positiveInt.max(1000).default(8),
    shift: z.coerce.number().positive().max(1e6).default(12),
    seed: z.coerce.number().int().nonnegative().max(2 ** 32 - 1).default(145),
    quant: z.enum(['fp32', 'bf16', 'int8_convrot', 'fp8']).default('fp32'),
    threads: z.coerce.number().int().nonnegative().max(1024).default(0),
    out: z.string().min(1).default('ninodes-run'),
    force: z.boolean().default(false),
    json: z.boolean().default(false),
    positionals: z.array(z.string()).length(0),
  })
  .refine((a) => !(a.model && a.preset), { message: '--model and --preset are exclusive', path: ['model'] });

export type RunArgs = z.infer<typeof runSchema>;

export const run = defineCommand({
  name: 'run',
  summary: 'run the denoising loop on a DiT checkpoint and write latent, preview and report',
  usage:
    'ninodes run [--model <ckpt> | --preset h3-tiny] [--latent <file>] [--frames N --height N --width N] [--steps N] [--shift S] [--seed N] [--quant fp32|bf16|int8_convrot|fp8] [--threads N] [--out <dir>] [--force] [--json]',
  options: {
    model: { type: 'string', value: '<ckpt>', description: 'checkpoint: .safetensors, .safetensors.index.json or .gguf (exclusive with --preset)' },
    preset: { type: 'string', value: '<name>', description: 'generate (once, cached in $NINODES_CACHE) a synthetic model: h3-tiny or h3-small; used when --model is absent [default: h3-tiny]' },
    latent: { type: 'string', value: '<file>', description: "safetensors file with the starting noise as 'latent' [1, C, T, H, W] (else seeded noise)" },
    frames: { type: 'string', value: 'N', description: 'latent frames' },
    height: { type: 'string', value: 'N', description: 'latent height (even)' },
    width: { type: 'string', value: 'N', description: 'latent width (even)' },
    steps: { type: 'string', value: 'N', description: 'denoising steps, 1 to 1000' },
    shift: { type: 'string', value: 'S', description: 'flow-matching time shift (refused if it collapses the schedule)' },
    seed: { type: 'string', value: 'N', description: 'seed of the starting noise, 0 to 2^32-1' },
    quant: { type: 'string', value: '<mode>', description: 'compute mode: fp32, bf16, int8_convrot or fp8' },
    threads: { type: 'string', value: 'N', description: 'native threads (0: one per core)' },
    out: { type: 'string', value: '<dir>', description: 'directory for latent.safetensors, preview.png and report.json, written as a whole' },
    force: { type: 'boolean', description: 'replace the outputs of an earlier run in --out' },
    json: { type: 'boolean', description: 'print the report as JSON on stdout' },
  },
  examples: [
    'ninodes run --preset h3-tiny --steps 8 --out runs/tiny',
    'ninodes run --model model.safetensors --quant int8_convrot --frames 3 --height 32 --width 32 --out runs/int8 --force',
    'ninodes run --model model.gguf --latent noise.safetensors --json',
  ],
  positionals: [0, 0],
  schema: runSchema,
  async run(args, context) {
    const started = performance.now();
    const threads = setThreads(args.threads);
    // Taken before any work: a busy or unusable --out fails now, not after the run.
    const stage = stageOutput(args.out, { force: args.force, ownFiles: RUN_FILES });
    const memory = samplePeakMemory();
    let opened: OpenedH3Model | undefined;
    try {
      let modelPath = args.model;
      if (modelPath === undefined) {
        const preset = args.preset ?? 'h3-tiny';
        const gen = context.progress.task(`generating ${preset}`, 10);
        let last = 0;
        const cached = await ensureSyntheticCheckpoint({
          dir: defaultCacheDir(context.env),
          preset,
          onWait: (owner) => context.stderr.write(`waiting for process ${owner.pid}, which is generating ${preset}\n`),
          onProgress: (done, total) => {
            const pct = total > 0 ? Math.floor((done / total) * 100) : 100;
            // Ten ticks, not a hundred: plain logs get a line per 10 %.
            while (last + 10 <= pct) {
              last += 10;
              gen.tick();
            }
          },
        });
        gen.done(cached.reused ? 'cached (hash verified)' : 'written');
        modelPath = cached.path;
      }
      // fp32 islands (patch embedding, time embedder, output head) run as stored, as in ComfyUI.
      opened = openH3Model(modelPath, { compute: QUANT_TO_COMPUTE[args.quant] });
      const { model } = opened;
      const unused = model.unusedKeys();
      if (unused.length > 0) context.stderr.write(`note: ${unused.length} tensors of the checkpoint are not used by the video path (e.g. ${unused.slice(0, 3).join(', ')})\n`);
      const latentIn = args.latent === undefined ? undefined : readLatentFile(args.latent, model.latentChannels);
      checkRunFits(model.config, latentIn?.shape ?? [1, model.latentChannels, args.frames, args.height, args.width]);
      // The schedule is checked before the first step (a collapsing --shift is refused up front).
      flowSigmas(args.steps, args.shift);
      const loadSeconds = (performance.now() - started) / 1000;
      memory.sample();

      const steps = context.progress.task('steps', args.steps);
      const result = await runSampler(model, {
        ...(latentIn === undefined ? {} : { latent: latentIn }),
        seed: args.seed,
        frames: args.frames,
        height: args.height,
        width: args.width,
        steps: args.steps,
        shift: args.shift,
        onStep: (s) => {
          memory.sample();
          steps.tick(`sigma ${s.sigma.toFixed(3)} ${s.seconds.toFixed(2)}s`);
        },
      });
      steps.done();

      const latentPath = join(stage.dir, 'latent.safetensors');
      await writeSafetensors(latentPath, tensorSources({ latent: result.latent }), {
        metadata: { producer: 'ninodes run', quant: args.quant, seed: String(args.seed), steps: String(args.steps) },
      });
      writeNewFile(join(stage.dir, 'preview.png'), latentPreviewPng(result.latent));
      const peak = memory.stop();
      const info = buildInfo();
      const report: RunReport = runReportSchema.parse({
        schema: 'ninodes.run-report/1',
        config: {
          model: modelPath,
          architecture: 'h3',
          quant: args.quant,
          frames: result.latent.shape[2],
          height: result.latent.shape[3],
          width: result.latent.shape[4],
          latentShape: [...result.latent.shape],
          steps: args.steps,
          shift: args.shift,
          seed: args.seed,
          threads,
        },
        timing: {
          stepSeconds: result.stepSeconds,
          meanStepSeconds: steadyStepMean(result.stepSeconds),
          loadSeconds,
          endToEndSeconds: (performance.now() - started) / 1000,
        },
        memory: peak,
        output: {
          latentSha256: createHash('sha256').update(result.latent.bytes()).digest('hex'),
          files: [...RUN_FILES],
        },
        env: { node: process.version, simd: info.simd, onednn: info.onednn, int8Backend: int8Backend(), cpu: cpus()[0]?.model ?? 'unknown' },
      });
      writeNewFile(join(stage.dir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
      const files = stage.commit();
      if (context.json) {
        context.stdout.write(`${JSON.stringify({ ...report, files })}\n`);
      } else {
        const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
        context.stdout.write(
          [
            `model      ${modelPath} (${args.quant})`,
            `latent     [${result.latent.shape.join(', ')}], ${args.steps} steps, shift ${args.shift}, seed ${args.seed}`,
            `steps      ${result.stepSeconds.map((s) => s.toFixed(2)).join(' ')} s (steady mean ${report.timing.meanStepSeconds.toFixed(3)} s)`,
            `total      ${report.timing.endToEndSeconds.toFixed(2)} s (load ${loadSeconds.toFixed(2)} s)`,
            `peak mem   ${mib(peak.peakAnonBytes)} anonymous, ${mib(peak.peakFileBytes)} file-backed`,
            `sha256     ${report.output.latentSha256}`,
            ...files.map((f) => `wrote      ${f}`),
            '',
          ].join('\n'),
        );
      }
      return 0;
    } catch (error) {
      memory.stop();
      throw error;
    } finally {
      // After a commit this only releases the lock; otherwise it removes the staging directory.
      stage.discard();
      opened?.close();
    }
  },
});
