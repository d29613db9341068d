import { describe, expect, it } from 'vitest';
import { Tensor, tensorAllocations } from './tensor.js';
import { outputF32 } from './arg-checks.js';
import { attention } from './ops/attention.js';
import { gatedResidual, rmsNormModulate } from './ops/fused-elementwise.js';
import { add, modulate } from './ops/elementwise.js';
import { buildInfo } from './build-info.js';
import { rmsNorm } from './ops/norms.js';
import { ropeSplitHalf } from './ops/rope.js';
import { silu, swiglu } from './ops/activations.js';
import { linear } from './linear.js';
import { int8Linear, quantizeWeightInt8 } from './int8.js';
import { allocateNative } from './native-memory.js';

function filled(shape: number[], seed: number): Tensor<'f32'> {
  const n = shape.reduce((a, b) => a * b, 1);
  return Tensor.f32(shape, Array.from({ length: n }, (_, i) => Math.sin(seed * 7.1 + i * 0.37) * (1 + (i % 5))));
}

const same = (a: Tensor, b: Tensor): boolean => Buffer.from(a.bytes()).equals(Buffer.from(b.bytes()));

describe('tensorAllocations', () => {
  it('counts each new storage once, views of it not at all', () => {
    const before = tensorAllocations();
    const t = Tensor.zeros('f32', [4, 4]);
    t.rows(1, 3);
    t.reshape([16]);
    t.view('u8', [64]);
    expect(tensorAllocations() - before).toBe(1);
    t.copy();
    Tensor.fromArray('f32', [2], new Float32Array(2));
    allocateNative('f32', [8]).dispose();
    expect(tensorAllocations() - before).toBe(4);
  });
});

describe('out tensors (issue 16: no allocation in the steady state)', () => {
  const x = filled([6, 64], 1);
  const w = filled([64], 2);
  const shift = filled([64], 3);
  const sc = filled([64], 4);

  it('every op the block runs writes the same bits into out as into fresh memory, and allocates nothing', async () => {
    const qkv = filled([6, 4, 64], 5);
    const angles = filled([6, 32], 6);
    const wl = filled([32, 64], 7);
    const bias = filled([32], 8);
    const wq = quantizeWeightInt8(filled([32, 256], 9), { convrot: 256 });
    const x256 = filled([6, 256], 10);
    const branch = filled([6, 64], 11);
    const rowScales = Tensor.zeros('f32', [6, 1]);
    const cases: Array<[string, () => Tensor | Promise<Tensor>, (out: Tensor<'f32'>) => Tensor | Promise<Tensor>, number[]]> = [
      ['silu', () => silu(x), (o) => silu(x, o), [6, 64]],
      ['swiglu', () => swiglu(x), (o) => swiglu(x, o), [6, 32]],
      ['rmsNorm', () => rmsNorm(x, w, 1e-6), (o) => rmsNorm(x, w, 1e-6, o), [6, 64]],
      ['add', () => add(x, branch), (o) => add(x, branch, o), [6, 64]],
      ['modulate', () => modulate(x, shift, sc), (o) => modulate(x, shift, sc, o), [6, 64]],
      ['rmsNormModulate', () => rmsNormModulate(x, w, shift, sc, 1e-6), (o) => rmsNormModulate(x, w, shift, sc, 1e-6, o), [6, 64]],
      ['gatedResidual', () => gatedResidual(x, branch, sc), (o) => gatedResidual(x, branch, sc, o), [6, 64]],
      ['ropeSplitHalf', () => ropeSplitHalf(qkv, angles, 32), (o) => ropeSplitHalf(qkv, angles, 32, o), [6, 4, 64]],
      ['attention', () => attention(qkv, qkv, qkv), (o) => attention(qkv, qkv, qkv, { out: o }), [6, 4, 64]],
      ...(buildInfo().bf16Units
        ? [['attention bf16', () => attention(qkv, qkv, qkv, { precision: 'bf16' }), (o: Tensor<'f32'>) => attention(qkv, qkv, qkv, { precision: 'bf16', out: o }), [6, 4, 64]] satisfies (typeof cases)[number]]
        : []),
      ['linear', () => linear(x, wl, bias), (o) => linear(x, wl, bias, { out: o }), [6, 32]],
      ['int8Linear', async () => (await int8Linear(x256, wq.q, wq.scale, { convrot: 256, bias })).y, async (o) => (await int8Linear(x256, wq.q, wq.scale, { convrot: 256, bias, out: o, xScaleOut: rowScales })).y, [6, 32]],
    ];
    for (const [name, fresh, into, shape] of cases) {
      const want = await fresh();
      const out = Tensor.zeros('f32', shape);
      const before = tensorAllocations();
      const got = await into(out);
      expect(tensorAllocations() - before, name).toBe(0);
      expect(got, name).toBe(out);
      expect(same(got, want), name).toBe(true);
    }
  });

  it('rejects an out of the wrong dtype, shape, disposed, or overlapping an input', () => {
    expect(() => silu(x, Tensor.zeros('f32', [6, 63]))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => silu(x, Tensor.zeros('f16', [6, 64]) as never)).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
    expect(() => silu(x, x)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    const big = Tensor.zeros('f32', [12, 64]);
    expect(() => rmsNorm(big.rows(0, 6), w, 1e-6, big.rows(3, 9))).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(rmsNorm(big.rows(0, 6), w, 1e-6, big.rows(6, 12)).shape).toEqual([6, 64]);
    const gone = allocateNative('f32', [6, 64]);
    gone.dispose();
    expect(() => outputF32(gone, [6, 64], 'silu', [x])).toThrow(expect.objectContaining({ code: 'TENSOR_DISPOSED' }));
  });
});
