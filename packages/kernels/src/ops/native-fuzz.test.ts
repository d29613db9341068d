// Throws random argument lists at every native entry point of the GGUF decoder and the transformer
// ops. Each call must return or throw an Error carrying a string code: never crash the process,
// never hang. Argument pools are tiny, so an accidentally valid call costs nothing.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nativeAddon } from '../native-addon.js';

const NAMES = [
  'ggufDequantize',
  'ggufDequantizeAsync',
  'rmsNormF32',
  'layerNormF32',
  'softmaxF32',
  'siluF32',
  'geluTanhF32',
  'swigluF32',
  'addF32',
  'mulF32',
  'addcmulF32',
  'modulateF32',
  'scaleF32',
  'gatedResidualF32',
  'rmsNormModulateF32',
  'qkNormRopeF32',
  'ropeSplitHalfF32',
  'attentionF32',
  'attentionNaiveF32',
] as const;

const numberArb = fc.oneof(
  fc.constantFrom(0, 1, 2, 3, 4, 8, 16, 32, 64, -1, 0.5, Number.NaN, Infinity, -Infinity, 2 ** 32, 2 ** 53, 2 ** 64, 1e300),
  fc.integer({ min: 0, max: 70 }),
);

const argArb = fc.oneof(
  numberArb,
  fc.integer({ min: 0, max: 300 }).map((n) => new Float32Array(n).fill(0.5)),
  fc.integer({ min: 0, max: 300 }).map((n) => new Uint8Array(n).fill(0x3c)),
  fc.integer({ min: 0, max: 300 }).map((n) => new Uint16Array(n)),
  fc.integer({ min: 0, max: 40 }).map((n) => new Float64Array(n)),
  fc.constantFrom('q4_0', 'q6_k', 'iq4_xs', 'f16', 'f32', 'nope', ''),
  fc.constantFrom(null, undefined, {}, [], true),
);

async function callSafely(name: (typeof NAMES)[number], args: unknown[]): Promise<void> {
  // Deliberately untyped: the point is to pass arguments the typed interface forbids.
  const fn = nativeAddon()[name] as unknown as (...a: unknown[]) => unknown;
  try {
    const result = fn(...args);
    if (result instanceof Promise) await result;
  } catch (error) {
    expect(error).toBeInstanceOf(Error);
    expect(typeof (error as { code?: unknown }).code).toBe('string');
  }
}

describe('native op entry points under random arguments', () => {
  it('never crash, hang or throw untyped errors', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...NAMES), fc.array(argArb, { minLength: 0, maxLength: 10 }), async (name, args) => {
        await callSafely(name, args);
      }),
      { numRuns: 1500 },
    );
  });

  it('never crash on plausible calls with mismatched sizes', async () => {
    const sized = fc.tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 9 }));
    await fc.assert(
      fc.asyncProperty(sized, sized, fc.constantFrom(...NAMES), async ([a, b, c, d], [e, f, g, h], name) => {
        const buf = (n: number) => new Float32Array(n);
        const args: unknown[] =
          name === 'attentionF32' || name === 'attentionNaiveF32'
            ? [buf(a * b * d), buf(a * c * d), buf(e * f * g), buf(a * b * h), a, b, c, d, 0.5]
            : name === 'ropeSplitHalfF32'
              ? [buf(a * b * c), buf(a * d), buf(e * f * g), a, b, c, d, h]
              : [buf(a * b), buf(c * d), buf(e * f), buf(g * h), a, b, c, 1e-5];
        await callSafely(name, args);
      }),
      { numRuns: 1500 },
    );
  });
});
