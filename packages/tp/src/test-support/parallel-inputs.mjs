// Deterministic activations shared by parallel-linear.test.ts and its rank processes.
export function inputOf(name, m, k) {
  let seed = 0;
  for (const c of name) seed = (seed * 31 + c.charCodeAt(0)) % 9973;
  return Float32Array.from({ length: m * k }, (_, i) => Math.sin(i * 0.013 + seed) * (1 + ((i * 7 + seed) % 13) / 4));
}
