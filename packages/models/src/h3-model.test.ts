import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareCaptures, createCaptureSink } from './capture.js';
import { detectArchitecture } from './detect-architecture.js';
import { H3_DEFAULTS, type H3Config } from './h3-config.js';
import { H3VideoModel } from './h3-model.js';
import type { LinearProvider } from './linear-provider.js';
import { gaussianNoise } from './noise.js';
import { OP_FAMILIES, createOpProfiler } from './op-profile.js';
import { runSampler } from './sampler.js';
import { writeSyntheticH3Checkpoint } from './synthetic-checkpoint.js';
import { readSafetensorsFile, tensorF64 } from '@ninodes/test-safetensors';
import { type RefConfig, refSample } from './test-support/reference-f64.js';
import { testLinearProvider } from './test-support/test-source.js';
import { type CheckpointSource, openSafetensors } from '@ninodes/memory';
import { maxRelError } from '@ninodes/quant';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-models-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const config: H3Config = { ...H3_DEFAULTS, layers: 2, hidden: 256, heads: 4, headDim: 64, ffn: 512, tDim: 256, timeHidden: 256, ropeLen: 8 };

describe('H3 video model, whole forward and sampler', () => {
  const path = join(dir, 'small.safetensors');
  beforeAll(async () => {
    await writeSyntheticH3Checkpoint(path, { config, seed: 3, prefix: 'model.diffusion_model.' });
  });

  it('4 Euler steps match the float64 reference within 1e-4 relative (odd width: circular padding)', async () => {
    const source = openSafetensors(path);
    const model = H3VideoModel.create(source, testLinearProvider(source), { capture: false });
    expect(model.prefix).toBe('model.diffusion_model.');
    expect(model.config).toEqual(config);
    expect(model.unusedKeys()).toEqual([]);
    const [T, H, W] = [3, 6, 7];
    const noise = gaussianNoise([1, 24, T, H, W], 145);
    const steps: number[] = [];
    const result = await runSampler(model, { latent: noise, steps: 4, shift: 12, onStep: (s) => steps.push(s.step) });
    expect(steps).toEqual([0, 1, 2, 3]);

    const ck = readSafetensorsFile(path);
    const ref: RefConfig = { ...config, channels: 24 };
    const want = refSample((n) => tensorF64(ck, `model.diffusion_model.${n}`), ref, Float64Array.from(noise.data), T, H, W, 4, 12);
    const err = maxRelError(result.latent.data, want);
    if (process.env.NINODES_VERBOSE) console.log(`whole-model 4-step max relative error vs float64: ${err}`);
    expect(err).toBeLessThan(1e-4);
    // the run moved the latent: a broken model could not pass by returning the input
    expect(maxRelError(noise.data, want)).toBeGreaterThan(1e-2);
  });

  it('the synthetic checkpoint: ComfyUI keys, bf16 with fp32 islands, deterministic, detected as H3', async () => {
    const ck = readSafetensorsFile(path);
    const dtype = (n: string): string | undefined => ck.tensors.get(`model.diffusion_model.${n}`)?.dtype;
    expect(dtype('video_patch_proj.weight')).toBe('F32');
    expect(dtype('final_layer.video_out.weight')).toBe('F32');
    expect(dtype('rope.inv_freq')).toBe('F32');
    expect(dtype('blocks.1.attn.qkv_proj.weight')).toBe('BF16');
    expect(dtype('blocks.0.norm1.weight')).toBe('BF16');
    const again = join(dir, 'again.safetensors');
    await writeSyntheticH3Checkpoint(again, { config, seed: 3, prefix: 'model.diffusion_model.' });
    const b = readSafetensorsFile(again);
    for (const [name, t] of ck.tensors) expect(Buffer.compare(Buffer.from(t.bytes), Buffer.from(b.tensors.get(name)?.bytes ?? new Uint8Array()))).toBe(0);
    // realistic scale: weight std ≈ 1/sqrt(K), and a few outlier hidden channels in the norms
    const w = tensorF64(ck, 'model.diffusion_model.blocks.0.mlp.fc2.weight');
    const std = Math.sqrt(w.reduce((a, v) => a + v * v, 0) / w.length);
    expect(std * Math.sqrt(512)).toBeGreaterThan(0.9);
    expect(std * Math.sqrt(512)).toBeLessThan(1.1);
    const norm = tensorF64(ck, 'model.diffusion_model.blocks.0.norm1.weight');
    expect(norm.filter((v) => v > 4).length).toBeGreaterThanOrEqual(1);
    const source = openSafetensors(path);
    const d = detectArchitecture(source.entries());
    expect(d.family === 'h3' && d.h3).toEqual(config);
  });

  it('h3-full as a sparse file: real shape, no disk', async () => {
    const full = join(dir, 'full.safetensors');
    const r = await writeSyntheticH3Checkpoint(full, { preset: 'h3-full' });
    expect(r.sparse).toBe(true);
    const st = statSync(full);
    expect(st.size).toBeGreaterThan(60e9);
    expect(st.blocks * 512).toBeLessThan(32 * 2 ** 20);
    // embedders 3 linears with bias, 50 × (5 linears + adaLN bias + 4 norms), final 2 linears with bias + norm, inv_freq
    expect(r.tensors).toBe(6 + 50 * 10 + 4 + 1 + 1);
    rmSync(full);
  });

  it('capture mode writes every block and compareCaptures names the first differing block', async () => {
    const source = openSafetensors(path);
    const a = join(dir, 'cap-a');
    const b = join(dir, 'cap-b');
    const latent = gaussianNoise([1, 24, 1, 4, 4], 9);
    await H3VideoModel.create(source, testLinearProvider(source), { capture: createCaptureSink(a) }).forward(latent, 0.5);
    const base = testLinearProvider(source);
    const perturbed: LinearProvider = {
      linear(spec) {
        const op = base.linear(spec);
        if (spec.name !== 'model.diffusion_model.blocks.1.mlp.fc2') return op;
        return {
          ...op,
          spec: op.spec,
          format: op.format,
          materializedWeight: () => op.materializedWeight(),
          async forward(x: Tensor<'f32'>) {
            const y = await op.forward(x);
            return Tensor.fromArray('f32', y.shape, y.data.map((v) => v + 1e-3));
          },
        };
      },
    };
    await H3VideoModel.create(source, perturbed, { capture: createCaptureSink(b) }).forward(latent, 0.5);
    expect(compareCaptures(a, a).equal).toBe(true);
    const cmp = compareCaptures(a, b, { rtol: 1e-6 });
    expect(cmp.equal).toBe(false);
    expect(cmp.first).toMatchObject({ file: 'call-0000/block-001', tensor: 'out.x', reason: 'values' });
  });

  it('an op profiler sees every op family; without one nothing is measured', async () => {
    const source = openSafetensors(path);
    const profiler = createOpProfiler();
    const model = H3VideoModel.create(source, testLinearProvider(source), { capture: false, profiler });
    await model.forward(gaussianNoise([1, 24, 1, 4, 4], 2), 0.7);
    // time embedder, patch projection, 5 per block, final adaLN and head
    expect(profiler.calls.linear).toBe(4 + 5 * config.layers);
    expect(profiler.calls.attention).toBe(config.layers);
    // two RMSNorm+modulate passes per block and the final layer's; the q/k norm + RoPE pass counts as rope
    expect(profiler.calls.norm).toBe(2 * config.layers + 1);
    expect(profiler.calls.rope).toBe(config.layers + 1);
    // Every family that ran took measurable time; one that did not has none.
    for (const f of OP_FAMILIES) {
      if (profiler.calls[f] > 0) expect(profiler.seconds[f], f).toBeGreaterThan(0);
      else expect(profiler.seconds[f], f).toBe(0);
    }
    model.setProfiler(undefined);
    profiler.reset();
    await model.forward(gaussianNoise([1, 24, 1, 4, 4], 2), 0.7);
    expect(profiler.calls.linear).toBe(0);
  });

  it('fails early with the missing tensor named', () => {
    const source = openSafetensors(path);
    const gone = 'model.diffusion_model.blocks.1.attn.k_norm.weight';
    const partial: CheckpointSource = {
      format: source.format,
      path: source.path,
      metadata: source.metadata,
      entries: () => source.entries().filter((e) => e.name !== gone),
      has: (n) => n !== gone && source.has(n),
      entry: (n) => source.entry(n),
      tensor: (n) => source.tensor(n),
      tensorRows: (n, a, b) => source.tensorRows(n, a, b),
      tensorColumns: (n, a, b) => source.tensorColumns(n, a, b),
      close: () => source.close(),
    };
    expect(() => H3VideoModel.create(partial, testLinearProvider(source), { config, prefix: 'model.diffusion_model.' })).toThrow(
      expect.objectContaining({ code: 'TENSOR_NOT_FOUND', value: 'model.diffusion_model.blocks.1.attn.k_norm.weight' }),
    );
  });
});
