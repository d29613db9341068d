import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NinodesError, Tensor, cast } from '@ninodes/kernels';
import { SafetensorsFile } from '@ninodes/memory';
import { afterAll, describe, expect, it } from 'vitest';
import { detectFormats } from './detect-formats.js';
import { GgufCheckpoint } from './gguf-checkpoint.js';
import { createLinearProvider } from './linear-provider.js';
import { type QuantizeProgress, quantize } from './quantize.js';
import { fixturePath, readSafetensorsFixture } from './testing/fixtures.js';
import { checkInt8ConvrotAgainstFixture } from './testing/int8-check.js';
import { memoryCheckpoint } from './testing/memory-checkpoint.js';

const dir = mkdtempSync(join(tmpdir(), 'quant-convert-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const fx = readSafetensorsFixture(fixturePath('int8', 'int8_convrot.safetensors'));
const comfy = readSafetensorsFixture(fixturePath('int8', 'comfy_int8_convrot_checkpoint.safetensors'));

function source() {
  const odd = Tensor.fromArray('f32', [4, 100], Float32Array.from({ length: 400 }, (_, i) => Math.cos(i)));
  const island = Tensor.fromArray('f32', [8, 256], Float32Array.from({ length: 2048 }, (_, i) => Math.sin(i)));
  return memoryCheckpoint(
    'h3_bf16.safetensors',
    {
      'model.lin_a.bias': fx.tensor('lin_a.bias'),
      'model.lin_a.weight': fx.tensor('lin_a.w'),
      'model.lin_b.bias': fx.tensor('lin_b.bias'),
      'model.lin_b.weight': fx.tensor('lin_b.w'),
      'model.norm.weight': comfy.tensor('model.norm.weight'),
      'model.odd.weight': odd,
      'model.final_layer.video_out.weight': island,
    },
    { format: 'pt' },
  );
}

describe('quantize to int8 convrot', async () => {
  const target = join(dir, 'h3_int8_convrot.safetensors');
  const events: QuantizeProgress[] = [];
  const report = await quantize(source(), target, { format: 'int8_convrot', onProgress: (e) => events.push(e) });
  const out = SafetensorsFile.open(target);

  it('writes ComfyUI\'s key layout: same keys, dtypes, shapes and comfy_quant bytes as the fixture', () => {
    for (const name of comfy.names) {
      const e = out.entry(name);
      const want = comfy.info(name);
      expect({ dtype: e.dtype, shape: e.shape }, name).toEqual({ dtype: want.dtype === 'I8' ? 'i8' : want.dtype === 'U8' ? 'u8' : 'f32', shape: want.shape });
    }
    for (const l of ['model.lin_a', 'model.lin_b']) {
      expect([...out.tensor(`${l}.comfy_quant`).bytes()]).toEqual([...comfy.tensor(`${l}.comfy_quant`).bytes()]);
    }
    expect(out.metadata).toEqual({ format: 'pt' });
  });

  it('keeps norms and islands, leaves K % 256 != 0 unrotated and says so', () => {
    expect(report.layers.map((l) => [l.name, l.format])).toEqual([
      ['model.lin_a', 'int8_convrot'],
      ['model.lin_b', 'int8_convrot'],
      ['model.odd', 'int8_rowwise'],
    ]);
    expect(report.layers[2]?.note).toMatch(/not a multiple of the convrot group 256/);
    expect(report.kept).toEqual([
      { name: 'model.norm', reason: 'not a 2-D linear weight' },
      { name: 'model.final_layer.video_out', reason: 'fp32 island (patch/out projection)' },
    ]);
    expect(new TextDecoder().decode(out.tensor('model.odd.comfy_quant').bytes())).toBe('{"format": "int8_tensorwise"}');
    expect([...(out.tensor('model.final_layer.video_out.weight').data as Float32Array)].slice(0, 3)).toEqual([0, Math.fround(Math.sin(1)), Math.fround(Math.sin(2))]);
  });

  it('reports progress for every tensor and holds about one layer at a time', () => {
    expect(events.map((e) => e.index)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.kind === 'quantized').map((e) => e.name)).toEqual(['model.lin_a', 'model.lin_b', 'model.odd']);
    expect(events.at(-1)?.bytesRead).toBe(report.sourceBytes);
    expect(report.bytesWritten).toBe(readFileSync(target).length);
    // lin_a (the largest layer): int8 + scales, nothing else held.
    expect(report.peakHeldBytes).toBe(96 * 512 + 96 * 4);
  });

  it('round-trips: the written file is detected with the formats it was written with', () => {
    const d = detectFormats(out);
    for (const l of report.layers) expect(d.layers.get(l.name)?.format, l.name).toBe(l.format);
    expect(d.layers.get('model.norm')?.format).toBe('f32');
    expect(d.layers.get('model.final_layer.video_out')?.format).toBe('f32');
    expect(d.conflicts).toEqual([]);
  });

  it.each(['lin_a', 'lin_b'])('%s: quantizing w then running the linear reproduces y_int8_convrot (exact given operands within ±1)', async (l) => {
    const [n, k] = fx.info(`${l}.w`).shape as [number, number];
    const op = createLinearProvider(out).linear({ name: `model.${l}`, outFeatures: n, inFeatures: k, bias: true });
    const y = await op.forward(fx.tensor(`${l}.x`) as Tensor<'f32'>);
    const r = checkInt8ConvrotAgainstFixture(fx, l, y, out.tensor(`model.${l}.weight`).data as Int8Array, out.tensor(`model.${l}.weight_scale`).data as Float32Array);
    console.log(`${l} (quantized here): qweight off by one ${r.qweightMismatches}, qx off by one ${r.qxMismatches}, exact outputs ${r.exactOutputs}/${r.outputs}`);
  });
});

describe('quantize to fp8', () => {
  it.each([
    ['f8_e4m3fn', 'float8_e4m3fn', 448, 0.04],
    ['f8_e5m2', 'float8_e5m2', 57344, 0.08],
  ] as const)('%s: scaled per tensor, round-trips, decodes close to the source', async (format, comfyName, max, tol) => {
    const target = join(dir, `m_${format}.safetensors`);
    const report = await quantize(source(), target, { format });
    expect(report.layers.map((l) => l.format)).toEqual([format, format, format]);
    const out = SafetensorsFile.open(target);
    expect(new TextDecoder().decode(out.tensor('model.lin_a.comfy_quant').bytes())).toBe(`{"format": "${comfyName}"}`);
    expect(out.entry('model.lin_a.weight').dtype).toBe(format);
    expect(out.entry('model.lin_a.weight_scale').shape).toEqual([]);
    const w = fx.f32('lin_a.w');
    const scale = (out.tensor('model.lin_a.weight_scale').data as Float32Array)[0] as number;
    expect(scale).toBe(Math.fround(Math.max(...w.map(Math.abs)) / max));
    const table = readSafetensorsFixture(fixturePath('fp8', 'fp8.safetensors')).f32(format === 'f8_e4m3fn' ? 'e4m3fn.decode' : 'e5m2.decode');
    const bytes = out.tensor('model.lin_a.weight').data as Uint8Array;
    let num = 0;
    let den = 0;
    for (let i = 0; i < w.length; i++) {
      const d = (table[bytes[i] as number] as number) * scale - (w[i] as number);
      num += d * d;
      den += (w[i] as number) ** 2;
    }
    expect(Math.sqrt(num / den)).toBeLessThan(tol);
    const d = detectFormats(out);
    expect(d.layers.get('model.lin_a')?.format).toBe(format);
  });
});

describe('quantize from bf16 and GGUF sources', () => {
  it('bf16 weights are cast to f32 and quantized; the file round-trips', async () => {
    const w = fx.tensor('lin_b.w') as Tensor<'f32'>;
    const src = memoryCheckpoint('m_bf16.safetensors', { 'blk.fc.weight': cast(w, 'bf16'), 'blk.fc.bias': cast(fx.tensor('lin_b.bias'), 'bf16') });
    const target = join(dir, 'from_bf16.safetensors');
    const r = await quantize(src, target, { format: 'int8_convrot' });
    expect(r.layers).toEqual([{ name: 'blk.fc', format: 'int8_convrot', shape: [40, 256] }]);
    const out = SafetensorsFile.open(target);
    expect(out.entry('blk.fc.bias').dtype).toBe('bf16');
    expect(detectFormats(out).layers.get('blk.fc')?.format).toBe('int8_convrot');
    // Against the f32 weight, the bf16 round trip plus int8 convrot stays at the int8 level (~1%).
    const op = createLinearProvider(out).linear({ name: 'blk.fc', outFeatures: 40, inFeatures: 256, bias: true });
    expect(await relErr(await op.materializedWeight(), w)).toBeLessThan(0.02);
  });

  it('GGUF block weights are decoded and quantized; kept block tensors become f32', async () => {
    const g = GgufCheckpoint.open(fixturePath('gguf', 'quants.gguf'));
    const src = memoryCheckpoint('m-Q8_0.gguf', { 'a.weight': g.tensor('t.q8_0'), 'norm.weight': g.tensor('t.q4_k').reshape([1536]) });
    const target = join(dir, 'from_gguf.safetensors');
    const r = await quantize(src, target, { format: 'int8_convrot' });
    expect(r.layers.map((l) => l.format)).toEqual(['int8_convrot']);
    const out = SafetensorsFile.open(target);
    expect(out.entry('norm.weight')).toMatchObject({ dtype: 'f32', shape: [1536] });
    const expected = readSafetensorsFixture(fixturePath('gguf', 'quants.expected.safetensors'));
    expect([...(out.tensor('norm.weight').data as Float32Array)]).toEqual([...expected.f32('t.q4_k')]);
  });
});

function relErr(a: Tensor, b: Tensor): number {
  const x = a.data as Float32Array;
  const y = b.data as Float32Array;
  let num = 0;
  let den = 0;
  for (let i = 0; i < y.length; i++) {
    num += ((x[i] as number) - (y[i] as number)) ** 2;
    den += (y[i] as number) ** 2;
  }
  return Math.sqrt(num / den);
}

describe('quantize failures', () => {
  it('leaves no file (and no temporary) when the source fails mid-way', async () => {
    const sub = mkdtempSync(join(dir, 'fail-'));
    const src = source();
    const broken = { ...src, tensor: (name: string) => {
      if (name === 'model.lin_b.weight') throw new NinodesError('FILE_MODIFIED', 'changed under us');
      return src.tensor(name);
    } };
    await expect(quantize(broken, join(sub, 'out.safetensors'), { format: 'int8_convrot' })).rejects.toMatchObject({ code: 'FILE_MODIFIED' });
    expect(readdirSync(sub)).toEqual([]);
    expect(existsSync(join(sub, 'out.safetensors'))).toBe(false);
  });

  it('honours skip and rejects unknown targets', async () => {
    const r = await quantize(source(), join(dir, 'skip.safetensors'), { format: 'int8_rowwise', skip: ['lin_b', /odd/] });
    expect(r.layers.map((l) => l.name)).toEqual(['model.lin_a']);
    const all = await quantize(source(), join(dir, 'islands.safetensors'), { format: 'int8_convrot', quantizeIslands: true });
    expect(all.layers.map((l) => l.name)).toEqual(['model.lin_a', 'model.lin_b', 'model.odd', 'model.final_layer.video_out']);
    expect(all.kept).toEqual([{ name: 'model.norm', reason: 'not a 2-D linear weight' }]);
    await expect(quantize(source(), join(dir, 'x.safetensors'), { format: 'nf4' as never })).rejects.toMatchObject({ code: 'UNSUPPORTED_QUANTIZE_TARGET' });
  });

  it('an int8 checkpoint quantized to fp8 converts nothing: ALREADY_QUANTIZED, no file written', async () => {
    const int8 = join(dir, 'h3_int8_convrot.safetensors');
    const sub = mkdtempSync(join(dir, 'again-'));
    const opened = SafetensorsFile.open(int8);
    try {
      await expect(quantize(opened, join(sub, 'fp8.safetensors'), { format: 'f8_e4m3fn' })).rejects.toMatchObject({ code: 'ALREADY_QUANTIZED', value: 'model.lin_a' });
    } finally {
      opened.close();
    }
    expect(readdirSync(sub)).toEqual([]);
  });
});

describe('default kept layers of the converter', () => {
  it('names H3/Flux islands and norms but not ordinary projections', async () => {
    const names = [
      'blocks.0.attn.qkv_proj', 'blocks.0.attn.out_proj', 'blocks.0.mlp.fc1', 'blocks.0.adaln_proj.linear',
      'video_patch_proj', 'final_layer.video_out', 'blocks.0.attn.q_norm', 'x_embedder.proj', 'proj_out',
    ];
    const sub = mkdtempSync(join(dir, 'keep-'));
    try {
      const src = memoryCheckpoint('m.safetensors', Object.fromEntries(names.map((n) => [`${n}.weight`, Tensor.zeros('f32', [2, 256])])));
      const r = await quantize(src, join(sub, 'o.safetensors'), { format: 'int8_convrot' });
      expect(r.layers.map((l) => l.name)).toEqual(names.slice(0, 4));
      expect(Object.fromEntries(r.kept.map((k) => [k.name, k.reason]))).toEqual({
        video_patch_proj: 'fp32 island (patch/out projection)',
        'final_layer.video_out': 'fp32 island (patch/out projection)',
        'blocks.0.attn.q_norm': 'norm',
        'x_embedder.proj': 'embedding',
        proj_out: 'fp32 island (patch/out projection)',
      });
    } finally {
      rmSync(sub, { recursive: true, force: true });
    }
  });
});

describe("H3's curve form and text stream under every quantize target", () => {
  // The real pruned int8 file (seeds/002) holds 200 int8 linears: qkv/out/fc1/fc2 of its 50 blocks.
  // ComfyUI builds the curve-form adaLN linears in fp32 (adaln_dtype) and the converter leaves them,
  // the text stream and the table as stored; quantize does the same whatever the target.
  it.each(['int8_convrot', 'int8_rowwise', 'f8_e4m3fn', 'f8_e5m2'] as const)('%s: rank-8 adaLN (bf16 + fp16 bias), condition_proj, token refiner and adaln_t_table stay as stored, byte for byte', async (format) => {
    const vals = (n: number, k: number) => Float32Array.from({ length: n * k }, (_, i) => Math.sin(i * 0.37) * 0.1);
    const kept: Record<string, Tensor> = {
      'blocks.0.adaln_proj.linear.weight': cast(Tensor.fromArray('f32', [512, 8], vals(512, 8)), 'bf16'),
      'blocks.0.adaln_proj.linear.bias': cast(Tensor.fromArray('f32', [512], vals(512, 1)), 'f16'),
      'final_layer.adaln_proj.linear.weight': cast(Tensor.fromArray('f32', [512, 8], vals(512, 8)), 'bf16'),
      'condition_proj.weight': cast(Tensor.fromArray('f32', [256, 512], vals(256, 512)), 'bf16'),
      'token_refiner.blocks.0.attn.qkv_proj.weight': cast(Tensor.fromArray('f32', [768, 256], vals(768, 256)), 'bf16'),
      adaln_t_table: Tensor.fromArray('f32', [33, 8], vals(33, 8)),
    };
    const sub = mkdtempSync(join(dir, 'curve-'));
    try {
      const src = memoryCheckpoint('curve.safetensors', { ...kept, 'blocks.0.attn.qkv_proj.weight': cast(Tensor.fromArray('f32', [768, 256], vals(768, 256)), 'bf16') });
      const r = await quantize(src, join(sub, 'o.safetensors'), { format });
      expect(r.layers.map((l) => l.name)).toEqual(['blocks.0.attn.qkv_proj']);
      expect(Object.fromEntries(r.kept.map((k) => [k.name, k.reason]))).toMatchObject({
        'blocks.0.adaln_proj.linear': 'low-rank (8 input columns)',
        'final_layer.adaln_proj.linear': expect.any(String),
        condition_proj: 'text stream (condition_proj / token refiner)',
        'token_refiner.blocks.0.attn.qkv_proj': 'text stream (condition_proj / token refiner)',
      });
      const out = SafetensorsFile.open(join(sub, 'o.safetensors'));
      try {
        for (const [name, t] of Object.entries(kept)) {
          expect([name, out.entry(name).dtype, Buffer.from(out.tensor(name).bytes()).equals(Buffer.from(t.bytes()))]).toEqual([name, t.dtype, true]);
        }
        expect(out.entry('blocks.0.attn.qkv_proj.weight').dtype).toBe(format.startsWith('int8') ? 'i8' : format);
      } finally {
        out.close();
      }
    } finally {
      rmSync(sub, { recursive: true, force: true });
    }
  });
});
