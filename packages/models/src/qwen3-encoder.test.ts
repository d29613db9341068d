import { fixturePath, readSafetensorsFile } from '@ninodes/test-safetensors';
import { describe, expect, it } from 'vitest';
import { maxRelError } from '@ninodes/quant';
import { openQwen3Encoder } from './qwen3-encoder.js';
import { qwen3Layout } from './qwen3-layout.js';
import { openSafetensors } from '@ninodes/memory';

// A tiny random Qwen3 and its hidden states from transformers' Qwen3Model in float64 on the stored
// weights (tools/qwen3-ref/make_fixtures.py).
const expectFile = readSafetensorsFile(fixturePath('qwen3', 'expect.safetensors')).tensors;
const ids = Array.from(new Int32Array(expectFile.get('ids')!.bytes.slice().buffer));
const f64 = (name: string): Float64Array => new Float64Array(expectFile.get(name)!.bytes.slice().buffer);

describe('Qwen3 text encoder against transformers in float64', () => {
  for (const stored of ['f32', 'bf16'] as const) {
    it(`${stored} weights: the hidden state after the last layer within 1e-5 relative`, async () => {
      const { encoder, close } = openQwen3Encoder(fixturePath('qwen3', `tiny-${stored}.safetensors`));
      try {
        expect(encoder.config).toMatchObject({ vocab: 96, hidden: 48, layers: 3, heads: 4, kvHeads: 2, headDim: 16, ffn: 80 });
        expect(encoder.prefix).toBe('model.');
        const got = await encoder.encode(ids);
        expect(got.shape).toEqual([ids.length, 48]);
        expect(maxRelError(got.data, f64(`hidden.${stored}`))).toBeLessThan(1e-5);
      } finally {
        close();
      }
    });
  }

  it('GGUF with llama.cpp names (Q8_0 embedding and linears): RoPE base and eps from the metadata, within 1e-5 of the float64 reference', async () => {
    const gguf = readSafetensorsFile(fixturePath('qwen3', 'expect-gguf.safetensors')).tensors;
    const ggufIds = Array.from(new Int32Array(gguf.get('ids')!.bytes.slice().buffer));
    // compute f32: the Q8_0 weights dequantized (in 'auto' they multiply on their blocks with
    // quantized activations, as llama.cpp does, ~1e-2 from this reference).
    const { encoder, close } = openQwen3Encoder(fixturePath('qwen3', 'tiny-q8_0.gguf'), { compute: 'f32' });
    try {
      expect(encoder.naming).toBe('gguf');
      expect(encoder.config).toMatchObject({ vocab: 128, hidden: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 16, ffn: 96, ropeTheta: 1_000_000, eps: Math.fround(1e-6) }); // GGUF stores eps as f32
      const got = await encoder.encode(ggufIds);
      expect(maxRelError(got.data, new Float64Array(gguf.get('hidden')!.bytes.slice().buffer))).toBeLessThan(1e-5);
    } finally {
      close();
    }
  });

  it('a prefix of the prompt gives the same rows (causal: later tokens do not reach earlier ones)', async () => {
    const { encoder, close } = openQwen3Encoder(fixturePath('qwen3', 'tiny-f32.safetensors'));
    try {
      const whole = await encoder.encode(ids);
      const head = await encoder.encode(ids.slice(0, 5));
      expect(maxRelError(head.data, whole.data.subarray(0, 5 * 48))).toBeLessThan(1e-6);
    } finally {
      close();
    }
  });

  it('hooks see embed_tokens then every layer, in the layout order', async () => {
    const source = openSafetensors(fixturePath('qwen3', 'tiny-f32.safetensors'));
    const layout = qwen3Layout(source);
    source.close();
    expect(layout.groups.map((g) => g.name)).toEqual(['embed_tokens', 'layers.0', 'layers.1', 'layers.2']);
    expect(layout.groups[1]!.linears.map((l) => [l.name.split('.').slice(-1)[0], l.role])).toEqual([
      ['q_proj', 'column'],
      ['k_proj', 'column'],
      ['v_proj', 'column'],
      ['o_proj', 'row'],
      ['gate_proj', 'column'],
      ['up_proj', 'column'],
      ['down_proj', 'row'],
    ]);
    const seen: string[] = [];
    const { encoder, close } = openQwen3Encoder(fixturePath('qwen3', 'tiny-f32.safetensors'), { hooks: { beforeGroup: (n) => void seen.push(`+${n}`), afterGroup: (n) => void seen.push(`-${n}`) } });
    try {
      await encoder.encode([1, 2]);
      expect(seen).toEqual(layout.groups.flatMap((g) => [`+${g.name}`, `-${g.name}`]));
    } finally {
      close();
    }
  });

  it('outputLayer runs fewer layers; bad ids and layers are typed errors', async () => {
    const { encoder, close } = openQwen3Encoder(fixturePath('qwen3', 'tiny-f32.safetensors'), { outputLayer: 2 });
    try {
      expect(encoder.allLinears()).toHaveLength(14);
      await expect(encoder.encode([1, 96])).rejects.toMatchObject({ code: 'TOKEN_OUT_OF_RANGE', value: 96, where: 'ids[1]' });
      await expect(encoder.encode([])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    } finally {
      close();
    }
    expect(() => openQwen3Encoder(fixturePath('qwen3', 'tiny-f32.safetensors'), { outputLayer: 4 })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }));
    expect(() => openQwen3Encoder(fixturePath('h3av', 'full', 'model.safetensors'))).toThrow(expect.objectContaining({ code: 'ARCHITECTURE_MISMATCH' }));
  });
});
