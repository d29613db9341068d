// The pure-TypeScript reference backend, exported as the `reference` namespace: same signatures as
// the native ops, synchronous, used as the portable fallback and as the test oracle.
export { cast } from './cast.js';
export { decodeFp8, encodeFp8 } from './fp8.js';
export { hadamard, hadamardSync } from './hadamard.js';
export { int8Linear, int8Matmul, linear, quantizeRowsInt8, quantizeWeightInt8 } from './linear.js';
