import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { detectArchitecture } from './detect-architecture.js';
import { H3_PRESETS } from './presets.js';
import { ensureSyntheticCheckpoint } from './synthetic-cache.js';
import { HOST_TAG } from '@ninodes/kernels';
import { openSafetensors } from '@ninodes/memory';
import { gaussianNoise } from './noise.js';
import { openH3Model } from './open-h3-model.js';
import { runSampler } from './sampler.js';
import { maxRelError } from './test-support/compare.js';
import { readSafetensorsFile, tensorF64 } from '@ninodes/test-safetensors';
import { refSample } from './test-support/reference-f64.js';

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
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });
});
