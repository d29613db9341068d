import { Tensor } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import type { VelocityModel } from './h3-model.js';
import { gaussianNoise } from './noise.js';
import { runSampler } from './sampler.js';
import { timeShiftSigma } from './h3-streams.js';
import { flowSigmas } from './sigma-schedule.js';

/** v = a·x: Euler multiplies x by Π (1 + a·(sigma_{i+1} − sigma_i)). */
function linearModel(a: number, calls: number[]): VelocityModel {
  return {
    latentChannels: 24,
    async forward(x: Tensor<'f32'>, sigma: number) {
      calls.push(sigma);
      return Tensor.fromArray('f32', x.shape, x.data.map((v) => a * v));
    },
  };
}

describe('runSampler (flow-matching Euler)', () => {
  it('defaults: 8 steps, shift 12, seed 145 noise, model called at sigma_0..sigma_7', async () => {
    const calls: number[] = [];
    const times: number[] = [];
    const r = await runSampler(linearModel(0.5, calls), { frames: 2, height: 4, width: 6, onStep: (s) => times.push(s.seconds) });
    expect(r.latent.shape).toEqual([1, 24, 2, 4, 6]);
    expect(r.seed).toBe(145);
    expect(calls.length).toBe(8);
    expect(times.length).toBe(8);
    expect(r.stepSeconds.length).toBe(8);
    for (let i = 0; i < 8; i++) {
      const s = 1 - i / 8;
      expect(calls[i]).toBeCloseTo((12 * s) / (1 + 11 * s), 12);
    }
    let factor = 1;
    for (let i = 0; i < 8; i++) factor *= 1 + 0.5 * ((r.sigmas[i + 1] as number) - (r.sigmas[i] as number));
    const noise = gaussianNoise([1, 24, 2, 4, 6], 145);
    r.latent.data.forEach((v, i) => expect(v).toBeCloseTo((noise.data[i] as number) * factor, 5));
  });

  it('takes a given latent without modifying it', async () => {
    const latent = gaussianNoise([1, 24, 1, 2, 2], 1);
    const before = Float32Array.from(latent.data);
    const r = await runSampler(linearModel(1, []), { latent, steps: 2, shift: 1 });
    expect([...latent.data]).toEqual([...before]);
    // shift 1: sigmas 1, 0.5, 0 -> x·(1 − 0.5)²
    r.latent.data.forEach((v, i) => expect(v).toBeCloseTo((before[i] as number) * 0.25, 6));
  });

  it('rejects bad inputs and honours abort', async () => {
    await expect(runSampler(linearModel(1, []), { latent: Tensor.zeros('f32', [1, 4, 1, 2, 2]) })).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(runSampler(linearModel(1, []), { frames: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      const latent = gaussianNoise([1, 24, 1, 2, 2], 3);
      latent.data[17] = bad;
      const calls: number[] = [];
      await expect(runSampler(linearModel(1, calls), { latent })).rejects.toMatchObject({ code: 'LATENT_NOT_FINITE', where: 'latent[17]' });
      // Refused before the model ran at all.
      expect(calls).toEqual([]);
    }
    const ac = new AbortController();
    ac.abort();
    await expect(runSampler(linearModel(1, []), { frames: 1, height: 2, width: 2, signal: ac.signal })).rejects.toMatchObject({ code: 'ABORTED' });
  });
});

describe('runSampler with an audio stream', () => {
  it('the carried audio Euler step is exact on a straight flow path: x_a(σ_a) = (1 − σ_a)·x0 + σ_a·n at every step range', async () => {
    const x0 = [0.5, -1.25, 2, 0.75];
    const n = [1, 0.25, -0.5, -2];
    // The model returns the exact audio velocity v_a = n − x0 (and a zero video velocity).
    const model = {
      latentChannels: 1,
      audioChannels: 1,
      forward: async () => Tensor.zeros('f32', [1, 1, 1, 2, 2]),
      forwardStreams: async (input: { video: InstanceType<typeof Tensor> }) => ({
        video: Tensor.zeros('f32', input.video.shape) as never,
        audio: Tensor.fromArray('f32', [1, 1, 2, 2], Float32Array.from(n.map((v, i) => v - (x0[i] as number)))),
      }),
    };
    const sigmas = flowSigmas(8, 12);
    for (const [first, last] of [[0, 8], [1, 2], [2, 5]] as const) {
      const at = (k: number): number[] => {
        const sa = timeShiftSigma(sigmas[k] as number, 12, 3);
        return x0.map((v, i) => (1 - sa) * v + sa * (n[i] as number));
      };
      const audio = Tensor.fromArray('f32', [1, 1, 2, 2], Float32Array.from(at(first)));
      const res = await runSampler(model as never, { latent: Tensor.zeros('f32', [1, 1, 1, 2, 2]), audio, steps: 8, shift: 12, startStep: first, endStep: last });
      const want = at(last);
      Array.from(res.audio?.data ?? []).forEach((v, i) => expect(v).toBeCloseTo(want[i] as number, 5));
    }
  });

  it('rejects an empty or out-of-schedule step range', async () => {
    const model = { latentChannels: 1, forward: async () => Tensor.zeros('f32', [1, 1, 1, 2, 2]) };
    await expect(runSampler(model as never, { latent: Tensor.zeros('f32', [1, 1, 1, 2, 2]), steps: 4, startStep: 2, endStep: 2 })).rejects.toThrow(/not a non-empty range/);
    await expect(runSampler(model as never, { latent: Tensor.zeros('f32', [1, 1, 1, 2, 2]), steps: 4, endStep: 5 })).rejects.toThrow(/not a non-empty range/);
  });
});
