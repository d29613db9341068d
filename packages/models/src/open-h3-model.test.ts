import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { H3_DEFAULTS, type H3Config } from './h3-config.js';
import { gaussianNoise } from './noise.js';
import { openH3Model } from './open-h3-model.js';
import { runSampler } from './sampler.js';
import { writeSyntheticH3Checkpoint } from './synthetic-checkpoint.js';
import { readSafetensorsFile, tensorF64 } from '@ninodes/test-safetensors';
import { refSample } from './test-support/reference-f64.js';
import { maxRelError } from '@ninodes/quant';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-open-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const config: H3Config = { ...H3_DEFAULTS, layers: 2, hidden: 256, heads: 4, headDim: 64, ffn: 512, tDim: 256, timeHidden: 256, ropeLen: 8 };
const path = join(dir, 'h3.safetensors');
const [T, H, W] = [2, 8, 6];
let want: Float64Array;

beforeAll(async () => {
  await writeSyntheticH3Checkpoint(path, { config, seed: 11 });
  const ck = readSafetensorsFile(path);
  want = refSample((n) => tensorF64(ck, n), { ...config, channels: 24 }, Float64Array.from(gaussianNoise([1, 24, T, H, W], 145).data), T, H, W, 4, 12);
});

describe('openH3Model: memory source + quant linear ops', () => {
  it.each(['f32', 'auto'] as const)('compute %s: 4 steps match the float64 reference within 1e-4 relative', async (compute) => {
    const opened = openH3Model(path, { compute, capture: false });
    try {
      const r = await runSampler(opened.model, { frames: T, height: H, width: W, steps: 4, seed: 145 });
      const err = maxRelError(r.latent.data, want);
      if (process.env.NINODES_VERBOSE) console.log(`openH3Model ${compute}: ${err}`);
      expect(err).toBeLessThan(1e-4);
    } finally {
      opened.close();
    }
  });

  it('int8 convrot quantizes the block linears, keeps the fp32 islands, and stays near the reference', async () => {
    const opened = openH3Model(path, { compute: 'int8_convrot', capture: false });
    try {
      const { model } = opened;
      expect(model.linears.get('video_patch_proj')?.format).toBe('f32');
      expect(model.linears.get('final_layer.video_out')?.format).toBe('f32');
      expect(model.blocks[0]?.linears.qkv.format).toBe('int8_convrot');
      expect(model.blocks[1]?.linears.fc2.format).toBe('int8_convrot');
      const r = await runSampler(model, { frames: T, height: H, width: W, steps: 4, seed: 145 });
      const err = maxRelError(r.latent.data, want);
      if (process.env.NINODES_VERBOSE) console.log(`openH3Model int8_convrot: ${err}`);
      expect(err).toBeGreaterThan(0);
      expect(err).toBeLessThan(0.05);
    } finally {
      opened.close();
    }
  });

  it.each(['int8_convrot', 'f8_e4m3fn'] as const)('forced %s on the curve fixture: the rank-8 adaLN runs as stored (bf16), the block linears converted', (compute) => {
    const curve = join(process.env.NINODES_FIXTURES ?? '', 'h3av', 'curve_pdd', 'model.safetensors');
    const opened = openH3Model(curve, { compute, capture: false });
    try {
      const { model } = opened;
      expect(model.config.curveGrid).toBe(33);
      for (const b of model.blocks) expect([b.index, b.linears.adaln.format, b.linears.qkv.format]).toEqual([b.index, 'bf16', compute]);
      expect(model.linears.get('final_layer.adaln_proj.linear')?.format).toBe('bf16');
      expect(model.linears.get('final_layer.video_out')?.format).toBe('f32');
    } finally {
      opened.close();
    }
  });

  it('a non-H3 file is ARCHITECTURE_MISMATCH', () => {
    const fixture = join(process.env.NINODES_FIXTURES ?? '', 'int8', 'int8_convrot.safetensors');
    expect(() => openH3Model(fixture)).toThrow(expect.objectContaining({ code: 'ARCHITECTURE_MISMATCH' }));
  });
});
