// kernels-B's part of the reference backend: GGUF decode and the fp32 transformer ops.
export { dequantize } from './gguf-dequantize.js';
export { attention } from './attention.js';
export { gelu, silu, swiglu } from './activations.js';
export { add, addcmul, modulate, mul, scale } from './elementwise.js';
export { layerNorm, rmsNorm, softmax } from './norms.js';
export { ropeSplitHalf } from './rope.js';
