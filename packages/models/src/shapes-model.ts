import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ModelsError } from './error-codes.js';
import { SAMPLER_LIMITS } from './sampler.js';
import type { CheckpointSource } from '@ninodes/memory';

/** Name of the trained default model (tools/train-demo): a 3-block H3 DiT that draws shapes. */
export const SHAPES_MODEL_NAME = 'h3-shapes';

/**
 * Path of the committed `h3-shapes` checkpoint. This module sits one level below the package root
 * both as src/shapes-model.ts and bundled as dist/index.{js,cjs}, so the weights are at ../weights.
 */
export function shapesModelPath(): string {
  const path = fileURLToPath(new URL('../weights/h3-shapes.safetensors', import.meta.url));
  if (!existsSync(path)) {
    throw new ModelsError('FILE_NOT_FOUND', `the trained default model is missing at ${path}`, {
      value: path,
      where: '@ninodes/models',
      hint: 'reinstall @ninodes/models, or pass --model / --preset',
    });
  }
  return path;
}

/** The sampler setting and latent size a trained checkpoint was made for (metadata `ninodes.sampler`). */
export interface SamplerHints {
  readonly steps: number;
  readonly shift: number;
  readonly frames: number;
  readonly height: number;
  readonly width: number;
}

const HINT_KEYS = ['steps', 'shift', 'frames', 'height', 'width'] as const;

/** The checkpoint's `ninodes.sampler` metadata, or undefined when it has none (e.g. synthetic presets). */
export function samplerHints(source: Pick<CheckpointSource, 'metadata' | 'path'>): SamplerHints | undefined {
  const raw = source.metadata['ninodes.sampler'];
  if (raw === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (error) {
    throw new ModelsError('INVALID_METADATA', `${source.path}: metadata ninodes.sampler is not JSON`, { value: raw, where: source.path, cause: error });
  }
  const hints = json as Record<string, unknown>;
  for (const key of HINT_KEYS) {
    const v = typeof json === 'object' && json !== null ? hints[key] : undefined;
    // The CLI's own limits: metadata is input too, and 2^53 - 1 steps would fail deep inside as an allocation.
    const limit = key === 'steps' || key === 'shift' ? SAMPLER_LIMITS[key] : Number.MAX_SAFE_INTEGER;
    const ok = typeof v === 'number' && v > 0 && v <= limit && (key === 'shift' ? Number.isFinite(v) : Number.isSafeInteger(v));
    if (!ok) {
      throw new ModelsError('INVALID_METADATA', `${source.path}: metadata ninodes.sampler has no valid ${key}`, {
        value: raw,
        where: source.path,
        hint: `expected {"steps", "shift", "frames", "height", "width"}: positive numbers, all but shift integers, steps at most ${SAMPLER_LIMITS.steps}, shift at most ${SAMPLER_LIMITS.shift}`,
      });
    }
  }
  return { steps: hints.steps as number, shift: hints.shift as number, frames: hints.frames as number, height: hints.height as number, width: hints.width as number };
}
