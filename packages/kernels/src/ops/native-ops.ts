// Typed view of the native functions behind the GGUF decode and transformer ops. The addon checks
// every length again; these wrappers exist so TypeScript callers get shapes checked first, with
// NinodesError details, and never hand the addon anything but Float32Array/Uint8Array views.
import { fromNativeError } from '../errors.js';
import { nativeAddon } from '../native-addon.js';

type F32 = Float32Array;

export interface TransformerOpsAddon {
  ggufDequantize(dtype: string, src: Uint8Array, dst: Float32Array | Uint16Array): void;
  ggufDequantizeAsync(dtype: string, src: Uint8Array, dst: Float32Array | Uint16Array): Promise<void>;
  rmsNormF32(x: F32, weight: F32 | null, out: F32, rows: number, dim: number, eps: number): void;
  layerNormF32(x: F32, weight: F32 | null, bias: F32 | null, out: F32, rows: number, dim: number, eps: number): void;
  softmaxF32(x: F32, out: F32, rows: number, dim: number): void;
  siluF32(x: F32, out: F32): void;
  geluTanhF32(x: F32, out: F32): void;
  swigluF32(x: F32, out: F32, rows: number, features: number): void;
  addF32(a: F32, b: F32, out: F32): void;
  mulF32(a: F32, b: F32, out: F32): void;
  addcmulF32(x: F32, a: F32, b: F32, out: F32): void;
  modulateF32(x: F32, shift: F32, scale: F32, out: F32): void;
  scaleF32(x: F32, s: number, out: F32): void;
  gatedResidualF32(x: F32, out: F32, gate: F32, y: F32): void;
  rmsNormModulateF32(x: F32, weight: F32 | null, shift: F32, scale: F32, y: F32, rows: number, dim: number, eps: number): void;
  ropeSplitHalfF32(x: F32, angles: F32, out: F32, seq: number, heads: number, headDim: number, rotDim: number, angleColumns: number): void;
  attentionF32(q: F32, k: F32, v: F32, out: F32, heads: number, seqQ: number, seqK: number, headDim: number, scale: number): Promise<void>;
  attentionNaiveF32(q: F32, k: F32, v: F32, out: F32, heads: number, seqQ: number, seqK: number, headDim: number, scale: number): Promise<void>;
}

export function opsAddon(): TransformerOpsAddon {
  return nativeAddon() as unknown as TransformerOpsAddon;
}

/** Runs a synchronous native call, re-throwing its error as a NinodesError. */
export function callNative<T>(where: string, fn: (addon: TransformerOpsAddon) => T): T {
  try {
    return fn(opsAddon());
  } catch (error) {
    throw fromNativeError(error, where);
  }
}

/** Awaits an asynchronous native call, re-throwing its rejection as a NinodesError. */
export async function callNativeAsync<T>(where: string, fn: (addon: TransformerOpsAddon) => Promise<T>): Promise<T> {
  let promise: Promise<T>;
  try {
    promise = fn(opsAddon());
  } catch (error) {
    throw fromNativeError(error, where);
  }
  try {
    return await promise;
  } catch (error) {
    throw fromNativeError(error, where);
  }
}
