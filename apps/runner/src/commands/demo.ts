import { spawn } from 'node:child_process';
import { readFileSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NinodesError, Tensor, setThreads } from '@ninodes/kernels';
import { type ComputeMode, openCheckpoint, quantize } from '@ninodes/quant';
import { openSafetensors, tensorSources, writeSafetensors } from '@ninodes/memory';
import { SHAPES_MODEL_NAME, type OpenedH3Model, cleanShapeScore, openH3Model, paletteFraction, runSampler, samplerHints, shapesModelPath } from '@ninodes/models';
import { z } from 'zod';
import { defineCommand } from '../command.js';
import { stageOutput } from '../output-dir.js';
import { writeNewFile } from '../write-new-file.js';
import { samplePeakMemory } from '../peak-memory.js';
import { encodePng } from '../png.js';
import { psnr } from '../psnr.js';
import { type RgbImage, sampleGrid, sideBySide } from '../sample-grid.js';
import { withLabel } from '../pixel-font.js';
import { formatTable } from '../table.js';
import { RunnerError } from '../error-codes.js';
import { TP_DEMO_FILES, sampleTensorParallel } from './demo-tp.js';

const CLI = fileURLToPath(new URL('./cli.js', import.meta.url));

/**
 * f32 first (the reference), then every weight format `ninodes run --quant` converts to on the fly,
 * then the GGUF block formats, which `ninodes quantize` writes to a .gguf file that is then run.
 */
const DEMO_FORMATS = ['f32', 'bf16', 'int8_convrot', 'f8_e4m3fn', 'q8_0', 'q4_k'] as const;
type DemoFormat = (typeof DEMO_FORMATS)[number];

/** The GGUF rows: the converter's target, and the linears run as stored (multiplied on their blocks). */
const GGUF_TARGET = { q8_0: 'q8_0', q4_k: 'q4_k' } as const;
const isGguf = (f: DemoFormat): f is keyof typeof GGUF_TARGET => Object.hasOwn(GGUF_TARGET, f);
const computeOf = (f: DemoFormat): ComputeMode => (isGguf(f) ? 'auto' : f);

/** What one format writes, and everything the demo writes into --out (which it replaces as a whole). */
const formatFiles = (format: DemoFormat): string[] => [`${format}.safetensors`, `${format}.png`, `${format}.json`];
const DEMO_FILES = [...DEMO_FORMATS.flatMap(formatFiles), ...TP_DEMO_FILES, 'overview.png', 'report.json'];

const formatReportSchema = z.object({
  schema: z.literal('ninodes.demo-format/1'),
  format: z.enum(DEMO_FORMATS),
  model: z.string(),
  seeds: z.array(z.number().int().nonnegative()),
  steps: z.number().int().positive(),
  shift: z.number().positive(),
  latentShape: z.array(z.number().int().positive()),
  threads: z.number().int().positive(),
  /** Seconds of every sampler step, seed after seed. */
  stepSeconds: z.array(z.number().nonnegative()),
  /** Mean step of every seed but the first (which materializes the weights). */
  meanStepSeconds: z.number().nonnegative(),
  loadSeconds: z.number().nonnegative(),
  /** GGUF rows: seconds to convert the model into the scratch .gguf (part of loadSeconds). */
  convertSeconds: z.number().nonnegative().optional(),
  peakAnonBytes: z.number().int().nonnegative(),
  peakFileBytes: z.number().int().nonnegative(),
  /** Per seed: fraction of pixels within 0.2 of a palette colour. */
  paletteFractions: z.array(z.number()),
  shapeScore: z.number(),
});
type FormatReport = z.infer<typeof formatReportSchema>;

/** Each format runs in its own process, so its peak memory is its own. */
function runChild(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'inherit'], env });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) resolvePromise();
      else reject(new RunnerError('DEMO_RUN_FAILED', `ninodes ${args.join(' ')} exited with ${signal ?? code}`, { value: args, hint: 'its error is printed above' }));
    });
  });
}

/** The samples of one format as [N, C, T, H, W] and, per seed, [1, C, T, H, W] views. */
function readSamples(path: string): Tensor<'f32'>[] {
  const source = openSafetensors(path);
  try {
    const all = source.tensor('latents') as Tensor<'f32'>;
    const [n, ...rest] = all.shape as number[];
    const per = rest.reduce((a, b) => a * b, 1);
    return Array.from({ length: n as number }, (_, i) => Tensor.fromArray('f32', [1, ...rest], Float32Array.from(all.data.subarray(i * per, (i + 1) * per))));
  } finally {
    source.close();
  }
}

/** Channels 0..2 of every sample, concatenated: what the pictures show and what PSNR compares. */
function rgbOf(latents: readonly Tensor<'f32'>[]): Float32Array {
  const parts = latents.map((l) => {
    const [, , t, h, w] = l.shape as number[];
    return l.data.subarray(0, 3 * (t as number) * (h as number) * (w as number));
  });
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

const png = (im: RgbImage): Buffer => encodePng(im.width, im.height, im.rgb);

interface DemoArgs {
  out: string;
  seeds: number;
  steps?: number | undefined;
  threads: number;
}

/** One format in this process: samples seeds 0..N-1 and writes <format>.{safetensors,png,json}. */
async function sampleFormat(format: DemoFormat, args: DemoArgs, context: { stderr: NodeJS.WritableStream }): Promise<string[]> {
  const started = performance.now();
  const threads = setThreads(args.threads);
  const memory = samplePeakMemory();
  // The demo replaces its own earlier output (and refuses a directory holding anything else).
  const stage = stageOutput(args.out, { force: true, ownFiles: DEMO_FILES });
  let opened: OpenedH3Model | undefined;
  // GGUF rows: the model converted by `ninodes quantize`'s converter into the staging area (a scratch
  // file that goes with it: removed before the commit, or with the staging area on failure).
  const scratch = join(stage.dir, `.${SHAPES_MODEL_NAME}-${format}.gguf`);
  let convertSeconds: number | undefined;
  try {
    const path = shapesModelPath();
    let modelPath = path;
    if (isGguf(format)) {
      const source = openCheckpoint(path);
      try {
        convertSeconds = (await quantize(source, scratch, { format: GGUF_TARGET[format], architecture: 'h3' })).seconds;
      } finally {
        source.close();
      }
      modelPath = scratch;
    }
    opened = openH3Model(modelPath, { compute: computeOf(format) });
    const hints = samplerHints(opened.source);
    if (hints === undefined) throw new RunnerError('INVALID_METADATA', `${path} has no ninodes.sampler metadata`, { value: path, where: path, hint: 'rewrite it with tools/train-demo/evaluate.py' });
    const steps = args.steps ?? hints.steps;
    const loadSeconds = (performance.now() - started) / 1000;
    const seeds = Array.from({ length: args.seeds }, (_, i) => i);
    const latents: Tensor<'f32'>[] = [];
    const stepSeconds: number[] = [];
    for (const seed of seeds) {
      const r = await runSampler(opened.model, { seed, frames: hints.frames, height: hints.height, width: hints.width, steps, shift: hints.shift, onStep: () => memory.sample() });
      latents.push(r.latent);
      stepSeconds.push(...r.stepSeconds);
    }
    context.stderr.write(`${format}: ${seeds.length} samples, ${steps} steps, shift ${hints.shift}\n`);
    const warm = stepSeconds.length > steps ? stepSeconds.slice(steps) : stepSeconds;
    const shape = latents[0]!.shape;
    const stacked = Tensor.fromArray('f32', [latents.length, ...shape.slice(1)], new Float32Array(latents.flatMap((l) => Array.from(l.data))));
    await writeSafetensors(join(stage.dir, `${format}.safetensors`), tensorSources({ latents: stacked }), {
      metadata: { producer: 'ninodes demo', model: SHAPES_MODEL_NAME, format, seeds: `0..${seeds.length - 1}`, steps: String(steps), shift: String(hints.shift) },
    });
    writeNewFile(join(stage.dir, `${format}.png`), png(sampleGrid(latents)));
    const peak = memory.stop();
    const report: FormatReport = formatReportSchema.parse({
      schema: 'ninodes.demo-format/1',
      format,
      model: modelPath === path ? path : `${path} -> ${GGUF_TARGET[format as keyof typeof GGUF_TARGET]} .gguf`,
      seeds,
      steps,
      shift: hints.shift,
      latentShape: [...shape],
      threads,
      stepSeconds,
      meanStepSeconds: warm.reduce((a, b) => a + b, 0) / warm.length,
      loadSeconds,
      ...(convertSeconds === undefined ? {} : { convertSeconds }),
      peakAnonBytes: peak.peakAnonBytes,
      peakFileBytes: peak.peakFileBytes,
      paletteFractions: latents.map((l) => paletteFraction(l)),
      shapeScore: cleanShapeScore(latents),
    });
    writeNewFile(join(stage.dir, `${format}.json`), `${JSON.stringify(report, null, 2)}\n`);
    opened.close();
    opened = undefined;
    rmSync(scratch, { force: true });
    return stage.commit();
  } catch (error) {
    memory.stop();
    throw error;
  } finally {
    // After a commit this only releases the lock; otherwise it removes the staging directory.
    stage.discard();
    opened?.close();
  }
}

export const demo = defineCommand({
  name: 'demo',
  summary: 'sample the trained h3-shapes model in f32 and every weight format; pictures, shape score, PSNR, speed',
  usage: `ninodes demo [--out <dir>] [--seeds 8] [--steps N] [--threads N] [--format ${DEMO_FORMATS.join('|')}]`,
  options: {
    out: { type: 'string', value: '<dir>', description: 'directory for the pictures, samples and report (the demo replaces its own earlier output there)' },
    seeds: { type: 'string', value: 'N', description: 'samples per format (seeds 0..N-1)' },
    steps: { type: 'string', value: 'N', description: "denoising steps [default: the model's ninodes.sampler metadata]" },
    threads: { type: 'string', value: 'N', description: 'native threads (0: one per core)' },
    format: { type: 'string', value: '<format>', description: `sample one format in this process: ${DEMO_FORMATS.join(', ')}` },
  },
  positionals: [0, 0],
  examples: ['ninodes demo', 'ninodes demo --steps 4 --out /tmp/demo'],
  schema: z.object({
    out: z.string().min(1).default('ninodes-demo'),
    seeds: z.coerce.number().int().positive().max(1024).default(8),
    steps: z.coerce.number().int().positive().max(1000).optional(),
    threads: z.coerce.number().int().nonnegative().max(1024).default(0),
    /** One format only, in this process (the full demo runs each format this way, in a child). */
    format: z.enum(DEMO_FORMATS).optional(),
    positionals: z.array(z.string()).length(0),
  }),
  async run(args, context) {
    if (args.format !== undefined) {
      const files = await sampleFormat(args.format, args, context);
      context.stdout.write(files.map((f) => `wrote      ${f}\n`).join(''));
      return 0;
    }
    const stage = stageOutput(args.out, { force: true, ownFiles: DEMO_FILES });
    try {
      const reports = new Map<DemoFormat, FormatReport>();
      const samples = new Map<DemoFormat, Tensor<'f32'>[]>();
      for (const format of DEMO_FORMATS) {
        context.stderr.write(`== ${SHAPES_MODEL_NAME} ${format}\n`);
        // Each format samples in its own process into a fresh folder of the staging area, whose files
        // then join the others: the whole demo output still commits at once.
        const part = join(stage.dir, `.${format}`);
        const childArgs = ['demo', '--format', format, '--seeds', String(args.seeds), '--threads', String(args.threads), '--out', part];
        if (args.steps !== undefined) childArgs.push('--steps', String(args.steps));
        await runChild(childArgs, context.env);
        for (const f of formatFiles(format)) renameSync(join(part, f), join(stage.dir, f));
        rmSync(part, { recursive: true, force: true });
        reports.set(format, formatReportSchema.parse(JSON.parse(readFileSync(join(stage.dir, `${format}.json`), 'utf8'))));
        samples.set(format, readSamples(join(stage.dir, `${format}.safetensors`)));
      }
      const f32 = reports.get('f32')!;
      const reference = rgbOf(samples.get('f32')!);
      const grids = DEMO_FORMATS.map((f) => withLabel(sampleGrid(samples.get(f)!), f));
      writeNewFile(join(stage.dir, 'overview.png'), png(sideBySide(grids)));
      const outDir = resolve(args.out);
      const rows: Array<{ format: string; meanStepSeconds: number; speedUp: number; peakAnonBytes: number; shapeScore: number; psnrVsFp32: number | null; picture: string }> = DEMO_FORMATS.map((format) => {
        const r = reports.get(format)!;
        return {
          format,
          meanStepSeconds: r.meanStepSeconds,
          speedUp: f32.meanStepSeconds / r.meanStepSeconds,
          peakAnonBytes: r.peakAnonBytes,
          shapeScore: r.shapeScore,
          // Over channels 0..2 (the picture); the 21 channels the model keeps near zero would inflate it.
          psnrVsFp32: format === 'f32' ? null : psnr(reference, rgbOf(samples.get(format)!)),
          picture: join(outDir, `${format}.png`),
        };
      });
      // Tensor parallel: the same cores as the rows above, split over two rank processes.
      context.stderr.write(`== ${SHAPES_MODEL_NAME} f32, tensor parallel over 2 ranks\n`);
      const tp = await sampleTensorParallel({ dir: stage.dir, steps: f32.steps, threadsPerRank: Math.max(1, Math.floor(f32.threads / 2)), env: context.env });
      rows.push({
        format: tp.format,
        meanStepSeconds: tp.meanStepSeconds,
        speedUp: f32.meanStepSeconds / tp.meanStepSeconds,
        peakAnonBytes: Math.max(...tp.peakAnonBytesPerRank),
        shapeScore: tp.shapeScore,
        psnrVsFp32: psnr(rgbOf(samples.get('f32')!.slice(0, 1)), rgbOf([tp.latent])),
        picture: join(outDir, 'f32-tp2.png'),
      });
      const perRank = Math.max(1, Math.floor(f32.threads / 2));
      const tpNote = `f32 TP2: seed 0 split over 2 rank processes of ${perRank} thread${perRank === 1 ? '' : 's'} (f32: h3-shapes' hidden 256 cannot give two ranks whole 256-column int8 convrot groups); PEAK ANON is the larger rank's; ranks' latent hashes ${tp.hashesEqual ? 'equal' : 'DIFFER'}; PSNR against f32 seed 0; ${(100 * tp.commShare).toFixed(0)} % of rank 0's step time in collectives (a model this small is too small to gain from splitting)`;
      const gguf =
        'q8_0 / q4_k: the model converted by `ninodes quantize --format q8_0|q4_k` (block linears Q8_0 / Q4_K as ggml encodes them; f32 islands, norms and biases F32 or as stored), then run from the .gguf, each linear multiplied on its stored blocks with its input quantized per block as ggml does (kernels ggufLinear)';
      const report = {
        schema: 'ninodes.demo-report/1',
        model: { name: SHAPES_MODEL_NAME, path: f32.model, latentShape: f32.latentShape, steps: f32.steps, shift: f32.shift },
        seeds: f32.seeds,
        threads: f32.threads,
        formats: rows,
        tensorParallel: { ranks: tp.ranks, peakAnonBytesPerRank: tp.peakAnonBytesPerRank, hashesEqual: tp.hashesEqual, latentSha256: tp.latentSha256, commShare: tp.commShare, report: join(outDir, 'f32-tp2.json') },
        overview: join(outDir, 'overview.png'),
        notes: [gguf, tpNote],
      };
      writeNewFile(join(stage.dir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
      stage.commit();
      const table = rows.map((r) => [
        r.format,
        `${(r.meanStepSeconds * 1000).toFixed(1)} ms`,
        `${r.speedUp.toFixed(2)}x`,
        `${(r.peakAnonBytes / 2 ** 20).toFixed(0)} MiB`,
        r.shapeScore.toFixed(2),
        r.psnrVsFp32 === null ? 'reference' : `${r.psnrVsFp32.toFixed(1)} dB`,
        r.picture,
      ]);
      context.stdout.write(
        [
          '',
          `${SHAPES_MODEL_NAME}: a 3-block H3 DiT trained to draw a disk or square (tools/train-demo), ${f32.seeds.length} seeds, ${f32.steps} steps, shift ${f32.shift}, latent [${f32.latentShape.join(', ')}], ${f32.threads} threads`,
          '',
          formatTable(['FORMAT', 'STEP', 'SPEED-UP', 'PEAK ANON', 'SHAPE SCORE', 'PSNR vs f32 (RGB)', 'PICTURE'], table),
          '',
          `overview   ${report.overview} (${DEMO_FORMATS.join(', ')}, left to right)`,
          `report     ${join(outDir, 'report.json')}`,
          `note       ${gguf}.`,
          `note       ${tpNote}.`,
          'note       shape score: share of samples that are one clean disk or square of one colour on one background (>= 90 % palette pixels, one shape colour on 6-60 % of the frame filling >= 0.6 of its box, in one piece); the training data scores 1.0.',
          'note       speed and memory at scale: `ninodes run --preset h3-tiny|h3-small` (synthetic random weights, so their previews are noise) and `npm run bench`.',
          '',
        ].join('\n'),
      );
      return 0;
    } finally {
      stage.discard();
    }
  },
});
