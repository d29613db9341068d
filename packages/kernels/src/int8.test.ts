import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { dequantizeInt8Accumulators, getThreads, hadamardSync, int8Backend, int8Backends, int8Linear, int8LinearAccumulators, int8Matmul, quantizeRowsInt8, quantizeWeightInt8, reference, setThreads, Tensor } from './index.js';
import { get, readFixture } from './test-support/fixture-safetensors.js';

const fx = readFixture('int8', 'int8_convrot.safetensors');
const LAYERS = ['lin_a', 'lin_b'] as const;

function countDiff(a: Int8Array, b: Int8Array): { differ: number; maxAbs: number } {
  let differ = 0;
  let maxAbs = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs((a[i] as number) - (b[i] as number));
    if (d !== 0) differ++;
    maxAbs = Math.max(maxAbs, d);
  }
  return { differ, maxAbs };
}

const bitsOf = (t: Tensor<'f32'>): Uint32Array => new Uint32Array(t.data.buffer, t.data.byteOffset, t.data.length);

describe.each(LAYERS)('int8 convrot fixture %s', (layer) => {
  const x = get(fx, `${layer}.x`, 'f32');
  const w = get(fx, `${layer}.w`, 'f32');
  const bias = get(fx, `${layer}.bias`, 'f32');
  const qx = get(fx, `${layer}.qx`, 'i8');
  const qweight = get(fx, `${layer}.qweight`, 'i8');
  const xScale = get(fx, `${layer}.x_scale`, 'f32');
  const wScale = get(fx, `${layer}.weight_scale`, 'f32');
  const acc = get(fx, `${layer}.acc_i32`, 'i32');

  it('int8Matmul of the given qx, qweight equals acc_i32 exactly (native and reference)', async () => {
    expect((await int8Matmul(qx, qweight)).data).toEqual(acc.data);
    expect(reference.int8Matmul(qx, qweight).data).toEqual(acc.data);
  });

  it('y = float(acc) * (x_scale * w_scale) + bias equals y_int8_convrot exactly from the given scales', async () => {
    const expected = get(fx, `${layer}.y_int8_convrot`, 'f32');
    // The given x_scale as the external scale reproduces qx, so the whole pipeline is fixed.
    for (const run of [
      await int8Linear(x, qweight, wScale, { bias, convrot: 256, xScale, returnAccumulators: true }),
      reference.int8Linear(x, qweight, wScale, { bias, convrot: 256, xScale, returnAccumulators: true }),
    ]) {
      const d = countDiff(new Int8Array(0), new Int8Array(0));
      expect(d.differ).toBe(0);
      expect(run.acc?.data).toEqual(acc.data);
      expect(bitsOf(run.y)).toEqual(bitsOf(expected));
    }
  });

  it('the online rotation + quantization reproduces x_rot, x_scale and qx (within the fixture tolerance)', async () => {
    const xRot = get(fx, `${layer}.x_rot`, 'f32').data;
    const rot = hadamardSync(x, { group: 256 }).data;
    let maxErr = 0;
    for (let i = 0; i < rot.length; i++) maxErr = Math.max(maxErr, Math.abs((rot[i] as number) - (xRot[i] as number)));
    expect(maxErr).toBeLessThan(1e-5);
    const run = await int8Linear(x, qweight, wScale, { bias, convrot: 256, returnAccumulators: true });
    const requant = quantizeRowsInt8(hadamardSync(x, { group: 256 }));
    expect(run.xScale.data).toEqual(requant.scale.data);
    const { differ, maxAbs } = countDiff(requant.q.data, qx.data);
    expect(maxAbs).toBeLessThanOrEqual(1);
    expect(differ).toBeLessThanOrEqual(Math.ceil(qx.numel * 0.001));
    for (let i = 0; i < xScale.numel; i++) expect(Math.abs((run.xScale.data[i] as number) / (xScale.data[i] as number) - 1)).toBeLessThan(1e-6);
    // The dynamic path's output is the fixed formula of its own accumulators and scales.
    const { y, acc: a } = run;
    for (let m = 0; m < run.xScale.numel; m++) {
      for (let n = 0; n < bias.numel; n++) {
        const i = m * bias.numel + n;
        const v = Math.fround(Math.fround(a?.data[i] as number) * Math.fround((run.xScale.data[m] as number) * (wScale.data[n] as number)));
        expect(y.data[i]).toBe(Math.fround(v + (bias.data[n] as number)));
      }
    }
  });

  it('quantizeWeightInt8 with convrot reproduces qweight and weight_scale (within tolerance)', () => {
    for (const { q, scale } of [quantizeWeightInt8(w, { convrot: 256 }), reference.quantizeWeightInt8(w, { convrot: 256 })]) {
      const { differ, maxAbs } = countDiff(q.data, qweight.data);
      expect(maxAbs).toBeLessThanOrEqual(1);
      expect(differ).toBeLessThanOrEqual(Math.ceil(qweight.numel * 0.001));
      for (let i = 0; i < wScale.numel; i++) expect(Math.abs((scale.data[i] as number) / (wScale.data[i] as number) - 1)).toBeLessThan(1e-5);
    }
  });

  it('plain (no rotation) int8 linear equals y_int8_plain exactly', async () => {
    const expected = get(fx, `${layer}.y_int8_plain`, 'f32');
    const { q, scale } = quantizeWeightInt8(w);
    expect(q.data).toEqual(get(fx, `${layer}.qweight_plain`, 'i8').data);
    expect(scale.data).toEqual(get(fx, `${layer}.weight_scale_plain`, 'f32').data);
    expect(bitsOf((await int8Linear(x, q, scale, { bias })).y)).toEqual(bitsOf(expected));
    expect(bitsOf(reference.int8Linear(x, q, scale, { bias }).y)).toEqual(bitsOf(expected));
  });
});

describe('hadamard fixture matrices', () => {
  it.each([256, 64])('the regular transform of the identity is hadamard%i', (n) => {
    const H = get(fx, `hadamard${n}`, 'f32');
    const eye = Tensor.zeros('f32', [n, n]);
    for (let i = 0; i < n; i++) eye.data[i * n + i] = 1;
    expect(hadamardSync(eye, { group: n }).data).toEqual(H.data);
    expect(reference.hadamardSync(eye, { group: n }).data).toEqual(H.data);
  });
});

describe('int8 native vs reference (random shapes)', () => {
  const initial = getThreads();
  afterAll(() => setThreads(initial));

  const shape = fc.record({ m: fc.integer({ min: 0, max: 9 }), k: fc.integer({ min: 0, max: 70 }), n: fc.integer({ min: 0, max: 19 }) });

  it('int8Matmul is exact on random sizes (0, 1, non-multiples of 8)', async () => {
    await fc.assert(
      fc.asyncProperty(shape, fc.integer(), async ({ m, k, n }, seed) => {
        let s = seed;
        const rnd = (): number => ((s = (Math.imul(s, 1103515245) + 12345) | 0) >>> 16) % 256 - 128;
        const a = Tensor.fromArray('i8', [m, k], Int8Array.from({ length: m * k }, rnd));
        const b = Tensor.fromArray('i8', [n, k], Int8Array.from({ length: n * k }, rnd));
        expect((await int8Matmul(a, b)).data).toEqual(reference.int8Matmul(a, b).data);
      }),
      { numRuns: 60 },
    );
  });

  it('quantizeRowsInt8 and int8Linear (with and without convrot) equal the reference bit for bit', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 6 }),
        fc.constantFrom(16, 64, 80, 256, 3, 1, 0),
        fc.integer({ min: 0, max: 11 }),
        fc.array(fc.float({ min: -50, max: 50, noNaN: true }), { minLength: 1, maxLength: 64 }),
        async (m, k, n, pool) => {
          const x = Tensor.f32([m, k], Array.from({ length: m * k }, (_, i) => pool[(i * 7) % pool.length] as number));
          const w = Tensor.f32([n, k], Array.from({ length: n * k }, (_, i) => pool[(i * 3 + 1) % pool.length] as number));
          const bias = Tensor.f32([n], Array.from({ length: n }, (_, i) => pool[i % pool.length] as number));
          const nq = quantizeRowsInt8(x);
          const rq = reference.quantizeRowsInt8(x);
          expect(nq.q.data).toEqual(rq.q.data);
          expect(nq.scale.data).toEqual(rq.scale.data);
          const convrot: number | false = k > 0 && k % 16 === 0 ? 16 : false;
          const qw = quantizeWeightInt8(w, { convrot });
          const rqw = reference.quantizeWeightInt8(w, { convrot });
          expect(qw.q.data).toEqual(rqw.q.data);
          expect(qw.scale.data).toEqual(rqw.scale.data);
          const opts = { bias, convrot, returnAccumulators: true };
          const a = await int8Linear(x, qw.q, qw.scale, opts);
          const b = reference.int8Linear(x, qw.q, qw.scale, opts);
          expect(a.acc?.data).toEqual(b.acc?.data);
          expect(a.xScale.data).toEqual(b.xScale.data);
          expect(bitsOf(a.y)).toEqual(bitsOf(b.y));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('an external scale is used as given (tensor-parallel shared scale)', async () => {
    const x = Tensor.f32([2, 4], [1, -2, 3, 0.5, 0.25, 0, -1, 2]);
    const scale = Tensor.f32([2, 1], [0.05, 0.01]);
    const { q } = quantizeRowsInt8(x, { scale });
    // float64 from the definition: round half even of x / scale, clamped.
    expect(Array.from(q.data)).toEqual([20, -40, 60, 10, 25, 0, -100, 127]);
    expect(reference.quantizeRowsInt8(x, { scale }).q.data).toEqual(q.data);
    expect(() => quantizeRowsInt8(x, { scale: Tensor.f32([2, 1], [0.1, 0]) })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('convrot rotates rows as int8Linear does: same scale; column slices of 256 give the slices of the rotation', async () => {
    const m = 5;
    const k = 768;
    const x = Tensor.f32([m, k], Float32Array.from({ length: m * k }, (_, i) => Math.sin(i * 0.37) * (1 + (i % 11))));
    const full = quantizeRowsInt8(x, { convrot: 256 });
    // Independent path: the standalone Hadamard op, then plain quantization.
    const viaHadamard = quantizeRowsInt8(hadamardSync(x, { group: 256 }));
    expect(full.q.data).toEqual(viaHadamard.q.data);
    expect(bitsOf(full.scale)).toEqual(bitsOf(viaHadamard.scale));
    const w = Tensor.f32([3, k], Float32Array.from({ length: 3 * k }, (_, i) => Math.cos(i * 0.11)));
    const qw = quantizeWeightInt8(w, { convrot: 256 });
    for (const backend of int8Backends()) {
      const { xScale } = await int8Linear(x, qw.q, qw.scale, { convrot: 256, backend });
      expect(bitsOf(xScale), backend).toEqual(bitsOf(full.scale));
    }
    // A row-parallel rank's slice [256, 768): its rotation is the full rotation's slice, so the
    // max over slices of the per-slice scale is the full row's scale.
    const cols = (t: Tensor<'f32'>, a: number, b: number): Tensor<'f32'> =>
      Tensor.f32([m, b - a], Float32Array.from({ length: m * (b - a) }, (_, i) => t.data[Math.floor(i / (b - a)) * k + a + (i % (b - a))] as number));
    const parts = [cols(x, 0, 256), cols(x, 256, 768)].map((p) => quantizeRowsInt8(p, { convrot: 256 }).scale.data);
    const shared = Float32Array.from({ length: m }, (_, r) => Math.max(parts[0]![r]!, parts[1]![r]!));
    expect(new Uint32Array(shared.buffer)).toEqual(bitsOf(full.scale));
    const tail = quantizeRowsInt8(cols(x, 256, 768), { convrot: 256, scale: Tensor.f32([m, 1], shared) });
    for (let r = 0; r < m; r++) expect(tail.q.data.subarray(r * 512, (r + 1) * 512)).toEqual(full.q.data.subarray(r * k + 256, (r + 1) * k));
    expect(() => quantizeRowsInt8(Tensor.zeros('f32', [1, 300]), { convrot: 256 })).toThrow(expect.objectContaining({ code: 'GROUP_MISMATCH' }));
  });

  it('opts.rotated keeps the rotated rows: requantizing them with a shared scale needs no second rotation', () => {
    const [m, k] = [4, 512];
    const x = Tensor.f32([m, k], Float32Array.from({ length: m * k }, (_, i) => Math.sin(i * 0.23) * (1 + (i % 7))));
    const rotated = Tensor.zeros('f32', [m, k]);
    const first = quantizeRowsInt8(x, { convrot: 256, rotated });
    expect(bitsOf(rotated)).toEqual(bitsOf(hadamardSync(x, { group: 256 })));
    expect(bitsOf(first.scale)).toEqual(bitsOf(quantizeRowsInt8(x, { convrot: 256 }).scale));
    const shared = Tensor.f32([m, 1], Float32Array.from(first.scale.data, (s, r) => s * (1 + r / 4)));
    expect(quantizeRowsInt8(rotated, { scale: shared }).q.data).toEqual(quantizeRowsInt8(x, { convrot: 256, scale: shared }).q.data);
    // Without a rotation the rows are copied as they are.
    const copy = Tensor.zeros('f32', [m, k]);
    quantizeRowsInt8(x, { rotated: copy });
    expect(bitsOf(copy)).toEqual(bitsOf(x));
    expect(() => quantizeRowsInt8(x, { convrot: 256, rotated: x })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => quantizeRowsInt8(x, { convrot: 256, rotated: Tensor.zeros('f32', [m, k - 1]) })).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    // opts.qOut: the same integers, in the caller's memory.
    const qOut = Tensor.zeros('i8', [m, k]);
    const into = quantizeRowsInt8(x, { convrot: 256, qOut });
    expect(into.q).toBe(qOut);
    expect(qOut.data).toEqual(first.q.data);
    expect(() => quantizeRowsInt8(x, { qOut: Tensor.zeros('i8', [m, k + 1]) })).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => quantizeRowsInt8(x, { qOut: x })).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
  });

  it('dequantizeInt8Accumulators gives int8Linear y bit for bit (|acc| past 2^24, N with a tail, every backend)', async () => {
    const cases = [
      // Near-constant rows quantize to ~127 everywhere: acc ≈ 1536·127² > 2^24 rounds when widened to f32.
      { m: 3, k: 1536, n: 13, convrot: false as const, x: (i: number) => 1 + 0.001 * Math.sin(i), w: (i: number) => 0.5 + 0.0005 * Math.cos(i) },
      { m: 7, k: 512, n: 19, convrot: 256, x: (i: number) => Math.sin(i * 0.7) * 3, w: (i: number) => Math.cos(i * 0.29) },
    ];
    for (const c of cases) {
      const x = Tensor.f32([c.m, c.k], Float32Array.from({ length: c.m * c.k }, (_, i) => c.x(i)));
      const qw = quantizeWeightInt8(Tensor.f32([c.n, c.k], Float32Array.from({ length: c.n * c.k }, (_, i) => c.w(i))), { convrot: c.convrot });
      const bias = Tensor.f32([c.n], Float32Array.from({ length: c.n }, (_, i) => (i - 6) * 0.37));
      for (const backend of int8Backends()) {
        const r = await int8Linear(x, qw.q, qw.scale, { convrot: c.convrot, bias, returnAccumulators: true, backend });
        if (c.convrot === false) expect(Math.max(...Array.from(r.acc!.data, Math.abs))).toBeGreaterThan(2 ** 24);
        const y = await dequantizeInt8Accumulators(r.acc!, r.xScale, qw.scale, bias);
        expect(bitsOf(y), backend).toEqual(bitsOf(r.y));
        // The definition, each f32 operation done in float64 and rounded once (exact for + and ×).
        const f = Math.fround;
        const expected = Float32Array.from({ length: c.m * c.n }, (_, i) => {
          const row = Math.floor(i / c.n);
          const col = i % c.n;
          return f(f(f(r.acc!.data[i]!) * f(r.xScale.data[row]! * qw.scale.data[col]!)) + bias.data[col]!);
        });
        expect(bitsOf(y)).toEqual(new Uint32Array(expected.buffer));
        const noBias = await int8Linear(x, qw.q, qw.scale, { convrot: c.convrot, returnAccumulators: true, backend });
        expect(bitsOf(await dequantizeInt8Accumulators(noBias.acc!, noBias.xScale, qw.scale))).toEqual(bitsOf(noBias.y));
        // Accumulators into `accOut`: the same integers, in the caller's memory.
        const accOut = Tensor.zeros('i32', [c.m, c.n]);
        const into = await int8Linear(x, qw.q, qw.scale, { convrot: c.convrot, bias, returnAccumulators: true, accOut, backend });
        expect(into.acc).toBe(accOut);
        expect(Array.from(accOut.data)).toEqual(Array.from(r.acc!.data));
        await expect(int8Linear(x, qw.q, qw.scale, { convrot: c.convrot, returnAccumulators: true, accOut: Tensor.zeros('i32', [c.m, c.n + 1]) })).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
        await expect(int8Linear(x, qw.q, qw.scale, { convrot: c.convrot, returnAccumulators: true, accOut: Tensor.zeros('f32', [c.m, c.n]) as unknown as Tensor<'i32'> })).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
        // Into `out`: the same bits, in the caller's memory.
        const out = Tensor.zeros('f32', [c.m, c.n]);
        expect(await dequantizeInt8Accumulators(r.acc!, r.xScale, qw.scale, bias, out)).toBe(out);
        expect(bitsOf(out)).toEqual(bitsOf(r.y));
      }
    }
  });

  it('int8LinearAccumulators gives the reference int8Linear accumulators and row scales (every backend, computed and shared scales, M past a oneDNN panel)', async () => {
    for (const c of [
      { m: 7, k: 512, n: 19, convrot: 256 },
      { m: 600, k: 512, n: 40, convrot: 256 },
      { m: 5, k: 96, n: 9, convrot: false as const },
    ]) {
      const x = Tensor.f32([c.m, c.k], Float32Array.from({ length: c.m * c.k }, (_, i) => Math.sin(i * 0.37) * (1 + (i % 5))));
      const qw = quantizeWeightInt8(Tensor.f32([c.n, c.k], Float32Array.from({ length: c.n * c.k }, (_, i) => Math.cos(i * 0.13))), { convrot: c.convrot });
      const shared = Tensor.f32([c.m, 1], Float32Array.from({ length: c.m }, (_, i) => 0.04 + i / 997));
      for (const xScale of [undefined, shared]) {
        const ref = reference.int8Linear(x, qw.q, qw.scale, { convrot: c.convrot, returnAccumulators: true, ...(xScale ? { xScale } : {}) });
        for (const backend of int8Backends()) {
          const accOut = Tensor.zeros('i32', [c.m, c.n]);
          accOut.data.fill(-7);
          const r = await int8LinearAccumulators(x, qw.q, { convrot: c.convrot, accOut, backend, ...(xScale ? { xScale } : {}) });
          expect(r.acc, backend).toBe(accOut);
          expect(Array.from(r.acc.data), `${backend} m=${c.m}`).toEqual(Array.from(ref.acc!.data));
          expect(bitsOf(r.xScale), backend).toEqual(bitsOf(ref.xScale));
        }
      }
    }
    const x = Tensor.f32([2, 256], new Float32Array(512).fill(1));
    const qw = quantizeWeightInt8(Tensor.f32([3, 256], new Float32Array(768).fill(1)));
    await expect(int8LinearAccumulators(x, qw.q, { accOut: Tensor.zeros('i32', [2, 4]) })).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(int8LinearAccumulators(x, qw.q, { accOut: Tensor.zeros('f32', [2, 3]) })).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
    await expect(int8LinearAccumulators(x, qw.scale)).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
  });

  it('zero rows get the floor scale 1e-30 and quantize to zeros; NaN quantizes to 0', () => {
    const x = Tensor.f32([2, 3], [0, 0, 0, Number.NaN, 1, -2]);
    for (const r of [quantizeRowsInt8(x), reference.quantizeRowsInt8(x)]) {
      expect(r.scale.data[0]).toBe(Math.fround(1e-30));
      expect(Array.from(r.q.data)).toEqual([0, 0, 0, 0, 64, -127]);
    }
  });

  it('rotated quantization (the fused rotate + absmax pass) ignores NaN groups like the reference', () => {
    // Row 0: a NaN in its first 64-group (the whole rotated group is NaN), finite second group;
    // row 1: all NaN; row 2: zeros then finite values.
    const k = 128;
    const values = Array.from({ length: 3 * k }, (_, i) => Math.sin(i * 0.61) * (1 + (i % 9)));
    values[5] = Number.NaN;
    for (let i = k; i < 2 * k; i++) values[i] = Number.NaN;
    for (let i = 2 * k; i < 2 * k + 64; i++) values[i] = 0;
    const w = Tensor.f32([3, k], values);
    const native = quantizeWeightInt8(w, { convrot: 64 });
    const ref = reference.quantizeWeightInt8(w, { convrot: 64 });
    expect(Array.from(native.q.data)).toEqual(Array.from(ref.q.data));
    expect(Array.from(native.scale.data)).toEqual(Array.from(ref.scale.data));
    expect(native.scale.data[1]).toBe(Math.fround(1e-30));
  });

  it('row-parallel: summing int32 accumulators of K-halves with the shared scale equals one rank', async () => {
    const k = 512;
    const x = Tensor.f32([5, k], Array.from({ length: 5 * k }, (_, i) => Math.sin(i * 0.37) * (1 + (i % 7))));
    const w = Tensor.f32([6, k], Array.from({ length: 6 * k }, (_, i) => Math.cos(i * 0.11)));
    const { q: qw, scale: ws } = quantizeWeightInt8(w, { convrot: 256 });
    const full = await int8Linear(x, qw, ws, { convrot: 256, returnAccumulators: true });
    const half = (t: Tensor<'f32'> | Tensor<'i8'>, lo: number, cols: number): Tensor => {
      const rows = t.shape[0] as number;
      const out = Tensor.zeros(t.dtype, [rows, cols]);
      for (let r = 0; r < rows; r++) new Uint8Array(out.buffer).set(t.bytes().subarray((r * k + lo) * (t.dtype === 'f32' ? 4 : 1), (r * k + lo + cols) * (t.dtype === 'f32' ? 4 : 1)), r * cols * (t.dtype === 'f32' ? 4 : 1));
      return out;
    };
    const parts = await Promise.all(
      [0, 256].map((lo) => int8Linear(half(x, lo, 256), half(qw, lo, 256), ws, { convrot: 256, xScale: full.xScale, returnAccumulators: true })),
    );
    const sum = (parts[0]?.acc?.data as Int32Array).map((v, i) => v + (parts[1]?.acc?.data[i] as number));
    expect(sum).toEqual(full.acc?.data);
  });

  it.each(int8Backends())('large M (%s; oneDNN: the row-panel path, partial last panel) equals the reference bit for bit', async (backend) => {
    const [m, k, n] = [600, 512, 40];
    const x = Tensor.f32([m, k], Array.from({ length: m * k }, (_, i) => Math.sin(i * 0.7) * (1 + (i % 13))));
    const w = Tensor.f32([n, k], Array.from({ length: n * k }, (_, i) => Math.cos(i * 0.19)));
    const bias = Tensor.f32([n], Array.from({ length: n }, (_, i) => i / 7));
    const { q, scale } = quantizeWeightInt8(w, { convrot: 256 });
    for (const opts of [{ bias, convrot: 256, returnAccumulators: true }, { convrot: false as const }]) {
      const a = await int8Linear(x, q, scale, { ...opts, backend });
      const b = reference.int8Linear(x, q, scale, opts);
      expect(a.acc?.data).toEqual(b.acc?.data);
      expect(a.xScale.data).toEqual(b.xScale.data);
      expect(bitsOf(a.y)).toEqual(bitsOf(b.y));
    }
    const shared = await int8Linear(x, q, scale, { convrot: 256, xScale: Tensor.f32([m, 1], Array.from({ length: m }, (_, i) => 0.05 + i / 1000)), returnAccumulators: true, backend });
    const sharedRef = reference.int8Linear(x, q, scale, { convrot: 256, xScale: Tensor.f32([m, 1], Array.from({ length: m }, (_, i) => 0.05 + i / 1000)), returnAccumulators: true });
    expect(shared.acc?.data).toEqual(sharedRef.acc?.data);
    expect(bitsOf(shared.y)).toEqual(bitsOf(sharedRef.y));
  });

  it.each(int8Backends())('large M with K, N multiples of 64 (%s; oneDNN: the hand-written weight reorder) equals the reference bit for bit', async (backend) => {
    const [m, k, n] = [530, 256, 192];
    const x = Tensor.f32([m, k], Array.from({ length: m * k }, (_, i) => Math.sin(i * 0.31) * (1 + (i % 7))));
    const w = Tensor.f32([n, k], Array.from({ length: n * k }, (_, i) => Math.cos(i * 0.23) * (1 + (i % 5))));
    const bias = Tensor.f32([n], Array.from({ length: n }, (_, i) => Math.sin(i)));
    const { q, scale } = quantizeWeightInt8(w, { convrot: 256 });
    const opts = { bias, convrot: 256, returnAccumulators: true };
    const a = await int8Linear(x, q, scale, { ...opts, backend });
    const b = reference.int8Linear(x, q, scale, opts);
    expect(a.acc?.data).toEqual(b.acc?.data);
    expect(bitsOf(a.y)).toEqual(bitsOf(b.y));
  });

  it('is bit-identical with 1 and 2 threads', async () => {
    const k = 1024;
    const x = Tensor.f32([290, k], Array.from({ length: 290 * k }, (_, i) => Math.sin(i * 0.013) * 3));
    const w = Tensor.f32([47, k], Array.from({ length: 47 * k }, (_, i) => Math.cos(i * 0.029)));
    const runs = [];
    for (const t of [1, 2]) {
      setThreads(t);
      const { q, scale } = quantizeWeightInt8(w, { convrot: 256 });
      const r = await int8Linear(x, q, scale, { convrot: 256, returnAccumulators: true });
      runs.push({ q: q.data, y: bitsOf(r.y), acc: r.acc?.data, rot: bitsOf(hadamardSync(x, { group: 256 })) });
    }
    expect(runs[1]).toEqual(runs[0]);
  });
});

describe.skipIf(!int8Backends().includes('vnni'))('vnni kernel edges', () => {
  // Integers from a fixed LCG, extremes included: -128 activations and weights stress the u8 offset.
  const ints = (count: number, seed: number): Int8Array => {
    let s = seed;
    return Int8Array.from({ length: count }, (_, i) => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return i % 29 === 0 ? -128 : i % 31 === 0 ? 127 : (s >>> 24) - 128;
    });
  };
  // M around the 16-row blocks and 48-row register blocks, N around the 8-column blocks, K from one
  // broadcast group to several 64-byte chunks with a tail.
  const shapes: [number, number, number][] = [
    [1, 4, 1], [1, 256, 9], [15, 12, 7], [16, 64, 8], [17, 68, 23], [47, 256, 16], [48, 260, 17], [49, 512, 5], [97, 132, 31], [130, 1024, 40],
  ];
  it.each(shapes)('int8Matmul M=%i K=%i N=%i equals the reference and the native kernel', async (m, k, n) => {
    const a = Tensor.fromArray('i8', [m, k], ints(m * k, m * 7 + k));
    const b = Tensor.fromArray('i8', [n, k], ints(n * k, n * 13 + k));
    const want = reference.int8Matmul(a, b).data;
    expect((await int8Matmul(a, b, { backend: 'vnni' })).data).toEqual(want);
    expect((await int8Matmul(a, b, { backend: 'native' })).data).toEqual(want);
  });

  it('all -128 operands at K = 4096 (the largest sums of the u8 offset) are exact', async () => {
    const [m, k, n] = [3, 4096, 9];
    const a = Tensor.fromArray('i8', [m, k], new Int8Array(m * k).fill(-128));
    const b = Tensor.fromArray('i8', [n, k], new Int8Array(n * k).fill(-128));
    expect((await int8Matmul(a, b, { backend: 'vnni' })).data).toEqual(new Int32Array(m * n).fill(k * 128 * 128));
  });

  it.each([[1, 256, 3], [33, 768, 29], [50, 512, 8]] as [number, number, number][])('int8Linear M=%i K=%i N=%i (rotation fused into the pack) equals the reference and the other backends bit for bit', async (m, k, n) => {
    const x = Tensor.f32([m, k], Float32Array.from({ length: m * k }, (_, i) => Math.sin(i * 0.37) * (1 + (i % 11))));
    const w = Tensor.f32([n, k], Float32Array.from({ length: n * k }, (_, i) => Math.cos(i * 0.21) * (1 + (i % 3))));
    const bias = Tensor.f32([n], Float32Array.from({ length: n }, (_, i) => (i - 4) * 0.3));
    const { q, scale } = quantizeWeightInt8(w, { convrot: 256 });
    const opts = { bias, convrot: 256, returnAccumulators: true };
    const want = reference.int8Linear(x, q, scale, opts);
    for (const backend of int8Backends()) {
      const got = await int8Linear(x, q, scale, { ...opts, backend });
      expect(got.acc?.data, backend).toEqual(want.acc?.data);
      expect(bitsOf(got.xScale), backend).toEqual(bitsOf(want.xScale));
      expect(bitsOf(got.y), backend).toEqual(bitsOf(want.y));
    }
  });

  it('rejects K not a multiple of 4 by name; auto runs it on the next backend exactly', async () => {
    const a = Tensor.fromArray('i8', [2, 6], ints(12, 1));
    const b = Tensor.fromArray('i8', [3, 6], ints(18, 2));
    await expect(int8Matmul(a, b, { backend: 'vnni' })).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
    expect((await int8Matmul(a, b)).data).toEqual(reference.int8Matmul(a, b).data);
  });
});

describe.each(int8Backends())('int8 backend %s', (backend) => {
  const initial = getThreads();
  afterAll(() => setThreads(initial));
  const lcg = (seed: number): (() => number) => {
    let s = seed;
    return () => ((s = (Math.imul(s, 1103515245) + 12345) | 0) >>> 16) % 256 - 128;
  };

  // Tile edges of the AMX kernel: M and N around 16 / 32 blocks, K one and many 64-steps, and
  // K = 4096 with M = 300, which takes two row passes (1 MiB of packed rows each).
  const shapes: [number, number, number][] = [[1, 64, 1], [15, 64, 17], [16, 128, 32], [33, 192, 31], [47, 320, 65], [64, 1024, 96], [300, 4096, 45]];

  it('int8Matmul equals the reference exactly at tile edges', async () => {
    for (const [m, k, n] of shapes) {
      const rnd = lcg(m * 7919 + k * 104729 + n);
      const a = Tensor.fromArray('i8', [m, k], Int8Array.from({ length: m * k }, rnd));
      const b = Tensor.fromArray('i8', [n, k], Int8Array.from({ length: n * k }, rnd));
      // Extremes too: -128 * -128 summed over K is the largest accumulator.
      if (m * k > 0) a.data.fill(-128, 0, k);
      if (n * k > 0) b.data.fill(-128, 0, k);
      expect((await int8Matmul(a, b, { backend })).data, `${m}x${k}x${n}`).toEqual(reference.int8Matmul(a, b).data);
    }
  });

  it('int8Linear (fused dequant, bias or none, own or external scale) equals the reference bit for bit', async () => {
    for (const [m, k, n] of shapes) {
      const x = Tensor.f32([m, k], Array.from({ length: m * k }, (_, i) => Math.sin(i * 0.37 + m) * (1 + (i % 11))));
      const w = Tensor.f32([n, k], Array.from({ length: n * k }, (_, i) => Math.cos(i * 0.13 + n)));
      const bias = Tensor.f32([n], Array.from({ length: n }, (_, i) => (i % 3 === 0 ? -0 : i / 9 - 1)));
      const { q, scale } = quantizeWeightInt8(w, { convrot: 64 });
      const external = Tensor.f32([m, 1], Array.from({ length: m }, (_, i) => 0.02 + i / 997));
      for (const opts of [{ bias, convrot: 64, returnAccumulators: true }, { convrot: false as const }, { convrot: 64, xScale: external, returnAccumulators: true }]) {
        const a = await int8Linear(x, q, scale, { ...opts, backend });
        const b = reference.int8Linear(x, q, scale, opts);
        expect(a.acc?.data, `${m}x${k}x${n}`).toEqual(b.acc?.data);
        expect(a.xScale.data).toEqual(b.xScale.data);
        expect(bitsOf(a.y), `${m}x${k}x${n}`).toEqual(bitsOf(b.y));
      }
    }
  });

  it('concurrent calls (one per libuv worker) each equal the reference', async () => {
    const cases = [[40, 256, 70], [33, 512, 31], [64, 128, 96], [17, 320, 45]].map(([m, k, n]) => {
      const x = Tensor.f32([m as number, k as number], Array.from({ length: (m as number) * (k as number) }, (_, i) => Math.sin(i * 0.11 + (n as number))));
      const { q, scale } = quantizeWeightInt8(Tensor.f32([n as number, k as number], Array.from({ length: (n as number) * (k as number) }, (_, i) => Math.cos(i * 0.07 + (m as number)))), { convrot: 64 });
      return { x, q, scale };
    });
    const runs = await Promise.all(cases.map((c) => int8Linear(c.x, c.q, c.scale, { convrot: 64, returnAccumulators: true, backend })));
    runs.forEach((r, i) => {
      const c = cases[i] as (typeof cases)[number];
      const ref = reference.int8Linear(c.x, c.q, c.scale, { convrot: 64, returnAccumulators: true });
      expect(r.acc?.data).toEqual(ref.acc?.data);
      expect(bitsOf(r.y)).toEqual(bitsOf(ref.y));
    });
  });

  it('gives the same bits with 1 and 2 threads', async () => {
    const [m, k, n] = [70, 512, 100];
    const x = Tensor.f32([m, k], Array.from({ length: m * k }, (_, i) => Math.sin(i * 0.029) * 4));
    const { q, scale } = quantizeWeightInt8(Tensor.f32([n, k], Array.from({ length: n * k }, (_, i) => Math.cos(i * 0.41))), { convrot: 256 });
    const runs = [];
    for (const t of [1, 2]) {
      setThreads(t);
      const r = await int8Linear(x, q, scale, { convrot: 256, returnAccumulators: true, backend });
      runs.push({ y: bitsOf(r.y), acc: r.acc?.data });
    }
    expect(runs[1]).toEqual(runs[0]);
  });
});

describe('int8 backend choice', () => {
  it("lists what this CPU can run; 'native' always, 'amx' only with AMX-INT8 in /proc/cpuinfo", async () => {
    const { readFileSync } = await import('node:fs');
    const flags = readFileSync('/proc/cpuinfo', 'utf8');
    const list = int8Backends();
    expect(list).toContain('native');
    if (!/\bamx_int8\b/.test(flags)) expect(list).not.toContain('amx');
    if (!/\bavx512_vnni\b/.test(flags)) expect(list).not.toContain('vnni');
    if (!/\b(avx512_vnni|avx_vnni|amx_int8)\b/.test(flags)) expect(list).not.toContain('onednn');
    // The default is the first listed, unless the environment forces a path.
    if (process.env.NINODES_INT8_BACKEND === undefined && process.env.NINODES_SIMD !== 'scalar') expect(int8Backend()).toBe(list[0]);
    else expect(list).toContain(int8Backend());
  });

  it('rejects an unknown backend, and amx where K is not a multiple of 64, with typed errors', async () => {
    const a = Tensor.zeros('i8', [2, 96]);
    const b = Tensor.zeros('i8', [3, 96]);
    await expect(int8Matmul(a, b, { backend: 'cuda' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', value: 'cuda' });
    await expect(int8Linear(Tensor.zeros('f32', [2, 96]), b, Tensor.f32([3], [1, 1, 1]), { backend: 'gpu' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    if (int8Backends().includes('amx')) {
      await expect(int8Matmul(a, b, { backend: 'amx' })).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
      // 'auto' runs the same shape on the next backend, exactly.
      expect((await int8Matmul(a, b)).data).toEqual(reference.int8Matmul(a, b).data);
    } else {
      await expect(int8Matmul(Tensor.zeros('i8', [2, 64]), Tensor.zeros('i8', [3, 64]), { backend: 'amx' })).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
    }
  });

  it('NINODES_INT8_BACKEND picks the default for the process; an unknown name is a typed error', async () => {
    const { execFileSync } = await import('node:child_process');
    const { fileURLToPath } = await import('node:url');
    const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
    const script = `
      const k = await import(${JSON.stringify(dist)});
      const a = k.Tensor.fromArray('i8', [3, 64], Int8Array.from({ length: 192 }, (_, i) => (i * 37) % 256 - 128));
      const b = k.Tensor.fromArray('i8', [5, 64], Int8Array.from({ length: 320 }, (_, i) => (i * 91) % 256 - 128));
      let backend, exact, code;
      try { backend = k.int8Backend(); exact = JSON.stringify(Array.from((await k.int8Matmul(a, b)).data)) === JSON.stringify(Array.from(k.reference.int8Matmul(a, b).data)); }
      catch (e) { code = e.code; }
      console.log(JSON.stringify({ backend, exact, code }));
    `;
    const run = (value: string): unknown =>
      JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, NINODES_INT8_BACKEND: value }, encoding: 'utf8' }).trim());
    expect(run('native')).toEqual({ backend: 'native', exact: true });
    expect(run('auto')).toMatchObject({ backend: expect.stringMatching(new RegExp(`^(${int8Backends().join('|')})$`)), exact: true });
    expect(run('tpu')).toEqual({ code: 'INVALID_ARGUMENT' });
  });
});

describe('int8 errors', () => {
  const x = Tensor.f32([2, 96], new Array(192).fill(0.5));
  const qw = Tensor.zeros('i8', [3, 96]);
  const ws = Tensor.f32([3, 1], [1, 1, 1]);

  it('rejects bad shapes, dtypes and groups before touching memory', async () => {
    await expect(int8Linear(x, qw, ws, { convrot: 256 })).rejects.toMatchObject({ code: 'GROUP_MISMATCH' });
    await expect(int8Linear(x, qw, ws, { convrot: 32 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(int8Linear(x, Tensor.zeros('i8', [3, 95]), ws)).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(int8Linear(x, Tensor.zeros('f32', [3, 96]), ws)).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
    await expect(int8Linear(x, qw, Tensor.f32([2, 1], [1, 1]))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(int8Linear(x, qw, ws, { bias: Tensor.f32([2], [0, 0]) })).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(int8Linear(x, qw, ws, { xScale: Tensor.f32([2, 1], [1, -1]) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(int8Matmul(Tensor.zeros('i8', [2, 4]), Tensor.zeros('i8', [3, 5]))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(int8Matmul(Tensor.zeros('i8', [1, 131073]), Tensor.zeros('i8', [1, 131073]))).rejects.toMatchObject({ code: 'INVALID_SHAPE' });
    expect(() => quantizeWeightInt8(Tensor.f32([1, 96], new Array(96).fill(1)), { convrot: 64 })).toThrow(expect.objectContaining({ code: 'GROUP_MISMATCH' }));
    expect(() => quantizeRowsInt8(Tensor.zeros('f32', [2, 3, 4]))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => reference.int8Linear(x, qw, ws, { convrot: 256 })).toThrow(expect.objectContaining({ code: 'GROUP_MISMATCH' }));
  });
});
