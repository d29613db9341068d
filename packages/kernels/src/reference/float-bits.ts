// Bit-level float codecs with PyTorch's semantics (c10 Half, BFloat16, Float8_e4m3fn, Float8_e5m2),
// written from the definitions so they serve as the oracle for the native codecs. Inputs and
// outputs are raw bits: reading NaN through a JS number could change its payload.
const scratchF = new Float32Array(1);
const scratchU = new Uint32Array(scratchF.buffer);

export function floatOfBits(bits: number): number {
  scratchU[0] = bits >>> 0;
  return scratchF[0] as number;
}

export function bitsOfFloat(value: number): number {
  scratchF[0] = value;
  return scratchU[0] as number;
}

/** f32 bits -> f16 bits, round to nearest even; NaN -> sign | 0x7E00. */
export function f32BitsToF16(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  let abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return sign | 0x7e00;
  if (abs >= 0x477ff000) return sign | 0x7c00;
  if (abs < 0x38800000) {
    const shifted = Math.fround(floatOfBits(abs) + 0.5);
    return sign | (bitsOfFloat(shifted) - 0x3f000000);
  }
  const odd = (abs >>> 13) & 1;
  abs = (abs + 0xc8000fff + odd) >>> 0;
  return sign | (abs >>> 13);
}

/** f16 bits -> f32 bits (exact; NaN gets the quiet bit). */
export function f16ToF32Bits(h: number): number {
  const sign = (h & 0x8000) << 16;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0x1f) return (sign | 0x7f800000 | (mant !== 0 ? 0x400000 | (mant << 13) : 0)) >>> 0;
  if (exp === 0) return (sign | bitsOfFloat(mant * 2 ** -24)) >>> 0;
  return (sign | ((exp + 112) << 23) | (mant << 13)) >>> 0;
}

/** f32 bits -> bf16 bits, round to nearest even; NaN -> 0x7FC0. */
export function f32BitsToBf16(x: number): number {
  if ((x & 0x7fffffff) > 0x7f800000) return 0x7fc0;
  return Math.floor((x + 0x7fff + ((x >>> 16) & 1)) / 65536) & 0xffff;
}

export function bf16ToF32Bits(b: number): number {
  return (b << 16) >>> 0;
}

/**
 * f32 bits -> float8_e4m3fn byte as PyTorch 2.13 casts: round to nearest even, |x| > 448 and ±inf
 * saturate to ±448 (0x7E), NaN -> 0x7F with the sign.
 */
export function f32BitsToE4m3fn(bits: number): number {
  const sign = (bits >>> 24) & 0x80;
  let x = bits & 0x7fffffff;
  let r: number;
  if (x > 0x7f800000) {
    r = 0x7f;
  } else if (x > 0x43e00000) {
    r = 0x7e;
  } else if (x < 121 * 2 ** 23) {
    const magic = 141 * 2 ** 23;
    r = (bitsOfFloat(Math.fround(floatOfBits(x) + floatOfBits(magic))) - magic) & 0xff;
  } else {
    const odd = (x >>> 20) & 1;
    x = x - 120 * 2 ** 23 + 0x7ffff + odd;
    r = Math.floor(x / 2 ** 20) & 0xff;
  }
  return r | sign;
}

/** f32 bits -> float8_e5m2 byte (PyTorch cast: >= 65536 -> inf, NaN -> 0x7F, with the sign). */
export function f32BitsToE5m2(bits: number): number {
  const sign = (bits >>> 24) & 0x80;
  let x = bits & 0x7fffffff;
  let r: number;
  if (x >= 143 * 2 ** 23) {
    r = x > 0x7f800000 ? 0x7f : 0x7c;
  } else if (x < 113 * 2 ** 23) {
    const magic = 134 * 2 ** 23;
    r = (bitsOfFloat(Math.fround(floatOfBits(x) + floatOfBits(magic))) - magic) & 0xff;
  } else {
    const odd = (x >>> 21) & 1;
    x = x - 112 * 2 ** 23 + 0xfffff + odd;
    r = Math.floor(x / 2 ** 21) & 0xff;
  }
  return r | sign;
}

export function e4m3fnToF32Bits(b: number): number {
  const sign = (b & 0x80) << 24;
  const exp = (b >>> 3) & 0xf;
  const mant = b & 7;
  if (exp === 0xf && mant === 7) return (sign | 0x7fc00000) >>> 0;
  if (exp === 0) return (sign | bitsOfFloat(mant * 2 ** -9)) >>> 0;
  return (sign | ((exp + 120) << 23) | (mant << 20)) >>> 0;
}

export function e5m2ToF32Bits(b: number): number {
  return f16ToF32Bits(b << 8);
}

function fmix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** Per-element random bits for stochastic rounding: a pure function of (seed, flat index). */
export function elementHash(seed: number, index: number): number {
  const lo = index >>> 0;
  const hi = Math.floor(index / 2 ** 32) >>> 0;
  return fmix32((Math.imul(lo, 0x9e3779b9) ^ fmix32((seed + hi) >>> 0)) >>> 0);
}

/** Round half to even of a float (what torch.round and the x86 RNE mode do). */
export function roundHalfEven(v: number): number {
  const fl = Math.floor(v);
  const diff = v - fl;
  if (diff < 0.5) return fl;
  if (diff > 0.5) return fl + 1;
  return fl % 2 === 0 ? fl : fl + 1;
}
