// What a new user meets first (issue 28): one vocabulary of format names with "did you mean",
// quantized files computed as stored by default, containers that match their extension, files that
// are not checkpoints called what they are, and a --budget that is a promise or a refusal.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { H3_DEFAULTS, writeSyntheticH3Checkpoint } from '@ninodes/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReportSchema } from '../run-report.js';
import { inProcessCli } from '../test-support/in-process-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-first-'));
const ckpt = join(dir, 'h3-micro.safetensors');
const int8 = join(dir, 'h3-micro-int8.safetensors');
const config = { ...H3_DEFAULTS, layers: 2, hidden: 256, heads: 4, headDim: 64, ffn: 512, tDim: 256, timeHidden: 256, ropeLen: 8 };
const small = ['--frames', '1', '--height', '8', '--width', '8', '--steps', '1', '--threads', '1'];
const cli = inProcessCli(dir);

beforeAll(async () => {
  await writeSyntheticH3Checkpoint(ckpt, { config, seed: 7 });
  expect((await cli('quantize', ckpt, int8, '--format', 'int8_convrot')).status).toBe(0);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('format names', () => {
  it.each([
    [['run', '--quant', 'fp32'], '--quant f32'],
    [['run', '--quant', 'fp8'], '--quant f8_e4m3fn'],
    [['run', '--quant', 'INT8_CONVROT'], '--quant int8_convrot'],
    [['quantize', 'a.safetensors', 'b.gguf', '--format', 'gguf_q4_k'], '--format q4_k'],
    [['quantize', 'a.safetensors', 'b.safetensors', '--format', 'fp8_e4m3fn'], '--format f8_e4m3fn'],
    [['merge', 'a.safetensors', '--lora', 'l.safetensors', '--out', 'o.safetensors', '--format', 'fp8_e5m2'], '--format f8_e5m2'],
    [['demo', '--format', 'fp32'], '--format f32'],
    [['plan', 'a.safetensors', '--alloc', 'cpu,*', '--quant', 'bf61'], '--quant bf16'],
  ])('%j is refused with "did you mean %s"', async (argv, meant) => {
    const r = await cli(...argv);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('CLI_INVALID_OPTION');
    expect(r.stderr).toContain(`did you mean ${meant}?`);
  });
});

describe('quantized files by default', () => {
  it('run computes an int8 file as stored unless --quant forces a format, and its model line says so', async () => {
    const auto = await cli('run', '--model', int8, ...small, '--out', join(dir, 'auto'));
    expect(auto.status).toBe(0);
    // 2 blocks x (qkv, out, fc1, fc2, adaLN) were quantized; the islands stay as stored.
    expect(auto.stdout).toMatch(/model {6}.*\(--quant auto\): linears .*\b10 int8_convrot as stored/);
    const forced = await cli('run', '--model', int8, ...small, '--quant', 'f32', '--out', join(dir, 'forced'));
    expect(forced.status).toBe(0);
    expect(forced.stdout).toMatch(/\b10 f32 \(from int8_convrot\)/);
    const report = runReportSchema.parse(JSON.parse(readFileSync(join(dir, 'auto', 'report.json'), 'utf8')));
    expect(report.config.quant).toBe('auto');
  });
});

describe('containers and file kinds', () => {
  it('quantize refuses an extension naming the other container, before writing anything', async () => {
    const r = await cli('quantize', ckpt, join(dir, 'out.gguf'), '--format', 'int8_convrot');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('OUTPUT_CONTAINER_MISMATCH');
    expect(r.stderr).toContain(`name it ${join(dir, 'out')}.safetensors`);
    const g = await cli('quantize', ckpt, join(dir, 'out.safetensors'), '--format', 'q8_0');
    expect(g.stderr).toContain('OUTPUT_CONTAINER_MISMATCH');
  });

  it('run --model README.md says it is a text file, not a damaged checkpoint', async () => {
    const r = await cli('run', '--model', join(process.env.NINODES_REPO_ROOT as string, 'README.md'), '--out', join(dir, 'readme'));
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('NOT_A_CHECKPOINT');
    expect(r.stderr).toContain('it looks like a text file');
    expect(r.stderr).not.toContain('SAFETENSORS_HEADER_TOO_LARGE');
  });
});

describe('--budget', () => {
  it('needs a unit', async () => {
    const r = await cli('run', '--model', ckpt, ...small, '--budget', '150', '--out', join(dir, 'nounit'));
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--budget 150 has no unit');
    expect(r.stderr).toContain('--budget 150mb');
  });

  it('below what the run must hold is refused before it starts, naming a budget that works', async () => {
    const r = await cli('run', '--model', ckpt, ...small, '--budget', '1kb', '--out', join(dir, 'tiny'));
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('BUDGET_TOO_SMALL');
    const suggested = /use --budget (\d+mb)/.exec(r.stderr)?.[1];
    expect(suggested).toBeDefined();
    const ok = await cli('run', '--model', ckpt, ...small, '--budget', suggested as string, '--out', join(dir, 'suggested'));
    expect(ok.stderr).not.toContain('BUDGET_TOO_SMALL');
    expect(ok.status).toBe(0);
    // The end line says what the budget covered and what it did not.
    expect(ok.stdout).toMatch(/^budget {5}\d+ MiB above a .* baseline \(Node, the addon, the model's skeleton: not counted\); held at most/m);
  });
});

describe('smaller first-day items', () => {
  it('an odd --height or --width is refused, as help says it must be even', async () => {
    for (const [flag, sides] of [['--height', ['--height', '31', '--width', '8']], ['--width', ['--height', '8', '--width', '31']]] as const) {
      const r = await cli('run', '--model', ckpt, '--frames', '1', ...sides, '--out', join(dir, 'odd'));
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`${flag}: must be even`);
    }
  });

  it('merge --help names each default and "repeatable" once', async () => {
    const r = await cli('help', 'merge');
    expect(r.stdout.match(/\[default: keep\]/g)).toHaveLength(1);
    expect(r.stdout).not.toMatch(/repeatable.*repeatable/);
  });

  it('--tp that does not split the model lists the sizes that do', async () => {
    const r = await cli('run', '--model', ckpt, ...small, '--tp', '3', '--out', join(dir, 'tp3'));
    expect(r.status).toBe(1);
    // 4 heads and widths 256/512: 1, 2 and 4 ranks split them.
    expect(r.stderr).toMatch(/hint: sizes up to 16 that split this model: 1, 2, 4\b/);
  });
});
