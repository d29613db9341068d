// The real MiniMax-H3 key layout (from @ninodes/models) at the sizes the io and quant suites use:
// a model is named by its block count and hidden width, every other width follows from those.
import { byteSizeOf } from '@ninodes/kernels';
import { H3_DEFAULTS, type H3Config, type H3TensorSpec, h3TensorSpecs, validateH3Config } from '@ninodes/models';

/** An H3 config of `layers` blocks at `hidden` (a multiple of 256): 128-wide heads, ffn 2·hidden, tDim hidden/2. */
export function benchH3Config(layers: number, hidden: number): H3Config {
  return validateH3Config(
    { ...H3_DEFAULTS, layers, hidden, heads: hidden / 128, headDim: 128, ffn: 2 * hidden, tDim: hidden / 2, timeHidden: hidden, ropeLen: 16 },
    `bench H3 model ${String(layers)}x${String(hidden)}`,
  );
}

/** Every tensor of that model, in file order, with the real dtypes (bf16 and the f32 islands). */
export function benchH3Specs(layers: number, hidden: number): H3TensorSpec[] {
  return h3TensorSpecs(benchH3Config(layers, hidden));
}

/** Bytes of tensor data (no header). */
export function specBytes(specs: readonly H3TensorSpec[]): number {
  return specs.reduce((a, t) => a + byteSizeOf(t.dtype, t.shape), 0);
}
