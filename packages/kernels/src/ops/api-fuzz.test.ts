// Random tensor shapes into every public op: each call returns a result of a sensible shape or
// throws a NinodesError with a code; nothing else.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NinodesError } from '../errors.js';
import * as k from '../index.js';
import { Tensor } from '../tensor.js';

const shapeArb = fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 0, maxLength: 4 });
const tensorArb = fc.tuple(shapeArb, fc.constantFrom('f32', 'f32', 'f32', 'bf16', 'i8')).map(([shape, dtype]) => Tensor.zeros(dtype as 'f32', shape));
const numArb = fc.constantFrom(0, 2, 4, 1e-5, -2, 3, Number.NaN);

const NAMES = ['rmsNorm', 'layerNorm', 'softmax', 'silu', 'gelu', 'swiglu', 'add', 'mul', 'addcmul', 'modulate', 'scale', 'ropeSplitHalf', 'attention', 'dequantize', 'dequantizeSync'];
type AnyFn = (...a: unknown[]) => unknown;
const native = k as unknown as Record<string, AnyFn>;
const ref = k.reference as unknown as Record<string, AnyFn>;

describe('public ops under random shapes', () => {
  it('return or throw NinodesError, in both backends', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...NAMES), fc.array(tensorArb, { minLength: 3, maxLength: 3 }), numArb, async (name, ts, n) => {
        for (const fn of [native[name], ref[name.replace(/Sync$/, '')]]) {
          expect(fn).toBeTypeOf('function');
          try {
            await fn!(...argsFor(name, ts, n));
          } catch (error) {
            expect(error).toBeInstanceOf(NinodesError);
          }
        }
      }),
      { numRuns: 800 },
    );
  });
});

function argsFor(name: string, t: Tensor[], n: number): unknown[] {
  switch (name) {
    case 'rmsNorm':
      return [t[0], t[1], n];
    case 'layerNorm':
      return [t[0], t[1], t[2], n];
    case 'scale':
      return [t[0], n];
    case 'ropeSplitHalf':
      return [t[0], t[1], n];
    default:
      return t;
  }
}
