import { Tensor, buildInfo, cast, decodeFp8, encodeFp8, isNinodesError, linear } from '@ninodes/kernels';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SafetensorsFile, tensorSources, writeSafetensors } from '@ninodes/memory';
import { describe, expect, it } from 'vitest';
import { GgufCheckpoint } from './gguf-checkpoint.js';
import { createLinearProvider, createPreparedWeightCache } from './linear-provider.js';
import { fixturePath, readSafetensorsFixture } from './testing/fixtures.js';
import { checkInt8ConvrotAgainstFixture } from './testing/int8-check.js';
import { memoryCheckpoint } from './testing/memory-checkpoint.js';
import { fp8Scale, maxRelError } from './quant-math.js';
import { ggufBoundRatio } from './testing/gguf-check.js';

const fx = readSafetensorsFixture(fixturePath('int8', 'int8_convrot.safetensors'));
const LAYERS = ['lin_a', 'lin_b'] as const;

/** y = x·wᵀ + b in float64 from the definition. */
function refLinear(x: Float32Array | Float64Array, w: Float32Array | Float64Array, b: Float32Array | undefined, m: number, n: number, k: number): Float64Array {
  const y = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = b ? (b[j] as number) : 0;
      for (let c = 0; c < k; c++) s += (x[i * k + c] as number) * (w[j * k + c] as number);
      y[i * n + j] = s;
    }
  return y;
}


describe('int8 convrot layers of the ComfyUI checkpoint', () => {
  const src = SafetensorsFile.open(fixturePath('int8', 'comfy_int8_convrot_checkpoint.safetensors'));
  const provider = createLinearProvider(src);

  it.each(LAYERS)('%s: forward reproduces y_int8_convrot (exact given its operands, which match within ±1)', async (l) => {
    const w = fx.info(`${l}.w`).shape as [number, number];
    const op = provider.linear({ name: `model.${l}`, outFeatures: w[0], inFeatures: w[1], bias: true });
    expect(op.format).toBe('int8_convrot');
    const y = await op.forward(fx.tensor(`${l}.x`) as Tensor<'f32'>);
    const r = checkInt8ConvrotAgainstFixture(fx, l, y, src.tensor(`model.${l}.weight`).data as Int8Array, src.tensor(`model.${l}.weight_scale`).data as Float32Array);
    expect(r.qweightMismatches).toBe(0);
    const operands = await op.int8Operands();
    expect(operands?.convrot).toBe(256);
    expect([...(operands?.q.data as Int8Array)]).toEqual([...(fx.tensor(`${l}.qweight`).data as Int8Array)]);
    expect([...(operands?.scale.data as Float32Array)]).toEqual([...fx.f32(`${l}.weight_scale`)]);
    console.log(`${l} (comfy checkpoint): qx off by one ${r.qxMismatches}, exact outputs ${r.exactOutputs}/${r.outputs}`);
  });

  it.each(LAYERS)('%s: forward into out tensors, also two at once, gives the bits of fresh outputs', async (l) => {
    const w = fx.info(`${l}.w`).shape as [number, number];
    const op = provider.linear({ name: `model.${l}`, outFeatures: w[0], inFeatures: w[1], bias: true });
    const x = fx.tensor(`${l}.x`) as Tensor<'f32'>;
    // A second input of other rows, so two overlapping calls that shared row scales would differ.
    const x2 = Tensor.fromArray('f32', x.shape, Float32Array.from(x.data, (v, i) => v * (1 + (i % 7))));
    const want = [await op.forward(x), await op.forward(x2)];
    const outs = [Tensor.zeros('f32', want[0]!.shape), Tensor.zeros('f32', want[0]!.shape)];
    const got = await Promise.all([op.forward(x, outs[0]), op.forward(x2, outs[1])]);
    got.forEach((g, i) => {
      expect(g).toBe(outs[i]);
      expect(Buffer.from(g.bytes()).equals(Buffer.from(want[i]!.bytes()))).toBe(true);
    });
  });

  it.each(LAYERS)('%s: materialized weight is the un-rotated w_dequant', async (l) => {
    const w = fx.info(`${l}.w`).shape as [number, number];
    const op = provider.linear({ name: `model.${l}`, outFeatures: w[0], inFeatures: w[1], bias: true });
    const m = await op.materializedWeight();
    expect(m.shape).toEqual(w);
    // FWHT vs the dense product: fp32 rounding only.
    expect(maxRelError(m.data as Float32Array, fx.f32(`${l}.w_dequant`))).toBeLessThan(1e-6);
  });

  it('rejects specs that do not match the file', () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return isNinodesError(e) ? e.code : 'OTHER';
      }
      return 'NONE';
    };
    expect(code(() => provider.linear({ name: 'model.lin_a', outFeatures: 96, inFeatures: 256, bias: true }))).toBe('SHAPE_MISMATCH');
    expect(code(() => provider.linear({ name: 'model.lin_a', outFeatures: 96, inFeatures: 512, bias: false }))).toBe('BIAS_MISMATCH');
    expect(code(() => provider.linear({ name: 'model.nope', outFeatures: 1, inFeatures: 1, bias: false }))).toBe('TENSOR_NOT_FOUND');
  });
});

describe('float, fp8 and forced compute formats', () => {
  const l = 'lin_b';
  const [n, k] = fx.info(`${l}.w`).shape as [number, number];
  const m = fx.info(`${l}.x`).shape[0] as number;
  const x = fx.tensor(`${l}.x`) as Tensor<'f32'>;
  const spec = { name: 'blk.fc', outFeatures: n, inFeatures: k, bias: true };

  it('f32 layer matches y_fp32', async () => {
    const src = memoryCheckpoint('m.safetensors', { 'blk.fc.weight': fx.tensor(`${l}.w`), 'blk.fc.bias': fx.tensor(`${l}.bias`) });
    const op = createLinearProvider(src).linear(spec);
    expect(op.format).toBe('f32');
    expect(maxRelError((await op.forward(x)).data as Float32Array, fx.f32(`${l}.y_fp32`))).toBeLessThan(1e-5);
    expect(await op.int8Operands()).toBeUndefined();
  });

  it('scaled fp8 e4m3fn layer equals the f64 linear of its decoded bytes (fixture decode table)', async () => {
    const w = fx.tensor(`${l}.w`) as Tensor<'f32'>;
    const scale = Math.fround(Math.max(...(w.data as Float32Array).map(Math.abs)) / 448);
    const q = encodeFp8(w, 'f8_e4m3fn', { scale, mode: 'clamp' });
    const src = memoryCheckpoint('m_fp8.safetensors', { 'blk.fc.weight': q, 'blk.fc.weight_scale': Tensor.f32([], [scale]), 'blk.fc.bias': fx.tensor(`${l}.bias`) });
    const op = createLinearProvider(src).linear(spec);
    expect(op.format).toBe('f8_e4m3fn');
    const table = readSafetensorsFixture(fixturePath('fp8', 'fp8.safetensors')).f32('e4m3fn.decode');
    const wd = Float64Array.from(q.data as Uint8Array, (b) => (table[b] as number) * scale);
    const want = refLinear(x.data, wd, fx.f32(`${l}.bias`), m, n, k);
    expect(maxRelError((await op.forward(x)).data as Float32Array, want)).toBeLessThan(1e-5);
    expect(maxRelError((await op.materializedWeight()).data as Float32Array, wd)).toBeLessThan(1e-7);
  });

  it("fp8 layers of one provider share one decode buffer: each forward, alone, interleaved or overlapping, is its own weight's", async () => {
    // Two layers of different shapes: the shared buffer grows to the larger and serves both; calls
    // that overlap (Promise.all) take fresh memory for the second. Every result must equal the f32
    // linear of that layer's own decoded bytes, computed here from a fresh decode.
    const shapes = { a: [24, 40], b: [56, 40] } as const;
    const tensors: Record<string, Tensor> = {};
    const decoded: Record<string, Tensor<'f32'>> = {};
    for (const [name, [n, k]] of Object.entries(shapes)) {
      const w = Tensor.f32([n, k], Float32Array.from({ length: n * k }, (_, i) => Math.sin(i * 0.61 + n)));
      const scale = Math.fround(Math.max(...(w.data as Float32Array).map(Math.abs)) / 448);
      const q = encodeFp8(w, 'f8_e4m3fn', { scale, mode: 'clamp' });
      tensors[`${name}.weight`] = q;
      tensors[`${name}.weight_scale`] = Tensor.f32([], [scale]);
      decoded[name] = decodeFp8(q, { scale });
    }
    const provider = createLinearProvider(memoryCheckpoint('two_fp8.safetensors', tensors));
    const ops = Object.fromEntries(Object.entries(shapes).map(([name, [n, k]]) => [name, provider.linear({ name, inFeatures: k, outFeatures: n, bias: false })]));
    const x = Tensor.f32([3, 40], Float32Array.from({ length: 120 }, (_, i) => Math.cos(i * 0.3)));
    const want = async (name: 'a' | 'b'): Promise<Float32Array> => (await linear(x, decoded[name]!)).data as Float32Array;
    const wantA = await want('a');
    const wantB = await want('b');
    for (const order of [['b', 'a', 'b'], ['a', 'a', 'b']] as const) {
      for (const name of order) expect(Array.from((await ops[name]!.forward(x)).data), name).toEqual(Array.from(name === 'a' ? wantA : wantB));
    }
    const [ya, yb] = await Promise.all([ops.a!.forward(x), ops.b!.forward(x)]);
    expect(Array.from(ya.data)).toEqual(Array.from(wantA));
    expect(Array.from(yb.data)).toEqual(Array.from(wantB));
    // Output rows of b alone (forwardRows): its rows' decode in the same buffer.
    const part = await ops.b!.forwardRows!(x, 10, 30);
    expect(Array.from(part.data)).toEqual(Array.from({ length: 60 }, (_, i) => wantB[Math.floor(i / 20) * 56 + 10 + (i % 20)]!));
  });

  it('forced int8_convrot on an f32 layer reports the error it adds and stays near y_fp32', async () => {
    const src = memoryCheckpoint('m.safetensors', { 'blk.fc.weight': fx.tensor(`${l}.w`), 'blk.fc.bias': fx.tensor(`${l}.bias`) });
    const op = createLinearProvider(src, { compute: 'int8_convrot' }).linear(spec);
    expect(op.format).toBe('int8_convrot');
    expect(op.storedFormat).toBe('f32');
    const y = (await op.forward(x)).data as Float32Array;
    // The fixture's own int8 convrot result is ~1.3% off y_fp32: ours must be as close as it is.
    expect(maxRelError(y, fx.f32(`${l}.y_int8_convrot`))).toBeLessThan(0.01);
    const err = await op.conversionError();
    expect(err).toBeGreaterThan(0);
    expect(err).toBeLessThan(0.02);
    const bf = createLinearProvider(src, { compute: 'bf16' }).linear(spec);
    expect(maxRelError((await bf.forward(x)).data as Float32Array, fx.f32(`${l}.y_fp32`))).toBeLessThan(1e-2);
  });

  it("compute 'bf16' multiplies on the bf16 units where the CPU has them; bf16 weights run as stored stay exact f32", async () => {
    const src = memoryCheckpoint('m.safetensors', { 'blk.fc.weight': fx.tensor(`${l}.w`), 'blk.fc.bias': fx.tensor(`${l}.bias`) });
    const bf = createLinearProvider(src, { compute: 'bf16' }).linear(spec);
    expect(bf.precision).toBe(buildInfo().bf16Units ? 'bf16' : 'f32');
    const w = (await bf.materializedWeight()) as Tensor<'f32'>;
    const bias = fx.tensor(`${l}.bias`) as Tensor<'f32'>;
    const want = await linear(x, cast(w, 'bf16'), bias, { precision: bf.precision });
    expect((await bf.forward(x)).data).toEqual(want.data);
    const stored = createLinearProvider(memoryCheckpoint('b.safetensors', { 'blk.fc.weight': cast(w, 'bf16'), 'blk.fc.bias': bias })).linear(spec);
    expect(stored.format).toBe('bf16');
    expect(stored.precision).toBe('f32');
  });

  it('forced f8_e4m3fn and forced f32 (on an int8 file) run the converted weight', async () => {
    const src = memoryCheckpoint('m.safetensors', { 'blk.fc.weight': fx.tensor(`${l}.w`), 'blk.fc.bias': fx.tensor(`${l}.bias`) });
    const f8 = createLinearProvider(src, { compute: 'f8_e4m3fn' }).linear(spec);
    expect(f8.format).toBe('f8_e4m3fn');
    const wq = await f8.materializedWeight();
    expect(maxRelError((await f8.forward(x)).data as Float32Array, refLinear(x.data, wq.data, fx.f32(`${l}.bias`), m, n, k))).toBeLessThan(1e-5);
    expect(await f8.conversionError()).toBeGreaterThan(0.005);
    expect(await f8.conversionError()).toBeLessThan(0.05);
    // Converted off the JS thread (absMaxAsync, encodeFp8Async): the bits of the synchronous path,
    // fp8Scale (absmax / 448) and encodeFp8 with clamping, decoded with the scale.
    const w32 = fx.f32(`${l}.w`);
    const scale = fp8Scale(Tensor.fromArray('f32', [n, k], w32), 'f8_e4m3fn');
    const want = decodeFp8(encodeFp8(Tensor.fromArray('f32', [n, k], w32), 'f8_e4m3fn', { scale, mode: 'clamp' }), { scale });
    expect(Buffer.from(wq.bytes()).equals(Buffer.from(want.bytes()))).toBe(true);

    const comfy = SafetensorsFile.open(fixturePath('int8', 'comfy_int8_convrot_checkpoint.safetensors'));
    const asF32 = createLinearProvider(comfy, { compute: 'f32' }).linear({ name: `model.${l}`, outFeatures: n, inFeatures: k, bias: true });
    expect(asF32.format).toBe('f32');
    const wd = fx.f32(`${l}.w_dequant`);
    expect(maxRelError((await asF32.forward(x)).data as Float32Array, refLinear(x.data, wd, fx.f32(`${l}.bias`), m, n, k))).toBeLessThan(1e-5);
  });

  it('forwardRows computes output rows [a, b) only, each value bit for bit the whole forward\'s', async () => {
    const src = memoryCheckpoint('m.safetensors', { 'blk.fc.weight': fx.tensor(`${l}.w`), 'blk.fc.bias': fx.tensor(`${l}.bias`) });
    const [a, b] = [Math.floor(n / 3), n - 1];
    for (const compute of ['f32', 'bf16', 'int8_convrot', 'f8_e4m3fn'] as const) {
      const op = createLinearProvider(src, { compute }).linear(spec);
      const whole = (await op.forward(x)).data as Float32Array;
      const want = new Float32Array(m * (b - a));
      for (let i = 0; i < m; i++) want.set(whole.subarray(i * n + a, i * n + b), i * (b - a));
      const part = await op.forwardRows!(x, a, b);
      expect(part.shape).toEqual([m, b - a]);
      expect(part.data, compute).toEqual(want);
      // Into a caller's buffer too.
      const out = Tensor.zeros('f32', [m, b - a]);
      expect((await op.forwardRows!(x, a, b, out)).data, compute).toEqual(want);
      // And against the definition (f64), so a wrong slice of bias or scales cannot hide.
      const ref = refLinear(x.data, (await op.materializedWeight()).data, fx.f32(`${l}.bias`), m, n, k);
      const refPart = new Float64Array(m * (b - a));
      for (let i = 0; i < m; i++) refPart.set(ref.subarray(i * n + a, i * n + b), i * (b - a));
      expect(maxRelError(part.data as Float32Array, refPart), compute).toBeLessThan(compute === 'f32' || compute === 'f8_e4m3fn' ? 1e-5 : 2e-2);
    }
    const op = createLinearProvider(src).linear(spec);
    for (const [s0, s1] of [[-1, 2], [3, 3], [0, n + 1], [0.5, 2]] as const) {
      await expect(op.forwardRows!(x, s0, s1)).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    }
  });

  it('rowsRead is the hull of the output rows forwards computed (undefined before any, and for a shard)', async () => {
    const src = memoryCheckpoint('m.safetensors', { 'blk.fc.weight': fx.tensor(`${l}.w`), 'blk.fc.bias': fx.tensor(`${l}.bias`) });
    const op = createLinearProvider(src).linear(spec);
    expect(op.rowsRead()).toBeUndefined();
    // A failed forward reads nothing.
    await expect(op.forwardRows!(x, 0, n + 1)).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    expect(op.rowsRead()).toBeUndefined();
    await op.forwardRows!(x, 2, 4);
    expect(op.rowsRead()).toEqual([2, 4]);
    await op.forwardRows!(x, 5, 7);
    expect(op.rowsRead()).toEqual([2, 7]);
    await op.forward(x);
    expect(op.rowsRead()).toEqual([0, n]);
    const shard = createLinearProvider(src).linear({ ...spec, outFeatures: n / 2, shard: { rank: 1, size: 2, role: 'column', fused: { kind: 'none' } } });
    await shard.forward(x);
    expect(shard.rowsRead()).toBeUndefined();
  });

  it('materializedWeight of an mmap-backed f32 layer is a copy the caller may patch', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'quant-lin-'));
    try {
      const path = join(dir, 'f32.safetensors');
      await writeSafetensors(path, tensorSources({ 'blk.fc.weight': fx.tensor(`${l}.w`), 'blk.fc.bias': fx.tensor(`${l}.bias`) }));
      const op = createLinearProvider(SafetensorsFile.open(path)).linear(spec);
      const before = [...((await op.forward(x)).data as Float32Array)];
      const w = await op.materializedWeight();
      (w.data as Float32Array).fill(0);
      expect([...((await op.forward(x)).data as Float32Array)]).toEqual(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('replaceWeight (LoRA patch) changes the output to the patched linear', async () => {
    const src = memoryCheckpoint('m.safetensors', { 'blk.fc.weight': fx.tensor(`${l}.w`), 'blk.fc.bias': fx.tensor(`${l}.bias`) });
    const op = createLinearProvider(src).linear(spec);
    const w = (await op.materializedWeight()).copy();
    const wd = w.data as Float32Array;
    for (let i = 0; i < wd.length; i += 7) wd[i] = (wd[i] as number) + 0.01;
    await op.replaceWeight(w);
    const want = refLinear(x.data, wd, fx.f32(`${l}.bias`), m, n, k);
    expect(maxRelError((await op.forward(x)).data as Float32Array, want)).toBeLessThan(1e-5);
  });
});

describe('int8 tensorwise (one scalar scale)', () => {
  it('runs W8A8 with the scalar scale on every row; materializes q × scale', async () => {
    const [m, n, k] = [5, 6, 64];
    const q = Int8Array.from({ length: n * k }, (_, i) => ((i * 37) % 255) - 127);
    const scale = 0.01;
    const x = Float32Array.from({ length: m * k }, (_, i) => Math.sin(i * 0.3) * (i % k === 5 ? 10 : 1));
    const marker = new TextEncoder().encode('{"format": "int8_tensorwise"}');
    const src = memoryCheckpoint('m.safetensors', {
      'l.weight': Tensor.fromArray('i8', [n, k], q),
      'l.weight_scale': Tensor.f32([], [scale]),
      'l.comfy_quant': Tensor.fromArray('u8', [marker.length], marker),
    });
    const op = createLinearProvider(src).linear({ name: 'l', outFeatures: n, inFeatures: k, bias: false });
    expect(op.format).toBe('int8_tensorwise');
    const w = Float64Array.from(q, (v) => v * Math.fround(scale));
    expect(maxRelError((await op.materializedWeight()).data as Float32Array, w)).toBeLessThan(1e-7);
    // Reference: per-row activation absmax/127, round half to even, in float64.
    const xq = new Float64Array(m * k);
    for (let i = 0; i < m; i++) {
      let amax = 0;
      for (let c = 0; c < k; c++) amax = Math.max(amax, Math.abs(x[i * k + c] as number));
      const xs = amax / 127;
      for (let c = 0; c < k; c++) {
        const v = (x[i * k + c] as number) / xs;
        const r = Math.abs(v - Math.trunc(v)) === 0.5 ? 2 * Math.round(v / 2) : Math.round(v);
        xq[i * k + c] = r * xs;
      }
    }
    const y = (await op.forward(Tensor.fromArray('f32', [m, k], x))).data as Float32Array;
    expect(maxRelError(y, refLinear(xq, w, undefined, m, n, k))).toBeLessThan(1e-4);
  });
});

describe('weight cache integration', () => {
  it('materializes GGUF layers through the weight cache, within its budget, with the same results', async () => {
    const g = GgufCheckpoint.open(fixturePath('gguf', 'quants.gguf'));
    const names = ['t.q8_0', 't.q6_k', 't.q4_k'];
    const src = memoryCheckpoint('m.gguf', Object.fromEntries(names.map((t) => [`${t}.weight`, g.tensor(t)])));
    const x = Tensor.fromArray('f32', [2, 512], Float32Array.from({ length: 1024 }, (_, i) => Math.cos(i * 0.11)));
    const plain = createLinearProvider(src);
    // Room for the largest layer's stored blocks (q8_0: 3 rows of 16 34-byte blocks) and no more:
    // every use after the first evicts. The layers stay as stored, never f32.
    const largest = 3 * 16 * 34;
    const weights = createPreparedWeightCache({ cpu: largest });
    const cached = createLinearProvider(src, { cache: { weights, model: 'm' } });
    const ops = names.map((t) => cached.linear({ name: t, outFeatures: 3, inFeatures: 512, bias: false }));
    weights.registerModel('m', ops.map((o) => o.weightDescriptor()));
    expect(ops[0]?.weightDescriptor()).toEqual({ key: 't.q8_0@q8_0', bytes: largest });
    for (let pass = 0; pass < 2; pass++) {
      weights.beginPass();
      for (const [i, op] of ops.entries()) {
        const want = await plain.linear({ name: names[i] as string, outFeatures: 3, inFeatures: 512, bias: false }).forward(x);
        expect([...((await op.forward(x)).data as Float32Array)]).toEqual([...(want.data as Float32Array)]);
      }
    }
    const stats = weights.stats('cpu');
    // Every forward went through the cache; it never held more than its budget (plus one temporary).
    expect(stats.requests).toBe(6);
    expect(stats.hits + stats.materializations + stats.temporaries).toBe(6);
    expect(stats.materializations).toBeGreaterThan(0);
    expect(stats.peakResidentBytes).toBeLessThanOrEqual(largest);
    expect(stats.peakBytes).toBeLessThanOrEqual(2 * largest);
    expect(stats.pinnedBytes).toBe(0);
  });
});

describe('GGUF layers', () => {
  const g = GgufCheckpoint.open(fixturePath('gguf', 'quants.gguf'));
  const expected = readSafetensorsFixture(fixturePath('gguf', 'quants.expected.safetensors'));
  // gguf fixture names have no `.weight`: present them under layer names like a real model file.
  const src = memoryCheckpoint('model-Q8_0.gguf', Object.fromEntries(['t.q8_0', 't.q6_k', 't.q4_k'].map((t) => [`${t}.weight`, g.tensor(t)])));
  const x = Tensor.fromArray('f32', [2, 512], Float32Array.from({ length: 1024 }, (_, i) => Math.sin(i * 0.37)));

  it.each(['t.q8_0', 't.q6_k', 't.q4_k'])('%s runs on its blocks: within the input-quantization bound of the float64 product with gguf-py\'s decode', async (t) => {
    const op = createLinearProvider(src).linear({ name: t, outFeatures: 3, inFeatures: 512, bias: false });
    expect(op.format).toBe(t.slice(2));
    const y = (await op.forward(x)).data as Float32Array;
    expect(ggufBoundRatio(y, x.data, expected.f32(t), 2, 3, 512, t === 't.q8_0' ? 32 : 256)).toBeLessThanOrEqual(1);
    // It holds the stored blocks, nothing decoded.
    expect(op.heldBytes()).toBe(g.tensor(t).byteLength);
    // The materialized weight is the decode gguf-py gives.
    expect([...(await op.materializedWeight()).data]).toEqual([...expected.f32(t)]);
  });

  it('requantizes Q8_0/Q6_K to int8 rowwise on request and reports the added error', async () => {
    const p = createLinearProvider(src, { requantizeGguf: true });
    const q8 = p.linear({ name: 't.q8_0', outFeatures: 3, inFeatures: 512, bias: false });
    const q4 = p.linear({ name: 't.q4_k', outFeatures: 3, inFeatures: 512, bias: false });
    expect(q8.format).toBe('int8_rowwise');
    expect(q4.format).toBe('q4_k');
    // Independent: per-row absmax/127, round half to even, from the expected decode.
    const w = expected.f32('t.q8_0');
    let num = 0;
    let den = 0;
    for (let r = 0; r < 3; r++) {
      let amax = 0;
      for (let c = 0; c < 512; c++) amax = Math.max(amax, Math.abs(w[r * 512 + c] as number));
      const s = Math.fround(amax / 127);
      for (let c = 0; c < 512; c++) {
        const v = w[r * 512 + c] as number;
        const y = Math.fround(v / s);
        const fl = Math.floor(y);
        const rq = y - fl === 0.5 ? (fl % 2 === 0 ? fl : fl + 1) : Math.round(y);
        const d = Math.max(-128, Math.min(127, rq)) * s - v;
        num += d * d;
        den += v * v;
      }
    }
    expect(await q8.conversionError()).toBeCloseTo(Math.sqrt(num / den), 5);
    expect(await q4.conversionError()).toBe(0);
  });
});
