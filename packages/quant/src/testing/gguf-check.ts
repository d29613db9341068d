// The independent check of a GGUF linear computed on its blocks (kernels' ggufLinear): the float64
// product with the dequantized weight, and per output what quantizing the input per block may add.

/**
 * Worst |y - x·wᵀ| / bound over the outputs, where bound = Σ_blocks (absmax / 254) · Σ_block |w|
 * (the input's int8 rounding error, absmax / 127 / 2 per value) plus f32 rounding; at most 1 for a
 * correct result. x [m, k], w [n, k] (gguf-py's decode), block = the input block (32 for q8_0 /
 * q4_0 weights, 256 for the k-quants).
 */
export function ggufBoundRatio(y: Float32Array, x: Float32Array, w: Float32Array, m: number, n: number, k: number, block: number): number {
  let worst = 0;
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      let bound = 0;
      let mag = 0;
      for (let a = 0; a < k; a += block) {
        let amax = 0;
        let wabs = 0;
        for (let t = a; t < a + block; t++) {
          const xv = x[i * k + t] as number;
          const wv = w[j * k + t] as number;
          s += xv * wv;
          mag += Math.abs(xv * wv);
          amax = Math.max(amax, Math.abs(xv));
          wabs += Math.abs(wv);
        }
        bound += (amax / 254) * wabs;
      }
      const limit = bound * (1 + 1e-5) + 1e-6 * (mag + bound);
      worst = Math.max(worst, Math.abs((y[i * n + j] as number) - s) / limit);
    }
  }
  return worst;
}
