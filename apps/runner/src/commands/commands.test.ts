// The CLI end to end on a small synthetic H3 checkpoint with ComfyUI's key layout: what it writes,
// what it reports, and that a failure leaves nothing behind.
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor, buildInfo } from '@ninodes/kernels';
import { openSafetensors, tensorSources, writeSafetensors } from '@ninodes/memory';
import { H3_DEFAULTS, gaussianNoise, writeSyntheticH3Checkpoint } from '@ninodes/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../main.js';
import { runReportSchema } from '../run-report.js';
import { inProcessCli } from '../test-support/in-process-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-cli-'));
const ckpt = join(dir, 'h3-micro.safetensors');
const config = { ...H3_DEFAULTS, layers: 2, hidden: 256, heads: 4, headDim: 64, ffn: 512, tDim: 256, timeHidden: 256, ropeLen: 8 };

const cli = inProcessCli(dir);

beforeAll(async () => {
  await writeSyntheticH3Checkpoint(ckpt, { config, seed: 7 });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('ninodes inspect', () => {
  it('detects H3 with the configuration the checkpoint was written with', async () => {
    const r = await cli('inspect', ckpt, '--json');
    expect(r.status).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.format).toBe('safetensors');
    expect(doc.architecture).toMatchObject({ family: 'h3', layers: 2, hidden: 256, heads: 4, headDim: 64, ffn: 512 });
    const bytes = readFileSync(ckpt);
    const headerLength = Number(bytes.readBigUInt64LE(0));
    const header = JSON.parse(bytes.toString('utf8', 8, 8 + headerLength));
    const names = Object.keys(header).filter((k) => k !== '__metadata__');
    expect(doc.tensors).toBe(names.length);
    const dataBytes = names.reduce((a: number, n: string) => a + header[n].data_offsets[1] - header[n].data_offsets[0], 0);
    expect(doc.tensorBytes).toBe(dataBytes);
    expect(doc.byGroup.map((g: { group: string }) => g.group)).toEqual(expect.arrayContaining(['blocks.0', 'blocks.1']));
  });

  it('reports the int8 convrot layers of the ComfyUI fixture checkpoint', async () => {
    const fixture = join(process.env.NINODES_FIXTURES!, 'int8', 'comfy_int8_convrot_checkpoint.safetensors');
    const r = await cli('inspect', fixture, '--json');
    expect(r.status).toBe(0);
    const formats = JSON.parse(r.stdout).byFormat.map((f: { format: string; layers: number }) => [f.format, f.layers]);
    expect(formats).toContainEqual(['int8_convrot', 2]);
  });

  it('names a missing file with a typed error', async () => {
    const r = await cli('inspect', join(dir, 'nope.safetensors'));
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('FILE_NOT_FOUND');
  });
});

describe('ninodes run', () => {
  it('writes latent, preview and a report whose hash is the latent it wrote', async () => {
    const out = join(dir, 'run-fp32');
    const latent = gaussianNoise([1, 24, 2, 8, 8], 11);
    const latentFile = join(dir, 'noise.safetensors');
    await writeSafetensors(latentFile, tensorSources({ latent }));
    const r = await cli('run', '--model', ckpt, '--latent', latentFile, '--steps', '2', '--threads', '1', '--out', out, '--json');
    expect(r.stderr).not.toContain('error');
    expect(r.status).toBe(0);
    expect(readdirSync(out).sort()).toEqual(['latent.safetensors', 'preview.png', 'report.json']);
    const report = runReportSchema.parse(JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')));
    expect(report.env.attentionPrecision).toBe('f32');
    expect(report.config).toMatchObject({ quant: 'auto', steps: 2, startStep: 0, endStep: 2, frames: 2, height: 8, width: 8, seed: 145, threads: 1 });
    expect(report.timing.stepSeconds).toHaveLength(2);
    // Shift 12 over 2 steps: sigmas 1, 12·0.5/(1 + 11·0.5) = 12/13, 0.
    expect(report.timing.steps).toEqual([
      { step: 0, sigma: 1, sigmaNext: expect.closeTo(12 / 13, 12) },
      { step: 1, sigma: expect.closeTo(12 / 13, 12), sigmaNext: 0 },
    ]);
    expect(report.memory.peakAnonBytes).toBeGreaterThan(0);
    const source = openSafetensors(join(out, 'latent.safetensors'));
    const written = source.tensor('latent') as Tensor<'f32'>;
    expect(written.shape).toEqual([1, 24, 2, 8, 8]);
    expect(createHash('sha256').update(written.bytes()).digest('hex')).toBe(report.output.latentSha256);
    // The sampler moved the latent away from the noise it was given.
    expect(Array.from(written.data).some((v, i) => v !== latent.data[i])).toBe(true);
    source.close();
    expect(readFileSync(join(out, 'preview.png')).subarray(1, 4).toString()).toBe('PNG');
  });

  it('reports the attention precision: f32 for fp32, bf16 for --quant bf16 and int8_convrot where the CPU has bf16 units, or as --attention asks', async () => {
    const units = buildInfo().bf16Units;
    const small = ['--frames', '1', '--height', '8', '--width', '8', '--steps', '1', '--threads', '1', '--json'];
    const cases: Array<[string[], string]> = [
      [['--quant', 'f32'], 'f32'],
      [['--quant', 'int8_convrot', '--attention', 'f32'], 'f32'],
      [['--quant', 'int8_convrot'], units ? 'bf16' : 'f32'],
      [['--quant', 'bf16'], units ? 'bf16' : 'f32'],
      [['--quant', 'bf16', '--attention', 'f32'], 'f32'],
    ];
    const hashes = new Map<string, string>();
    for (const [flags, want] of cases) {
      const r = await cli('run', '--model', ckpt, ...small, ...flags, '--out', join(dir, `att-${flags.join('')}`));
      expect(r.status).toBe(0);
      const report = runReportSchema.parse(JSON.parse(r.stdout));
      expect(report.env.attentionPrecision).toBe(want);
      hashes.set(flags.join(' '), report.output.latentSha256);
    }
    // int8 weights with bf16 attention is another computation than with f32 attention.
    if (units) expect(hashes.get('--quant int8_convrot --attention f32')).not.toBe(hashes.get('--quant int8_convrot'));
    if (!units) {
      const r = await cli('run', '--model', ckpt, ...small, '--attention', 'bf16', '--out', join(dir, 'att-unavailable'));
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('BACKEND_UNAVAILABLE');
    }
  });

  it('is deterministic: the same seed gives the same latent hash', async () => {
    const a = await cli('run', '--model', ckpt, '--frames', '1', '--height', '8', '--width', '8', '--steps', '1', '--out', join(dir, 'a'), '--json');
    const b = await cli('run', '--model', ckpt, '--frames', '1', '--height', '8', '--width', '8', '--steps', '1', '--threads', '1', '--out', join(dir, 'b'), '--json');
    expect(JSON.parse(a.stdout).output.latentSha256).toBe(JSON.parse(b.stdout).output.latentSha256);
  });

  it('a bad --latent fails with its code and leaves no output directory or staging files', async () => {
    const bad = join(dir, 'bad-latent.safetensors');
    await writeSafetensors(bad, tensorSources({ latent: Tensor.zeros('f32', [1, 4, 1, 8, 8]) }));
    const out = join(dir, 'run-bad');
    const r = await cli('run', '--model', ckpt, '--latent', bad, '--out', out);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('SHAPE_MISMATCH');
    expect(existsSync(out)).toBe(false);
    // No staging directory, temporary or lock of ours is left beside it.
    expect(readdirSync(dir).filter((f) => f.includes('.ninodes-'))).toEqual([]);
  });

  it('rejects an unknown --quant with the valid choices', async () => {
    const r = await cli('run', '--model', ckpt, '--quant', 'int4');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('CLI_INVALID_OPTION');
    expect(r.stderr).toContain('int8_convrot');
  });
});

describe('ninodes quantize', () => {
  it('writes an int8 convrot checkpoint that inspect detects and run executes', async () => {
    const out = join(dir, 'h3-micro-int8.safetensors');
    const q = await cli('quantize', ckpt, out, '--format', 'int8_convrot', '--json');
    expect(q.stderr).not.toContain('error');
    expect(q.status).toBe(0);
    const formats = JSON.parse((await cli('inspect', out, '--json')).stdout).byFormat;
    // Every block linear of a 2-layer H3: qkv, out, fc1, fc2, adaln per block.
    expect(formats).toContainEqual(expect.objectContaining({ format: 'int8_convrot', layers: 10 }));
    const r = await cli('run', '--model', out, '--frames', '1', '--height', '8', '--width', '8', '--steps', '1', '--out', join(dir, 'run-int8'));
    expect(r.status).toBe(0);
  });

  it('writes a GGUF Q4_K file that inspect reads and run executes', async () => {
    const out = join(dir, 'h3-micro-Q4_K.gguf');
    const q = await cli('quantize', ckpt, out, '--format', 'q4_k', '--json');
    expect(q.status).toBe(0);
    const report = JSON.parse(q.stdout);
    expect(report.target).toBe('q4_k');
    // qkv, out, fc1, fc2 and adaLN of both blocks; the fp32 islands, norms and biases stay float.
    expect(report.layers).toHaveLength(10);
    const doc = JSON.parse((await cli('inspect', out, '--json')).stdout);
    expect(doc.byFormat).toContainEqual(expect.objectContaining({ format: 'q4_k', layers: 10 }));
    const r = await cli('run', '--model', out, '--frames', '1', '--height', '8', '--width', '8', '--steps', '1', '--out', join(dir, 'run-q4k'));
    expect(r.status).toBe(0);
    // --quant auto (the default) multiplies the Q4_K blocks where they are, holding the blocks.
    const stored = await cli('run', '--model', out, '--frames', '1', '--height', '8', '--width', '8', '--steps', '1', '--quant', 'auto', '--out', join(dir, 'run-q4k-stored'), '--json');
    expect(stored.status, stored.stderr).toBe(0);
  });

  it('refuses to overwrite without --force', async () => {
    const r = await cli('quantize', ckpt, ckpt.replace('.safetensors', '-x.safetensors'), '--format', 'f8_e4m3fn');
    expect(r.status).toBe(0);
    const again = await cli('quantize', ckpt, ckpt.replace('.safetensors', '-x.safetensors'), '--format', 'f8_e4m3fn');
    expect(again.status).toBe(1);
    expect(again.stderr).toContain('OUTPUT_EXISTS');
  });
});
