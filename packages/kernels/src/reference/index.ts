// The pure-TypeScript backend: every op of @ninodes/kernels with the same signature, synchronous,
// no native code. The portable fallback and the oracle the native kernels are tested against.
export { cast } from './cast.js';
export { decodeFp8, encodeFp8 } from './fp8.js';
export { hadamard, hadamardSync } from './hadamard.js';
export { int8Linear, int8LinearQuantized, int8Matmul, linear, quantizeRowsInt8, quantizeWeightInt8 } from './linear.js';
export { dequantize } from './gguf-dequantize.js';
export { attention } from './attention.js';
export { gelu, silu, swiglu } from './activations.js';
export { add, addcmul, modulate, mul, scale } from './elementwise.js';
export { layerNorm, rmsNorm, softmax } from './norms.js';
export { ropeSplitHalf } from './rope.js';
