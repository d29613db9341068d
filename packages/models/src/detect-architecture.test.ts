import { describe, expect, it } from 'vitest';
import { type TensorShapeInfo, detectArchitecture } from './detect-architecture.js';
import { patchDim } from './h3-config.js';
import { h3Linears, h3Parameters, h3UnusedKeys } from './h3-tensors.js';
import { H3_PRESETS } from './presets.js';

function h3Entries(prefix: string): TensorShapeInfo[] {
  const cfg = H3_PRESETS['h3-full'].config;
  const out: TensorShapeInfo[] = [];
  for (const l of h3Linears(cfg)) {
    out.push({ name: `${prefix}${l.name}.weight`, shape: [l.outFeatures, l.inFeatures] });
    if (l.bias) out.push({ name: `${prefix}${l.name}.bias`, shape: [l.outFeatures] });
  }
  for (const p of h3Parameters(cfg)) out.push({ name: `${prefix}${p.name}`, shape: p.shape });
  // what a real H3 file also holds: audio, text conditioning and the token refiner
  out.push(
    { name: `${prefix}audio_patch_proj.weight`, shape: [5376, 32] },
    { name: `${prefix}final_layer.audio_out.weight`, shape: [32, 5376] },
    { name: `${prefix}condition_proj.weight`, shape: [5376, 5120] },
    { name: `${prefix}token_refiner.blocks.0.attn.qkv_proj.weight`, shape: [3 * 7168, 5376] },
    { name: `${prefix}token_refiner.blocks.1.attn.qkv_proj.weight`, shape: [3 * 7168, 5376] },
  );
  return out;
}

function wanEntries(): TensorShapeInfo[] {
  const out: TensorShapeInfo[] = [{ name: 'patch_embedding.weight', shape: [5120, 16, 1, 2, 2] }];
  for (let i = 0; i < 40; i++) {
    out.push(
      { name: `blocks.${i}.self_attn.q.weight`, shape: [5120, 5120] },
      { name: `blocks.${i}.cross_attn.k.weight`, shape: [5120, 5120] },
      { name: `blocks.${i}.ffn.0.weight`, shape: [13824, 5120] },
      { name: `blocks.${i}.modulation`, shape: [1, 6, 5120] },
    );
  }
  return out;
}

function fluxEntries(): TensorShapeInfo[] {
  const out: TensorShapeInfo[] = [{ name: 'img_in.weight', shape: [3072, 64] }];
  for (let i = 0; i < 19; i++) {
    out.push(
      { name: `double_blocks.${i}.img_attn.qkv.weight`, shape: [9216, 3072] },
      { name: `double_blocks.${i}.img_attn.norm.query_norm.scale`, shape: [128] },
      { name: `double_blocks.${i}.img_mlp.0.weight`, shape: [12288, 3072] },
    );
  }
  for (let i = 0; i < 38; i++) out.push({ name: `single_blocks.${i}.linear1.weight`, shape: [21504, 3072] });
  return out;
}

describe('detectArchitecture', () => {
  it('H3 at real scale, under ComfyUI prefix, derives the full config', () => {
    for (const prefix of ['', 'model.diffusion_model.']) {
      const d = detectArchitecture(h3Entries(prefix));
      expect(d.family).toBe('h3');
      if (d.family !== 'h3') return;
      expect(d.prefix).toBe(prefix);
      expect([d.layers, d.hidden, d.heads, d.headDim, d.ffn]).toEqual([50, 5376, 56, 128, 14336]);
      expect(d.h3).toMatchObject({ tDim: 2688, timeHidden: 5376, freqDim: 256, ropeLen: 16, latentChannels: 24 });
      expect(patchDim(d.h3 as never)).toBe(96);
      expect(d.details.audio).toBe(true);
      expect(d.details.textRefinerLayers).toBe(2);
    }
  });

  it('H3 unused keys are the text, audio and refiner tensors', () => {
    const entries = h3Entries('model.diffusion_model.');
    const unused = h3UnusedKeys(
      entries.map((e) => e.name),
      H3_PRESETS['h3-full'].config,
      'model.diffusion_model.',
    );
    expect(unused.sort()).toEqual(
      [
        'audio_patch_proj.weight',
        'condition_proj.weight',
        'final_layer.audio_out.weight',
        'token_refiner.blocks.0.attn.qkv_proj.weight',
        'token_refiner.blocks.1.attn.qkv_proj.weight',
      ].map((n) => `model.diffusion_model.${n}`),
    );
  });

  it('WAN 2.1 14B', () => {
    const d = detectArchitecture(wanEntries());
    expect(d.family).toBe('wan2');
    if (d.family === 'unknown') return;
    expect([d.layers, d.hidden, d.heads, d.headDim, d.ffn]).toEqual([40, 5120, 40, 128, 13824]);
    expect(d.details.variant).toBe('wan2.x-t2v');
  });

  it('Flux dev', () => {
    const d = detectArchitecture(fluxEntries());
    expect(d.family).toBe('flux');
    if (d.family === 'unknown') return;
    expect([d.layers, d.hidden, d.heads, d.headDim, d.ffn]).toEqual([57, 3072, 24, 128, 12288]);
    expect(d.details).toMatchObject({ doubleBlocks: 19, singleBlocks: 38 });
  });

  it('anything else is unknown with evidence, not an exception', () => {
    const d = detectArchitecture([
      { name: 'encoder.layers.0.fc.weight', shape: [4, 4] },
      { name: 'encoder.layers.1.fc.weight', shape: [4, 4] },
    ]);
    expect(d.family).toBe('unknown');
    expect(d.evidence.join('\n')).toContain('encoder.layers.N: 2 tensors');
    expect(detectArchitecture([]).family).toBe('unknown');
  });

  it('a partial H3 file fails with TENSOR_NOT_FOUND', () => {
    const entries = h3Entries('').filter((e) => e.name !== 'rope.inv_freq');
    expect(() => detectArchitecture(entries)).toThrow(expect.objectContaining({ code: 'TENSOR_NOT_FOUND' }));
  });
});

describe('block indices are checked against the blocks the file holds (issue 17.5)', () => {
  const hostile = 'blocks.999999999.attn.qkv_proj.weight';
  it.each([
    ['H3', () => h3Entries(''), hostile],
    ['H3 under a prefix', () => h3Entries('model.diffusion_model.'), `model.diffusion_model.${hostile}`],
    ['WAN', wanEntries, 'blocks.999999999.self_attn.q.weight'],
    ['Flux', fluxEntries, 'single_blocks.1000000.linear1.weight'],
  ])('%s: one 0-byte key with a huge index is refused, naming the key', (_, entries, key) => {
    const tensors = [...entries(), { name: key, shape: [0] }];
    expect(() => detectArchitecture(tensors)).toThrow(expect.objectContaining({ code: 'BLOCK_INDEX_GAP', where: key }));
  });

  it.each(['blocks.-1.attn.qkv_proj.weight', 'blocks.1e3.attn.qkv_proj.weight', 'blocks.01.norm1.weight', 'blocks.x.mlp.fc2.weight'])('H3: %s (no block index) is refused, not left unused', (key) => {
    const tensors = [...h3Entries(''), { name: key, shape: [0] }];
    expect(() => detectArchitecture(tensors)).toThrow(expect.objectContaining({ code: 'BLOCK_INDEX_GAP', where: key }));
  });

  it('a gap in the block indices is refused, naming the first block past the gap', () => {
    const tensors = wanEntries().filter((t) => !t.name.startsWith('blocks.7.'));
    expect(() => detectArchitecture(tensors)).toThrow(expect.objectContaining({ code: 'BLOCK_INDEX_GAP', where: 'blocks.8.self_attn.q.weight' }));
  });

  it('a block without its tensors is refused, naming the missing key', () => {
    const tensors = [...wanEntries(), { name: 'blocks.40.self_attn.q.weight', shape: [0] }];
    expect(() => detectArchitecture(tensors)).toThrow(expect.objectContaining({ code: 'TENSOR_NOT_FOUND', where: 'blocks.40.ffn.0.weight' }));
  });

  it('a stray tensor of a block that does not exist is refused too', () => {
    const tensors = [...wanEntries(), { name: 'blocks.40.norm3.weight', shape: [5120] }];
    expect(() => detectArchitecture(tensors)).toThrow(expect.objectContaining({ code: 'BLOCK_INDEX_GAP', where: 'blocks.40.norm3.weight' }));
  });
});

describe('presets', () => {
  it('every block linear takes int8 convrot group 256 and a TP2 split', () => {
    for (const preset of Object.values(H3_PRESETS)) {
      const c = preset.config;
      const inner = c.heads * c.headDim;
      expect(c.hidden % 256).toBe(0);
      expect(inner % 256).toBe(0);
      expect((inner / 2) % 256).toBe(0);
      expect((c.ffn / 2) % 256).toBe(0);
      expect(c.heads % 2).toBe(0);
      expect(6 * c.ropeLen).toBeLessThanOrEqual(c.headDim);
    }
    expect(H3_PRESETS['h3-full'].config).toMatchObject({ layers: 50, hidden: 5376, heads: 56, headDim: 128, ffn: 14336 });
  });
});
