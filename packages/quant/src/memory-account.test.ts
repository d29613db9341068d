import { type ComputeDevice, PackedLinearWeight, Tensor, allocateNative, buildInfo, encodeFp8, getDevice, isNinodesError, linear, packedLinearBytes, registerDevice } from '@ninodes/kernels';
import { SafetensorsFile } from '@ninodes/memory';
import { describe, expect, it, vi } from 'vitest';
import { GgufCheckpoint } from './gguf-checkpoint.js';
import type { ComputeMode } from './memory-account.js';
import { linearResidentBytes, preparedWeight, preparingBytes, residentBytes, tensorResidentBytes, transientBytes } from './memory-account.js';
import { createLinearProvider, createPreparedWeightCache } from './linear-provider.js';
import { fixturePath, readSafetensorsFixture } from './testing/fixtures.js';
import { memoryCheckpoint } from './testing/memory-checkpoint.js';
import type { WeightFormat } from './weight-format.js';

const fx = readSafetensorsFixture(fixturePath('int8', 'int8_convrot.safetensors'));
const w = fx.tensor('lin_b.w') as Tensor<'f32'>;
const [N, K] = w.shape as [number, number];
const bias = fx.tensor('lin_b.bias');
const fp8Scale = Math.fround(Math.max(...(w.data as Float32Array).map(Math.abs)) / 448);

function sources(): Record<string, ReturnType<typeof memoryCheckpoint>> {
  const bf16 = Tensor.fromArray('bf16', [N, K], Uint16Array.from(new Uint32Array((w.data as Float32Array).slice().buffer), (u) => u >>> 16));
  const f16 = Tensor.fromArray('f16', [N, K], new Uint16Array(N * K).fill(0x3c00));
  return {
    f32: memoryCheckpoint('m.safetensors', { 'l.weight': w, 'l.bias': bias }),
    bf16: memoryCheckpoint('m.safetensors', { 'l.weight': bf16, 'l.bias': bias }),
    f16: memoryCheckpoint('m.safetensors', { 'l.weight': f16, 'l.bias': bias }),
    f8_e4m3fn: memoryCheckpoint('m.safetensors', { 'l.weight': encodeFp8(w, 'f8_e4m3fn', { scale: fp8Scale, mode: 'clamp' }), 'l.weight_scale': Tensor.f32([], [fp8Scale]), 'l.bias': bias }),
  };
}

describe('memory account', () => {
  const x = fx.tensor('lin_b.x') as Tensor<'f32'>;
  // Under bf16 compute (bf16 units) a layer multiplying many rows holds oneDNN's packed copy from
  // its second such call on, padded to its blocks (this N is not a whole block).
  const packed = buildInfo().bf16Units ? packedLinearBytes(N, K) : 2 * N * K;
  // [stored, compute, bytes the definition says: f32 4/param, bf16 2, int8 1 + 4 per row, fp8 1;
  // per call: fp8 decoded to f32; while preparing: the f32 intermediate of a conversion to a kind
  // other than f32 from a weight not stored in f32]
  const cases: [string, ComputeMode, number, number, number][] = [
    ['f32', 'auto', 4 * N * K, 0, 0],
    ['bf16', 'auto', 2 * N * K, 0, 0],
    ['f16', 'auto', 4 * N * K, 0, 0],
    ['f8_e4m3fn', 'auto', N * K, 4 * N * K, 0],
    ['bf16', 'f32', 4 * N * K, 0, 0],
    ['f32', 'bf16', packed, 0, 0],
    ['bf16', 'bf16', packed, 0, 0],
    ['bf16', 'int8_convrot', N * K + 4 * N, 0, 4 * N * K],
    ['bf16', 'f8_e4m3fn', N * K, 4 * N * K, 4 * N * K],
    ['f32', 'f8_e4m3fn', N * K, 4 * N * K, 0],
  ];
  it.each(cases)('%s run as %s: the account is what the prepared weight holds', async (stored, compute, want, transient, preparing) => {
    const src = (sources() as Record<string, ReturnType<typeof memoryCheckpoint>>)[stored];
    const op = createLinearProvider(src as never, { compute }).linear({ name: 'l', outFeatures: N, inFeatures: K, bias: true });
    expect(op.storedFormat).toBe(stored);
    expect(op.heldBytes()).toBe(0);
    // Two calls: what a layer holds from then on (a bf16-compute weight packs on its second).
    await op.forward(x);
    await op.forward(x);
    expect(op.heldBytes()).toBe(want);
    expect(op.residentBytes).toBe(want);
    expect(residentBytes(stored as WeightFormat, compute, [N, K])).toBe(want);
    expect(op.weightDescriptor().bytes).toBe(want);
    expect(op.transientBytes).toBe(transient);
    expect(transientBytes(stored as WeightFormat, compute, [N, K])).toBe(transient);
    expect(op.preparingBytes).toBe(preparing);
    expect(preparingBytes(stored as WeightFormat, compute, [N, K])).toBe(preparing);
    op.release();
    expect(op.heldBytes()).toBe(0);
  });

  it('int8 checkpoints: q plus one f32 per row, a tensorwise scale repeated on every row', async () => {
    const src = SafetensorsFile.open(fixturePath('int8', 'comfy_int8_convrot_checkpoint.safetensors'));
    const [n, k] = fx.info('lin_a.w').shape as [number, number];
    const op = createLinearProvider(src).linear({ name: 'model.lin_a', outFeatures: n, inFeatures: k, bias: true });
    await op.forward(fx.tensor('lin_a.x') as Tensor<'f32'>);
    expect(op.heldBytes()).toBe(n * k + 4 * n);
    expect(residentBytes('int8_convrot', 'auto', [n, k])).toBe(n * k + 4 * n);
    expect(residentBytes('int8_tensorwise', 'auto', [n, k])).toBe(n * k + 4 * n);
    src.close();
  });

  it('GGUF layers run as stored hold their blocks (Q4_K 144 B per 256 values); requantized Q8_0 holds int8', async () => {
    const g = GgufCheckpoint.open(fixturePath('gguf', 'quants.gguf'));
    const src = memoryCheckpoint('m.gguf', { 't.q4_k.weight': g.tensor('t.q4_k'), 't.q8_0.weight': g.tensor('t.q8_0') });
    const x = Tensor.fromArray('f32', [2, 512], new Float32Array(1024).fill(0.5));
    const q4 = createLinearProvider(src).linear({ name: 't.q4_k', outFeatures: 3, inFeatures: 512, bias: false });
    await q4.forward(x);
    expect(q4.heldBytes()).toBe(3 * 2 * 144);
    expect(residentBytes('q4_k', 'auto', [3, 512])).toBe(3 * 2 * 144);
    // A block type without an integer kernel still decodes to f32.
    expect(residentBytes('q3_k', 'auto', [3, 512])).toBe(4 * 3 * 512);
    const q8 = createLinearProvider(src, { requantizeGguf: true }).linear({ name: 't.q8_0', outFeatures: 3, inFeatures: 512, bias: false });
    await q8.forward(x);
    expect(q8.heldBytes()).toBe(3 * 512 + 4 * 3);
    expect(residentBytes('q8_0', 'auto', [3, 512], { requantizeGguf: true })).toBe(3 * 512 + 4 * 3);
    g.close();
  });

  it('rejects shapes that are not [N, K]', () => {
    try {
      residentBytes('f32', 'auto', [3]);
      expect.unreachable();
    } catch (e) {
      expect(isNinodesError(e) && e.code).toBe('INVALID_ARGUMENT');
    }
  });

  it('dispose frees native storage once; a borrowed weight is left alone', () => {
    const t = allocateNative('f32', [4, 4]);
    const p = preparedWeight({ kind: 'f32', w: t });
    expect(p.bytes).toBe(64);
    p.dispose();
    expect(t.disposed).toBe(true);
    const u = allocateNative('f32', [4, 4]);
    preparedWeight({ kind: 'f32', w: u }, { borrowed: true }).dispose();
    expect(u.disposed).toBe(false);
    u.dispose();
  });
});

describe('typed weight cache', () => {
  const x = fx.tensor('lin_b.x') as Tensor<'f32'>;
  const spec = { name: 'l', outFeatures: N, inFeatures: K, bias: true };

  it.runIf(buildInfo().bf16Units)('bf16 compute: few rows and a single many-row call keep the plain weight, a second swaps it for the packed copy, eviction frees that, and a streamed weight never packs', async () => {
    expect(x.shape[0]).toBeGreaterThan(4);
    const src = sources().bf16 as ReturnType<typeof memoryCheckpoint>;
    const plain = src.tensor('l.weight');
    // The source hears when the op stops reading its mapped weight.
    const advised: unknown[] = [];
    const file = { ...src, advise: (name: string, advice: string, rows?: readonly [number, number]) => void advised.push([name, advice, rows]) };
    const bytes = packedLinearBytes(N, K);
    const weights = createPreparedWeightCache({ cpu: bytes });
    const op = createLinearProvider(file, { compute: 'bf16', cache: { weights, model: 'm' } }).linear(spec);
    const other = memoryCheckpoint('o.safetensors', { 'o.weight': plain, 'o.bias': bias });
    const op2 = createLinearProvider(other, { compute: 'bf16', cache: { weights, model: 'm' } }).linear({ ...spec, name: 'o' });
    weights.registerModel('m', [op2.weightDescriptor(), op.weightDescriptor()]);
    expect(op.residentBytes).toBe(bytes);
    const disposeSpy = vi.spyOn(PackedLinearWeight.prototype, 'dispose');
    try {
      const one = x.rows(0, 1);
      const y1 = await op.forward(one);
      expect(Buffer.from(y1.bytes()).equals(Buffer.from((await linear(one, plain, bias, { precision: 'bf16' })).bytes()))).toBe(true);
      // One row: still the plain weight.
      expect(advised).toEqual([]);
      const y = await op.forward(x);
      expect(Buffer.from(y.bytes()).equals(Buffer.from((await linear(x, plain, bias, { precision: 'bf16' })).bytes()))).toBe(true);
      // One many-row call (a streamed weight's only one): still plain.
      expect(advised).toEqual([]);
      // The second packs it: the mapped weight's pages are let go.
      expect(Buffer.from((await op.forward(x)).bytes()).equals(Buffer.from(y.bytes()))).toBe(true);
      expect(advised).toEqual([['l.weight', 'dontneed', undefined]]);
      // A few-row call on the packed weight: the same bits as on the plain one.
      expect(Buffer.from((await op.forward(one)).bytes()).equals(Buffer.from(y1.bytes()))).toBe(true);
      expect(disposeSpy).not.toHaveBeenCalled();
      // The other layer (one row: it never packs) evicts it, and its packed memory goes with it.
      await op2.forward(one);
      expect(weights.has('cpu', 'm', op.weightDescriptor().key)).toBe(false);
      expect(disposeSpy).toHaveBeenCalledTimes(1);
      const freed = disposeSpy.mock.contexts[0] as PackedLinearWeight;
      expect([freed.disposed, freed.byteLength]).toEqual([true, bytes]);
      // Used again while the other layer holds the budget, it is streamed (loaded, multiplied once,
      // dropped) and never packed, however often it runs: the same output from the plain weight.
      for (let i = 0; i < 2; i++) {
        expect(Buffer.from((await op.forward(x)).bytes()).equals(Buffer.from(y.bytes()))).toBe(true);
        expect(weights.has('cpu', 'm', op.weightDescriptor().key)).toBe(false);
        expect(advised).toHaveLength(1);
        expect(disposeSpy).toHaveBeenCalledTimes(1);
      }
    } finally {
      disposeSpy.mockRestore();
    }
  });

  it('counts the account, disposes what it evicts, and keeps a LoRA patch evictable and counted', async () => {
    const src = sources().bf16 as ReturnType<typeof memoryCheckpoint>;
    const other = memoryCheckpoint('o.safetensors', { 'o.weight': w, 'o.bias': bias });
    // Room for one int8 layer at a time.
    const weights = createPreparedWeightCache({ cpu: N * K + 4 * N });
    const op = createLinearProvider(src, { compute: 'int8_convrot', cache: { weights, model: 'm' } }).linear(spec);
    const op2 = createLinearProvider(other, { compute: 'int8_convrot', cache: { weights, model: 'm' } }).linear({ ...spec, name: 'o' });
    // op2 first: it has the higher priority, so it may evict op within a pass.
    weights.registerModel('m', [op2.weightDescriptor(), op.weightDescriptor()]);
    expect(op.heldBytes()).toBe(0);
    const before = await op.forward(x);
    expect(weights.stats('cpu').residentBytes).toBe(N * K + 4 * N);
    // What the op holds is its cache entry (an executor counts it).
    expect(op.heldBytes()).toBe(N * K + 4 * N);
    // A LoRA patch: the cached weight is dropped and rebuilt from the patch, under the same budget.
    const patched = (await op.materializedWeight()).copy();
    (patched.data as Float32Array).forEach((v, i, a) => {
      a[i] = i % 3 === 0 ? v * 2 : v;
    });
    await op.replaceWeight(patched);
    const evictionsBefore = weights.stats('cpu').evictions;
    const y1 = await op.forward(x);
    expect([...(y1.data as Float32Array)]).not.toEqual([...(before.data as Float32Array)]);
    expect(weights.stats('cpu').residentBytes).toBe(N * K + 4 * N);
    // The other layer evicts it; the next forward rebuilds the patched weight, not the file's.
    await op2.forward(x);
    expect(weights.stats('cpu').evictions).toBeGreaterThan(evictionsBefore);
    expect(weights.has('cpu', 'm', op.weightDescriptor().key)).toBe(false);
    expect(op.heldBytes()).toBe(0);
    const y2 = await op.forward(x);
    expect([...(y2.data as Float32Array)]).toEqual([...(y1.data as Float32Array)]);
    expect(weights.stats('cpu').peakResidentBytes).toBeLessThanOrEqual(N * K + 4 * N);
  });
});

describe('the memory account asks the compute device', () => {
  it("sizes a prepared weight and an f32 tensor by the device's backend and buffer type, not host layouts", () => {
    // A device whose buffers pad every tensor to 256 bytes and whose int8 weights keep no scales.
    const cpu = getDevice('cpu');
    const padded: ComputeDevice = {
      ...cpu,
      name: 'padded:0',
      bufferType: { ...cpu.bufferType, name: 'padded', device: 'padded:0', allocSize: (_dtype, shape) => Math.ceil((4 * shape.reduce((a, b) => a * b, 1)) / 256) * 256 },
      backend: () => ({ ...cpu.backend(), name: 'padded:0', preparedWeightBytes: ({ kind, shape: [n, k] }) => (kind === 'int8' ? n * k : 4 * n * k) }),
    };
    const unregister = registerDevice(padded);
    try {
      expect(residentBytes('int8_convrot', 'auto', [3, 256])).toBe(3 * 256 + 4 * 3);
      expect(residentBytes('int8_convrot', 'auto', [3, 256], { device: 'padded:0' })).toBe(3 * 256);
      const l = { name: 'l', inFeatures: 256, outFeatures: 3, bias: true, storedFormat: 'int8_convrot', role: 'replicated', fused: { kind: 'none' }, fp32Island: false } as const;
      expect(linearResidentBytes(l, 'auto')).toBe(3 * 256 + 4 * 3 + 4 * 3);
      expect(linearResidentBytes(l, 'auto', { device: 'padded:0' })).toBe(3 * 256 + 256);
      const norm = { name: 'norm.weight', dtype: 'bf16', shape: [10], byteLength: 20 } as const;
      expect(tensorResidentBytes(norm, undefined, 'auto')).toBe(40);
      expect(tensorResidentBytes(norm, undefined, 'auto', { device: 'padded:0' })).toBe(256);
    } finally {
      unregister();
    }
  });
});
