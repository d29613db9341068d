import { Tensor, numelOf } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';

/** 32-bit mix of a seed and a string (FNV-1a over the string, then a murmur finalizer). */
export function hashSeed(seed: number, key = ''): number {
  let h = (0x811c9dc5 ^ (seed >>> 0)) >>> 0;
  h = Math.imul(h ^ Math.floor(seed / 2 ** 32), 0x01000193) >>> 0;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * Deterministic normal samples: xoshiro128** seeded by splitmix32, Box–Muller pairs. Same seed, same
 * numbers on every platform (only integer ops and Math.log/cos/sin/sqrt of doubles, rounded to f32).
 */
export class GaussianStream {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;
  private spare: number | undefined;

  constructor(seed: number) {
    let x = seed >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next() | 1;
  }

  /** Uniform in [0, 1) with 32 bits. */
  uniform(): number {
    const result = Math.imul(((Math.imul(this.s1, 5) << 7) | (Math.imul(this.s1, 5) >>> 25)) >>> 0, 9) >>> 0;
    const t = (this.s1 << 9) >>> 0;
    this.s2 = (this.s2 ^ this.s0) >>> 0;
    this.s3 = (this.s3 ^ this.s1) >>> 0;
    this.s1 = (this.s1 ^ this.s2) >>> 0;
    this.s0 = (this.s0 ^ this.s3) >>> 0;
    this.s2 = (this.s2 ^ t) >>> 0;
    this.s3 = ((this.s3 << 11) | (this.s3 >>> 21)) >>> 0;
    return result / 2 ** 32;
  }

  normal(): number {
    if (this.spare !== undefined) {
      const v = this.spare;
      this.spare = undefined;
      return v;
    }
    const u1 = 1 - this.uniform();
    const u2 = this.uniform();
    const r = Math.sqrt(-2 * Math.log(u1));
    this.spare = r * Math.sin(2 * Math.PI * u2);
    return r * Math.cos(2 * Math.PI * u2);
  }

  fill(out: Float32Array, std = 1, mean = 0): Float32Array {
    for (let i = 0; i < out.length; i++) out[i] = mean + std * this.normal();
    return out;
  }
}

/** A standard-normal f32 tensor, deterministic from the seed (the sampler's starting noise). */
export function gaussianNoise(shape: readonly number[], seed: number): Tensor<'f32'> {
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw new ModelsError('INVALID_ARGUMENT', `seed must be a non-negative integer, got ${String(seed)}`, { value: seed, where: 'seed' });
  }
  const out = new Float32Array(numelOf(shape));
  new GaussianStream(hashSeed(seed, 'latent-noise')).fill(out);
  return Tensor.fromArray('f32', shape, out);
}
