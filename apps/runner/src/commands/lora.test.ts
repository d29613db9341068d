// run --lora and merge, end to end on a small synthetic H3 checkpoint, with LoRA files this test
// writes in both key styles. The bytes of the latent are the contract: patching while running,
// streaming the patched weights, and merging first must all give the same latent.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { tensorSources, writeSafetensors } from '@ninodes/memory';
import { H3_DEFAULTS, layoutOf, writeSyntheticH3Checkpoint } from '@ninodes/models';
import { openCheckpoint } from '@ninodes/quant';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReportSchema } from '../run-report.js';
import { inProcessCli } from '../test-support/in-process-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-lora-'));
const ckpt = join(dir, 'h3-micro.safetensors');
const config = { ...H3_DEFAULTS, layers: 3, hidden: 256, heads: 4, headDim: 64, ffn: 512, tDim: 256, timeHidden: 256, ropeLen: 8 };
const kohya = join(dir, 'kohya.safetensors');
const peft = join(dir, 'peft.safetensors');
const wrong = join(dir, 'wrong.safetensors');
const cli = inProcessCli(dir);
const small = ['--frames', '1', '--height', '8', '--width', '8', '--steps', '2', '--threads', '1'];

/** Seeded values in [-scale, scale). */
function values(count: number, seed: number, scale: number): Float32Array {
  let s = (seed * 2654435761) >>> 0;
  return Float32Array.from({ length: count }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return ((s / 2 ** 32) * 2 - 1) * scale;
  });
}

function factors(n: number, k: number, rank: number, seed: number): { up: Tensor; down: Tensor } {
  return { up: Tensor.fromArray('f32', [n, rank], values(n * rank, seed, 0.2)), down: Tensor.fromArray('f32', [rank, k], values(rank * k, seed + 1, 0.2)) };
}

beforeAll(async () => {
  await writeSyntheticH3Checkpoint(ckpt, { config, seed: 3 });
  const source = openCheckpoint(ckpt);
  const layout = layoutOf(source);
  source.close();
  const linears = layout.groups.flatMap((g) => g.linears);
  const path = (name: string) => name.slice(layout.prefix.length);
  const qkv = linears.filter((l) => l.name.endsWith('.attn.qkv_proj'));
  const fc2 = linears.filter((l) => l.name.endsWith('.mlp.fc2'));
  // kohya: the fused qkv of every block and one fc2, alpha tensors; one key for a layer the model lacks.
  const k: Record<string, Tensor> = {};
  [...qkv, fc2[1]].forEach((l, i) => {
    if (l === undefined) return;
    const key = `lora_unet_${path(l.name).replace(/\./g, '_')}`;
    const { up, down } = factors(l.outFeatures, l.inFeatures, 4, 10 + i);
    Object.assign(k, { [`${key}.lora_up.weight`]: up, [`${key}.lora_down.weight`]: down, [`${key}.alpha`]: Tensor.f32([], [2]) });
  });
  const { up, down } = factors(16, 16, 4, 99);
  Object.assign(k, { 'lora_unet_blocks_0_attn_norm_added_q.lora_up.weight': up, 'lora_unet_blocks_0_attn_norm_added_q.lora_down.weight': down });
  await writeSafetensors(kohya, tensorSources(k));
  // diffusers/peft: fc2 of block 0, alpha in the metadata.
  const p: Record<string, Tensor> = {};
  const f = fc2[0];
  if (f !== undefined) {
    const pf = factors(f.outFeatures, f.inFeatures, 8, 50);
    Object.assign(p, { [`transformer.${path(f.name)}.lora_B.weight`]: pf.up, [`transformer.${path(f.name)}.lora_A.weight`]: pf.down });
  }
  await writeSafetensors(peft, tensorSources(p), { metadata: { lora_alpha: '4' } });
  // A LoRA for a model with a different fc2 input width.
  const wf = factors(config.hidden, 128, 4, 70);
  await writeSafetensors(wrong, tensorSources({ [`diffusion_model.${path(fc2[0]?.name ?? '')}.lora_up.weight`]: wf.up, [`diffusion_model.${path(fc2[0]?.name ?? '')}.lora_down.weight`]: wf.down }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function latent(out: string): Buffer {
  return readFileSync(join(dir, out, 'latent.safetensors'));
}

describe('ninodes run --lora', () => {
  // The merge format that keeps what the run computes in: the synthetic checkpoint stores its linears
  // in bf16, so an fp32 or int8 run patches (and quantizes) f32 weights, which a bf16 file would round.
  it.each([
    ['f32', 'f32'],
    ['bf16', 'keep'],
    ['int8_convrot', 'f32'],
  ])('--quant %s: patched while running = merged first (--format %s); streamed (every block) = resident', async (quant, format) => {
    const loras = ['--lora', `${kohya}:0.8`, '--lora', peft];
    const plain = await cli('run', '--model', ckpt, ...small, '--quant', quant, '--out', join(dir, `plain-${quant}`));
    expect(plain.status).toBe(0);
    const patched = await cli('run', '--model', ckpt, ...small, '--quant', quant, ...loras, '--out', join(dir, `lora-${quant}`));
    expect(patched.stderr).not.toContain('error');
    expect(patched.status).toBe(0);
    expect(latent(`lora-${quant}`).equals(latent(`plain-${quant}`))).toBe(false);
    // What did not map is shown, by key.
    expect(patched.stderr).toContain('not mapped: lora_unet_blocks_0_attn_norm_added_q');
    expect(patched.stderr).toMatch(/kohya\.safetensors \(strength 0\.8\): 4 layers patched, 1 modules not mapped/);
    const report = runReportSchema.parse(JSON.parse(readFileSync(join(dir, `lora-${quant}`, 'report.json'), 'utf8')));
    expect(report.lora?.map((l) => [l.strength, l.layers, l.unmapped.length])).toEqual([
      [0.8, 4, 1],
      [1, 1, 0],
    ]);

    const streamed = await cli('run', '--model', ckpt, ...small, '--quant', quant, ...loras, '--alloc', 'cpu,0b;disk,*', '--out', join(dir, `lora-streamed-${quant}`));
    expect(streamed.status).toBe(0);
    expect(latent(`lora-streamed-${quant}`).equals(latent(`lora-${quant}`))).toBe(true);

    const merged = join(dir, `merged-${quant}.safetensors`);
    const m = await cli('merge', ckpt, ...loras, '--out', merged, '--format', format as string, '--json');
    expect(m.stderr).not.toContain('error');
    expect(m.status).toBe(0);
    const afterMerge = await cli('run', '--model', merged, ...small, '--quant', quant, '--out', join(dir, `after-merge-${quant}`));
    expect(afterMerge.status).toBe(0);
    expect(latent(`after-merge-${quant}`).equals(latent(`lora-${quant}`))).toBe(true);
  });

  it('an int8 convrot checkpoint: each patched layer dequantized, patched in fp32 and requantized, the same when merged or streamed', async () => {
    const int8 = join(dir, 'h3-micro-int8.safetensors');
    expect((await cli('quantize', ckpt, int8, '--format', 'int8_convrot')).status).toBe(0);
    const loras = ['--lora', `${kohya}:0.8`, '--lora', peft];
    // --quant int8_convrot runs the stored int8 layers as they are (the default fp32 would dequantize them).
    const plain = await cli('run', '--model', int8, ...small, '--quant', 'int8_convrot', '--out', join(dir, 'int8-plain'));
    expect(plain.status).toBe(0);
    const patched = await cli('run', '--model', int8, ...small, '--quant', 'int8_convrot', ...loras, '--out', join(dir, 'int8-lora'));
    expect(patched.status).toBe(0);
    expect(latent('int8-lora').equals(latent('int8-plain'))).toBe(false);
    const streamed = await cli('run', '--model', int8, ...small, '--quant', 'int8_convrot', ...loras, '--alloc', 'cpu,0b;disk,*', '--out', join(dir, 'int8-lora-streamed'));
    expect(streamed.status).toBe(0);
    const offload = runReportSchema.parse(JSON.parse(readFileSync(join(dir, 'int8-lora-streamed', 'report.json'), 'utf8'))).offload;
    // The patched blocks were streamed in again on the second pass (and patched again).
    expect(offload?.steps[1]?.bytesStreamed).toBeGreaterThan(0);
    expect(latent('int8-lora-streamed').equals(latent('int8-lora'))).toBe(true);
    const merged = join(dir, 'merged-int8-keep.safetensors');
    const m = await cli('merge', int8, ...loras, '--out', merged, '--json');
    expect(m.status).toBe(0);
    expect(JSON.parse(m.stdout).patched).toHaveLength(5);
    const afterMerge = await cli('run', '--model', merged, ...small, '--quant', 'int8_convrot', '--out', join(dir, 'int8-after-merge'));
    expect(afterMerge.status).toBe(0);
    expect(latent('int8-after-merge').equals(latent('int8-lora'))).toBe(true);
  });

  it('a LoRA that does not fit the model is LORA_SHAPE_MISMATCH naming its key; bad --lora values are refused', async () => {
    const r = await cli('run', '--model', ckpt, ...small, '--lora', wrong, '--out', join(dir, 'wrong'));
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('LORA_SHAPE_MISMATCH');
    expect(r.stderr).toContain('diffusion_model.blocks.0.mlp.fc2');
    expect(readdirSync(dir)).not.toContain('wrong');
    const empty = await cli('run', '--model', ckpt, ...small, '--lora', `${kohya}:`, '--out', join(dir, 'empty'));
    expect(empty.status).toBe(1);
    expect(empty.stderr).toContain('INVALID_ARGUMENT');
    const missing = await cli('run', '--model', ckpt, ...small, '--lora', join(dir, 'nope.safetensors:0.5'), '--out', join(dir, 'missing'));
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('nope.safetensors');
  });
});

describe('ninodes merge', () => {
  it('needs --lora and --out, refuses to overwrite without --force, and holds about a layer', async () => {
    expect((await cli('merge', ckpt, '--out', join(dir, 'x.safetensors'))).status).toBe(2);
    expect((await cli('merge', ckpt, '--lora', kohya)).status).toBe(2);
    const out = join(dir, 'merged-keep.safetensors');
    const first = await cli('merge', ckpt, '--lora', kohya, '--out', out, '--json');
    expect(first.status).toBe(0);
    const report = JSON.parse(first.stdout);
    const source = openCheckpoint(ckpt);
    const sizes = source.entries().map((e) => e.byteLength);
    source.close();
    const largest = Math.max(...sizes);
    const total = sizes.reduce((a, b) => a + b, 0);
    expect(report.peakHeldBytes).toBeLessThanOrEqual(largest);
    expect(report.peakHeldBytes * 10).toBeLessThan(total);
    const again = await cli('merge', ckpt, '--lora', kohya, '--out', out);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain('OUTPUT_EXISTS');
    expect((await cli('merge', ckpt, '--lora', kohya, '--out', out, '--force')).status).toBe(0);
    const same = await cli('merge', ckpt, '--lora', kohya, '--out', kohya, '--force');
    expect(same.stderr).toContain('OUTPUT_IS_INPUT');
    expect(readdirSync(dir).filter((f) => f.includes('.tmp') || f.startsWith('.'))).toEqual([]);
  });
});
