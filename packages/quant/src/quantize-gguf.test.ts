import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor, dequantize } from '@ninodes/kernels';
import { afterAll, describe, expect, it } from 'vitest';
import { GgufCheckpoint } from './gguf-checkpoint.js';
import { parseGguf } from './gguf-parser.js';
import { buildGgufHeader, writeGguf } from './gguf-writer.js';
import { type GgufValue, plainGgufValue } from './gguf-types.js';
import { readF32 } from './materialize.js';
import { openCheckpoint } from './open-checkpoint.js';
import { quantize } from './quantize.js';
import { fixturePath } from './testing/fixtures.js';
import { memoryCheckpoint } from './testing/memory-checkpoint.js';

const dir = mkdtempSync(join(tmpdir(), 'quant-gguf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** First differing byte offsets (a readable failure instead of a 60 KB diff). */
function differing(a: Uint8Array, b: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < Math.max(a.length, b.length) && out.length < 8; i++) if (a[i] !== b[i]) out.push(i);
  return out;
}

// convert-<format>.gguf: gguf-py's GGUFWriter with ggml's / gguf-py's quantized bytes, tensor by
// tensor under the converter's rules (fixtures/gguf/make_quantize_fixtures.py).
describe.each(['q8_0', 'q4_k'] as const)('quantize to GGUF %s', (format) => {
  const out = join(dir, `convert-${format}.gguf`);

  it('writes the file gguf-py writes, byte for byte', async () => {
    const source = openCheckpoint(fixturePath('gguf', 'convert-source.safetensors'));
    try {
      const report = await quantize(source, out, { format, architecture: 'h3' });
      const expected = readFileSync(fixturePath('gguf', `convert-${format}.gguf`));
      const written = readFileSync(out);
      expect(differing(written, expected)).toEqual([]);
      expect(report.bytesWritten).toBe(expected.byteLength);
      const quantized = format === 'q8_0' ? ['blocks.0.attn.qkv_proj', 'blocks.0.mlp.fc2', 'blocks.0.mlp.fc1'] : ['blocks.0.attn.qkv_proj', 'blocks.0.mlp.fc2'];
      expect(report.layers.map((l) => l.name).sort()).toEqual(quantized.sort());
      expect(Object.fromEntries(report.kept.map((k) => [k.name, k.reason]))).toEqual({
        'blocks.0.norm1': 'not a 2-D linear weight',
        ...(format === 'q4_k' ? { 'blocks.0.mlp.fc1': 'input size 96 is not a multiple of the q4_k block (256)' } : {}),
        'blocks.0.tiny': "1024 elements (at most 1024 stay F32, as city96's converter keeps them)",
        'final_layer.video_out': 'fp32 island (patch/out projection)',
      });
    } finally {
      source.close();
    }
  });

  it('reads back through GgufCheckpoint: torch shapes, the source metadata, values within the block error', async () => {
    const source = openCheckpoint(fixturePath('gguf', 'convert-source.safetensors'));
    const gguf = GgufCheckpoint.open(out);
    try {
      expect(gguf.metadata['ninodes.sampler']).toBe(source.metadata['ninodes.sampler']);
      expect(gguf.metadata['general.architecture']).toBe('h3');
      for (const e of source.entries()) {
        expect(gguf.entry(e.name).shape).toEqual(e.shape);
        const a = await readF32(source, e.name);
        const b = await readF32(gguf, e.name);
        let worst = 0;
        let scale = 0;
        for (let i = 0; i < a.data.length; i++) {
          worst = Math.max(worst, Math.abs((a.data[i] as number) - (b.data[i] as number)));
          scale = Math.max(scale, Math.abs(a.data[i] as number));
        }
        // Q8_0: half a step of absmax/127; Q4_K: about one step of the sub-block range / 15.
        expect(worst).toBeLessThanOrEqual(scale * (gguf.entry(e.name).dtype === 'q4_k' ? 0.15 : 0.005));
      }
    } finally {
      gguf.close();
      source.close();
    }
  });
});

describe('GGUF writer', () => {
  it('round-trips every metadata value type and a tensor of each stored kind', async () => {
    const values: [string, GgufValue][] = [
      ['u8', { type: 'u8', value: 200 }],
      ['i8', { type: 'i8', value: -5 }],
      ['u16', { type: 'u16', value: 60000 }],
      ['i16', { type: 'i16', value: -30000 }],
      ['u32', { type: 'u32', value: 4_000_000_000 }],
      ['i32', { type: 'i32', value: -2_000_000_000 }],
      ['f32', { type: 'f32', value: 0.5 }],
      ['f64', { type: 'f64', value: Math.PI }],
      ['u64', { type: 'u64', value: 2n ** 63n + 5n }],
      ['i64', { type: 'i64', value: -(2n ** 62n) }],
      ['bool', { type: 'bool', value: true }],
      ['string', { type: 'string', value: 'ünïcode' }],
      ['array', { type: 'array', itemType: 'i32', value: [{ type: 'i32', value: 1 }, { type: 'i32', value: -2 }] }],
    ];
    const q = Tensor.zeros('q8_0', [2, 32]);
    const tensors = [
      { name: 'a', dtype: 'f32' as const, shape: [3], data: () => Tensor.f32([3], [1, 2, 3]) },
      { name: 'b', dtype: 'q8_0' as const, shape: [2, 32], data: () => q },
      { name: 'c', dtype: 'bf16' as const, shape: [1, 5], data: () => new Uint8Array(10).fill(0x3f) },
    ];
    const path = join(dir, 'values.gguf');
    const result = await writeGguf(path, tensors, values, { alignment: 64 });
    const bytes = readFileSync(path);
    expect(result.bytes).toBe(bytes.byteLength);
    expect(bytes.byteLength % 64).toBe(0);
    const header = parseGguf(bytes, { where: path });
    expect(header.alignment).toBe(64);
    expect([...header.metadata.keys()]).toEqual([...values.map(([k]) => k), 'general.alignment']);
    for (const [k, v] of values) expect(plainGgufValue(header.metadata.get(k) as GgufValue)).toEqual(plainGgufValue(v));
    expect(header.tensors.map((t) => [t.name, t.dtype, t.shape, t.relativeOffset])).toEqual([
      ['a', 'f32', [3], 0],
      ['b', 'q8_0', [2, 32], 64],
      ['c', 'bf16', [1, 5], 192],
    ]);
    expect(header.dataOffset).toBe(buildGgufHeader(tensors, values, { alignment: 64 }).header.byteLength);
  });

  it('refuses what GGUF cannot hold, and a tensor whose data is not what it declared, leaving no file', async () => {
    const path = join(dir, 'bad.gguf');
    await expect(writeGguf(path, [{ name: 'm', dtype: 'u8', shape: [4], data: () => new Uint8Array(4) }], [])).rejects.toMatchObject({ code: 'GGUF_UNSUPPORTED_TENSOR_TYPE' });
    await expect(writeGguf(path, [{ name: 'x', dtype: 'f32', shape: [4], data: () => new Uint8Array(8) }], [])).rejects.toMatchObject({ code: 'GGUF_WRITE_MISMATCH' });
    await expect(writeGguf(path, [], [['k', { type: 'u32', value: 1 }], ['k', { type: 'u32', value: 2 }]])).rejects.toMatchObject({ code: 'GGUF_DUPLICATE_KEY' });
    expect(existsSync(path)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.startsWith('bad.gguf'))).toEqual([]);
  });

  it('a failure while converting (a NaN weight) leaves neither the target nor a temporary', async () => {
    const w = Tensor.f32([8, 256], new Float32Array(2048).fill(0.25));
    (w.data as Float32Array)[300] = Number.NaN;
    const source = memoryCheckpoint('mem', { 'blocks.0.fc.weight': w });
    const path = join(dir, 'nan.gguf');
    await expect(quantize(source, path, { format: 'q4_k' })).rejects.toMatchObject({ code: 'NON_FINITE_WEIGHT' });
    expect(readdirSync(dir).filter((f) => f.startsWith('nan.gguf'))).toEqual([]);
  });

  it('requantizes a GGUF source: Q8_0 -> Q4_K keeps what it kept and decodes block tensors first', async () => {
    const q8 = join(dir, 'convert-q8_0.gguf');
    const source = GgufCheckpoint.open(q8);
    const path = join(dir, 'requant.gguf');
    try {
      const report = await quantize(source, path, { format: 'q4_k', architecture: 'h3' });
      expect(report.layers.map((l) => l.name).sort()).toEqual(['blocks.0.attn.qkv_proj', 'blocks.0.mlp.fc2']);
      const out = GgufCheckpoint.open(path);
      try {
        // fc1 stays Q8_0 (its rows of 96 hold no whole Q4_K block): the same bytes as the source.
        expect(out.entry('blocks.0.mlp.fc1.weight').dtype).toBe('q8_0');
        expect(differing(out.tensor('blocks.0.mlp.fc1.weight').bytes(), source.tensor('blocks.0.mlp.fc1.weight').bytes())).toEqual([]);
        const decoded = await dequantize(source.tensor('blocks.0.mlp.fc2.weight'), 'f32');
        expect(out.tensor('blocks.0.mlp.fc2.weight').dtype).toBe('q4_k');
        expect(decoded.shape).toEqual([32, 512]);
      } finally {
        out.close();
      }
    } finally {
      source.close();
    }
  });
});
