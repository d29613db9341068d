import { requireDType } from '../arg-checks.js';
import { type DecodeFp8Options, type EncodeFp8Options, type Fp8Format, FP8_FORMATS, resolveDecodeScale, resolveEncodeFp8 } from '../fp8-options.js';
import { Tensor } from '../tensor.js';
import { bitsOfFloat, e4m3fnToF32Bits, e5m2ToF32Bits, elementHash, f32BitsToE4m3fn, f32BitsToE5m2, floatOfBits } from './float-bits.js';

const MAX: Record<Fp8Format, number> = { f8_e4m3fn: 448, f8_e5m2: 57344 };

function codecs(format: Fp8Format): { encode: (bits: number) => number; decode: (b: number) => number } {
  return format === 'f8_e4m3fn'
    ? { encode: f32BitsToE4m3fn, decode: (b) => floatOfBits(e4m3fnToF32Bits(b)) }
    : { encode: f32BitsToE5m2, decode: (b) => floatOfBits(e5m2ToF32Bits(b)) };
}

/** Reference fp8 encode: PyTorch cast semantics, comfy-kitchen clamp-then-cast, optional stochastic rounding. */
export function encodeFp8<F extends Fp8Format>(x: Tensor, format: F, opts?: EncodeFp8Options): Tensor<F> {
  requireDType(x, ['f32'], 'encodeFp8 input');
  const o = resolveEncodeFp8(format, opts);
  const { encode, decode } = codecs(o.format);
  const max = MAX[o.format];
  const inBits = new Uint32Array(x.bytes().slice().buffer);
  const out = Tensor.zeros(format, x.shape);
  const y = new Uint8Array(out.buffer);
  const inv = o.scale === undefined ? 1 : Math.fround(1 / Math.fround(o.scale));
  for (let i = 0; i < inBits.length; i++) {
    const bits = inBits[i] as number;
    if ((bits & 0x7fffffff) > 0x7f800000) {
      y[i] = encode(bits); // NaN keeps its sign through the multiply and the clamp
      continue;
    }
    let v = floatOfBits(bits);
    if (o.scale !== undefined) v = Math.fround(v * inv);
    if (o.clamp) v = Math.min(Math.max(v, -max), max);
    if (o.seed === undefined) {
      y[i] = encode(bitsOfFloat(v));
      continue;
    }
    const sign = v < 0 || Object.is(v, -0) ? 0x80 : 0;
    const mag = Math.abs(v);
    if (mag >= max) {
      y[i] = sign | encode(bitsOfFloat(max));
      continue;
    }
    const code = encode(bitsOfFloat(mag));
    const d = decode(code);
    if (d === mag) {
      y[i] = sign | code;
      continue;
    }
    const lo = d < mag ? code : code - 1;
    const dlo = decode(lo);
    const dhi = decode(lo + 1);
    const u = (elementHash(o.seed, i) >>> 8) * 2 ** -24;
    y[i] = sign | (u * (dhi - dlo) < mag - dlo ? lo + 1 : lo);
  }
  return out;
}

/** Reference fp8 decode to f32 (times `scale` in float32 when given). */
export function decodeFp8(x: Tensor, opts?: DecodeFp8Options): Tensor<'f32'> {
  requireDType(x, FP8_FORMATS, 'decodeFp8 input');
  const scale = resolveDecodeScale(opts);
  const { decode } = codecs(x.dtype as Fp8Format);
  const src = x.bytes();
  const out = Tensor.zeros('f32', x.shape);
  const bits = new Uint32Array(out.buffer);
  const table = new Uint32Array(256);
  for (let b = 0; b < 256; b++) {
    const raw = x.dtype === 'f8_e4m3fn' ? e4m3fnToF32Bits(b) : e5m2ToF32Bits(b);
    table[b] = scale === undefined || Number.isNaN(decode(b)) ? raw : bitsOfFloat(Math.fround(decode(b) * Math.fround(scale)));
  }
  for (let i = 0; i < src.length; i++) bits[i] = table[src[i] as number] as number;
  return out;
}
