import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { openSafetensors, writeSafetensors } from '@ninodes/memory';
import { afterAll, describe, expect, it } from 'vitest';
import { h3Layout, layoutOf } from './h3-layout.js';
import { H3_PRESETS } from './presets.js';
import { writeSyntheticH3Checkpoint } from './synthetic-checkpoint.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-h3-layout-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('h3Layout', () => {
  it('h3-full: 50 block groups in forward order whose bytes sum exactly to the file spans they read', async () => {
    const path = join(dir, 'full.safetensors');
    await writeSyntheticH3Checkpoint(path, { preset: 'h3-full', prefix: 'model.diffusion_model.' });
    const source = openSafetensors(path);
    try {
      const layout = layoutOf(source);
      expect(layout.architecture).toBe('minimax-h3');
      expect(layout.prefix).toBe('model.diffusion_model.');
      expect(layout.config).toEqual(H3_PRESETS['h3-full'].config);
      const names = layout.groups.map((g) => g.name);
      expect(names.slice(0, 3)).toEqual(['time_embedder', 'rope', 'video_patch_proj']);
      expect(names.slice(3, 53)).toEqual(Array.from({ length: 50 }, (_, i) => `blocks.${i}`));
      expect(names.slice(53)).toEqual(['final_layer']);
      expect(layout.groups.filter((g) => g.kind === 'block')).toHaveLength(50);
      // Every file tensor is in exactly one group or in the unused list; the spans add up exactly.
      const entries = source.entries();
      const span = new Map(entries.map((e) => [e.name, e.byteLength]));
      const seen = new Set<string>();
      let groupBytes = 0;
      for (const g of layout.groups) {
        for (const t of g.tensors) {
          expect(seen.has(t.name)).toBe(false);
          seen.add(t.name);
          expect(t.byteLength).toBe(span.get(t.name));
          groupBytes += t.byteLength;
        }
      }
      for (const t of layout.unusedTensors) expect(seen.has(t.name)).toBe(false);
      expect(seen.size + layout.unusedTensors.length).toBe(entries.length);
      expect(layout.unusedTensors).toEqual([]);
      // Independent total: the file's data section is exactly the tensors laid end to end.
      const fileTotal = entries.reduce((a, e) => a + e.byteLength, 0);
      expect(groupBytes).toBe(fileTotal);
      const last = entries.reduce((a, e) => Math.max(a, e.byteOffset + e.byteLength), 0);
      const first = entries.reduce((a, e) => Math.min(a, e.byteOffset), Infinity);
      expect(groupBytes).toBe(last - first);
      // h3-full block: qkv [3·7168, 5376], out [5376, 7168], fc1 [28672, 5376], fc2 [5376, 14336], adaLN [18·5376, 2688] + bias, norm1/norm2 [5376], q/k norms [128], all bf16.
      const b7 = layout.groups.find((g) => g.name === 'blocks.7');
      const want = 2 * (3 * 7168 * 5376 + 5376 * 7168 + 28672 * 5376 + 5376 * 14336 + 18 * 5376 * 2688 + 18 * 5376 + 2 * 5376 + 2 * 128);
      expect(b7?.tensors.reduce((a, t) => a + t.byteLength, 0)).toBe(want);
    } finally {
      source.close();
      rmSync(path);
    }
  });

  it('roles, fused layouts, fp32 islands and stored formats of the linears', async () => {
    const path = join(dir, 'tiny.safetensors');
    await writeSyntheticH3Checkpoint(path, { preset: 'h3-tiny', sparse: true });
    const source = openSafetensors(path);
    try {
      const layout = h3Layout(source);
      const lin = new Map(layout.groups.flatMap((g) => g.linears).map((l) => [l.name, l]));
      expect(lin.get('blocks.3.attn.qkv_proj')).toMatchObject({ role: 'column', fused: { kind: 'qkv', heads: 8, headDim: 64 }, storedFormat: 'bf16', fp32Island: false, outFeatures: 1536, inFeatures: 512 });
      expect(lin.get('blocks.3.attn.out_proj')).toMatchObject({ role: 'row', fused: { kind: 'none' } });
      expect(lin.get('blocks.3.mlp.fc1')).toMatchObject({ role: 'column', fused: { kind: 'halves' }, outFeatures: 2048 });
      expect(lin.get('blocks.3.mlp.fc2')).toMatchObject({ role: 'row', inFeatures: 1024 });
      expect(lin.get('blocks.3.adaln_proj.linear')).toMatchObject({ role: 'gathered', fused: { kind: 'parts', parts: 3 }, bias: true });
      expect(lin.get('video_patch_proj')).toMatchObject({ role: 'replicated', fp32Island: true, storedFormat: 'f32' });
      expect(lin.get('time_embedder.proj_in')).toMatchObject({ fp32Island: true });
      expect(lin.get('final_layer.video_out')).toMatchObject({ fp32Island: true, storedFormat: 'f32' });
      expect(lin.get('final_layer.adaln_proj.linear')).toMatchObject({ role: 'gathered', fused: { kind: 'none' }, fp32Island: false });
      expect(layout.groups.find((g) => g.name === 'rope')?.tensors.map((t) => t.name)).toEqual(['rope.inv_freq']);
      expect(layout.groups.find((g) => g.name === 'blocks.0')?.linears.map((l) => l.name)).toEqual([
        'blocks.0.adaln_proj.linear', 'blocks.0.attn.qkv_proj', 'blocks.0.attn.out_proj', 'blocks.0.mlp.fc1', 'blocks.0.mlp.fc2',
      ]);
    } finally {
      source.close();
    }
  });

  it('quant sidecars join their layer group; keys outside the video path are listed as unused', async () => {
    const src = openSafetensors(join(dir, 'tiny.safetensors'));
    const path = join(dir, 'sidecars.safetensors');
    const qkv = 'blocks.0.attn.qkv_proj';
    try {
      const tensors = src.entries().map((e) => ({ name: e.name, dtype: e.dtype, shape: e.shape, data: () => src.tensor(e.name).bytes() }));
      const marker = new TextEncoder().encode('{"format":"int8_tensorwise","convrot":true,"convrot_groupsize":256}');
      const replaced = tensors.filter((t) => t.name !== `${qkv}.weight`);
      replaced.push(
        { name: `${qkv}.weight`, dtype: 'i8', shape: [1536, 512], data: () => new Uint8Array(1536 * 512) },
        { name: `${qkv}.weight_scale`, dtype: 'f32', shape: [1536, 1], data: () => Tensor.zeros('f32', [1536, 1]).bytes() },
        { name: `${qkv}.comfy_quant`, dtype: 'u8', shape: [marker.length], data: () => marker },
        { name: 'txt_in.weight', dtype: 'f32', shape: [4, 4], data: () => new Uint8Array(64) },
      );
      await writeSafetensors(path, replaced);
    } finally {
      src.close();
    }
    const source = openSafetensors(path);
    try {
      const layout = h3Layout(source);
      const b0 = layout.groups.find((g) => g.name === 'blocks.0');
      const names = b0?.tensors.map((t) => t.name) ?? [];
      expect(names).toContain(`${qkv}.weight_scale`);
      expect(names).toContain(`${qkv}.comfy_quant`);
      expect(b0?.linears.find((l) => l.name === qkv)?.storedFormat).toBe('int8_convrot');
      expect(layout.unusedTensors.map((t) => t.name)).toEqual(['txt_in.weight']);
      const total = source.entries().reduce((a, e) => a + e.byteLength, 0);
      const grouped = layout.groups.reduce((a, g) => a + g.tensors.reduce((b, t) => b + t.byteLength, 0), 0);
      expect(grouped + 64).toBe(total);
    } finally {
      source.close();
    }
  });
});

describe('h3-full-pruned', () => {
  it('has the real pruned file’s 532 float tensors (932 once its 200 block linears carry int8 scale + marker), all in layout groups', async () => {
    const path = join(dir, 'pruned.safetensors');
    await writeSyntheticH3Checkpoint(path, { preset: 'h3-full-pruned' });
    const source = openSafetensors(path);
    try {
      const entries = source.entries();
      expect(entries).toHaveLength(532);
      expect(entries.length + 200 * 2).toBe(932);
      const layout = layoutOf(source);
      expect(layout.config).toEqual(H3_PRESETS['h3-full-pruned'].config);
      expect(layout.unusedTensors).toEqual([]);
      const names = layout.groups.map((g) => g.name);
      expect(names.slice(0, 8)).toEqual(['condition_proj', 'token_refiner.blocks.0', 'token_refiner.blocks.1', 'token_refiner', 'adaln_t_table', 'rope', 'video_patch_proj', 'audio_patch_proj']);
      const adaln = layout.groups.find((g) => g.name === 'blocks.0')?.linears.find((l) => l.name === 'blocks.0.adaln_proj.linear');
      expect([adaln?.outFeatures, adaln?.inFeatures]).toEqual([96768, 8]);
      // The text stream's linears split by output rows, their outputs gathered, under tensor parallelism.
      const text = layout.groups.filter((g) => g.name === 'condition_proj' || g.name.startsWith('token_refiner')).flatMap((g) => g.linears);
      expect(text).toHaveLength(1 + 2 * 4);
      for (const l of text) expect(l, l.name).toMatchObject({ role: 'gathered', fused: { kind: 'none' } });
    } finally {
      source.close();
    }
  });
});
