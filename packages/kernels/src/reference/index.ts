// The pure-TypeScript backend: every op of @ninodes/kernels with the same signature, synchronous,
// no native code. The portable fallback and the oracle the native kernels are tested against.
export { dequantize } from './gguf-dequantize.js';
export { attention } from './attention.js';
export { gelu, silu, swiglu } from './activations.js';
export { add, addcmul, modulate, mul, scale } from './elementwise.js';
export { layerNorm, rmsNorm, softmax } from './norms.js';
export { ropeSplitHalf } from './rope.js';
