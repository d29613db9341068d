// A consumer that both imports and requires @ninodes/kernels holds its ESM and its CJS build at once.
// A tensor or error of one build must pass every check of the other: instanceof, isNinodesError, the
// ops' argument checks, native pinning. Loads both built files (dist/) as a consumer would.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

type Kernels = typeof import('./index.js');
const esm = (await import('../dist/index.js')) as unknown as Kernels;
const cjs = createRequire(import.meta.url)('../dist/index.cjs') as Kernels;

describe('one Tensor and NinodesError identity across the ESM and CJS builds', () => {
  it('loads two distinct module instances (else this test proves nothing)', () => {
    expect(esm.Tensor).not.toBe(cjs.Tensor);
  });

  it('instanceof accepts tensors of either build and nothing else', () => {
    const a = cjs.Tensor.f32([2], [1, 2]);
    const b = esm.Tensor.f32([2], [1, 2]);
    expect(a instanceof esm.Tensor).toBe(true);
    expect(b instanceof cjs.Tensor).toBe(true);
    expect({ dtype: 'f32', shape: [2] } instanceof esm.Tensor).toBe(false);
    expect((null as unknown) instanceof esm.Tensor).toBe(false);
  });

  it("an op of one build computes on the other build's tensors", async () => {
    // y = x · wᵀ + bias, compared with a float64 loop.
    const [m, k, n] = [3, 5, 4];
    const xs = Array.from({ length: m * k }, (_, i) => Math.sin(i + 1));
    const ws = Array.from({ length: n * k }, (_, i) => Math.cos(i * 0.7));
    const bs = Array.from({ length: n }, (_, i) => i * 0.25 - 0.5);
    const y = await esm.linear(cjs.Tensor.f32([m, k], xs), cjs.Tensor.f32([n, k], ws), cjs.Tensor.f32([n], bs));
    // add checks its arguments with instanceof Tensor (arg-checks); y is ESM, the addend CJS.
    const ones = Array.from({ length: m * n }, () => 1);
    const z = esm.add(y, cjs.Tensor.f32([m, n], ones));
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let want = bs[j]!;
        for (let p = 0; p < k; p++) want += xs[i * k + p]! * ws[j * k + p]!;
        expect(y.data[i * n + j]).toBeCloseTo(want, 5);
        expect(z.data[i * n + j]).toBeCloseTo(want + 1, 5);
      }
    }
  });

  it.runIf(esm.buildInfo().bf16Units)("a weight packed by one build multiplies in the other's linear", async () => {
    const w = cjs.cast(cjs.Tensor.f32([70, 96], Array.from({ length: 70 * 96 }, (_, i) => Math.cos(i * 0.3))), 'bf16');
    const x = esm.Tensor.f32([8, 96], Array.from({ length: 8 * 96 }, (_, i) => Math.sin(i + 1)));
    const packed = await cjs.packLinearWeight(w);
    expect(packed instanceof esm.PackedLinearWeight).toBe(true);
    const y = await esm.linear(x, packed, undefined, { precision: 'bf16' });
    expect(Buffer.from(y.bytes()).equals(Buffer.from((await esm.linear(x, w, undefined, { precision: 'bf16' })).bytes()))).toBe(true);
    packed.dispose();
  });

  it("native tensors of one build are pinned by the other build's async ops", async () => {
    const x = cjs.allocateNative('f32', [2, 4]);
    x.data.set([1, 2, 3, 4, 5, 6, 7, 8]);
    const w = esm.Tensor.f32([1, 4], [1, 1, 1, 1]);
    const before = esm.nativeBytes();
    const pending = esm.linear(x, w);
    x.dispose(); // while the op runs, the memory stays allocated: the ESM build pinned the CJS owner
    expect(esm.nativeBytes()).toBe(before);
    const y = await pending;
    expect(esm.nativeBytes()).toBe(before - 32);
    expect([...y.data]).toEqual([10, 26]);
  });

  it('errors of one build are NinodesErrors to the other', () => {
    let thrown: unknown;
    try {
      cjs.Tensor.f32([3], [1, 2]);
    } catch (e) {
      thrown = e;
    }
    expect(thrown instanceof esm.NinodesError).toBe(true);
    expect(esm.isNinodesError(thrown, 'SHAPE_MISMATCH')).toBe(true);
    expect(esm.fromNativeError(thrown)).toBe(thrown);
  });
});
