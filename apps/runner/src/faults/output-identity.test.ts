// quantize and merge never write over a file they read, however the two paths are spelled: a shard
// named through its index, a symlinked folder, an input that is a link to the output. Files are
// compared by device and inode; each case checks the input's bytes are untouched afterwards.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { openSafetensors, tensorSources, writeSafetensors } from '@ninodes/memory';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inProcessCli } from '../test-support/in-process-cli.js';
import { microCheckpoint } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-output-identity-'));
const cli = inProcessCli(dir);
const single = join(dir, 'real', 'ck.safetensors');
const index = join(dir, 'model.safetensors.index.json');
const shards = [join(dir, 'model-00001-of-00002.safetensors'), join(dir, 'model-00002-of-00002.safetensors')];
const lora = join(dir, 'lora.safetensors');

beforeAll(async () => {
  mkdirSync(join(dir, 'real'));
  await microCheckpoint(single);
  // The micro checkpoint split in two shards behind an index, as Hugging Face writes them.
  const source = openSafetensors(single);
  const names = source.entries().map((e) => e.name);
  const half = Math.ceil(names.length / 2);
  const weightMap: Record<string, string> = {};
  for (const [i, part] of [names.slice(0, half), names.slice(half)].entries()) {
    const tensors: Record<string, Tensor> = {};
    for (const name of part) {
      tensors[name] = source.tensor(name);
      weightMap[name] = `model-0000${i + 1}-of-00002.safetensors`;
    }
    await writeSafetensors(shards[i]!, tensorSources(tensors));
  }
  source.close();
  writeFileSync(index, JSON.stringify({ metadata: {}, weight_map: weightMap }));
  await writeSafetensors(lora, tensorSources({ 'lora_unet_nothing.lora_up.weight': Tensor.f32([4, 1], [1, 2, 3, 4]), 'lora_unet_nothing.lora_down.weight': Tensor.f32([1, 4], [1, 2, 3, 4]) }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function expectRefused(argv: string[], protect: string): Promise<void> {
  const before = readFileSync(protect);
  const r = await cli(...argv);
  expect(r.stderr).toContain('error OUTPUT_IS_INPUT:');
  expect(r.status).toBe(1);
  expect(readFileSync(protect).equals(before)).toBe(true);
}

describe('an output that is one of the inputs is refused, whatever its path', () => {
  it('quantize of an index onto one of its shards', async () => {
    await expectRefused(['quantize', index, shards[0]!, '--format', 'int8_convrot', '--force'], shards[0]!);
    // The index still opens: nothing was replaced.
    openSafetensors(index).close();
  });

  it('merge of an index onto one of its shards, and onto its LoRA', async () => {
    await expectRefused(['merge', index, '--lora', lora, '--out', shards[1]!, '--force'], shards[1]!);
    await expectRefused(['merge', single, '--lora', lora, '--out', lora, '--force'], lora);
  });

  it('an output reached through a symlinked folder', async () => {
    symlinkSync(join(dir, 'real'), join(dir, 'alias'));
    await expectRefused(['quantize', single, join(dir, 'alias', 'ck.safetensors'), '--format', 'int8_convrot', '--force'], single);
  });

  it('an input that is a link to the output', async () => {
    const link = join(dir, 'link.safetensors');
    symlinkSync(single, link);
    await expectRefused(['quantize', link, single, '--format', 'f8_e4m3fn', '--force'], single);
  });

  it('a new output beside the input is written', async () => {
    const r = await cli('quantize', index, join(dir, 'new.safetensors'), '--format', 'int8_convrot');
    expect(r.stderr).not.toContain('error');
    expect(r.status).toBe(0);
  });
});
