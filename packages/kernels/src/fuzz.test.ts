// Entry points fed random argument shapes, dtypes and options: every call must either succeed or
// throw a typed error; none may crash the process (a crash fails the whole test file).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as k from './index.js';
import { nativeAddon } from './native-addon.js';

const DTYPES = ['f32', 'f16', 'bf16', 'i8', 'i32', 'u8', 'f8_e4m3fn', 'f8_e5m2', 'f64'] as const;

const tensorArb = fc
  .record({
    dtype: fc.constantFrom(...DTYPES),
    shape: fc.array(fc.constantFrom(0, 1, 2, 3, 4, 16, 64), { minLength: 0, maxLength: 3 }),
  })
  .map(({ dtype, shape }) => k.Tensor.zeros(dtype, shape));

const optionArb = fc.option(
  fc.record(
    {
      scale: fc.oneof(fc.double(), tensorArb),
      group: fc.constantFrom(0, 1, 2, 4, 16, 64, 3, -4, 1.5),
      order: fc.constantFrom('regular', 'sylvester', 'nope'),
      convrot: fc.constantFrom(false, 4, 16, 64, 7, -1),
      bias: tensorArb,
      xScale: tensorArb,
      mode: fc.constantFrom('torch-cast', 'clamp', 'x'),
      stochastic: fc.record({ seed: fc.oneof(fc.nat(), fc.double()) }),
      returnAccumulators: fc.boolean(),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);

const argArb = fc.oneof(tensorArb, fc.constant(undefined), fc.constant(null), fc.double(), fc.string({ maxLength: 4 }), fc.constantFrom('f32', 'bf16', 'f8_e4m3fn', 'f8_e5m2'));

type AnyFn = (...args: unknown[]) => unknown;
const ENTRY: Record<string, AnyFn> = {
  cast: k.cast as AnyFn,
  encodeFp8: k.encodeFp8 as AnyFn,
  decodeFp8: k.decodeFp8 as AnyFn,
  hadamard: k.hadamard as AnyFn,
  hadamardSync: k.hadamardSync as AnyFn,
  linear: k.linear as AnyFn,
  quantizeRowsInt8: k.quantizeRowsInt8 as AnyFn,
  quantizeWeightInt8: k.quantizeWeightInt8 as AnyFn,
  int8Matmul: k.int8Matmul as AnyFn,
  int8Linear: k.int8Linear as AnyFn,
  refCast: k.reference.cast as AnyFn,
  refEncodeFp8: k.reference.encodeFp8 as AnyFn,
  refHadamard: k.reference.hadamardSync as AnyFn,
  refLinear: k.reference.linear as AnyFn,
  refInt8Linear: k.reference.int8Linear as AnyFn,
  refInt8Matmul: k.reference.int8Matmul as AnyFn,
};

describe('fuzz', () => {
  it('public ops either work or throw a NinodesError', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(ENTRY)), fc.array(argArb, { maxLength: 3 }), optionArb, async (name, args, opts) => {
        const fn = ENTRY[name] as AnyFn;
        try {
          await fn(...args, opts);
        } catch (error) {
          expect(k.isNinodesError(error), `${name}: ${String(error)}`).toBe(true);
        }
      }),
      { numRuns: 600 },
    );
  });

  it('raw addon bindings reject random arguments with coded errors and never crash', () => {
    // Deliberately untyped: the point is to pass arguments the typed NativeAddon interface forbids.
    const addon = nativeAddon() as unknown as Record<string, AnyFn>;
    const names = ['castElements', 'encodeFp8', 'decodeFp8', 'hadamardSync', 'quantizeRowsInt8', 'linear', 'int8Matmul', 'int8Linear', 'releaseNative', 'setComputeThreads'];
    const raw = fc.oneof(
      fc.integer({ min: 0, max: 64 }).map((n) => new Uint8Array(n)),
      fc.integer({ min: 0, max: 16 }).map((n) => new Float32Array(n)),
      fc.integer({ min: 0, max: 8 }).map((n) => new ArrayBuffer(n)),
      fc.constantFrom(-1, 0, 1, 2, 3, 4, 16, 1.5, Number.NaN, Infinity, 2 ** 40, 2 ** 53, 2 ** 41),
      fc.constantFrom('f32', 'f16', 'bf16', 'i8', 'f8_e4m3fn', 'f8_e5m2', 'regular', 'sylvester', 'x'),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
    );
    const pending: Promise<unknown>[] = [];
    fc.assert(
      fc.property(fc.constantFrom(...names), fc.array(raw, { maxLength: 13 }), (name, args) => {
        try {
          const r = (addon[name] as AnyFn)(...args);
          if (r instanceof Promise) pending.push(r.catch((e: { code?: unknown }) => expect(typeof e.code).toBe('string')));
        } catch (error) {
          expect(typeof (error as { code?: unknown }).code, `${name}: ${String(error)}`).toBe('string');
        }
      }),
      { numRuns: 3000 },
    );
    k.setThreads(0);
    return Promise.all(pending);
  });
});
