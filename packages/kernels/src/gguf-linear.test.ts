import { describe, expect, it } from 'vitest';
import { BLOCK_DTYPES, byteSizeOf } from './dtype.js';
import { GGUF_LINEAR_DTYPES, type GgufLinearDType, type GgufLinearKernel, ggufLinear, ggufLinearKernel } from './gguf-linear.js';
import { buildInfo } from './build-info.js';
import { Tensor } from './tensor.js';
import { setThreads } from './threads.js';
import { expectBitsEqual, randomF32 } from './test-support/numeric.js';
import { f32Of, fixturePath, readGguf, readSafetensors } from './test-support/fixture-files.js';

// Weights: the gguf-py fixture's [3, 512] tensors of each type, their rows repeated to `n` rows
// (whole rows of blocks, so still valid blocks); the reference weight is gguf-py's own f32
// dequantization of the same rows, not ours.
const gguf = readGguf(fixturePath('gguf', 'quants.gguf'));
const expected = readSafetensors(fixturePath('gguf', 'quants.expected.safetensors')).tensors;
const K = 512;

function weightOf(dtype: GgufLinearDType, n: number): { w: Tensor; ref: Float32Array } {
  const info = gguf.tensors.find((t) => t.name === `t.${dtype}`);
  if (info === undefined) throw new Error(`fixture has no t.${dtype}`);
  const rowBytes = byteSizeOf(dtype, [1, K]);
  const stored = gguf.file.subarray(gguf.dataStart + info.offset, gguf.dataStart + info.offset + 3 * rowBytes);
  const want = f32Of(expected.get(info.name)!);
  const bytes = new Uint8Array(n * rowBytes);
  const ref = new Float32Array(n * K);
  for (let r = 0; r < n; r++) {
    bytes.set(stored.subarray((r % 3) * rowBytes, (r % 3 + 1) * rowBytes), r * rowBytes);
    ref.set(want.subarray((r % 3) * K, (r % 3 + 1) * K), r * K);
  }
  return { w: new Tensor(dtype, [n, K], bytes.buffer), ref };
}

/** float64 x·refᵀ, and per output the bound on what quantizing x per activation block can add. */
function reference(x: Float32Array, m: number, ref: Float32Array, n: number, block: number): { y: Float64Array; bound: Float64Array } {
  const y = new Float64Array(m * n);
  const bound = new Float64Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      let b = 0;
      let mag = 0;
      for (let a = 0; a < K; a += block) {
        let amax = 0;
        let wabs = 0;
        for (let t = a; t < a + block; t++) {
          const xv = x[i * K + t] as number;
          const wv = ref[j * K + t] as number;
          s += xv * wv;
          amax = Math.max(amax, Math.abs(xv));
          wabs += Math.abs(wv);
          mag += Math.abs(xv * wv);
        }
        // |x - scale·q| <= scale / 2 = absmax / 254 for every value of the block.
        b += (amax / 254) * wabs;
      }
      y[i * n + j] = s;
      // f32 sums and scales: a few ulps of the magnitudes involved.
      bound[i * n + j] = b * (1 + 1e-5) + 1e-6 * (mag + b);
    }
  }
  return { y, bound };
}

function activationBlock(dtype: GgufLinearDType): number {
  return BLOCK_DTYPES[dtype].blockElements;
}

const kernels: GgufLinearKernel[] = buildInfo().simd === 'scalar' ? ['scalar'] : ggufLinearKernel() === 'vnni' ? ['vnni', 'avx2', 'scalar'] : ['avx2', 'scalar'];

describe('ggufLinear against gguf-py dequantization in float64', () => {
  for (const dtype of GGUF_LINEAR_DTYPES) {
    it(`${dtype}: within the activation-quantization bound, every kernel the same bits`, async () => {
      const m = 37;
      const n = 21;
      const { w, ref } = weightOf(dtype, n);
      const x = randomF32([m, K], 7);
      const bias = randomF32([n], 8);
      const { y: want, bound } = reference(x.data, m, ref, n, activationBlock(dtype));
      let first: Float32Array | undefined;
      for (const kernel of kernels) {
        const y = await ggufLinear(x, w, bias, { kernel });
        expect(y.shape).toEqual([m, n]);
        let worst = 0;
        for (let i = 0; i < m * n; i++) {
          const err = Math.abs((y.data[i] as number) - (bias.data[i % n] as number) - (want[i] as number));
          worst = Math.max(worst, err / (bound[i] as number));
        }
        expect(worst).toBeLessThanOrEqual(1);
        if (first === undefined) first = y.data;
        else expectBitsEqual(y.data, first);
      }
    });

    it(`${dtype}: inputs that quantize exactly give the float64 product to 1e-6`, async () => {
      // Each activation block holds ±127·2^e once and other multiples of 2^e up to 127: scale = 2^e
      // exactly and every code exact, so only f32 rounding remains.
      const m = 20;
      const n = 5;
      const block = activationBlock(dtype);
      const { w, ref } = weightOf(dtype, n);
      const x = new Float32Array(m * K);
      const r = randomF32([m, K], 11).data;
      for (let i = 0; i < m * K; i++) {
        const unit = 2 ** (((i / block) | 0) % 5 - 2);
        x[i] = (i % block === 3 ? 127 : Math.max(-120, Math.min(120, Math.round((r[i] as number) * 60)))) * unit;
      }
      const y = await ggufLinear(new Tensor('f32', [m, K], x.buffer), w);
      const { y: want } = reference(x, m, ref, n, block);
      for (let i = 0; i < m * n; i++) {
        let mag = 0;
        const [row, col] = [(i / n) | 0, i % n];
        for (let t = 0; t < K; t++) mag += Math.abs((x[row * K + t] as number) * (ref[col * K + t] as number));
        expect(Math.abs((y.data[i] as number) - (want[i] as number))).toBeLessThanOrEqual(1e-6 * mag);
      }
    });
  }

  it('gives the same bits on 1, 2 and 3 threads', async () => {
    const { w } = weightOf('q4_k', 70);
    const x = randomF32([50, K], 3);
    const runs: Float32Array[] = [];
    try {
      for (const t of [1, 2, 3]) {
        setThreads(t);
        runs.push((await ggufLinear(x, w)).data);
      }
    } finally {
      setThreads(0);
    }
    expectBitsEqual(runs[1]!, runs[0]!);
    expectBitsEqual(runs[2]!, runs[0]!);
  });

  it('a NaN or infinite input poisons only its own row', async () => {
    const { w } = weightOf('q8_0', 4);
    const x = randomF32([3, K], 5);
    x.data[K + 9] = Number.NaN;
    x.data[2 * K + 100] = Number.POSITIVE_INFINITY;
    const y = await ggufLinear(x, w);
    for (let j = 0; j < 4; j++) {
      expect(Number.isFinite(y.data[j])).toBe(true);
      expect(Number.isNaN(y.data[4 + j])).toBe(true);
      expect(Number.isNaN(y.data[8 + j])).toBe(true);
    }
  });

  it('refuses other block types, a K off the blocks, a wrong bias and an unknown kernel with coded errors', async () => {
    const { w } = weightOf('q8_0', 3);
    const x = randomF32([2, K], 1);
    const q41 = new Tensor('q4_1', [3, K], new Uint8Array(byteSizeOf('q4_1', [3, K])).buffer);
    await expect(ggufLinear(x, q41)).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
    await expect(ggufLinear(randomF32([2, K - 32], 1), w)).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    const q8 = new Tensor('q8_0', [2, 64], new Uint8Array(byteSizeOf('q8_0', [2, 64])).buffer);
    await expect(ggufLinear(randomF32([2, 64], 1), q8, randomF32([3], 1))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(ggufLinear(x, w, undefined, { kernel: 'sse' as GgufLinearKernel })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(ggufLinear(x, w, undefined, { out: Tensor.zeros('f32', [2, 4]) })).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
  });
});
