import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { openSafetensors } from '@ninodes/memory';
import { h3Layout } from './h3-layout.js';
import { openH3Model } from './open-h3-model.js';
import { runSampler } from './sampler.js';
import { readSafetensorsFile } from '@ninodes/test-safetensors';
import { maxRelError } from '@ninodes/quant';

// Fixtures: a tiny H3 audio+video model computed in float64 by a re-implementation of ComfyUI's
// model code (fixtures/README.md): one with the time embedder, one pruned curve form with a PDD bank.
const root = join(process.env.NINODES_FIXTURES ?? '', 'h3av');

function f32(path: string, name: string): Tensor<'f32'> {
  const t = readSafetensorsFile(path).tensors.get(name);
  if (t === undefined || t.dtype !== 'F32') throw new Error(`${path}: no F32 ${name}`);
  const copy = new Float32Array(t.bytes.byteLength / 4);
  new Uint8Array(copy.buffer).set(t.bytes);
  return Tensor.fromArray('f32', t.shape, copy);
}

describe.each(['full', 'curve_pdd'])('H3 audio+video forward against the float64 fixture (%s)', (variant) => {
  const dir = join(root, variant);
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { sigma0: number; sigma1: number; pdd_heads: number; variant: string };
  const inputs = join(dir, 'inputs.safetensors');
  const expect_ = join(dir, 'expect.safetensors');

  it('detects the form, the head bank and both streams', () => {
    const { model, close } = openH3Model(join(dir, 'model.safetensors'));
    try {
      expect(model.config.curveGrid !== undefined).toBe(variant === 'curve_pdd');
      expect(model.config.pddHeads ?? 1).toBe(config.pdd_heads);
      expect(model.config.audioChannels).toBe(32);
      expect(model.config.textDim).toBe(192);
      expect(model.refiner).toHaveLength(2);
      expect(model.unusedKeys()).toEqual([]);
    } finally {
      close();
    }
  });

  it('video and audio velocities at sigma0 within 1e-5 relative', async () => {
    const { model, close } = openH3Model(join(dir, 'model.safetensors'));
    try {
      const out = await model.forwardStreams({
        video: f32(inputs, 'latent'),
        audio: f32(inputs, 'audio'),
        context: f32(inputs, 'context'),
        sigma: config.sigma0,
        sigmaNext: config.sigma1,
      });
      const wantV = f32(expect_, 'velocity_video');
      const wantA = f32(expect_, 'velocity_audio');
      expect(out.video.shape).toEqual(wantV.shape);
      expect(out.audio?.shape).toEqual(wantA.shape);
      expect(maxRelError(out.video.data, wantV.data)).toBeLessThan(1e-5);
      expect(maxRelError((out.audio as Tensor<'f32'>).data, wantA.data)).toBeLessThan(1e-5);
    } finally {
      close();
    }
  });

  it('layout: text, time and audio groups in forward order; every file tensor read', () => {
    const source = openSafetensors(join(dir, 'model.safetensors'));
    try {
      const layout = h3Layout(source);
      const names = layout.groups.map((g) => g.name);
      const time = variant === 'curve_pdd' ? 'adaln_t_table' : 'time_embedder';
      expect(names).toEqual(['condition_proj', 'token_refiner.blocks.0', 'token_refiner.blocks.1', 'token_refiner', time, 'rope', 'video_patch_proj', 'audio_patch_proj', 'blocks.0', 'blocks.1', 'final_layer']);
      expect(layout.unusedTensors).toEqual([]);
      const islands = layout.groups.flatMap((g) => g.linears.filter((l) => l.fp32Island).map((l) => l.name));
      expect(islands).toEqual(expect.arrayContaining(['video_patch_proj', 'audio_patch_proj', 'final_layer.video_out', 'final_layer.audio_out']));
      expect(islands).not.toContain('condition_proj');
    } finally {
      source.close();
    }
  });

  it.each(['int8_convrot', 'f8_e4m3fn'] as const)('compute %s: every new linear converts, islands stay fp32, velocities stay close', async (compute) => {
    const { model, close } = openH3Model(join(dir, 'model.safetensors'), { compute });
    try {
      const out = await model.forwardStreams({ video: f32(inputs, 'latent'), audio: f32(inputs, 'audio'), context: f32(inputs, 'context'), sigma: config.sigma0, sigmaNext: config.sigma1 });
      const errV = maxRelError(out.video.data, f32(expect_, 'velocity_video').data);
      const errA = maxRelError((out.audio as Tensor<'f32'>).data, f32(expect_, 'velocity_audio').data);
      // Quantization error, not exactness: a few percent at most on this tiny random model.
      expect(errV).toBeGreaterThan(0);
      expect(errV).toBeLessThan(0.05);
      expect(errA).toBeLessThan(0.05);
      const refiner = model.refiner[0]?.linears.qkv as unknown as { format: string };
      expect(refiner.format).toBe(compute);
      const island = model.linears.get('final_layer.audio_out') as unknown as { format: string };
      expect(island.format).toBe('f32');
    } finally {
      close();
    }
  });

  it('runSampler steps 1 -> 2 of 8 (shift 12) from the given latent lands within 1e-5 of latent_step1', async () => {
    const { model, close } = openH3Model(join(dir, 'model.safetensors'));
    try {
      const res = await runSampler(model, { latent: f32(inputs, 'latent'), audio: f32(inputs, 'audio'), context: f32(inputs, 'context'), steps: 8, shift: 12, startStep: 1, endStep: 2 });
      expect(res.sigmas[1]).toBeCloseTo(config.sigma0, 12);
      expect(res.stepSeconds).toHaveLength(1);
      expect(maxRelError(res.latent.data, f32(expect_, 'latent_step1').data)).toBeLessThan(1e-5);
      expect(res.audio?.shape).toEqual([1, 32, 2, 5]);
    } finally {
      close();
    }
  });
});
