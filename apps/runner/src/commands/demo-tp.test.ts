// The demo's tensor-parallel row: the trained model over two rank processes (the built CLI).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSafetensors } from '@ninodes/memory';
import { afterAll, describe, expect, it } from 'vitest';
import { runReportSchema } from '../run-report.js';
import { sampleTensorParallel } from './demo-tp.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-demo-tp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('sampleTensorParallel', () => {
  it('samples seed 0 over 2 ranks: equal rank hashes, the latent and run report it names, a step time per rank pair', async () => {
    const cli = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
    const row = await sampleTensorParallel({ dir, steps: 3, threadsPerRank: 1, env: { ...process.env, NINODES_CACHE: join(dir, 'cache') }, cli });
    expect(row.hashesEqual).toBe(true);
    expect(row.peakAnonBytesPerRank).toHaveLength(2);
    expect(row.meanStepSeconds).toBeGreaterThan(0);
    const report = runReportSchema.parse(JSON.parse(readFileSync(join(dir, 'f32-tp2.json'), 'utf8')));
    expect(report.config).toMatchObject({ quant: 'f32', seed: 0, steps: 3 });
    expect(report.tp?.size).toBe(2);
    // The latent the row holds is the file it wrote, whose hash every rank reported.
    const source = openSafetensors(join(dir, 'f32-tp2.safetensors'));
    try {
      const latent = source.tensor('latent');
      expect(Buffer.from(latent.bytes()).equals(Buffer.from(row.latent.bytes()))).toBe(true);
    } finally {
      source.close();
    }
    expect(row.latentSha256).toBe(report.output.latentSha256);
    expect(createHash('sha256').update(row.latent.bytes()).digest('hex')).toBe(row.latentSha256);
    expect(existsSync(join(dir, '.f32-tp2'))).toBe(false);
  });
});
