/**
 * Peak signal-to-noise ratio of `test` against `reference`, in dB, with the peak taken as the
 * reference's value range (latents have no fixed [0, 1] range). Identical inputs give Infinity.
 */
export function psnr(reference: Float32Array, test: Float32Array): number {
  if (reference.length !== test.length || reference.length === 0) {
    throw new RangeError(`psnr: lengths ${reference.length} and ${test.length} must be equal and non-zero`);
  }
  let min = Infinity;
  let max = -Infinity;
  let sumSq = 0;
  for (let i = 0; i < reference.length; i++) {
    const r = reference[i] as number;
    const d = r - (test[i] as number);
    sumSq += d * d;
    if (r < min) min = r;
    if (r > max) max = r;
  }
  const mse = sumSq / reference.length;
  if (mse === 0) return Infinity;
  const peak = max - min;
  return 10 * Math.log10((peak * peak) / mse);
}
