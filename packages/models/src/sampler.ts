import { performance } from 'node:perf_hooks';
import { Tensor } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';
import { H3_SIGMA_SHIFTS } from './h3-config.js';
import type { VelocityModel } from './h3-model.js';
import { timeShiftSigma } from './h3-streams.js';
import { gaussianNoise } from './noise.js';
import { latentDims } from './patchify.js';
import { flowSigmas } from './sigma-schedule.js';

export interface SamplerOptions {
  /** Starting noise [1, C, T, H, W] f32; when absent, `gaussianNoise` from `seed` with frames/height/width. */
  readonly latent?: Tensor<'f32'>;
  /** Default 145. */
  readonly seed?: number;
  readonly frames?: number;
  readonly height?: number;
  readonly width?: number;
  /** Default 8. */
  readonly steps?: number;
  /** Default 12 (H3's video shift). */
  readonly shift?: number;
  /** Called before each model call. */
  /**
   * KSamplerAdvanced's start_at_step / end_at_step on the `steps`-long schedule: steps
   * [startStep, endStep) run, the latent is the state at sigmas[startStep] (a given latent as is,
   * seeded noise scaled to that sigma) and is returned with its leftover noise at sigmas[endStep].
   */
  readonly startStep?: number;
  readonly endStep?: number;
  /** Stereo audio latent [1, C, 2, T] at sigmas[startStep] (its own, unscaled form); needs `forwardStreams`. */
  readonly audio?: Tensor<'f32'>;
  /** Without `audio`: frames of seeded audio noise (seed + 1) to sample with the video. */
  readonly audioFrames?: number;
  /** Text states [1, L, textDim or hidden] for every step; needs `forwardStreams`. */
  readonly context?: Tensor<'f32'>;
  readonly onStepStart?: (info: { step: number; steps: number; sigma: number }) => void;
  /** Called after each step with its wall time. */
  readonly onStep?: (info: StepInfo) => void;
  /** Checked between steps; an aborted run rejects with code ABORTED. */
  readonly signal?: AbortSignal;
}

export interface StepInfo {
  /** 0-based step index. */
  readonly step: number;
  readonly steps: number;
  readonly sigma: number;
  readonly sigmaNext: number;
  /** Wall-clock seconds of this step (model forward + update). */
  readonly seconds: number;
}

export interface SamplerResult {
  /** The denoised latent [1, C, T, H, W] f32. */
  readonly latent: Tensor<'f32'>;
  readonly sigmas: Float64Array;
  readonly stepSeconds: readonly number[];
  readonly totalSeconds: number;
  readonly seed: number | undefined;
  /** The audio latent after the last step, when the run had an audio stream. */
  readonly audio?: Tensor<'f32'>;
}

export const SAMPLER_DEFAULTS = { steps: 8, shift: 12, seed: 145, frames: 3, height: 32, width: 32 } as const;

/** The largest step count and shift a run takes, from the CLI or a checkpoint's ninodes.sampler alike. */
export const SAMPLER_LIMITS = { steps: 1000, shift: 1e6 } as const;

/**
 * Flow-matching Euler, H3's sampler: sigmas from `flowSigmas(steps, shift)`, the model called at
 * sigma_i, then x ← x + (sigma_{i+1} − sigma_i)·v, in float32 like ComfyUI's Euler on an fp32 latent.
 */
export async function runSampler(model: VelocityModel, options: SamplerOptions = {}): Promise<SamplerResult> {
  const steps = options.steps ?? SAMPLER_DEFAULTS.steps;
  const shift = options.shift ?? SAMPLER_DEFAULTS.shift;
  const sigmas = flowSigmas(steps, shift);
  let x: Tensor<'f32'>;
  let seed: number | undefined;
  if (options.latent) {
    latentDims(options.latent, model.latentChannels);
    if (options.latent.dtype !== 'f32') throw new ModelsError('DTYPE_MISMATCH', `the starting latent must be f32, got ${options.latent.dtype}`, { value: options.latent.dtype, where: 'latent' });
    x = Tensor.fromArray('f32', options.latent.shape, Float32Array.from(options.latent.data));
    // NaN or Inf in the starting latent would run every step and write NaN or noise without a word.
    const xs = x.data;
    for (let i = 0; i < xs.length; i++) {
      if (!Number.isFinite(xs[i] as number)) {
        throw new ModelsError('LATENT_NOT_FINITE', `the starting latent holds ${String(xs[i])} at element ${i}`, {
          value: xs[i],
          where: `latent[${i}]`,
          hint: 'the starting noise must be finite numbers',
        });
      }
    }
  } else {
    seed = options.seed ?? SAMPLER_DEFAULTS.seed;
    const frames = options.frames ?? SAMPLER_DEFAULTS.frames;
    const height = options.height ?? SAMPLER_DEFAULTS.height;
    const width = options.width ?? SAMPLER_DEFAULTS.width;
    for (const [name, v] of [['frames', frames], ['height', height], ['width', width]] as const) {
      if (!Number.isSafeInteger(v) || v < 1) throw new ModelsError('INVALID_ARGUMENT', `${name} must be a positive integer, got ${String(v)}`, { value: v, where: name });
    }
    x = gaussianNoise([1, model.latentChannels, frames, height, width], seed);
  }
  const first = options.startStep ?? 0;
  const last = options.endStep ?? steps;
  if (!Number.isSafeInteger(first) || !Number.isSafeInteger(last) || first < 0 || last > steps || first >= last) {
    throw new ModelsError('INVALID_ARGUMENT', `steps [${first}, ${last}) are not a non-empty range of the ${steps}-step schedule`, {
      value: { startStep: first, endStep: last, steps },
      where: 'startStep/endStep',
      hint: 'need 0 ≤ start-step < end-step ≤ steps',
    });
  }
  const sigma0 = sigmas[first] as number;
  // Seeded noise stands for the state at sigmas[first]: scaled to it past step 0 (σ·noise, flow).
  if (!options.latent && first > 0) scaleInPlace(x, sigma0);
  const streams = options.audio !== undefined || options.audioFrames !== undefined || options.context !== undefined;
  if (streams && model.forwardStreams === undefined) {
    throw new ModelsError('INVALID_ARGUMENT', 'this model takes video alone: no audio or context streams', { value: 'forwardStreams', where: 'runSampler', hint: 'drop --audio/--context' });
  }
  let audio: Tensor<'f32'> | undefined;
  if (options.audio !== undefined) {
    audio = Tensor.fromArray('f32', options.audio.shape, Float32Array.from(options.audio.data));
  } else if (options.audioFrames !== undefined) {
    const channels = model.audioChannels;
    if (channels === undefined) throw new ModelsError('INVALID_ARGUMENT', 'this checkpoint has no audio stream', { value: options.audioFrames, where: 'audioFrames' });
    if (!Number.isSafeInteger(options.audioFrames) || options.audioFrames < 1) throw new ModelsError('INVALID_ARGUMENT', `audioFrames must be a positive integer, got ${String(options.audioFrames)}`, { value: options.audioFrames, where: 'audioFrames' });
    audio = gaussianNoise([1, channels, 2, options.audioFrames], ((seed ?? options.seed ?? SAMPLER_DEFAULTS.seed) + 1) % 2 ** 32);
    if (first > 0) scaleInPlace(audio, audioSigma(sigma0));
  }
  const start = performance.now();
  const stepSeconds: number[] = [];
  const xd = x.data;
  // The velocity buffer a model may write into again next step (H3: videoOut), so steps after the first allocate nothing.
  let velocity: Tensor<'f32'> | undefined;
  for (let i = first; i < last; i++) {
    if (options.signal?.aborted) throw new ModelsError('ABORTED', `sampling aborted before step ${i + 1} of ${steps}`, { value: i });
    const sigma = sigmas[i] as number;
    const sigmaNext = sigmas[i + 1] as number;
    options.onStepStart?.({ step: i, steps, sigma });
    const t0 = performance.now();
    // forwardStreams hands the next sigma to the final layer (a PDD head bank needs it).
    const out = model.forwardStreams
      ? await model.forwardStreams({ video: x, sigma, sigmaNext, ...(audio ? { audio } : {}), ...(options.context ? { context: options.context } : {}), ...(velocity ? { videoOut: velocity } : {}) })
      : { video: await model.forward(x, sigma) };
    const v = out.video;
    velocity = v;
    if (v.numel !== x.numel) throw new ModelsError('SHAPE_MISMATCH', `the model returned [${v.shape.join(', ')}] for a [${x.shape.join(', ')}] latent`, { value: v.shape });
    const vd = v.data;
    const dt = Math.fround(sigmaNext - sigma);
    for (let j = 0; j < xd.length; j++) xd[j] = (xd[j] as number) + dt * (vd[j] as number);
    if (audio !== undefined && out.audio !== undefined) eulerAudio(audio, out.audio, sigma, sigmaNext);
    const seconds = (performance.now() - t0) / 1000;
    stepSeconds.push(seconds);
    options.onStep?.({ step: i, steps, sigma, sigmaNext, seconds });
  }
  return { latent: x, sigmas, stepSeconds, totalSeconds: (performance.now() - start) / 1000, seed, ...(audio ? { audio } : {}) };
}

function scaleInPlace(t: Tensor<'f32'>, k: number): void {
  const d = t.data;
  for (let j = 0; j < d.length; j++) d[j] = (d[j] as number) * k;
}

/** The audio stream's sigma at video sigma σ (shift 12 -> 3). */
function audioSigma(sigma: number): number {
  return timeShiftSigma(sigma, H3_SIGMA_SHIFTS.video, H3_SIGMA_SHIFTS.audio);
}

/**
 * One Euler step of the audio stream the way ComfyUI samples it (ModelSamplingAV + the H3 model's
 * forward): the sampler carries y = x_a·σ_v/σ_a on the video schedule, whose velocity is
 * (1 − s)·x_a + (1 + (s − 1)·σ_a)·v_a with s = shift_video / shift_audio (= 4); with these shifts
 * σ_v/σ_a = s − (s − 1)·σ_v exactly, so y is linear in σ_v and the carry has no 0/0 at σ_v = 0.
 * x_a holds the audio's own form before and after.
 */
function eulerAudio(audio: Tensor<'f32'>, v: Tensor<'f32'>, sigma: number, sigmaNext: number): void {
  const s = H3_SIGMA_SHIFTS.video / H3_SIGMA_SHIFTS.audio;
  const sv = Math.max(Math.fround(sigma), 1e-6);
  const sa = audioSigma(sv);
  const lift = s - (s - 1) * sv; // σ_v / σ_a
  const drop = 1 / (s - (s - 1) * sigmaNext); // σ_a / σ_v at the next sigma
  const dt = sigmaNext - sigma;
  const k = 1 + (s - 1) * sa;
  const a = audio.data;
  const vd = v.data;
  for (let j = 0; j < a.length; j++) {
    const xa = a[j] as number;
    const y = xa * lift + dt * ((1 - s) * xa + k * (vd[j] as number));
    a[j] = y * drop;
  }
}
