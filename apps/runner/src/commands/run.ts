import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildInfo, int8Backend, setThreads } from '@ninodes/kernels';
import { tensorSources, writeSafetensors } from '@ninodes/memory';
import { type OpenedH3Model, SAMPLER_DEFAULTS, ensureSyntheticCheckpoint, openH3Model, runSampler, samplerHints, shapesModelPath } from '@ninodes/models';
import type { ComputeMode } from '@ninodes/quant';
import { cpus } from 'node:os';
import { z } from 'zod';
import { cacheDir } from '../cache-dir.js';
import { defineCommand } from '../command.js';
import { readLatentFile } from '../latent-file.js';
import { stageOutput } from '../output-dir.js';
import { samplePeakMemory } from '../peak-memory.js';
import { latentPreviewPng } from '../preview.js';
import { type RunReport, runReportSchema, steadyStepMean } from '../run-report.js';

export const QUANT_TO_COMPUTE: Record<RunReport['config']['quant'], ComputeMode> = {
  fp32: 'f32',
  bf16: 'bf16',
  int8_convrot: 'int8_convrot',
  fp8: 'f8_e4m3fn',
};

const positiveInt = z.coerce.number().int().positive();

export const runSchema = z
  .object({
    model: z.string().min(1).optional(),
    preset: z.enum(['h3-tiny', 'h3-small']).optional(),
    latent: z.string().min(1).optional(),
    // Unset: the checkpoint's `ninodes.sampler` metadata (the trained default model has it), else SAMPLER_DEFAULTS.
    frames: positiveInt.optional(),
    height: positiveInt.optional(),
    width: positiveInt.optional(),
    steps: positiveInt.max(1000).optional(),
    shift: z.coerce.number().positive().optional(),
    seed: z.coerce.number().int().nonnegative().max(2 ** 32 - 1).default(145),
    quant: z.enum(['fp32', 'bf16', 'int8_convrot', 'fp8']).default('fp32'),
    threads: z.coerce.number().int().nonnegative().max(1024).default(0),
    out: z.string().min(1).default('ninodes-run'),
    json: z.boolean().default(false),
    positionals: z.array(z.string()).length(0),
  })
  .refine((a) => !(a.model && a.preset), { message: '--model and --preset are exclusive', path: ['model'] });

export type RunArgs = z.infer<typeof runSchema>;

export const run = defineCommand({
  name: 'run',
  summary: 'run the denoising loop on a DiT checkpoint and write latent, preview and report',
  usage:
    'ninodes run [--model <ckpt> | --preset h3-tiny|h3-small] [--latent <file>] [--frames N --height N --width N] [--steps N] [--shift S] [--seed N] [--quant fp32|bf16|int8_convrot|fp8] [--threads N] [--out <dir>] [--json]',
  options: {
    model: { type: 'string' },
    preset: { type: 'string' },
    latent: { type: 'string' },
    frames: { type: 'string' },
    height: { type: 'string' },
    width: { type: 'string' },
    steps: { type: 'string' },
    shift: { type: 'string' },
    seed: { type: 'string' },
    quant: { type: 'string' },
    threads: { type: 'string' },
    out: { type: 'string' },
    json: { type: 'boolean' },
  },
  positionals: [0, 0],
  schema: runSchema,
  async run(args, context) {
    const started = performance.now();
    const threads = setThreads(args.threads);
    const memory = samplePeakMemory();
    const stage = stageOutput(args.out);
    let opened: OpenedH3Model | undefined;
    try {
      let modelPath = args.model;
      // No model and no preset: the trained h3-shapes model shipped with @ninodes/models.
      if (modelPath === undefined && args.preset === undefined) modelPath = shapesModelPath();
      if (modelPath === undefined) {
        const preset = args.preset ?? 'h3-tiny';
        const gen = context.progress.task(`generating ${preset}`, 10);
        let last = 0;
        const cached = await ensureSyntheticCheckpoint({
          dir: cacheDir(context.env),
          preset,
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
      const hints = samplerHints(opened.source);
      const sampler = {
        frames: args.frames ?? hints?.frames ?? SAMPLER_DEFAULTS.frames,
        height: args.height ?? hints?.height ?? SAMPLER_DEFAULTS.height,
        width: args.width ?? hints?.width ?? SAMPLER_DEFAULTS.width,
        steps: args.steps ?? hints?.steps ?? SAMPLER_DEFAULTS.steps,
        shift: args.shift ?? hints?.shift ?? SAMPLER_DEFAULTS.shift,
      };
      const unused = model.unusedKeys();
      if (unused.length > 0) context.stderr.write(`note: ${unused.length} tensors of the checkpoint are not used by the video path (e.g. ${unused.slice(0, 3).join(', ')})\n`);
      const latentIn = args.latent === undefined ? undefined : readLatentFile(args.latent, model.latentChannels);
      const loadSeconds = (performance.now() - started) / 1000;
      memory.sample();

      const steps = context.progress.task('steps', sampler.steps);
      const result = await runSampler(model, {
        ...(latentIn === undefined ? {} : { latent: latentIn }),
        seed: args.seed,
        ...sampler,
        onStep: (s) => {
          memory.sample();
          steps.tick(`sigma ${s.sigma.toFixed(3)} ${s.seconds.toFixed(2)}s`);
        },
      });
      steps.done();

      const latentPath = join(stage.dir, 'latent.safetensors');
      await writeSafetensors(latentPath, tensorSources({ latent: result.latent }), {
        metadata: { producer: 'ninodes run', quant: args.quant, seed: String(args.seed), steps: String(sampler.steps) },
      });
      writeFileSync(join(stage.dir, 'preview.png'), latentPreviewPng(result.latent));
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
          steps: sampler.steps,
          shift: sampler.shift,
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
          files: ['latent.safetensors', 'preview.png', 'report.json'],
        },
        env: { node: process.version, simd: info.simd, onednn: info.onednn, int8Backend: int8Backend(), cpu: cpus()[0]?.model ?? 'unknown' },
      });
      writeFileSync(join(stage.dir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
      const files = stage.commit();
      if (context.json) {
        context.stdout.write(`${JSON.stringify({ ...report, files })}\n`);
      } else {
        const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
        context.stdout.write(
          [
            `model      ${modelPath} (${args.quant})`,
            `latent     [${result.latent.shape.join(', ')}], ${sampler.steps} steps, shift ${sampler.shift}, seed ${args.seed}`,
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
      stage.discard();
      memory.stop();
      throw error;
    } finally {
      opened?.close();
    }
  },
});
