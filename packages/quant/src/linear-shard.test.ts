import { Tensor, hadamard, int8Linear, int8Matmul, isNinodesError, quantizeRowsInt8, quantizeWeightInt8 } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { GgufCheckpoint } from './gguf-checkpoint.js';
import type { LinearShard } from './linear-op.js';
import { createLinearProvider } from './linear-provider.js';
import { fixturePath, readSafetensorsFixture } from './testing/fixtures.js';
import { memoryCheckpoint } from './testing/memory-checkpoint.js';
import { maxRelError } from './quant-math.js';
import { ggufBoundRatio } from './testing/gguf-check.js';

/** Deterministic pseudo-random f32 in [-1, 1). */
function rand(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
}

/** y = x·Wᵀ (+ b) in float64 from the definition, for the weight rows listed. */
function ref(x: Float32Array, w: Float32Array, b: Float32Array | undefined, m: number, k: number, rows: readonly number[]): Float64Array {
  const y = new Float64Array(m * rows.length);
  for (let i = 0; i < m; i++)
    rows.forEach((r, j) => {
      let s = b ? (b[r] as number) : 0;
      for (let c = 0; c < k; c++) s += (x[i * k + c] as number) * (w[r * k + c] as number);
      y[i * rows.length + j] = s;
    });
  return y;
}


function code(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return isNinodesError(e) ? `${e.code}${e.where ? `@${e.where}` : ''}` : 'OTHER';
  }
  return 'NONE';
}

const range = (a: number, b: number): number[] => Array.from({ length: b - a }, (_, i) => a + i);

describe('column-parallel shards', () => {
  const [heads, hd, k, m] = [4, 16, 64, 3];
  const inner = heads * hd;
  const w = rand(3 * inner * k, 1);
  const x = rand(m * k, 2);
  const src = memoryCheckpoint('m.safetensors', { 'qkv.weight': Tensor.fromArray('f32', [3 * inner, k], w), 'fc1.weight': Tensor.fromArray('f32', [3 * inner, k], w), 'fc1.bias': Tensor.fromArray('f32', [3 * inner], rand(3 * inner, 3)) });
  const provider = createLinearProvider(src);

  it('qkv: each rank gets its heads\' rows of q, k and v', async () => {
    for (const rank of [0, 1]) {
      const shard: LinearShard = { rank, size: 2, role: 'column', fused: { kind: 'qkv', heads, headDim: hd } };
      const op = provider.linear({ name: 'qkv', inFeatures: k, outFeatures: 3 * inner / 2, bias: false, shard });
      const y = await op.forward(Tensor.fromArray('f32', [m, k], x));
      const half = inner / 2;
      const rows = [0, 1, 2].flatMap((j) => range(j * inner + rank * half, j * inner + (rank + 1) * half));
      expect(maxRelError(y.data, ref(x, w, undefined, m, k, rows))).toBeLessThan(1e-6);
      expect(op.heldBytes()).toBe(4 * (3 * inner / 2) * k);
      expect(op.deferredBias()).toBeUndefined();
    }
  });

  it('halves (fc1 = [gate | up]): each rank gets its slice of each half, bias sliced with them', async () => {
    const n = 3 * inner; // 192 rows: halves of 96, 4 ranks take 24 of each
    const b = (src.tensor('fc1.bias').data as Float32Array);
    for (const rank of [0, 3]) {
      const shard: LinearShard = { rank, size: 4, role: 'column', fused: { kind: 'halves' } };
      const op = provider.linear({ name: 'fc1', inFeatures: k, outFeatures: n / 4, bias: true, shard });
      const y = await op.forward(Tensor.fromArray('f32', [m, k], x));
      const rows = [...range(rank * 24, (rank + 1) * 24), ...range(96 + rank * 24, 96 + (rank + 1) * 24)];
      expect(maxRelError(y.data, ref(x, w, b, m, k, rows))).toBeLessThan(1e-6);
    }
  });

  it('gathered (adaLN): each rank gets one contiguous block of rows, bias with them', async () => {
    const n = 3 * inner;
    const b = (src.tensor('fc1.bias').data as Float32Array);
    for (const rank of [0, 2]) {
      const shard: LinearShard = { rank, size: 3, role: 'gathered', fused: { kind: 'none' } };
      const op = provider.linear({ name: 'fc1', inFeatures: k, outFeatures: n / 3, bias: true, shard });
      const y = await op.forward(Tensor.fromArray('f32', [m, k], x));
      expect(maxRelError(y.data, ref(x, w, b, m, k, range(rank * inner, (rank + 1) * inner)))).toBeLessThan(1e-6);
      expect(op.deferredBias()).toBeUndefined();
    }
  });

  it('parts (H3 block adaLN, one part per modality): each rank gets its slice of each part, bias with them', async () => {
    const n = 3 * inner; // 192 rows: 3 parts of 64, 2 ranks take 32 of each
    const b = (src.tensor('fc1.bias').data as Float32Array);
    for (const rank of [0, 1]) {
      const shard: LinearShard = { rank, size: 2, role: 'gathered', fused: { kind: 'parts', parts: 3 } };
      const op = provider.linear({ name: 'fc1', inFeatures: k, outFeatures: n / 2, bias: true, shard });
      const y = await op.forward(Tensor.fromArray('f32', [m, k], x));
      const rows = [0, 1, 2].flatMap((j) => range(j * 64 + rank * 32, j * 64 + (rank + 1) * 32));
      expect(maxRelError(y.data, ref(x, w, b, m, k, rows))).toBeLessThan(1e-6);
    }
    const parts = (p: number, size: number): unknown => provider.linear({ name: 'fc1', inFeatures: k, outFeatures: n / size, bias: true, shard: { rank: 0, size, role: 'gathered', fused: { kind: 'parts', parts: p } } });
    expect(code(() => parts(5, 2))).toBe('SHARD_NOT_DIVISIBLE@fc1');
    expect(code(() => parts(0, 2))).toBe('INVALID_SHARD@fc1');
  });

  it('coded errors: widths that do not match the shard, worlds that do not divide, bad ranks', () => {
    const qkv = (size: number, rank: number, n: number): unknown => provider.linear({ name: 'qkv', inFeatures: k, outFeatures: n, bias: false, shard: { rank, size, role: 'column', fused: { kind: 'qkv', heads, headDim: hd } } });
    expect(code(() => qkv(2, 0, 3 * inner))).toBe('SHAPE_MISMATCH@qkv');
    expect(code(() => qkv(3, 0, inner))).toBe('SHARD_NOT_DIVISIBLE@qkv');
    expect(code(() => qkv(2, 2, 3 * inner / 2))).toBe('INVALID_SHARD@qkv');
  });
});

describe('row-parallel shards', () => {
  const [n, k, m] = [24, 512, 4];
  const w = rand(n * k, 5);
  const b = rand(n, 6);
  const x = rand(m * k, 7);
  const wT = Tensor.fromArray('f32', [n, k], w);

  it('f32: partial outputs over the rank\'s input columns sum to the whole layer; the bias is deferred', async () => {
    const src = memoryCheckpoint('m.safetensors', { 'out.weight': wT, 'out.bias': Tensor.fromArray('f32', [n], b) });
    const provider = createLinearProvider(src);
    const sum = new Float64Array(m * n);
    for (const rank of [0, 1]) {
      const op = provider.linear({ name: 'out', inFeatures: k / 2, outFeatures: n, bias: true, shard: { rank, size: 2, role: 'row', fused: { kind: 'none' } } });
      const xl = new Float32Array(m * (k / 2));
      for (let i = 0; i < m; i++) xl.set(x.subarray(i * k + rank * (k / 2), i * k + (rank + 1) * (k / 2)), i * (k / 2));
      const y = await op.forward(Tensor.fromArray('f32', [m, k / 2], xl));
      y.data.forEach((v, i) => {
        sum[i] = (sum[i] as number) + v;
      });
      expect([...(op.deferredBias()?.data ?? [])]).toEqual([...b]);
      expect(op.heldBytes()).toBe(4 * n * (k / 2));
    }
    sum.forEach((v, i) => {
      sum[i] = v + (b[i % n] as number);
    });
    expect(maxRelError(sum, ref(x, w, b, m, k, range(0, n)))).toBeLessThan(1e-6);
  });

  it('int8 convrot: local q columns, every row\'s scale, and int32 accumulators that sum to the whole layer\'s bit for bit', async () => {
    const { q, scale } = quantizeWeightInt8(wT, { convrot: 256 });
    const marker = new TextEncoder().encode('{"format":"int8_tensorwise","convrot":true,"convrot_groupsize":256}');
    const src = memoryCheckpoint('m.safetensors', { 'out.weight': q, 'out.weight_scale': scale, 'out.comfy_quant': Tensor.fromArray('u8', [marker.length], marker) });
    const provider = createLinearProvider(src);
    const whole = provider.linear({ name: 'out', inFeatures: k, outFeatures: n, bias: false });
    expect(whole.format).toBe('int8_convrot');
    const xt = Tensor.fromArray('f32', [m, k], x);
    const full = await int8Linear(xt, q, scale, { convrot: 256, returnAccumulators: true });
    // The shared activation scale: per-row absmax of the rotated activations over all ranks' columns.
    const amax = new Float32Array(m);
    const parts: Tensor<'f32'>[] = [];
    for (const rank of [0, 1]) {
      const xl = new Float32Array(m * (k / 2));
      for (let i = 0; i < m; i++) xl.set(x.subarray(i * k + rank * (k / 2), i * k + (rank + 1) * (k / 2)), i * (k / 2));
      const part = Tensor.fromArray('f32', [m, k / 2], xl);
      parts.push(part);
      const r = (await hadamard(part, { group: 256 })).data;
      for (let i = 0; i < m; i++) for (let c = 0; c < k / 2; c++) amax[i] = Math.max(amax[i] as number, Math.abs(r[i * (k / 2) + c] as number));
    }
    const xScale = Tensor.fromArray('f32', [m, 1], Float32Array.from(amax, (a) => Math.max(Math.fround(a / 127), 1e-30)));
    // The kernel's own scale of the whole activation is the one all ranks agree on.
    expect([...xScale.data]).toEqual([...full.xScale.data]);
    const acc = new Int32Array(m * n);
    for (const rank of [0, 1]) {
      const op = provider.linear({ name: 'out', inFeatures: k / 2, outFeatures: n, bias: false, shard: { rank, size: 2, role: 'row', fused: { kind: 'none' } } });
      const ops = await op.int8Operands();
      expect(ops?.q.shape).toEqual([n, k / 2]);
      expect([...(ops?.scale.data ?? [])]).toEqual([...scale.data]);
      const r = await int8Linear(parts[rank] as Tensor<'f32'>, ops?.q as Tensor<'i8'>, ops?.scale as Tensor<'f32'>, { convrot: 256, xScale, returnAccumulators: true });
      r.acc?.data.forEach((v, i) => {
        acc[i] = (acc[i] as number) + v;
      });
    }
    expect([...acc]).toEqual([...(full.acc?.data ?? [])]);
    // The same pieces separately: rotate, quantize with the shared scale, int32 GEMM.
    const acc2 = new Int32Array(m * n);
    for (const rank of [0, 1]) {
      const op = provider.linear({ name: 'out', inFeatures: k / 2, outFeatures: n, bias: false, shard: { rank, size: 2, role: 'row', fused: { kind: 'none' } } });
      const qw = (await op.int8Operands())?.q as Tensor<'i8'>;
      const qx = quantizeRowsInt8(await hadamard(parts[rank] as Tensor<'f32'>, { group: 256 }), { scale: xScale }).q;
      (await int8Matmul(qx, qw)).data.forEach((v, i) => {
        acc2[i] = (acc2[i] as number) + v;
      });
    }
    expect([...acc2]).toEqual([...acc]);
  });

  it('a row-parallel int8 convrot slice that splits the 256-column groups is a coded error naming the layer', () => {
    const src = memoryCheckpoint('m.safetensors', { 'blocks.0.attn.out_proj.weight': wT });
    const p = createLinearProvider(src, { compute: 'int8_convrot' });
    expect(code(() => p.linear({ name: 'blocks.0.attn.out_proj', inFeatures: k / 4, outFeatures: n, bias: false, shard: { rank: 1, size: 4, role: 'row', fused: { kind: 'none' } } }))).toBe('SHARD_NOT_GROUP_ALIGNED@blocks.0.attn.out_proj');
    // Forced int8 on a float file: the whole layer is quantized once, so each rank has every row's scale.
    expect(code(() => p.linear({ name: 'blocks.0.attn.out_proj', inFeatures: k / 2, outFeatures: n, bias: false, shard: { rank: 1, size: 2, role: 'row', fused: { kind: 'none' } } }))).toBe('NONE');
  });

  it('int8 column shards keep their rows\' scales', async () => {
    const { q, scale } = quantizeWeightInt8(wT, { convrot: 256 });
    const marker = new TextEncoder().encode('{"format":"int8_tensorwise","convrot":true,"convrot_groupsize":256}');
    const src = memoryCheckpoint('m.safetensors', { 'c.weight': q, 'c.weight_scale': scale, 'c.comfy_quant': Tensor.fromArray('u8', [marker.length], marker) });
    const op = createLinearProvider(src).linear({ name: 'c', inFeatures: k, outFeatures: n / 2, bias: false, shard: { rank: 1, size: 2, role: 'column', fused: { kind: 'none' } } });
    const ops = await op.int8Operands();
    expect([...(ops?.scale.data ?? [])]).toEqual([...scale.data.subarray(n / 2)]);
    expect([...(ops?.q.data ?? [])]).toEqual([...q.data.subarray((n / 2) * k)]);
  });
});

describe('fp8 shards (converted at load)', () => {
  it('every shard uses the whole layer\'s per-tensor scale: row and column shards decode to the unsplit layer\'s values', async () => {
    const [n, k] = [16, 512];
    // The absmax sits in rank 0's rows and columns: a scale measured on rank 1's shard would be smaller.
    const w = rand(n * k, 21);
    w[3] = 9.5;
    const src = memoryCheckpoint('m.safetensors', { 'l.weight': Tensor.fromArray('f32', [n, k], w) });
    for (const format of ['f8_e4m3fn'] as const) {
      const provider = createLinearProvider(src, { compute: format });
      const whole = (await provider.linear({ name: 'l', inFeatures: k, outFeatures: n, bias: false }).materializedWeight()).data;
      // ComfyUI's per-tensor scale: absmax / format max, in float32 (9.5 / 448).
      const expectedScale = Math.fround(9.5 / 448);
      expect(whole[3]).toBeCloseTo(9.5, 5);
      for (const rank of [0, 1]) {
        const col = await provider.linear({ name: 'l', inFeatures: k, outFeatures: n / 2, bias: false, shard: { rank, size: 2, role: 'column', fused: { kind: 'none' } } }).materializedWeight();
        expect([...col.data], `${format} column ${rank}`).toEqual([...whole.subarray((rank * n * k) / 2, ((rank + 1) * n * k) / 2)]);
        const row = await provider.linear({ name: 'l', inFeatures: k / 2, outFeatures: n, bias: false, shard: { rank, size: 2, role: 'row', fused: { kind: 'none' } } }).materializedWeight();
        const want = Float32Array.from({ length: (n * k) / 2 }, (_, i) => whole[Math.floor(i / (k / 2)) * k + rank * (k / 2) + (i % (k / 2))] as number);
        expect([...row.data], `${format} row ${rank}`).toEqual([...want]);
      }
      // The absmax decodes from the top code (448) times that scale.
      expect(Math.max(...whole.map(Math.abs))).toBe(Math.fround(448 * expectedScale));
    }
  });
});

describe('GGUF ranges', () => {
  const g = GgufCheckpoint.open(fixturePath('gguf', 'quants.gguf'));
  const expected = readSafetensorsFixture(fixturePath('gguf', 'quants.expected.safetensors'));

  it('rows of whole blocks are zero-copy views; block-aligned columns are copied encoded; split blocks are refused', async () => {
    const rows = g.tensorRows('t.q4_k', 1, 3);
    expect(rows.shape).toEqual([2, 512]);
    expect(rows.owner).toBeDefined();
    const src = memoryCheckpoint('m-Q4_K.gguf', { 't.weight': g.tensor('t.q4_k') });
    const x = Tensor.fromArray('f32', [2, 256], rand(512, 9));
    const dec = expected.f32('t.q4_k');
    // A row-parallel rank reads the second 256 columns (one Q4_K block per row) and decodes only those.
    const op = createLinearProvider(src).linear({ name: 't', inFeatures: 256, outFeatures: 3, bias: false, shard: { rank: 1, size: 2, role: 'row', fused: { kind: 'none' } } });
    const wl = new Float32Array(3 * 256);
    for (let r = 0; r < 3; r++) wl.set(dec.subarray(r * 512 + 256, r * 512 + 512), r * 256);
    // The rank multiplies its copied blocks directly (within the input-quantization bound).
    expect(ggufBoundRatio((await op.forward(x)).data, x.data, wl, 2, 3, 256, 256)).toBeLessThanOrEqual(1);
    const cols = g.tensorColumns('t.q4_k', 256, 512);
    expect(cols.shape).toEqual([3, 256]);
    expect(code(() => g.tensorColumns('t.q4_k', 0, 100))).toBe('RANGE_NOT_BLOCK_ALIGNED@t.q4_k');
  });
});
