import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { detectArchitecture } from './detect-architecture.js';
import { H3_PRESETS } from './presets.js';
import { ensureSyntheticCheckpoint } from './synthetic-cache.js';
import { openSafetensors } from '@ninodes/memory';

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
    const second = await ensureSyntheticCheckpoint({ dir, preset: 'h3-tiny' });
    expect(second).toMatchObject({ reused: true, sha256: first.sha256 });
    writeFileSync(first.path, Buffer.alloc(first.bytes, 1));
    const third = await ensureSyntheticCheckpoint({ dir, preset: 'h3-tiny' });
    expect(third).toMatchObject({ reused: false, sha256: first.sha256 });
    expect(statSync(third.path).size).toBe(first.bytes);
  });
});
