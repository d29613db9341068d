import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NinodesError, buildInfo, int8Backend, setThreads } from '@ninodes/kernels';
import { tensorSources, writeSafetensors } from '@ninodes/memory';
import { type OpenedH3Model, ensureSyntheticCheckpoint, openH3Model, runSampler } from '@ninodes/models';
import { type ComputeMode, floatPrecision } from '@ninodes/quant';
import { cpus } from 'node:os';
import { z } from 'zod';
import { cacheDir } from '../cache-dir.js';
import { defineCommand } from '../command.js';
import { readLatentFile } from '../latent-file.js';
import { readAudioFile, readContextFile } from '../stream-inputs.js';
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

export const runSchema = z
  .object({
    model: z.string().min(1).optional(),
    preset: z.enum(['h3-tiny', 'h3-small']).optional(),
    latent: z.string().min(1).optional(),
    frames: positiveInt.default(3),
    height: positiveInt.default(32),
    width: positiveInt.default(32),
    steps: positiveInt.max(1000).default(8),
    shift: z.coerce.number().positive().default(12),
    seed: z.coerce.number().int().nonnegative().max(2 ** 32 - 1).default(145),
    quant: z.enum(['fp32', 'bf16', 'int8_convrot', 'fp8']).default('fp32'),
    threads: z.coerce.number().int().nonnegative().max(1024).default(0),
    out: z.string().min(1).default('ninodes-run'),
    json: z.boolean().default(false),
    context: z.string().min(1).optional(),
    audio: z.string().min(1).optional(),
    // Flags as typed (kebab-case): parseArgs keys values by the flag's own name.
    'audio-frames': positiveInt.optional(),
    'start-step': z.coerce.number().int().nonnegative().optional(),
    'end-step': z.coerce.number().int().positive().optional(),
    positionals: z.array(z.string()).length(0),
  })
  .refine((a) => !(a.model && a.preset), { message: '--model and --preset are exclusive', path: ['model'] })
  .refine((a) => !(a.audio && a['audio-frames']), { message: '--audio and --audio-frames are exclusive', path: ['audio'] })
  .refine((a) => (a['start-step'] ?? 0) < (a['end-step'] ?? a.steps) && (a['end-step'] ?? a.steps) <= a.steps, { message: 'need 0 ≤ --start-step < --end-step ≤ --steps', path: ['start-step'] });

export type RunArgs = z.infer<typeof runSchema>;

export const run = defineCommand({
  name: 'run',
  summary: 'run the denoising loop on a DiT checkpoint and write latent, preview and report',
  usage:
    'ninodes run [--model <ckpt> | --preset h3-tiny] [--latent <file>] [--frames N --height N --width N] [--steps N] [--shift S] [--seed N] [--quant fp32|bf16|int8_convrot|fp8] [--threads N] [--out <dir>] [--json] [--context <file>] [--audio <file> | --audio-frames T] [--start-step N] [--end-step N]',
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
    context: { type: 'string' },
    audio: { type: 'string' },
    'audio-frames': { type: 'string' },
    'start-step': { type: 'string' },
    'end-step': { type: 'string' },
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
      const unused = model.unusedKeys();
      if (unused.length > 0) context.stderr.write(`note: ${unused.length} tensors of the checkpoint are not used by the video path (e.g. ${unused.slice(0, 3).join(', ')})\n`);
      const latentIn = args.latent === undefined ? undefined : readLatentFile(args.latent, model.latentChannels);
      const { audioChannels, textDim, hidden } = model.config;
      if ((args.audio !== undefined || args['audio-frames'] !== undefined) && audioChannels === undefined) {
        throw new NinodesError('INVALID_ARGUMENT', `${modelPath} has no audio stream (no audio_patch_proj / final_layer.audio_out)`, { value: args.audio ?? args['audio-frames'], where: '--audio', hint: 'run it without --audio / --audio-frames' });
      }
      const audioIn = args.audio === undefined ? undefined : readAudioFile(args.audio, audioChannels as number);
      const contextIn = args.context === undefined ? undefined : readContextFile(args.context, textDim === undefined ? [hidden] : [textDim, hidden]);
      const loadSeconds = (performance.now() - started) / 1000;
      memory.sample();

      const steps = context.progress.task('steps', (args['end-step'] ?? args.steps) - (args['start-step'] ?? 0));
      const result = await runSampler(model, {
        ...(latentIn === undefined ? {} : { latent: latentIn }),
        ...(audioIn === undefined ? {} : { audio: audioIn }),
        ...(args['audio-frames'] === undefined ? {} : { audioFrames: args['audio-frames'] }),
        ...(contextIn === undefined ? {} : { context: contextIn }),
        ...(args['start-step'] === undefined ? {} : { startStep: args['start-step'] }),
        ...(args['end-step'] === undefined ? {} : { endStep: args['end-step'] }),
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
      if (result.audio !== undefined) {
        await writeSafetensors(join(stage.dir, 'audio.safetensors'), tensorSources({ audio: result.audio }), {
          metadata: { producer: 'ninodes run', quant: args.quant, seed: String(args.seed), steps: String(args.steps) },
        });
      }
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
          files: ['latent.safetensors', ...(result.audio === undefined ? [] : ['audio.safetensors']), 'preview.png', 'report.json'],
        },
        env: { node: process.version, simd: info.simd, onednn: info.onednn, int8Backend: int8Backend(), computePrecision: floatPrecision(QUANT_TO_COMPUTE[args.quant]), cpu: cpus()[0]?.model ?? 'unknown' },
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
      stage.discard();
      memory.stop();
      throw error;
    } finally {
      opened?.close();
    }
  },
});
