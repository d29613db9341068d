import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { tensorSources, writeSafetensors } from '@ninodes/memory';
import { afterAll, describe, expect, it } from 'vitest';
import { readLoraFile } from './lora-file.js';
import { factors, writeTestLora } from './testing/lora-files.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-lora-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const mod = { path: 'blocks.0.mlp.fc2', n: 6, k: 10, rank: 3, seed: 1 };

describe('readLoraFile', () => {
  it('reads kohya files: factors as written, alpha from the tensor', async () => {
    const path = join(dir, 'kohya.safetensors');
    await writeTestLora(path, 'kohya', [{ ...mod, alpha: 1.5 }]);
    const f = readLoraFile(path);
    expect(f.modules).toHaveLength(1);
    const m = f.modules[0];
    expect(m?.key).toBe('lora_unet_blocks_0_mlp_fc2');
    expect(m?.style).toBe('kohya');
    expect([m?.rank, m?.alpha, m?.alphaFrom]).toEqual([3, 1.5, 'tensor']);
    expect([...(m?.up.data ?? [])]).toEqual([...factors(mod).up.data]);
    expect([...(m?.down.data ?? [])]).toEqual([...factors(mod).down.data]);
    expect(f.unsupported).toEqual([]);
  });

  it('reads ComfyUI-style dotted keys', async () => {
    const path = join(dir, 'comfy.safetensors');
    await writeTestLora(path, 'comfy', [{ ...mod, alpha: 3 }]);
    const m = readLoraFile(path).modules[0];
    expect([m?.key, m?.style, m?.alpha]).toEqual(['diffusion_model.blocks.0.mlp.fc2', 'comfy', 3]);
  });

  it('takes a peft alpha from the option, adapter_config.json, the metadata, else the rank', async () => {
    const path = join(dir, 'peft.safetensors');
    await writeTestLora(path, 'peft', [mod]);
    const plain = readLoraFile(path).modules[0];
    expect([plain?.style, plain?.key, plain?.alpha, plain?.alphaFrom]).toEqual(['peft', 'transformer.blocks.0.mlp.fc2', 3, 'rank']);
    expect(readLoraFile(path, { alpha: 8 }).modules[0]?.alpha).toBe(8);

    const meta = join(dir, 'peft-meta.safetensors');
    await writeTestLora(meta, 'peft', [mod], { lora_alpha: '6' });
    expect(readLoraFile(meta).modules[0]).toMatchObject({ alpha: 6, alphaFrom: 'metadata' });

    const sub = mkdtempSync(join(dir, 'adapter-'));
    await writeTestLora(join(sub, 'adapter_model.safetensors'), 'peft', [mod]);
    writeFileSync(join(sub, 'adapter_config.json'), JSON.stringify({ r: 3, lora_alpha: 12 }));
    expect(readLoraFile(join(sub, 'adapter_model.safetensors')).modules[0]).toMatchObject({ alpha: 12, alphaFrom: 'adapter_config' });

    // A FIFO or a device as the config is refused at once (never waited on), naming it.
    const fifo = mkdtempSync(join(dir, 'adapter-fifo-'));
    await writeTestLora(join(fifo, 'adapter_model.safetensors'), 'peft', [mod]);
    expect(spawnSync('mkfifo', [join(fifo, 'adapter_config.json')]).status).toBe(0);
    expect(() => readLoraFile(join(fifo, 'adapter_model.safetensors'))).toThrow(expect.objectContaining({ code: 'NOT_A_REGULAR_FILE', value: join(fifo, 'adapter_config.json') }));
    const zero = mkdtempSync(join(dir, 'adapter-zero-'));
    await writeTestLora(join(zero, 'adapter_model.safetensors'), 'peft', [mod]);
    symlinkSync('/dev/zero', join(zero, 'adapter_config.json'));
    expect(() => readLoraFile(join(zero, 'adapter_model.safetensors'))).toThrow(expect.objectContaining({ code: 'NOT_A_REGULAR_FILE' }));
  });

  it('lists tensors that are no low-rank pair, and refuses incomplete pairs and files without modules', async () => {
    const { up, down } = factors(mod);
    const extra = join(dir, 'extra.safetensors');
    await writeSafetensors(extra, tensorSources({ 'a.lora_up.weight': up, 'a.lora_down.weight': down, 'a.dora_scale': Tensor.f32([6], new Array(6).fill(1)) }));
    expect(readLoraFile(extra).unsupported).toEqual(['a.dora_scale']);

    const half = join(dir, 'half.safetensors');
    await writeSafetensors(half, tensorSources({ 'a.lora_up.weight': up }));
    expect(() => readLoraFile(half)).toThrow(expect.objectContaining({ code: 'LORA_INVALID', value: 'a' }));

    const none = join(dir, 'none.safetensors');
    await writeSafetensors(none, tensorSources({ 'x.weight': up }));
    expect(() => readLoraFile(none)).toThrow(expect.objectContaining({ code: 'LORA_INVALID' }));

    const ranks = join(dir, 'ranks.safetensors');
    await writeSafetensors(ranks, tensorSources({ 'a.lora_up.weight': up, 'a.lora_down.weight': Tensor.zeros('f32', [2, 10]) }));
    expect(() => readLoraFile(ranks)).toThrow(expect.objectContaining({ code: 'LORA_SHAPE_MISMATCH' }));
  });
});
