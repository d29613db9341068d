import { requireDType, show } from '../arg-checks.js';
import type { ElementDType } from '../dtype.js';
import { KernelsError } from '../error-codes.js';
import { Tensor } from '../tensor.js';
import {
  bf16ToF32Bits,
  bitsOfFloat,
  e4m3fnToF32Bits,
  e5m2ToF32Bits,
  f16ToF32Bits,
  f32BitsToBf16,
  f32BitsToF16,
} from './float-bits.js';

export type CastTarget = 'f32' | 'f16' | 'bf16';
export const CAST_SOURCES = ['f32', 'f16', 'bf16', 'f8_e4m3fn', 'f8_e5m2', 'i8', 'u8', 'i32'] as const satisfies readonly ElementDType[];
export type CastSource = (typeof CAST_SOURCES)[number];
export const CAST_TARGETS = ['f32', 'f16', 'bf16'] as const satisfies readonly CastTarget[];

export function requireCastTarget(to: unknown): asserts to is CastTarget {
  if (!(CAST_TARGETS as readonly unknown[]).includes(to)) {
    throw new KernelsError('DTYPE_MISMATCH', `cast: target dtype ${show(to)} is not one of ${CAST_TARGETS.join(', ')}`, {
      value: to,
      where: 'cast target',
      hint: 'fp8 targets go through encodeFp8, integer targets through quantizeRowsInt8',
    });
  }
}

/** The f32 bits of every element of a cast source. */
function sourceBits(x: Tensor<CastSource>): Uint32Array {
  const n = x.numel;
  const out = new Uint32Array(n);
  const bytes = x.bytes();
  switch (x.dtype) {
    case 'f32':
      out.set(new Uint32Array(bytes.buffer, bytes.byteOffset, n));
      break;
    case 'f16':
    case 'bf16': {
      const src = new Uint16Array(bytes.buffer, bytes.byteOffset, n);
      const decode = x.dtype === 'f16' ? f16ToF32Bits : bf16ToF32Bits;
      for (let i = 0; i < n; i++) out[i] = decode(src[i] as number);
      break;
    }
    case 'f8_e4m3fn':
    case 'f8_e5m2': {
      const decode = x.dtype === 'f8_e4m3fn' ? e4m3fnToF32Bits : e5m2ToF32Bits;
      for (let i = 0; i < n; i++) out[i] = decode(bytes[i] as number);
      break;
    }
    case 'i8':
    case 'u8':
    case 'i32': {
      const src = x.data as Int8Array | Uint8Array | Int32Array;
      for (let i = 0; i < n; i++) out[i] = bitsOfFloat(Math.fround(src[i] as number));
      break;
    }
  }
  return out;
}

/** Reference cast: f32 <-> f16 <-> bf16 (round to nearest even), fp8 and integer decode to float. */
export function cast<T extends CastTarget>(x: Tensor, to: T): Tensor<T> {
  requireDType(x, CAST_SOURCES, 'cast input');
  requireCastTarget(to);
  const bits = sourceBits(x);
  const out = Tensor.zeros(to, x.shape);
  if (to === 'f32') {
    new Uint32Array(out.buffer).set(bits);
  } else {
    const dst = new Uint16Array(out.buffer);
    const encode = to === 'f16' ? f32BitsToF16 : f32BitsToBf16;
    for (let i = 0; i < bits.length; i++) dst[i] = encode(bits[i] as number);
  }
  return out;
}
