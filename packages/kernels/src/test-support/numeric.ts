// Test helpers: seeded random tensors, tolerance comparison, SIMD-path and thread-count switching.
import fc from 'fast-check';
import { expect } from 'vitest';
import { buildInfo, type SimdPath } from '../build-info.js';
import { callNative } from '../native-addon.js';
import { Tensor } from '../tensor.js';
import { setThreads } from '../threads.js';

/** Deterministic pseudo-normal values (sum of 4 uniforms, centred) from a seed. */
export function randomValues(n: number, seed: number, scale = 1): Float32Array {
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (next() + next() + next() + next() - 2) * 1.7320508 * scale;
  return out;
}

/** f32 -> bf16 -> f32, round to nearest even on the bit pattern (written here, independent of the addon). */
export function roundBf16(v: Float32Array): Float64Array {
  const bits = new Uint32Array(new Float32Array(v).buffer);
  const out = new Float32Array(bits.length);
  const outBits = new Uint32Array(out.buffer);
  for (let i = 0; i < bits.length; i++) {
    const b = bits[i] as number;
    const lsb = (b >>> 16) & 1;
    outBits[i] = ((b + 0x7fff + lsb) >>> 16) << 16;
  }
  return Float64Array.from(out);
}

export function randomF32(shape: readonly number[], seed: number, scale = 1): Tensor<'f32'> {
  const n = shape.reduce((a, b) => a * b, 1);
  return Tensor.fromArray('f32', shape, randomValues(n, seed, scale));
}

/** Asserts |a - e| <= atol + rtol·|e| elementwise (NaN only where expected is NaN). */
export function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, rtol: number, atol: number): void {
  expect(actual.length).toBe(expected.length);
  let worst = -1;
  let worstErr = 0;
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i] as number;
    const e = expected[i] as number;
    if (Number.isNaN(e) || Number.isNaN(a)) {
      if (Number.isNaN(e) !== Number.isNaN(a)) {
        worst = i;
        worstErr = Infinity;
        break;
      }
      continue;
    }
    const err = Math.abs(a - e) - (atol + rtol * Math.abs(e));
    if (err > worstErr) {
      worstErr = err;
      worst = i;
    }
  }
  if (worst >= 0) {
    expect.fail(`element ${worst}: got ${actual[worst]}, expected ${expected[worst]} (rtol ${rtol}, atol ${atol})`);
  }
}

export function expectBitsEqual(a: Float32Array, b: Float32Array): void {
  expect(a.length).toBe(b.length);
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) {
    if (x[i] !== y[i]) expect.fail(`element ${i}: ${a[i]} vs ${b[i]} differ in bits`);
  }
}

/**
 * Runs `run` on one thread and on `threads`, and expects each of its outputs bit for bit the same
 * (the pool is back at its default size afterwards, also when `run` throws).
 */
export function expectSameBitsOnThreads(run: () => Float32Array[], threads: number): void {
  let one: Float32Array[];
  let many: Float32Array[];
  try {
    setThreads(1);
    one = run();
    setThreads(threads);
    many = run();
  } finally {
    setThreads(0);
  }
  expect(many.length).toBe(one.length);
  one.forEach((v, i) => expectBitsEqual(v, many[i] as Float32Array));
}

/** The SIMD paths this CPU can run, best first (each path can also run those below it). */
export function simdPaths(): SimdPath[] {
  const order: SimdPath[] = ['avx512', 'avx2', 'scalar'];
  return order.slice(order.indexOf(buildInfo().simd));
}

export function withSimd<T>(path: SimdPath, fn: () => T): T {
  const before = buildInfo().simd;
  callNative('setSimd', (n) => n.setSimd(path));
  try {
    return fn();
  } finally {
    callNative('setSimd', (n) => n.setSimd(before));
  }
}

export async function withSimdAsync<T>(path: SimdPath, fn: () => Promise<T>): Promise<T> {
  const before = buildInfo().simd;
  callNative('setSimd', (n) => n.setSimd(path));
  try {
    return await fn();
  } finally {
    callNative('setSimd', (n) => n.setSimd(before));
  }
}

/** Dimension sizes that matter for SIMD code: 0, 1, below/at/above multiples of 8, odd primes. */
export const dimArb = fc.oneof(
  fc.constantFrom(0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 64),
  fc.integer({ min: 1, max: 70 }),
);

/** A shape of rank 1..3 with at most `maxNumel` elements. */
export function shapeArb(maxRank = 3, maxNumel = 4096): fc.Arbitrary<number[]> {
  return fc.array(dimArb, { minLength: 1, maxLength: maxRank }).filter((s) => s.reduce((a, b) => a * b, 1) <= maxNumel);
}

export const seedArb = fc.integer({ min: 1, max: 2 ** 31 - 1 });
