import { describe, expect, it } from 'vitest';
import { allocateNative, getThreads, nativeBytes, setThreads, Tensor } from './index.js';

describe('native memory', () => {
  it('allocates aligned external memory, counts it, and frees it early on dispose', () => {
    const before = nativeBytes();
    const t = allocateNative('f32', [3, 5]);
    expect(t.byteLength).toBe(60);
    expect(nativeBytes() - before).toBe(60);
    t.data.fill(2.5);
    const view = t.rows(1, 2);
    expect(Array.from(view.data)).toEqual([2.5, 2.5, 2.5, 2.5, 2.5]);
    t.dispose();
    expect(nativeBytes()).toBe(before);
    expect(t.buffer.byteLength).toBe(0); // detached: stale views cannot reach freed memory
    expect(() => view.data).toThrow(expect.objectContaining({ code: 'TENSOR_DISPOSED' }));
    t.dispose(); // idempotent
    expect(nativeBytes()).toBe(before);
  });

  it('handles empty tensors and rejects negative or huge sizes', () => {
    const e = allocateNative('i8', [0, 4]);
    expect(e.byteLength).toBe(0);
    e.dispose();
    expect(() => allocateNative('f32', [-1])).toThrow(expect.objectContaining({ code: 'INVALID_SHAPE' }));
    expect(() => allocateNative('f32', [2 ** 30, 2 ** 20])).toThrow(expect.objectContaining({ code: 'INVALID_SHAPE' }));
    expect(() => allocateNative('q4_0', [3, 31])).toThrow(expect.objectContaining({ code: 'BLOCK_MISALIGNED' }));
  });

  it('frees by finalizer when a tensor is dropped (with --expose-gc)', async () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (gc === undefined) return; // the explicit-dispose test above covers accounting without gc
    const before = nativeBytes();
    (() => allocateNative('u8', [1 << 20]))();
    for (let i = 0; i < 10 && nativeBytes() !== before; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(nativeBytes()).toBe(before);
  });
});

describe('threads', () => {
  it('sets and reports the thread count; 0 means one per core', () => {
    const initial = getThreads();
    expect(setThreads(1)).toBe(1);
    expect(getThreads()).toBe(1);
    expect(setThreads(0)).toBeGreaterThanOrEqual(1);
    expect(() => setThreads(-1)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => setThreads(1.5)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    setThreads(initial);
    expect(Tensor.zeros('f32', [1]).numel).toBe(1);
  });
});

describe('native memory across ops', () => {
  it('ops read and write native tensors in place of JS ones', async () => {
    const { hadamardSync, linear, reference } = await import('./index.js');
    const x = allocateNative('f32', [2, 16]);
    x.data.set(Array.from({ length: 32 }, (_, i) => i - 8));
    const out = allocateNative('f32', [2, 16]);
    hadamardSync(x, { group: 16, out });
    expect(out.data).toEqual(reference.hadamardSync(x, { group: 16 }).data);
    const y = await linear(x, out);
    expect(y.shape).toEqual([2, 2]);
    x.dispose();
    out.dispose();
    expect(() => hadamardSync(x, { group: 16 })).toThrow(expect.objectContaining({ code: 'TENSOR_DISPOSED' }));
  });
});

describe('dispose during an async op', () => {
  it('defers the free until the op settles, so the op reads live memory', async () => {
    const { int8Linear, quantizeWeightInt8, reference } = await import('./index.js');
    const before = nativeBytes();
    const x = allocateNative('f32', [64, 256]);
    x.data.set(Array.from({ length: 64 * 256 }, (_, i) => Math.sin(i)));
    const expected = reference.int8Linear(x.copy(), ...(() => {
      const w = quantizeWeightInt8(Tensor.f32([8, 256], Array.from({ length: 2048 }, (_, i) => Math.cos(i))));
      return [w.q, w.scale] as const;
    })());
    const w = quantizeWeightInt8(Tensor.f32([8, 256], Array.from({ length: 2048 }, (_, i) => Math.cos(i))));
    const pending = int8Linear(x, w.q, w.scale);
    x.dispose();
    expect(x.disposed).toBe(true);
    const { y } = await pending;
    expect(y.data).toEqual(expected.y.data);
    expect(nativeBytes()).toBe(before);
  });
});
