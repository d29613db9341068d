// The trained default model through the CLI: `run` with no model and one format of `demo`.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Tensor } from '@ninodes/kernels';
import { openSafetensors } from '@ninodes/memory';
import { openH3Model, paletteFraction, samplerHints, shapesModelPath } from '@ninodes/models';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../main.js';
import { runReportSchema } from '../run-report.js';
import { inProcessCli } from '../test-support/in-process-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-demo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cli = inProcessCli(dir);

function hints() {
  const { source, close } = openH3Model(shapesModelPath());
  try {
    return samplerHints(source)!;
  } finally {
    close();
  }
}

describe('ninodes run with no model', () => {
  it('runs the trained h3-shapes model at the latent size and sampler setting of its metadata', async () => {
    const out = join(dir, 'run-default');
    const r = await cli('run', '--out', out, '--threads', '1', '--json');
    expect(r.status, r.stderr).toBe(0);
    const report = runReportSchema.parse(JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')));
    const h = hints();
    expect(report.config.model).toBe(shapesModelPath());
    expect(report.config).toMatchObject({ latentShape: [1, 24, h.frames, h.height, h.width], steps: h.steps, shift: h.shift });
    // No cache was needed: nothing was generated.
    expect(readdirSync(dir)).not.toContain('cache');
  });

  it('lets flags override the metadata', async () => {
    const r = await cli('run', '--out', join(dir, 'run-override'), '--steps', '2', '--shift', '3', '--height', '8', '--width', '8', '--json');
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).config).toMatchObject({ steps: 2, shift: 3, latentShape: [1, 24, 1, 8, 8] });
  });
});

describe('ninodes demo --format', () => {
  it('samples seeds 0..N-1 in one format and writes samples, grid and report', async () => {
    const out = join(dir, 'demo-one');
    const r = await cli('demo', '--format', 'int8_convrot', '--seeds', '2', '--steps', '3', '--threads', '1', '--out', out);
    expect(r.status, r.stderr).toBe(0);
    expect(readdirSync(out).sort()).toEqual(['int8_convrot.json', 'int8_convrot.png', 'int8_convrot.safetensors']);
    const report = JSON.parse(readFileSync(join(out, 'int8_convrot.json'), 'utf8'));
    expect(report).toMatchObject({ schema: 'ninodes.demo-format/1', format: 'int8_convrot', seeds: [0, 1], steps: 3, latentShape: [1, 24, 1, 16, 16] });
    expect(report.stepSeconds).toHaveLength(6);
    const source = openSafetensors(join(out, 'int8_convrot.safetensors'));
    try {
      const all = source.tensor('latents') as Tensor<'f32'>;
      expect(all.shape).toEqual([2, 24, 1, 16, 16]);
      // The report's fractions are those of the samples it wrote.
      const per = all.numel / 2;
      const fractions = [0, 1].map((i) => paletteFraction(all.view('f32', [1, 24, 1, 16, 16], all.byteOffset + i * per * 4)));
      expect(report.paletteFractions).toEqual(fractions);
    } finally {
      source.close();
    }
    expect(readFileSync(join(out, 'int8_convrot.png')).subarray(1, 4).toString()).toBe('PNG');
  });

  it('converts to GGUF Q4_K with the project\'s converter, samples the .gguf and leaves no scratch file', async () => {
    const out = join(dir, 'demo-gguf');
    const r = await cli('demo', '--format', 'q4_k', '--seeds', '1', '--steps', '2', '--threads', '1', '--out', out);
    expect(r.status, r.stderr).toBe(0);
    expect(readdirSync(out).sort()).toEqual(['q4_k.json', 'q4_k.png', 'q4_k.safetensors']);
    const report = JSON.parse(readFileSync(join(out, 'q4_k.json'), 'utf8'));
    expect(report).toMatchObject({ format: 'q4_k', seeds: [0], steps: 2 });
    expect(report.convertSeconds).toBeGreaterThan(0);
    expect(report.model).toContain('q4_k .gguf');
  });

  it('rejects an unknown format with the valid choices', async () => {
    const r = await cli('demo', '--format', 'q5_k');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('int8_convrot');
  });
});
