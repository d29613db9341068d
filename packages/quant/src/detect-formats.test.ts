import { Tensor, isNinodesError } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { encodeComfyQuant } from './comfy-quant-config.js';
import { detectFormats, formatHintFromFilename } from './detect-formats.js';
import { GgufCheckpoint } from './gguf-checkpoint.js';
import { fixturePath, readSafetensorsFixture } from './testing/fixtures.js';
import { fixtureCheckpoint, memoryCheckpoint } from './testing/memory-checkpoint.js';
import { bytesPerParameter, weightBytes } from './weight-format.js';

const marker = (conf: Record<string, string | number | boolean>) => Tensor.fromArray('u8', [encodeComfyQuant(conf).length], encodeComfyQuant(conf));
const zeros = (dtype: 'i8' | 'f8_e4m3fn' | 'f8_e5m2' | 'bf16' | 'f32', shape: number[]) => Tensor.zeros(dtype, shape);
const scalar = (v: number) => Tensor.f32([], [v]);

function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (isNinodesError(e)) return `${e.code}@${e.where ?? ''}`;
    throw e;
  }
  return 'NO_ERROR';
}

describe('detectFormats', () => {
  it('reads the comfy-kitchen int8 convrot checkpoint', () => {
    const d = detectFormats(fixtureCheckpoint(fixturePath('int8', 'comfy_int8_convrot_checkpoint.safetensors')));
    expect(d.layers.get('model.lin_a')).toMatchObject({ format: 'int8_convrot', source: 'comfy_quant', shape: [96, 512], tensors: { weightScale: 'model.lin_a.weight_scale', bias: 'model.lin_a.bias' } });
    expect(d.layers.get('model.lin_b')?.format).toBe('int8_convrot');
    expect(d.layers.get('model.norm')).toMatchObject({ format: 'f32', source: 'dtype' });
    expect(d.conflicts).toEqual([]);
    expect(d.filenameHint).toMatchObject({ family: 'int8', convrot: true });
  });

  it('reads GGUF block types per tensor', () => {
    const g = GgufCheckpoint.open(fixturePath('gguf', 'quants.gguf'));
    const src = { ...g, format: g.format, path: g.path, metadata: g.metadata, entries: () => g.entries().map((e) => ({ ...e, name: `${e.name}.weight` })), has: g.has.bind(g), entry: g.entry.bind(g), tensor: g.tensor.bind(g), tensorRows: g.tensorRows.bind(g), tensorColumns: g.tensorColumns.bind(g), close: g.close.bind(g) };
    const d = detectFormats(src);
    expect(d.layers.get('t.q4_k')).toMatchObject({ format: 'q4_k', source: 'gguf' });
    expect(d.layers.get('t.iq4_xs')?.format).toBe('iq4_xs');
    expect(d.layers.get('t.bf16')?.format).toBe('bf16');
    expect(d.layers.get('t.reshaped')).toMatchObject({ format: 'q8_0', shape: [2, 2, 256] });
  });

  it('applies _quantization_metadata (prefix-less layer names too)', () => {
    const src = memoryCheckpoint(
      'model.safetensors',
      { 'diffusion_model.a.weight': zeros('f8_e5m2', [4, 8]), 'diffusion_model.a.weight_scale': scalar(0.5), 'diffusion_model.b.weight': zeros('i8', [4, 256]), 'diffusion_model.b.weight_scale': zeros('f32', [4, 1]) },
      { _quantization_metadata: JSON.stringify({ format_version: '1.0', layers: { a: { format: 'float8_e5m2' }, 'diffusion_model.b': 'int8_tensorwise' } }) },
    );
    const d = detectFormats(src);
    expect(d.layers.get('diffusion_model.a')).toMatchObject({ format: 'f8_e5m2', source: 'quantization_metadata' });
    expect(d.layers.get('diffusion_model.b')).toMatchObject({ format: 'int8_rowwise', source: 'quantization_metadata' });
  });

  it('converts legacy scaled_fp8 like ComfyUI (scale_weight -> weight_scale, scale_input 1.0 dropped)', () => {
    const src = memoryCheckpoint('old.safetensors', {
      'model.diffusion_model.scaled_fp8': zeros('f8_e4m3fn', [0]),
      'model.diffusion_model.x.weight': zeros('f8_e4m3fn', [4, 8]),
      'model.diffusion_model.x.scale_weight': scalar(0.25),
      'model.diffusion_model.x.scale_input': scalar(1),
      'model.diffusion_model.y.weight': zeros('f8_e4m3fn', [4, 8]),
      'model.diffusion_model.y.scale_weight': scalar(0.25),
      'model.diffusion_model.y.scale_input': scalar(2),
      'model.diffusion_model.n.weight': zeros('bf16', [8]),
    });
    const d = detectFormats(src);
    expect(d.layers.get('model.diffusion_model.x')).toMatchObject({ format: 'f8_e4m3fn', source: 'scaled_fp8', tensors: { weightScale: 'model.diffusion_model.x.scale_weight' } });
    expect(d.layers.get('model.diffusion_model.x')?.tensors.inputScale).toBeUndefined();
    expect(d.layers.get('model.diffusion_model.y')?.tensors.inputScale).toBe('model.diffusion_model.y.scale_input');
    expect(d.renames.get('model.diffusion_model.x.weight_scale')).toBe('model.diffusion_model.x.scale_weight');
    expect(d.renames.get('model.diffusion_model.y.input_scale')).toBe('model.diffusion_model.y.scale_input');
    expect(d.dropped).toEqual(['model.diffusion_model.x.scale_input']);
    expect(d.layers.get('model.diffusion_model.n')?.format).toBe('bf16');
    expect(d.conflicts).toEqual([]);
  });

  it('uses a file-name word only when the header is silent, and reports conflicts (header wins)', () => {
    const silentInt8 = { 'a.weight': zeros('i8', [4, 256]), 'a.weight_scale': zeros('f32', [4, 1]) };
    expect(codeOf(() => detectFormats(memoryCheckpoint('model.safetensors', silentInt8)))).toBe('UNSUPPORTED_QUANT_FORMAT@a');
    expect(detectFormats(memoryCheckpoint('model-int8-convrot.safetensors', silentInt8)).layers.get('a')).toMatchObject({ format: 'int8_convrot', source: 'filename' });
    expect(detectFormats(memoryCheckpoint('model_int8.safetensors', silentInt8)).layers.get('a')?.format).toBe('int8_rowwise');

    const bf16 = detectFormats(memoryCheckpoint('flux-fp8-e4m3fn.safetensors', { 'a.weight': zeros('bf16', [4, 8]) }));
    expect(bf16.layers.get('a')?.format).toBe('bf16');
    expect(bf16.conflicts).toHaveLength(1);
    expect(bf16.conflicts[0]).toMatchObject({ filenameSays: 'f8_e4m3fn', headerSays: ['bf16'] });

    const fp8 = detectFormats(memoryCheckpoint('flux_bf16.safetensors', { 'a.weight': zeros('f8_e5m2', [4, 8]), 'n.weight': zeros('f32', [8]) }));
    expect(fp8.conflicts[0]).toMatchObject({ filenameSays: 'bf16' });
    const ok = detectFormats(memoryCheckpoint('flux_fp8.safetensors', { 'a.weight': zeros('f8_e5m2', [4, 8]), 'n.weight': zeros('f32', [8]) }));
    expect(ok.conflicts).toEqual([]);
  });

  it('rejects unknown and contradictory markers naming the layer', () => {
    const base = { 'l.weight': zeros('i8', [4, 256]), 'l.weight_scale': zeros('f32', [4, 1]) };
    expect(codeOf(() => detectFormats(memoryCheckpoint('m', { ...base, 'l.comfy_quant': marker({ format: 'nvfp9' }) })))).toBe('UNSUPPORTED_QUANT_FORMAT@l');
    expect(codeOf(() => detectFormats(memoryCheckpoint('m', { ...base, 'l.comfy_quant': marker({ format: 'float8_e4m3fn' }) })))).toBe('CONTRADICTORY_QUANT_MARKERS@l');
    expect(codeOf(() => detectFormats(memoryCheckpoint('m', { ...base, 'l.weight_scale': zeros('f32', [3, 1]), 'l.comfy_quant': marker({ format: 'int8_tensorwise' }) })))).toBe('CONTRADICTORY_QUANT_MARKERS@l');
    expect(codeOf(() => detectFormats(memoryCheckpoint('m', { 'l.weight': zeros('i8', [4, 100]), 'l.weight_scale': zeros('f32', [4, 1]), 'l.comfy_quant': marker({ format: 'int8_tensorwise', convrot: true, convrot_groupsize: 256 }) })))).toBe('CONTRADICTORY_QUANT_MARKERS@l');
    expect(codeOf(() => detectFormats(memoryCheckpoint('m', { ...base, 'l.comfy_quant': Tensor.fromArray('u8', [3], new Uint8Array([123, 0, 1])) })))).toBe('BAD_QUANT_MARKER@l');
    expect(
      codeOf(() =>
        detectFormats(memoryCheckpoint('m', { ...base, 'l.comfy_quant': marker({ format: 'int8_tensorwise' }) }, { _quantization_metadata: JSON.stringify({ layers: { l: { format: 'int8_tensorwise', convrot: true } } }) })),
      ),
    ).toBe('CONTRADICTORY_QUANT_MARKERS@l');
    expect(codeOf(() => detectFormats(memoryCheckpoint('m', base, { _quantization_metadata: JSON.stringify({ layers: { missing: { format: 'int8_tensorwise' } } }) })))).toBe('TENSOR_NOT_FOUND@missing');
  });
});

describe('formatHintFromFilename', () => {
  it.each([
    ['flux1-dev-fp8-e4m3fn.safetensors', { family: 'fp8', format: 'f8_e4m3fn' }],
    ['wan2.1_t2v_14B_fp8_e5m2.safetensors', { family: 'fp8', format: 'f8_e5m2' }],
    ['flux1-dev-Q4_K_M.gguf', { family: 'gguf', format: 'q4_k', word: 'q4_k_m' }],
    ['wan-Q8_0.gguf', { family: 'gguf', format: 'q8_0' }],
    ['h3_int8_convrot.safetensors', { family: 'int8', convrot: true }],
    ['model_bf16.safetensors', { family: 'float', format: 'bf16' }],
    ['model_fp8_scaled.safetensors', { family: 'fp8' }],
  ])('%s', (name, want) => expect(formatHintFromFilename(name)).toMatchObject(want));
  it('returns nothing for names without format words', () => expect(formatHintFromFilename('dreamshaper.safetensors')).toBeUndefined());
});

describe('bytesPerParameter', () => {
  it('equals the fixture checkpoint bytes per parameter (int8 convrot: 1 + 4/K)', () => {
    const f = readSafetensorsFixture(fixturePath('int8', 'comfy_int8_convrot_checkpoint.safetensors'));
    for (const l of ['model.lin_a', 'model.lin_b']) {
      const w = f.info(`${l}.weight`);
      const s = f.info(`${l}.weight_scale`);
      const stored = w.data_offsets[1] - w.data_offsets[0] + s.data_offsets[1] - s.data_offsets[0];
      const shape = w.shape as [number, number];
      expect(bytesPerParameter('int8_convrot', shape)).toBeCloseTo(stored / (shape[0] * shape[1]), 12);
      expect(weightBytes('int8_convrot', shape)).toBe(stored);
    }
  });
  it('matches the GGUF fixture tensor sizes', () => {
    const g = GgufCheckpoint.open(fixturePath('gguf', 'quants.gguf'));
    for (const e of g.entries()) {
      if (e.name === 't.reshaped') continue;
      const fmt = e.dtype as 'q4_k';
      expect(weightBytes(fmt, e.shape as [number, number]), e.name).toBe(e.byteLength);
    }
    expect(bytesPerParameter('q4_k')).toBe(144 / 256);
    expect(bytesPerParameter('f8_e4m3fn', [10, 10], { inputScale: true })).toBe(1 + 8 / 100);
    expect(bytesPerParameter('int8_tensorwise', [10, 10])).toBe(1 + 4 / 100);
  });
});
