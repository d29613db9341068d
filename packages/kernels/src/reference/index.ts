// The pure-TypeScript backend: every op of @ninodes/kernels with the same signature, synchronous,
// no native code. The portable fallback and the oracle the native kernels are tested against.
export * from './kernels-b.js';
export * from './kernels-a.js';
