import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { detectArchitecture } from './detect-architecture.js';
import { H3_PRESETS } from './presets.js';
import { ensureSyntheticCheckpoint } from './synthetic-cache.js';
import { writeSyntheticH3Checkpoint } from './synthetic-checkpoint.js';
import { HOST_TAG } from '@ninodes/kernels';
import { openSafetensors } from '@ninodes/memory';
import { gaussianNoise } from './noise.js';
import { openH3Model } from './open-h3-model.js';
import { runSampler } from './sampler.js';
import { readSafetensorsFile, tensorF64 } from '@ninodes/test-safetensors';
import { refSample } from './test-support/reference-f64.js';
import { maxRelError } from '@ninodes/quant';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-cache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('ensureSyntheticCheckpoint', () => {
  it('generates h3-tiny once, reuses it when the hash matches, regenerates a damaged file', async () => {
    const first = await ensureSyntheticCheckpoint({ dir, preset: 'h3-tiny' });
    expect(first.reused).toBe(false);
    // a few hundred MB at most
    expect(first.bytes).toBeLessThan(300e6);
    const d = detectArchitecture(openSafetensors(first.path).entries());
    expect(d.family === 'h3' && d.h3).toEqual(H3_PRESETS['h3-tiny'].config);
    // the preset itself (8 layers, outlier channels) runs like the float64 oracle: 2 steps on a small latent
    const opened = openH3Model(first.path, { compute: 'auto', capture: false });
    const noise = gaussianNoise([1, 24, 2, 4, 6], 5);
    const got = await runSampler(opened.model, { latent: noise, steps: 2 });
    opened.close();
    const ck = readSafetensorsFile(first.path);
    const cfg = H3_PRESETS['h3-tiny'].config;
    const want = refSample((n) => tensorF64(ck, n), { ...cfg, channels: 24 }, Float64Array.from(noise.data), 2, 4, 6, 2, 12);
    expect(maxRelError(got.latent.data, want)).toBeLessThan(1e-4);

    const second = await ensureSyntheticCheckpoint({ dir, preset: 'h3-tiny' });
    expect(second).toMatchObject({ reused: true, sha256: first.sha256 });
    writeFileSync(first.path, Buffer.alloc(first.bytes, 1));
    const third = await ensureSyntheticCheckpoint({ dir, preset: 'h3-tiny' });
    expect(third).toMatchObject({ reused: false, sha256: first.sha256 });
    expect(statSync(third.path).size).toBe(first.bytes);
    // Generation and a float64 reference: seconds alone, minutes beside a whole npm test on 2 cores.
  });

  it('h3-tiny with its text and audio streams: every video-path tensor and a video-only run are as before, and a cache of the old shape is regenerated', async () => {
    const cfg = H3_PRESETS['h3-tiny'].config;
    expect(cfg).toMatchObject({ textDim: 768, audioChannels: 32, refinerLayers: 2 });
    const { textDim: _t, audioChannels: _a, refinerLayers: _r, ...videoOnly } = cfg;
    const old = join(dir, 'old', 'h3-tiny-seed145.safetensors');
    await writeSyntheticH3Checkpoint(old, { config: videoOnly });
    // The current preset, as the first test left it in the cache.
    const now = await ensureSyntheticCheckpoint({ dir, preset: 'h3-tiny' });
    const a = openSafetensors(old);
    const b = openSafetensors(now.path);
    try {
      const added = b.entries().map((e) => e.name).filter((n) => !a.entries().some((e) => e.name === n));
      expect(added).toContain('condition_proj.weight');
      expect(added).toContain('token_refiner.blocks.1.mlp.fc2.weight');
      expect(added).toContain('final_layer.audio_out.weight');
      for (const e of a.entries()) expect([e.name, Buffer.from(b.tensor(e.name).bytes()).equals(Buffer.from(a.tensor(e.name).bytes()))]).toEqual([e.name, true]);
    } finally {
      a.close();
      b.close();
    }
    const run = async (path: string) => {
      const opened = openH3Model(path, { compute: 'auto', capture: false });
      try {
        return Buffer.from((await runSampler(opened.model, { latent: gaussianNoise([1, 24, 1, 4, 6], 7), steps: 2 })).latent.bytes());
      } finally {
        opened.close();
      }
    };
    expect((await run(now.path)).equals(await run(old))).toBe(true);
    // A cache written before the preset gained its streams: hash and size check out, the shape does not.
    const stale = join(dir, 'stale');
    mkdirSync(stale);
    const path = join(stale, 'h3-tiny-seed145.safetensors');
    copyFileSync(old, path);
    const sha = createHash('sha256').update(readFileSync(path)).digest('hex');
    writeFileSync(`${path}.sha256`, `${sha} ${statSync(path).size}\n`);
    const again = await ensureSyntheticCheckpoint({ dir: stale, preset: 'h3-tiny' });
    expect(again).toMatchObject({ reused: false, sha256: now.sha256 });
  });

  it('two concurrent generations of a fresh cache: one writes, the other waits and reuses it', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'ninodes-cache-race-'));
    try {
      const waited: number[] = [];
      const [a, b] = await Promise.all([
        ensureSyntheticCheckpoint({ dir: fresh, preset: 'h3-tiny' }),
        ensureSyntheticCheckpoint({ dir: fresh, preset: 'h3-tiny', onWait: (o) => waited.push(o.pid) }),
      ]);
      expect([a.reused, b.reused].sort()).toEqual([false, true]);
      expect(a.sha256).toBe(b.sha256);
      expect(waited).toEqual([process.pid]);
      // Only the checkpoint and its sidecar remain: no lock, no temporary.
      expect(readdirSync(fresh).sort()).toEqual(['h3-tiny-seed145.safetensors', 'h3-tiny-seed145.safetensors.sha256']);
      // A generation killed earlier left its temporary: the next start removes it even on reuse.
      const dead = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout);
      writeFileSync(join(fresh, `.h3-tiny-seed145.safetensors.ninodes-${HOST_TAG}-${dead}-0123456789abcdef.tmp`), Buffer.alloc(4096));
      expect((await ensureSyntheticCheckpoint({ dir: fresh, preset: 'h3-tiny' })).reused).toBe(true);
      expect(readdirSync(fresh).sort()).toEqual(['h3-tiny-seed145.safetensors', 'h3-tiny-seed145.safetensors.sha256']);
      // FIFOs at the sidecar and the lock are never waited on: the lock is LOCK_INVALID naming it;
      // once it is gone, the sidecar that cannot be read is rewritten with the checkpoint.
      const sidecar = join(fresh, 'h3-tiny-seed145.safetensors.sha256');
      const lock = join(fresh, 'h3-tiny-seed145.safetensors.lock');
      rmSync(sidecar);
      for (const f of [sidecar, lock]) expect(spawnSync('mkfifo', [f]).status).toBe(0);
      await expect(ensureSyntheticCheckpoint({ dir: fresh, preset: 'h3-tiny' })).rejects.toMatchObject({ code: 'LOCK_INVALID', value: lock });
      rmSync(lock);
      expect(await ensureSyntheticCheckpoint({ dir: fresh, preset: 'h3-tiny' })).toMatchObject({ reused: false, sha256: a.sha256 });
      expect(statSync(sidecar).isFile()).toBe(true);
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });
});
