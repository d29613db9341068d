import { performance } from 'node:perf_hooks';
import { NinodesError, Tensor } from '@ninodes/kernels';
import type { VelocityModel } from './h3-model.js';
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
}

export const SAMPLER_DEFAULTS = { steps: 8, shift: 12, seed: 145, frames: 3, height: 32, width: 32 } as const;

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
    if (options.latent.dtype !== 'f32') throw new NinodesError('DTYPE_MISMATCH', `the starting latent must be f32, got ${options.latent.dtype}`, { value: options.latent.dtype, where: 'latent' });
    x = Tensor.fromArray('f32', options.latent.shape, Float32Array.from(options.latent.data));
    // NaN or Inf in the starting latent would run every step and write NaN or noise without a word.
    const xs = x.data;
    for (let i = 0; i < xs.length; i++) {
      if (!Number.isFinite(xs[i] as number)) {
        throw new NinodesError('LATENT_NOT_FINITE', `the starting latent holds ${String(xs[i])} at element ${i}`, {
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
      if (!Number.isSafeInteger(v) || v < 1) throw new NinodesError('INVALID_ARGUMENT', `${name} must be a positive integer, got ${String(v)}`, { value: v, where: name });
    }
    x = gaussianNoise([1, model.latentChannels, frames, height, width], seed);
  }
  const start = performance.now();
  const stepSeconds: number[] = [];
  const xd = x.data;
  for (let i = 0; i < steps; i++) {
    if (options.signal?.aborted) throw new NinodesError('ABORTED', `sampling aborted before step ${i + 1} of ${steps}`, { value: i });
    const sigma = sigmas[i] as number;
    const sigmaNext = sigmas[i + 1] as number;
    options.onStepStart?.({ step: i, steps, sigma });
    const t0 = performance.now();
    const v = await model.forward(x, sigma);
    if (v.numel !== x.numel) throw new NinodesError('SHAPE_MISMATCH', `the model returned [${v.shape.join(', ')}] for a [${x.shape.join(', ')}] latent`, { value: v.shape });
    const vd = v.data;
    const dt = Math.fround(sigmaNext - sigma);
    for (let j = 0; j < xd.length; j++) xd[j] = (xd[j] as number) + dt * (vd[j] as number);
    const seconds = (performance.now() - t0) / 1000;
    stepSeconds.push(seconds);
    options.onStep?.({ step: i, steps, sigma, sigmaNext, seconds });
  }
  return { latent: x, sigmas, stepSeconds, totalSeconds: (performance.now() - start) / 1000, seed };
}
