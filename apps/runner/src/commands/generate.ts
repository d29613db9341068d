import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { cpus } from 'node:os';
import { defaultCacheDir } from '@ninodes/device';
import { StagedSource, type StepStats, latentTokens } from '@ninodes/distorch';
import { type CheckpointSource, parseByteSize } from '@ninodes/memory';
import { type Tensor, setThreads, terminalSafe } from '@ninodes/kernels';
import { H3_AUDIO_SAMPLE_RATE, type LinearOp, withGuidance, ensureSyntheticCheckpoint, ensureSyntheticParts, flowSigmas, h3AudioLatentFrames, h3LatentFrames, h3PixelFrames, h3VideoDecoderLayout, layoutOf, loadQwen3Tokenizer, openH3AudioDecoder, openH3Model, openH3VideoDecoder, openQwen3Encoder, qwen3Layout, runSampler } from '@ninodes/models';
import { COMPUTE_MODES, type ComputeMode, type GroupHooks, type ModelLayout } from '@ninodes/quant';
import { z } from 'zod';
import { type CommandContext, defineCommand } from '../command.js';
import { RunnerError } from '../error-codes.js';
import { stageOutput } from '../output-dir.js';
import { samplePeakMemory } from '../peak-memory.js';
import { stageExecutor } from '../stage-executor.js';
import { encodePng } from '../png.js';
import { encodeWav } from '../wav.js';
import { writeNewFile } from '../write-new-file.js';

/** MiniMax-H3's video rate: every generation is 24 fps (stable-diffusion.cpp overrides any other). */
export const H3_FPS = 24;
/** Pixels per DiT latent cell side (VAE 16) times the DiT's 2×2 patch: sizes align up to it. */
const SIZE_ALIGN = 32;

/** Width or height aligned up to a multiple of 32. */
export function alignSize(n: number): number {
  return Math.ceil(n / SIZE_ALIGN) * SIZE_ALIGN;
}

/** A frame count aligned up to the 17k + 5 grid (at least 5). */
export function alignFrames(n: number): number {
  return n <= 5 ? 5 : 5 + Math.ceil((n - 5) / 17) * 17;
}

const positiveInt = z.coerce.number().int().positive();

export const generateSchema = z
  .object({
    prompt: z.string().optional(),
    'prompt-file': z.string().min(1).optional(),
    negative: z.string().optional(),
    cfg: z.coerce.number().positive().max(100).default(1),
    preset: z.enum(['h3-tiny', 'h3-small']).optional(),
    model: z.string().min(1).optional(),
    'text-encoder': z.string().min(1).optional(),
    vae: z.string().min(1).optional(),
    'audio-vae': z.string().min(1).optional(),
    width: positiveInt.max(8192).default(864),
    height: positiveInt.max(8192).default(480),
    frames: positiveInt.max(1_000).default(5),
    steps: positiveInt.max(1000).default(8),
    shift: z.coerce.number().positive().max(1e6).default(12),
    seed: z.coerce.number().int().nonnegative().max(2 ** 32 - 1).default(145),
    quant: z.enum(COMPUTE_MODES as [ComputeMode, ...ComputeMode[]]).default('auto'),
    threads: z.coerce.number().int().nonnegative().max(1024).default(0),
    budget: z.string().min(1).optional(),
    'vae-tile': z.coerce.number().int().nonnegative().max(4096).refine((n) => n !== 1, { message: 'must be 0 (off) or at least 2' }).default(16),
    out: z.string().min(1).default('ninodes-generate'),
    'frames-dir': z.boolean().default(false),
    force: z.boolean().default(false),
    json: z.boolean().default(false),
    positionals: z.array(z.string()).length(0),
  })
  .refine((a) => (a.prompt === undefined) !== (a['prompt-file'] === undefined), { message: 'give the prompt with exactly one of --prompt and --prompt-file', path: ['prompt'] })
  .refine((a) => a.cfg === 1 || (a.negative !== undefined && a.negative.trim().length > 0), { message: 'guidance (--cfg other than 1) needs a --negative prompt', path: ['cfg'] })
  .refine((a) => (a.preset === undefined) !== (a.model === undefined), { message: 'give the model with exactly one of --preset and --model', path: ['model'] })
  .refine((a) => a.preset !== undefined || (a['text-encoder'] !== undefined && a.vae !== undefined), { message: '--model needs --text-encoder and --vae', path: ['text-encoder'] });

export type GenerateArgs = z.infer<typeof generateSchema>;

/** Every file generate may write into --out. */
export const GENERATE_FILES = ['video.mp4', 'frames', 'audio.wav', 'report.json'] as const;

interface Stage {
  readonly name: string;
  readonly seconds: number;
  /** Peak resident bytes of the process while the stage ran (anonymous + file-backed). */
  readonly peakBytes: number;
}

/** What --budget streamed in one stage. */
interface StreamedStage {
  readonly stage: string;
  readonly allocation: string;
  readonly loads: number;
  readonly bytesStreamed: number;
  readonly evictions: number;
}

/** The opened model's parts a stage streams: its layout and linears, and where its hooks go. */
interface Streamable {
  readonly source: CheckpointSource;
  allLinears(): LinearOp[];
  setHooks(hooks: GroupHooks | undefined): void;
}

/**
 * With --budget: opens a stage's model over a StagedSource, plans its layout under the budget and
 * hooks the executor in; runs `body`; closes the executor. Without: opens and runs.
 */
async function streamed<M extends { close(): void }, R>(
  name: string,
  budget: number | undefined,
  compute: ComputeMode,
  tokens: number,
  open: (wrap: ((s: CheckpointSource) => CheckpointSource) | undefined) => M,
  parts: (m: M) => { model: Streamable; layout: (s: CheckpointSource) => ModelLayout },
  body: (m: M) => Promise<R>,
  record: StreamedStage[],
): Promise<R> {
  let staged: StagedSource | undefined;
  const opened = open(budget === undefined ? undefined : (s) => (staged = new StagedSource(s)));
  let executor: ReturnType<typeof stageExecutor> | undefined;
  try {
    if (budget !== undefined && staged !== undefined) {
      const { model, layout } = parts(opened);
      executor = stageExecutor(layout(model.source), model.allLinears(), staged, { budgetBytes: budget, compute, tokens });
      model.setHooks(executor.executor);
    }
    const r = await body(opened);
    if (executor !== undefined) {
      const stats: StepStats[] = executor.stats();
      record.push({ stage: name, allocation: executor.allocation, loads: stats.reduce((a, s) => a + s.loads, 0), bytesStreamed: stats.reduce((a, s) => a + s.bytesStreamed, 0), evictions: stats.reduce((a, s) => a + s.evictions, 0) });
    }
    return r;
  } finally {
    await executor?.close().catch(() => undefined);
    opened.close();
  }
}

/** Runs one stage with its own peak-memory sampler; each stage's models are closed before the next starts. */
async function stage<R>(name: string, stages: Stage[], body: () => Promise<R>): Promise<R> {
  const started = performance.now();
  const memory = samplePeakMemory();
  try {
    return await body();
  } finally {
    const peak = memory.stop();
    stages.push({ name, seconds: (performance.now() - started) / 1000, peakBytes: peak.peakAnonBytes + peak.peakFileBytes });
  }
}

function ffmpegAvailable(): boolean {
  return spawnSync('ffmpeg', ['-version'], { stdio: 'ignore' }).status === 0;
}

/** Frame i of pixels [3, F, H, W] in [0, 1] as interleaved RGB bytes. */
function frameRgb(pixels: Tensor<'f32'>, i: number): Uint8Array {
  const [, f, h, w] = pixels.shape as [number, number, number, number];
  const plane = h * w;
  const rgb = new Uint8Array(3 * plane);
  for (let c = 0; c < 3; c++) {
    const base = (c * f + i) * plane;
    for (let p = 0; p < plane; p++) rgb[p * 3 + c] = Math.round((pixels.data[base + p] as number) * 255);
  }
  return rgb;
}

/** Muxes the frames into an H.264 mp4 at 24 fps with Debian's ffmpeg (raw RGB on its stdin). */
function writeMp4(path: string, pixels: Tensor<'f32'>, wav: string | undefined): void {
  const [, f, h, w] = pixels.shape as [number, number, number, number];
  const raw = Buffer.concat(Array.from({ length: f }, (_, i) => frameRgb(pixels, i)));
  const audio = wav === undefined ? [] : ['-i', wav, '-c:a', 'aac', '-b:a', '192k'];
  const r = spawnSync(
    'ffmpeg',
    ['-hide_banner', '-loglevel', 'error', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-s', `${w}x${h}`, '-r', String(H3_FPS), '-i', '-', ...audio, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', '-f', 'mp4', path],
    { input: raw, stdio: ['pipe', 'ignore', 'pipe'], maxBuffer: 1 << 26 },
  );
  if (r.status !== 0) {
    throw new RunnerError('MUX_FAILED', `ffmpeg could not write the mp4 (${r.error?.message ?? `exit ${r.status}`}): ${String(r.stderr ?? '').trim().slice(0, 500)}`, {
      value: r.status,
      where: path,
      hint: 'write PNG frames instead with --frames-dir, or check the ffmpeg install (Debian: apt-get install ffmpeg)',
    });
  }
}

function readPrompt(args: GenerateArgs): string {
  const file = args['prompt-file'];
  const prompt = file === undefined ? (args.prompt as string) : readFileSync(file, 'utf8');
  if (prompt.trim().length === 0) {
    throw new RunnerError('CLI_INVALID_OPTION', `the prompt${file === undefined ? '' : ` in ${JSON.stringify(file)}`} is empty`, { value: prompt, where: file === undefined ? '--prompt' : '--prompt-file', hint: 'describe the video to make' });
  }
  return prompt;
}

export const generate = defineCommand({
  name: 'generate',
  summary: 'make a video with sound from a prompt: tokenizer, text encoder, DiT sampler, video and audio VAE, mp4 (or PNG frames + WAV)',
  usage:
    'ninodes generate (--prompt <text> | --prompt-file <file>) [--negative <text> --cfg S] (--preset h3-tiny|h3-small | --model <dit> --text-encoder <te> --vae <vae> [--audio-vae <vae>]) [--width N] [--height N] [--frames N] [--steps N] [--shift S] [--seed N] [--quant <mode>] [--threads N] [--budget <bytes>] [--vae-tile N] [--out <dir>] [--frames-dir] [--force] [--json]',
  options: {
    prompt: { type: 'string', value: '<text>', description: 'what the video shows (the plain prompt: no chat template, as H3 text-to-video takes it)' },
    'prompt-file': { type: 'string', value: '<file>', description: 'read the prompt from a UTF-8 file' },
    negative: { type: 'string', value: '<text>', description: 'what the video should not show: the negative prompt of classifier-free guidance (with --cfg)' },
    cfg: { type: 'string', value: 'S', description: 'classifier-free guidance scale: each step runs the DiT on the prompt and on --negative and takes v_neg + S·(v_prompt − v_neg); 1 is off (H3 samples with 1)' },
    preset: { type: 'string', value: '<name>', description: 'synthetic DiT, text encoder and video VAE of matching widths (random weights, cached in $NINODES_CACHE): h3-tiny or h3-small' },
    model: { type: 'string', value: '<dit>', description: 'the H3 DiT checkpoint (.safetensors or .gguf)' },
    'text-encoder': { type: 'string', value: '<te>', description: "the Qwen3-VL text encoder (H3's 50-layer export; .safetensors or .gguf)" },
    vae: { type: 'string', value: '<vae>', description: 'the H3 video VAE (.safetensors)' },
    'audio-vae': { type: 'string', value: '<vae>', description: 'the H3 audio VAE (.safetensors): adds a stereo 32 kHz track (the DiT must have an audio stream); --preset brings one' },
    width: { type: 'string', value: 'N', description: 'pixels, aligned up to a multiple of 32' },
    height: { type: 'string', value: 'N', description: 'pixels, aligned up to a multiple of 32' },
    frames: { type: 'string', value: 'N', description: 'frames at 24 fps, aligned up to 17k + 5' },
    steps: { type: 'string', value: 'N', description: 'denoising steps' },
    shift: { type: 'string', value: 'S', description: 'flow-matching time shift of the video stream' },
    seed: { type: 'string', value: 'N', description: 'seed of the starting noise, 0 to 2^32-1' },
    quant: { type: 'string', value: '<mode>', description: 'compute format of every linear: auto (as stored), f32, bf16, int8_convrot, f8_e4m3fn' },
    threads: { type: 'string', value: 'N', description: 'native threads (0: one per core)' },
    'vae-tile': { type: 'string', value: 'N', description: 'decode frames in N×N latent-cell tiles overlapping by a quarter, blended (0: whole frames; stable-diffusion.cpp: 16)' },
    budget: { type: 'string', value: '<bytes>', description: 'RAM each stage may hold (measured): the text encoder, DiT and video VAE each keep what fits resident and stream the rest of their layers from the mapped file' },
    out: { type: 'string', value: '<dir>', description: 'directory for video.mp4 (or frames/) and report.json, written as a whole' },
    'frames-dir': { type: 'boolean', description: 'write PNG frames into <out>/frames instead of an mp4' },
    force: { type: 'boolean', description: 'replace the outputs of an earlier generation in --out' },
    json: { type: 'boolean', description: 'print the report as JSON on stdout' },
  },
  examples: ['ninodes generate --preset h3-small --prompt "a red fox" --frames 5 --width 64 --height 64', 'ninodes generate --model dit.gguf --text-encoder qwen3vl.gguf --vae vae.safetensors --prompt-file prompt.txt --out fox'],
  positionals: [0, 0],
  schema: generateSchema,
  async run(args, context) {
    return runGenerate(args, context);
  },
});

async function runGenerate(args: GenerateArgs, context: CommandContext): Promise<number> {
  const started = performance.now();
  const prompt = readPrompt(args);
  const threads = setThreads(args.threads);
  const width = alignSize(args.width);
  const height = alignSize(args.height);
  const frames = alignFrames(args.frames);
  if (width !== args.width || height !== args.height || frames !== args.frames) {
    context.stderr.write(`note: ${args.width}x${args.height}, ${args.frames} frames aligned to ${width}x${height}, ${frames} frames (sizes to 32, frames to 17k + 5)\n`);
  }
  flowSigmas(args.steps, args.shift);
  const budget = args.budget === undefined ? undefined : parseByteSize(args.budget);
  const mp4 = !args['frames-dir'] && ffmpegAvailable();
  if (!args['frames-dir'] && !mp4) context.stderr.write('note: ffmpeg was not found, so the frames are written as PNG into frames/ and the sound as audio.wav (install Debian\'s ffmpeg for an mp4)\n');
  const out = stageOutput(args.out, { force: args.force, ownFiles: GENERATE_FILES });
  const stages: Stage[] = [];
  const streaming: StreamedStage[] = [];
  try {
    const parts = await stage('load', stages, async () => {
      if (args.preset === undefined) return { model: args.model as string, textEncoder: args['text-encoder'] as string, vae: args.vae as string, audioVae: args['audio-vae'] };
      const dir = defaultCacheDir(context.env);
      const dit = await ensureSyntheticCheckpoint({ dir, preset: args.preset });
      const synthetic = await ensureSyntheticParts(dir, args.preset);
      return { model: dit.path, textEncoder: synthetic.textEncoder, vae: synthetic.videoDecoder, audioVae: args['audio-vae'] ?? synthetic.audioDecoder };
    });
    const tokenized = await stage('tokenize', stages, async () => {
      const tok = await loadQwen3Tokenizer();
      return { prompt: tok.encode(prompt), negative: args.cfg === 1 ? undefined : tok.encode(args.negative as string) };
    });
    const ids = tokenized.prompt;
    const text = await stage('text-encoder', stages, () =>
      streamed(
        'text-encoder',
        budget,
        args.quant,
        ids.length,
        (wrap) => openQwen3Encoder(parts.textEncoder, { compute: args.quant, ...(wrap === undefined ? {} : { wrapSource: wrap }) }),
        (te) => ({ model: { source: te.source, allLinears: () => te.encoder.allLinears(), setHooks: (h) => te.encoder.setHooks(h) }, layout: (s) => qwen3Layout(s) }),
        async (te) => {
          const task = context.progress.task('text encoder', tokenized.negative === undefined ? 1 : 2);
          const states = await te.encoder.encode(ids);
          task.tick(`${ids.length} tokens`);
          const negative = tokenized.negative === undefined ? undefined : await te.encoder.encode(tokenized.negative);
          task.done(negative === undefined ? `${ids.length} tokens` : `and ${tokenized.negative?.length} negative tokens`);
          return { states, negative };
        },
        streaming,
      ),
    );
    const latentSize = { frames: h3LatentFrames(frames), height: height / 16, width: width / 16 };
    const sampled = await stage('sampler', stages, () =>
      streamed(
        'sampler',
        budget,
        args.quant,
        latentTokens(latentSize) + ids.length,
        (wrap) => openH3Model(parts.model, { compute: args.quant, ...(wrap === undefined ? {} : { wrapSource: wrap }) }),
        (dit) => ({ model: { source: dit.source, allLinears: () => dit.model.allLinears(), setHooks: (h) => dit.model.setHooks(h) }, layout: (s) => layoutOf(s) }),
        async (dit) => {
        const textDim = dit.model.config.textDim ?? dit.model.config.hidden;
        if (text.states.shape[1] !== textDim) {
          throw new RunnerError('PARTS_MISMATCH', `the text encoder's width ${text.states.shape[1]} is not the DiT's text width ${textDim}`, { value: { textEncoder: text.states.shape[1], dit: textDim }, where: '--text-encoder', hint: 'pass the text encoder made for this DiT' });
        }
        const velocity = text.negative === undefined ? dit.model : withGuidance(dit.model, text.negative.reshape([1, ...text.negative.shape]), args.cfg);
        const audioChannels = dit.model.config.audioChannels;
        if (parts.audioVae !== undefined && audioChannels === undefined) {
          throw new RunnerError('PARTS_MISMATCH', `${parts.model} has no audio stream, so --audio-vae has nothing to decode`, { value: parts.audioVae, where: '--audio-vae', hint: 'drop --audio-vae, or pass an audio-video DiT' });
        }
        const steps = context.progress.task('steps', args.steps);
        const result = await runSampler(velocity, {
          ...(parts.audioVae === undefined ? {} : { audioFrames: h3AudioLatentFrames(frames, H3_FPS) }),
          context: text.states.reshape([1, ...text.states.shape]),
          ...latentSize,
          steps: args.steps,
          shift: args.shift,
          seed: args.seed,
          onStep: (s) => steps.tick(`sigma ${s.sigma.toFixed(3)} ${s.seconds.toFixed(2)}s`),
        });
        steps.done();
        return { video: result.latent, audio: result.audio };
        },
        streaming,
      ),
    );
    const latent = sampled.video;
    const pixels = await stage('video-vae', stages, () =>
      streamed(
        'video-vae',
        budget,
        args.quant,
        // one chunk of 7 latent frames of one tile, and the 5 extra tokens
        7 * Math.min(latentSize.height, args['vae-tile'] || latentSize.height) * Math.min(latentSize.width, args['vae-tile'] || latentSize.width) + 5,
        (wrap) => openH3VideoDecoder(parts.vae, { compute: args.quant, tile: args['vae-tile'], ...(wrap === undefined ? {} : { wrapSource: wrap }) }),
        (vae) => ({ model: { source: vae.source, allLinears: () => vae.decoder.allLinears(), setHooks: (h) => vae.decoder.setHooks(h) }, layout: (s) => h3VideoDecoderLayout(s) }),
        async (vae) => {
          const task = context.progress.task('video VAE', 1);
          const p = await vae.decoder.decode(latent);
          task.done(`${p.shape[1]} frames`);
          return p;
        },
        streaming,
      ),
    );
    const audioLatent = sampled.audio;
    const waveform =
      parts.audioVae === undefined || audioLatent === undefined
        ? undefined
        : await stage('audio-vae', stages, async () => {
            const vae = openH3AudioDecoder(parts.audioVae as string);
            try {
              const task = context.progress.task('audio VAE', 1);
              const w = await vae.decoder.decode(audioLatent);
              task.done(`${((w.shape[1] as number) / H3_AUDIO_SAMPLE_RATE).toFixed(2)} s`);
              return w;
            } finally {
              vae.close();
            }
          });
    const files = await stage('write', stages, async () => {
      const f = pixels.shape[1] as number;
      const wav = waveform === undefined ? undefined : join(out.dir, 'audio.wav');
      if (wav !== undefined && waveform !== undefined) writeNewFile(wav, encodeWav(waveform.data, 2, H3_AUDIO_SAMPLE_RATE));
      if (mp4) {
        writeMp4(join(out.dir, 'video.mp4'), pixels, wav);
        // The track is in the mp4; the WAV was only its input.
        if (wav !== undefined) rmSync(wav);
        return ['video.mp4'];
      }
      const framesDir = join(out.dir, 'frames');
      mkdirSync(framesDir);
      const written: string[] = [];
      for (let i = 0; i < f; i++) {
        const name = `frame-${String(i).padStart(5, '0')}.png`;
        writeNewFile(join(framesDir, name), encodePng(width, height, frameRgb(pixels, i)));
        written.push(`frames/${name}`);
      }
      return wav === undefined ? written : [...written, 'audio.wav'];
    });
    const report = {
      schema: 'ninodes.generate-report/1',
      prompt: { tokens: ids.length, ...(tokenized.negative === undefined ? {} : { negativeTokens: tokenized.negative.length }) },
      parts,
      video: { width, height, frames: h3PixelFrames(h3LatentFrames(frames)), fps: H3_FPS, latentShape: [...latent.shape] },
      ...(waveform === undefined ? {} : { audio: { sampleRate: H3_AUDIO_SAMPLE_RATE, channels: 2, samples: waveform.shape[1], seconds: (waveform.shape[1] as number) / H3_AUDIO_SAMPLE_RATE } }),
      sampler: { steps: args.steps, shift: args.shift, seed: args.seed, quant: args.quant, cfg: args.cfg },
      stages,
      peakBytes: Math.max(...stages.map((s) => s.peakBytes)),
      ...(budget === undefined ? {} : { budget: { bytes: budget, stages: streaming } }),
      endToEndSeconds: (performance.now() - started) / 1000,
      env: { node: process.version, threads, cpu: cpus()[0]?.model ?? 'unknown' },
      files,
    };
    writeNewFile(join(out.dir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
    const committed = out.commit();
    if (context.json) context.stdout.write(`${JSON.stringify({ ...report, files: committed })}\n`);
    else {
      const lines = stages.map((s) => `${s.name.padEnd(12)} ${s.seconds.toFixed(2)} s, peak ${(s.peakBytes / 2 ** 20).toFixed(0)} MiB`);
      context.stdout.write([...lines, `video        ${width}x${height}, ${report.video.frames} frames at ${H3_FPS} fps`, ...committed.slice(0, 3).map((f) => `wrote        ${terminalSafe(f)}`), ''].join('\n'));
    }
    return 0;
  } finally {
    out.discard();
  }
}
