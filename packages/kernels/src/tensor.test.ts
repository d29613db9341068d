import { describe, expect, it } from 'vitest';
import { Tensor } from './index.js';

describe('Tensor', () => {
  it('views share storage: rows, reshape (with -1), view', () => {
    const t = Tensor.f32([3, 4], Array.from({ length: 12 }, (_, i) => i));
    const r = t.rows(1, 3);
    expect(r.shape).toEqual([2, 4]);
    expect(r.byteOffset).toBe(16);
    expect(Array.from(r.data)).toEqual([4, 5, 6, 7, 8, 9, 10, 11]);
    r.data[0] = 40;
    expect(t.data[4]).toBe(40);
    expect(t.reshape([2, -1]).shape).toEqual([2, 6]);
    expect(t.reshape([12]).data[4]).toBe(40);
    const bytes = t.view('u8', [48]);
    expect(bytes.buffer).toBe(t.buffer);
    expect(t.rows(3, 3).numel).toBe(0);
  });

  it('copy is independent and aligned', () => {
    const t = Tensor.f32([2, 2], [1, 2, 3, 4]).rows(1, 2);
    const c = t.copy();
    c.data[0] = 9;
    expect(t.data[0]).toBe(3);
    expect(c.byteOffset).toBe(0);
  });

  it('block dtypes have bytes but no element view', () => {
    const q = Tensor.zeros('q8_0', [2, 64]);
    expect(q.byteLength).toBe(2 * 2 * 34);
    expect(() => q.data).toThrow(expect.objectContaining({ code: 'BLOCK_DTYPE_NO_ELEMENTS' }));
    expect(() => Tensor.zeros('q8_0', [2, 33])).toThrow(expect.objectContaining({ code: 'BLOCK_MISALIGNED' }));
  });

  it('throws typed errors on bad shapes, ranges and sizes', () => {
    const t = Tensor.f32([2, 3], [1, 2, 3, 4, 5, 6]);
    expect(() => t.reshape([4, 2])).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => t.reshape([-1, -1])).toThrow(expect.objectContaining({ code: 'INVALID_SHAPE' }));
    expect(() => t.reshape([4, -1])).toThrow(expect.objectContaining({ code: 'INVALID_SHAPE' })); // 6 / 4 is not whole
    expect(() => t.rows(1, 3)).toThrow(expect.objectContaining({ code: 'INDEX_OUT_OF_RANGE' }));
    expect(() => t.rows(-1, 1)).toThrow(expect.objectContaining({ code: 'INDEX_OUT_OF_RANGE' }));
    expect(() => t.view('f64', [4])).toThrow(expect.objectContaining({ code: 'TENSOR_OUT_OF_BOUNDS' }));
    expect(() => Tensor.zeros('f32', [-1])).toThrow(expect.objectContaining({ code: 'INVALID_SHAPE' }));
    expect(() => Tensor.zeros('f32', [1.5])).toThrow(expect.objectContaining({ code: 'INVALID_SHAPE' }));
    expect(() => Tensor.zeros('f32', [2 ** 40, 2 ** 20])).toThrow(expect.objectContaining({ code: 'INVALID_SHAPE' }));
    expect(() => Tensor.zeros('f33' as 'f32', [1])).toThrow(expect.objectContaining({ code: 'UNKNOWN_DTYPE' }));
    expect(() => new Tensor('f32', [4], new ArrayBuffer(8))).toThrow(expect.objectContaining({ code: 'TENSOR_OUT_OF_BOUNDS' }));
    expect(() => Tensor.fromArray('f32', [3], new Float32Array(2))).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => new Tensor('f32', [1], new ArrayBuffer(8), { byteOffset: 2 }).data).toThrow(expect.objectContaining({ code: 'MISALIGNED_STORAGE' }));
  });
});
