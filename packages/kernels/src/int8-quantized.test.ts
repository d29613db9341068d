// int8LinearQuantized: a sequence-parallel rank quantizes its own rows, the ranks gather the int8
// rows and their scales, and every rank runs the GEMM and epilogue on the gathered rows. The bits
// must be int8Linear's for the unsplit x, on every backend, and the reference backend's.
import { afterAll, describe, expect, it } from 'vitest';
import { getThreads, int8Backends, int8Linear, int8LinearQuantized, quantizeRowsInt8, quantizeWeightInt8, reference, setThreads, Tensor } from './index.js';

const bitsOf = (t: Tensor<'f32'>): Uint32Array => new Uint32Array(t.data.buffer, t.data.byteOffset, t.data.length);

/** Deterministic values in [-1, 1) (an LCG), so a failing case can be rerun. */
function lcg(seed: number): () => number {
  let s = seed | 0;
  return () => ((s = (Math.imul(s, 1103515245) + 12345) | 0) >>> 8) / 2 ** 23 - 1;
}

/** Activations with a few outlier columns (the reason for convrot): those columns are 60x larger. */
function activations(m: number, k: number, seed: number): Tensor<'f32'> {
  const rnd = lcg(seed);
  return Tensor.f32([m, k], Float32Array.from({ length: m * k }, (_, i) => rnd() * (i % k === 7 || i % k === k - 3 ? 60 : 1)));
}

function weights(n: number, k: number, seed: number, convrot: number | false): { q: Tensor<'i8'>; scale: Tensor<'f32'> } {
  const rnd = lcg(seed);
  return quantizeWeightInt8(Tensor.f32([n, k], Float32Array.from({ length: n * k }, () => rnd() * 0.05)), { convrot });
}

// M: one row, fewer rows than a 16-row VNNI block, one block, and counts that leave partial 16- and
// 48-row tiles; K and N as in h3-small's layers (N = 1152: qkv of a rank, N = 96 a tail of 8-blocks).
const CASES = [
  { m: 1, k: 256, n: 64 },
  { m: 5, k: 512, n: 96 },
  { m: 16, k: 1536, n: 64 },
  { m: 37, k: 256, n: 1152 },
  { m: 100, k: 1536, n: 96 },
  { m: 53, k: 512, n: 1152 },
];
// The reference GEMM runs in plain JS: on the larger cases it checks the first rows and the last
// ones (the partial tile); rows are independent, so a row range of qx gives those rows of y.
const REFERENCE_WORK = 8e6;
const checkedRows = (m: number, k: number, n: number): [number, number][] => (m * k * n <= REFERENCE_WORK ? [[0, m]] : [[0, 2], [m - 6, m]]);

describe('int8LinearQuantized', () => {
  const initial = getThreads();
  afterAll(() => setThreads(initial));
  const backends = ['auto', ...int8Backends()] as const;

  it.each(CASES)('equals int8Linear byte for byte on every backend and the reference (M = $m, K = $k, N = $n)', async ({ m, k, n }) => {
    const x = activations(m, k, m * 131 + k + n);
    const rnd = lcg(n);
    const bias = Tensor.f32([n], Float32Array.from({ length: n }, () => rnd() * 4));
    for (const convrot of [false, 256] as const) {
      const qw = weights(n, k, k + n, convrot);
      const { q, scale } = quantizeRowsInt8(x, { convrot });
      const rq = reference.quantizeRowsInt8(x, { convrot });
      expect(q.data).toEqual(rq.q.data);
      expect(scale.data).toEqual(rq.scale.data);
      const expected = checkedRows(m, k, n).map(([r0, r1]) => {
        const y = reference.int8LinearQuantized(rq.q.rows(r0, r1), rq.scale.rows(r0, r1), qw.q, qw.scale, { bias });
        expect(bitsOf(y)).toEqual(bitsOf(reference.int8Linear(x.rows(r0, r1), qw.q, qw.scale, { bias, convrot }).y));
        return { r0, r1, y };
      });
      for (const backend of backends) {
        const label = `${backend} convrot ${convrot}`;
        const full = await int8Linear(x, qw.q, qw.scale, { bias, convrot, backend });
        expect(full.xScale.data, label).toEqual(scale.data);
        const y = await int8LinearQuantized(q, scale, qw.q, qw.scale, { bias, backend });
        expect(y.shape).toEqual([m, n]);
        expect(bitsOf(y), label).toEqual(bitsOf(full.y));
        for (const e of expected) expect(bitsOf(y.rows(e.r0, e.r1)), `${label} rows ${e.r0}..${e.r1}`).toEqual(bitsOf(e.y));
        const plain = await int8Linear(x, qw.q, qw.scale, { convrot, backend });
        const out = Tensor.zeros('f32', [m, n]);
        expect(await int8LinearQuantized(q, scale, qw.q, qw.scale, { backend, out })).toBe(out);
        expect(bitsOf(out), `${label} no bias`).toEqual(bitsOf(plain.y));
      }
    }
  });

  it('rows quantized in two halves into views of one buffer (qOut, scaleOut) give the same bytes', async () => {
    const m = 75, k = 1536, n = 96, half = 38;
    const x = activations(m, k, 5);
    const qw = weights(n, k, 6, 256);
    const bias = Tensor.f32([n], Float32Array.from({ length: n }, (_, i) => i * 0.01 - 0.3));
    const qAll = Tensor.zeros('i8', [m, k]);
    const sAll = Tensor.zeros('f32', [m, 1]);
    for (const [r0, r1] of [[0, half], [half, m]] as const) {
      const part = quantizeRowsInt8(x.rows(r0, r1), { convrot: 256, qOut: qAll.rows(r0, r1), scaleOut: sAll.rows(r0, r1) });
      expect(part.scale.byteOffset).toBe(sAll.byteOffset + r0 * 4);
      expect(part.scale.buffer).toBe(sAll.buffer);
    }
    const whole = quantizeRowsInt8(x, { convrot: 256 });
    expect(qAll.data).toEqual(whole.q.data);
    expect(sAll.data).toEqual(whole.scale.data);
    // The reference backend writes into the same views the same way.
    const rAll = Tensor.zeros('i8', [m, k]);
    const rs = Tensor.zeros('f32', [m, 1]);
    for (const [r0, r1] of [[0, half], [half, m]] as const) reference.quantizeRowsInt8(x.rows(r0, r1), { convrot: 256, qOut: rAll.rows(r0, r1), scaleOut: rs.rows(r0, r1) });
    expect(rAll.data).toEqual(qAll.data);
    expect(rs.data).toEqual(sAll.data);
    for (const backend of int8Backends()) {
      const full = await int8Linear(x, qw.q, qw.scale, { bias, convrot: 256, backend });
      expect(bitsOf(await int8LinearQuantized(qAll, sAll, qw.q, qw.scale, { bias, backend })), backend).toEqual(bitsOf(full.y));
    }
  });

  it('handles empty and tiny shapes (M, K or N = 0) like the reference on every backend', async () => {
    for (const [m, k, n] of [[0, 8, 5], [3, 0, 5], [3, 8, 0], [1, 4, 1], [2, 16, 9]] as const) {
      const x = activations(m, k, m + k + n);
      const qw = weights(n, k, 3, false);
      const bias = Tensor.f32([n], Float32Array.from({ length: n }, (_, i) => i - 2.5));
      const rq = reference.quantizeRowsInt8(x);
      const expected = reference.int8LinearQuantized(rq.q, rq.scale, qw.q, qw.scale, { bias });
      for (const backend of backends) {
        const y = await int8LinearQuantized(rq.q, rq.scale, qw.q, qw.scale, { bias, backend });
        expect(bitsOf(y), `${backend} [${m}, ${k}, ${n}]`).toEqual(bitsOf(expected));
      }
    }
  });

  it('gives the same bits with 1 and 2 threads', async () => {
    const x = activations(70, 512, 9);
    const qw = weights(200, 512, 10, 256);
    const { q, scale } = quantizeRowsInt8(x, { convrot: 256 });
    for (const backend of int8Backends()) {
      setThreads(1);
      const one = await int8LinearQuantized(q, scale, qw.q, qw.scale, { backend });
      setThreads(2);
      const two = await int8LinearQuantized(q, scale, qw.q, qw.scale, { backend });
      expect(bitsOf(two), backend).toEqual(bitsOf(one));
    }
    setThreads(initial);
  });

  it('rejects bad dtypes, shapes, scales, overlapping outputs and backends with typed errors', async () => {
    const q = Tensor.zeros('i8', [4, 64]);
    const xs = Tensor.f32([4, 1], [1, 1, 1, 1]);
    const qw = Tensor.zeros('i8', [3, 64]);
    const ws = Tensor.f32([3], [1, 1, 1]);
    const call = (...a: Parameters<typeof int8LinearQuantized>): Promise<unknown> => int8LinearQuantized(...a);
    await expect(call(Tensor.zeros('f32', [4, 64]), xs, qw, ws)).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
    await expect(call(q, xs, Tensor.zeros('f32', [3, 64]), ws)).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
    await expect(call(q, xs, Tensor.zeros('i8', [3, 60]), ws)).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(call(Tensor.zeros('i8', [2, 2, 64]), xs, qw, ws)).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(call(Tensor.zeros('i8', [1, 131073]), Tensor.f32([1, 1], [1]), Tensor.zeros('i8', [1, 131073]), Tensor.f32([1], [1]))).rejects.toMatchObject({ code: 'INVALID_SHAPE' });
    await expect(call(q, Tensor.f32([3, 1], [1, 1, 1]), qw, ws)).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(call(q, Tensor.zeros('i32', [4, 1]), qw, ws)).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
    await expect(call(q, Tensor.f32([4, 1], [1, 0, 1, 1]), qw, ws)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(call(q, Tensor.f32([4, 1], [1, Number.NaN, 1, 1]), qw, ws)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(call(q, xs, qw, Tensor.f32([4], [1, 1, 1, 1]))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(call(q, xs, qw, ws, { bias: Tensor.f32([4], [0, 0, 0, 0]) })).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(call(q, xs, qw, ws, { out: Tensor.zeros('f32', [4, 4]) })).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(call(q, xs, qw, ws, { out: Tensor.zeros('i32', [4, 3]) })).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
    // out sharing memory with the scales or the bias it reads.
    const shared = Tensor.f32([16], new Array(16).fill(1));
    await expect(call(q, shared.view('f32', [4, 1]), qw, ws, { out: shared.view('f32', [4, 3]) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(call(q, xs, qw, ws, { bias: shared.view('f32', [3], shared.byteOffset + 8), out: shared.view('f32', [4, 3]) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(call(q, xs, qw, ws, { backend: 'tpu' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    for (const backend of ['amx', 'vnni', 'onednn'] as const) {
      if (!int8Backends().includes(backend)) await expect(call(q, xs, qw, ws, { backend })).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
    }
    if (int8Backends().includes('vnni')) {
      await expect(call(Tensor.zeros('i8', [4, 6]), xs, Tensor.zeros('i8', [3, 6]), ws, { backend: 'vnni' })).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
    }
    expect(() => reference.int8LinearQuantized(q, Tensor.f32([4, 1], [1, -1, 1, 1]), qw, ws)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => reference.int8LinearQuantized(q, xs, Tensor.zeros('i8', [3, 60]), ws)).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
  });

  it('quantizeRowsInt8 rejects a scaleOut of the wrong shape or dtype, or one overlapping its other tensors', () => {
    const x = Tensor.f32([2, 8], new Array(16).fill(0.5));
    expect(() => quantizeRowsInt8(x, { scaleOut: Tensor.zeros('f32', [3, 1]) })).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => quantizeRowsInt8(x, { scaleOut: Tensor.zeros('f32', [2]) })).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => quantizeRowsInt8(x, { scaleOut: Tensor.zeros('i32', [2, 1]) })).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
    expect(() => quantizeRowsInt8(x, { scaleOut: x.view('f32', [2, 1]) })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    const buf = Tensor.zeros('f32', [6]);
    expect(() => quantizeRowsInt8(x, { scaleOut: buf.view('f32', [2, 1]), qOut: buf.view('i8', [2, 8]) })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    // An external scale lands in scaleOut as given.
    const scaleOut = Tensor.zeros('f32', [2, 1]);
    const scale = Tensor.f32([2, 1], [0.25, 0.5]);
    expect(quantizeRowsInt8(x, { scale, scaleOut }).scale).toBe(scaleOut);
    expect(Array.from(scaleOut.data)).toEqual([0.25, 0.5]);
  });
});
