import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BLOCK_DTYPES, type BlockDType, byteSizeOf, isBlockDType } from './dtype.js';
import { DEQUANTIZE_SOURCES, type DequantizeSource } from './gguf-dtypes.js';
import { dequantize, dequantizeSync, reference } from './index.js';
import { withSimd } from './test-support/numeric.js';
import { setThreads } from './threads.js';
import { Tensor } from './tensor.js';
import { f32Of, fixturePath, readGguf, readSafetensors } from './test-support/fixture-files.js';

const gguf = readGguf(fixturePath('gguf', 'quants.gguf'));
const expected = readSafetensors(fixturePath('gguf', 'quants.expected.safetensors')).tensors;
const metadata = JSON.parse(
  (await import('node:fs')).readFileSync(fixturePath('gguf', 'quants.metadata.json'), 'utf8'),
) as { torch_shapes: Record<string, number[]> };

function tensorOf(name: string): Tensor {
  const info = gguf.tensors.find((t) => t.name === name);
  if (!info) throw new Error(`no tensor ${name}`);
  const bytes = byteSizeOf(info.dtype as DequantizeSource, info.shape);
  // Copy so every dtype view is aligned; the decoders themselves read unaligned bytes too.
  const copy = gguf.file.slice(gguf.dataStart + info.offset, gguf.dataStart + info.offset + bytes);
  return new Tensor(info.dtype as DequantizeSource, info.shape, copy.buffer);
}

/** Elements whose bits differ (NaN payloads are not compared: JS does not preserve them). */
function bitsEqual(a: Float32Array, b: Float32Array): number {
  const [x, y] = [new Uint32Array(a.buffer, a.byteOffset, a.length), new Uint32Array(b.buffer, b.byteOffset, b.length)];
  let diff = 0;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) diff++;
  return diff;
}

describe('GGUF decode against gguf-py (quants.gguf)', () => {
  it('the fixture covers every supported source dtype', () => {
    const types = new Set(gguf.tensors.map((t) => t.dtype));
    for (const dtype of DEQUANTIZE_SOURCES) expect(types).toContain(dtype);
  });

  for (const info of gguf.tensors) {
    it(`${info.name} (${info.dtype}) decodes bit-exactly, native sync/async and reference`, async () => {
      const want = expected.get(info.name);
      expect(want).toBeDefined();
      const wantValues = f32Of(want!);
      const x = tensorOf(info.name);
      const viaSync = dequantizeSync(x);
      const viaAsync = await dequantize(x, 'f32');
      const viaRef = reference.dequantize(x) as Tensor<'f32'>;
      const viaScalar = withSimd('scalar', () => dequantizeSync(x));
      expect(bitsEqual(viaScalar.data, wantValues)).toBe(0);
      expect(viaSync.shape).toEqual(x.shape);
      // Torch shape: the stored shape, except where ComfyUI records the original one.
      expect(want!.shape.reduce((a, b) => a * b, 1)).toBe(x.numel);
      expect(metadata.torch_shapes[info.name]).toEqual(want!.shape);
      expect(bitsEqual(viaSync.data, wantValues)).toBe(0);
      expect(bitsEqual(viaAsync.data, wantValues)).toBe(0);
      expect(bitsEqual(viaRef.data, wantValues)).toBe(0);
    });
  }

  it('bf16 output is the round-to-nearest-even of the f32 decode', async () => {
    for (const info of gguf.tensors) {
      const x = tensorOf(info.name);
      const f32 = f32Of(expected.get(info.name)!);
      const bf = await dequantize(x, 'bf16');
      expect(bf.dtype).toBe('bf16');
      const refBf = reference.dequantize(x, 'bf16');
      const bits = new Uint32Array(f32.buffer, f32.byteOffset, f32.length);
      const refBits = refBf.data as Uint16Array;
      let wrong = 0;
      for (let i = 0; i < bits.length; i++) {
        const b = bits[i] as number;
        const rne = ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
        if (bf.data[i] !== rne || refBits[i] !== rne) wrong++;
      }
      expect(wrong, info.name).toBe(0);
    }
  });
});

describe('GGUF decode on random blocks', () => {
  it('native (both SIMD paths) equals the reference bit for bit on random bytes, NaN and subnormal halves included', () => {
    fc.assert(
      fc.property(fc.constantFrom(...DEQUANTIZE_SOURCES), fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 2 ** 31 }), (dtype, blocks, seed) => {
        const { blockElements, blockBytes } = isBlockDType(dtype) ? BLOCK_DTYPES[dtype] : { blockElements: 1, blockBytes: dtype === 'f32' ? 4 : 2 };
        const bytes = new Uint8Array(blocks * blockBytes);
        let s = seed;
        for (let i = 0; i < bytes.length; i++) {
          s = (Math.imul(s, 1103515245) + 12345) >>> 0;
          bytes[i] = s >>> 24;
        }
        const x = new Tensor(dtype, [blocks * blockElements], bytes.buffer);
        const a = dequantizeSync(x).data;
        const b = (reference.dequantize(x) as Tensor<'f32'>).data;
        const c = withSimd('scalar', () => dequantizeSync(x).data);
        // NaN payloads may come from random fp16 scales; compare as bits.
        expect(bitsEqual(a, b)).toBe(0);
        expect(bitsEqual(c, b)).toBe(0);
      }),
      { numRuns: 200 },
    );
  });

  it('gives the same bits for any thread count', () => {
    const dtype: BlockDType = 'q4_k';
    const n = 256 * 300;
    const bytes = new Uint8Array(byteSizeOf(dtype, [n]));
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 131 + 7) & 0xff;
    const x = new Tensor(dtype, [n], bytes.buffer);
    const one = (setThreads(1), dequantizeSync(x).data);
    const four = (setThreads(4), dequantizeSync(x).data);
    setThreads(0);
    expect(bitsEqual(one, four)).toBe(0);
  });
});

describe('GGUF decode of zero-copy views', () => {
  it('decodes tensors in place inside one file buffer, at odd byte offsets too', () => {
    // The whole file shifted by one byte: every tensor view starts at an unaligned address.
    const shifted = new Uint8Array(gguf.file.byteLength + 1);
    shifted.set(gguf.file, 1);
    for (const info of gguf.tensors) {
      const x = new Tensor(info.dtype as DequantizeSource, info.shape, shifted.buffer, { byteOffset: 1 + gguf.dataStart + info.offset });
      expect(bitsEqual(dequantizeSync(x).data, f32Of(expected.get(info.name)!)), info.name).toBe(0);
      expect(bitsEqual((reference.dequantize(x) as Tensor<'f32'>).data, f32Of(expected.get(info.name)!)), info.name).toBe(0);
    }
  });
});

describe('GGUF decode into a given tensor', () => {
  it('fills opts.out (any shape with the same count) and returns it', async () => {
    const x = tensorOf('t.q6_k');
    const out = Tensor.zeros('f32', [x.numel]);
    const y = await dequantize(x, 'f32', { out });
    expect(y).toBe(out);
    expect(bitsEqual(out.data, f32Of(expected.get('t.q6_k')!))).toBe(0);
    const bf = Tensor.zeros('bf16', x.shape);
    expect(dequantizeSync(x, 'bf16', { out: bf })).toBe(bf);
    expect(Array.from(bf.data)).toEqual(Array.from((reference.dequantize(x, 'bf16') as Tensor<'bf16'>).data));
  });

  it('rejects an out tensor of the wrong dtype or size', () => {
    const x = tensorOf('t.q4_0');
    expect(() => dequantizeSync(x, 'f32', { out: Tensor.zeros('f32', [x.numel - 1]) })).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => dequantizeSync(x, 'f32', { out: Tensor.zeros('bf16', x.shape) })).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
  });
});

describe('GGUF decode input errors', () => {
  it('rejects unsupported dtypes and targets with typed errors', async () => {
    expect(() => dequantizeSync(Tensor.zeros('i32', [4]))).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
    expect(() => dequantizeSync(Tensor.zeros('q8_0', [32]), 'f16' as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    await expect(dequantize(Tensor.zeros('u8', [4]))).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
  });

  it('rejects a shape whose last dimension is not whole blocks', () => {
    expect(() => new Tensor('q4_0', [3, 31], new ArrayBuffer(1000))).toThrow(expect.objectContaining({ code: 'BLOCK_MISALIGNED' }));
  });

  it('native rejects byte lengths that do not match the block count', async () => {
    const { nativeAddon } = await import('./native-addon.js');
    const addon = nativeAddon();
    expect(() => addon.ggufDequantize('q4_0', new Uint8Array(17), new Float32Array(32))).toThrow(
      expect.objectContaining({ code: 'BLOCK_LENGTH_MISMATCH' }),
    );
    expect(() => addon.ggufDequantize('q4_0', new Uint8Array(18), new Float32Array(33))).toThrow(
      expect.objectContaining({ code: 'BLOCK_LENGTH_MISMATCH' }),
    );
    expect(() => addon.ggufDequantize('q9_9', new Uint8Array(18), new Float32Array(32))).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_DTYPE' }),
    );
  });
});
