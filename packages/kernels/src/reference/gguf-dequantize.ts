// Pure-TypeScript GGUF block decode: ggml's dequantize_row_* with every float32 operation rounded
// by Math.fround, so it gives the same bits as ggml, gguf-py and the native decoder.
import { BLOCK_DTYPES, type BlockDType, byteSizeOf, isBlockDType } from '../dtype.js';
import { NinodesError } from '../errors.js';
import { KernelsError } from '../error-codes.js';
import { requireDType } from '../arg-checks.js';
import { Tensor } from '../tensor.js';
import { bf16BitsFromF32, DEQUANTIZE_SOURCES, type DequantizeSource } from '../gguf-dtypes.js';

const f = Math.fround;
const KVALUES_IQ4NL = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

const f16Scratch = new DataView(new ArrayBuffer(4));

export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) {
    if (mant === 0) return sign * Infinity;
    f16Scratch.setUint32(0, ((h & 0x8000) << 16) | 0x7f800000 | (mant << 13));
    return f16Scratch.getFloat32(0);
  }
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

type Decoder = (b: Uint8Array, o: number, y: Float32Array, yo: number) => void;

const u16 = (b: Uint8Array, o: number): number => (b[o] as number) | ((b[o + 1] as number) << 8);
const u32 = (b: Uint8Array, o: number): number => (u16(b, o) | (u16(b, o + 2) << 16)) >>> 0;
const i8 = (v: number): number => (v << 24) >> 24;
const at = (b: Uint8Array, o: number): number => b[o] as number;

function scaleMinK4(j: number, q: Uint8Array, o: number): [number, number] {
  if (j < 4) return [at(q, o + j) & 63, at(q, o + j + 4) & 63];
  return [(at(q, o + j + 4) & 0xf) | ((at(q, o + j - 4) >> 6) << 4), (at(q, o + j + 4) >> 4) | ((at(q, o + j) >> 6) << 4)];
}

const DECODERS: Record<BlockDType, Decoder> = {
  q4_0(b, o, y, yo) {
    const d = halfToFloat(u16(b, o));
    for (let j = 0; j < 16; j++) {
      const q = at(b, o + 2 + j);
      y[yo + j] = f(((q & 0xf) - 8) * d);
      y[yo + j + 16] = f(((q >> 4) - 8) * d);
    }
  },
  q4_1(b, o, y, yo) {
    const d = halfToFloat(u16(b, o));
    const m = halfToFloat(u16(b, o + 2));
    for (let j = 0; j < 16; j++) {
      const q = at(b, o + 4 + j);
      y[yo + j] = f(f((q & 0xf) * d) + m);
      y[yo + j + 16] = f(f((q >> 4) * d) + m);
    }
  },
  q5_0(b, o, y, yo) {
    const d = halfToFloat(u16(b, o));
    const qh = u32(b, o + 2);
    for (let j = 0; j < 16; j++) {
      const q = at(b, o + 6 + j);
      const xh0 = ((qh >>> j) << 4) & 0x10;
      const xh1 = (qh >>> (j + 12)) & 0x10;
      y[yo + j] = f((((q & 0xf) | xh0) - 16) * d);
      y[yo + j + 16] = f((((q >> 4) | xh1) - 16) * d);
    }
  },
  q5_1(b, o, y, yo) {
    const d = halfToFloat(u16(b, o));
    const m = halfToFloat(u16(b, o + 2));
    const qh = u32(b, o + 4);
    for (let j = 0; j < 16; j++) {
      const q = at(b, o + 8 + j);
      const xh0 = ((qh >>> j) << 4) & 0x10;
      const xh1 = (qh >>> (j + 12)) & 0x10;
      y[yo + j] = f(f(((q & 0xf) | xh0) * d) + m);
      y[yo + j + 16] = f(f(((q >> 4) | xh1) * d) + m);
    }
  },
  q8_0(b, o, y, yo) {
    const d = halfToFloat(u16(b, o));
    for (let j = 0; j < 32; j++) y[yo + j] = f(i8(at(b, o + 2 + j)) * d);
  },
  q2_k(b, o, y, yo) {
    const d = halfToFloat(u16(b, o + 80));
    const dmin = halfToFloat(u16(b, o + 82));
    let q = o + 16;
    let is = 0;
    let k = yo;
    for (let n = 0; n < 256; n += 128) {
      for (let shift = 0; shift < 8; shift += 2) {
        for (const half of [0, 16]) {
          const sc = at(b, o + is++);
          const dl = f(d * (sc & 0xf));
          const ml = f(dmin * (sc >> 4));
          for (let l = 0; l < 16; l++) y[k++] = f(f(dl * ((at(b, q + l + half) >> shift) & 3)) - ml);
        }
      }
      q += 32;
    }
  },
  q3_k(b, o, y, yo) {
    const dAll = halfToFloat(u16(b, o + 108));
    const a0 = u32(b, o + 96);
    const a1 = u32(b, o + 100);
    const tmp = u32(b, o + 104);
    const km1 = 0x03030303;
    const km2 = 0x0f0f0f0f;
    const aux = [
      ((a0 & km2) | (((tmp >>> 0) & km1) << 4)) >>> 0,
      ((a1 & km2) | (((tmp >>> 2) & km1) << 4)) >>> 0,
      (((a0 >>> 4) & km2) | (((tmp >>> 4) & km1) << 4)) >>> 0,
      (((a1 >>> 4) & km2) | (((tmp >>> 6) & km1) << 4)) >>> 0,
    ];
    const scales = (i: number): number => i8(((aux[i >> 2] as number) >>> (8 * (i & 3))) & 0xff);
    let q = o + 32;
    let is = 0;
    let m = 1;
    let k = yo;
    for (let n = 0; n < 256; n += 128) {
      for (let shift = 0; shift < 8; shift += 2) {
        for (const half of [0, 16]) {
          const dl = f(dAll * (scales(is++) - 32));
          for (let l = 0; l < 16; l++) {
            const v = ((at(b, q + l + half) >> shift) & 3) - (at(b, o + l + half) & m ? 0 : 4);
            y[k++] = f(dl * v);
          }
        }
        m <<= 1;
      }
      q += 32;
    }
  },
  q4_k(b, o, y, yo) {
    const d = halfToFloat(u16(b, o));
    const dmin = halfToFloat(u16(b, o + 2));
    let q = o + 16;
    let k = yo;
    for (let is = 0; is < 8; is += 2) {
      const [sc1, m1s] = scaleMinK4(is, b, o + 4);
      const [sc2, m2s] = scaleMinK4(is + 1, b, o + 4);
      const d1 = f(d * sc1), m1 = f(dmin * m1s), d2 = f(d * sc2), m2 = f(dmin * m2s);
      for (let l = 0; l < 32; l++) y[k++] = f(f(d1 * (at(b, q + l) & 0xf)) - m1);
      for (let l = 0; l < 32; l++) y[k++] = f(f(d2 * (at(b, q + l) >> 4)) - m2);
      q += 32;
    }
  },
  q5_k(b, o, y, yo) {
    const d = halfToFloat(u16(b, o));
    const dmin = halfToFloat(u16(b, o + 2));
    const qh = o + 16;
    let ql = o + 48;
    let u1 = 1, u2 = 2;
    let k = yo;
    for (let is = 0; is < 8; is += 2) {
      const [sc1, m1s] = scaleMinK4(is, b, o + 4);
      const [sc2, m2s] = scaleMinK4(is + 1, b, o + 4);
      const d1 = f(d * sc1), m1 = f(dmin * m1s), d2 = f(d * sc2), m2 = f(dmin * m2s);
      for (let l = 0; l < 32; l++) y[k++] = f(f(d1 * ((at(b, ql + l) & 0xf) + (at(b, qh + l) & u1 ? 16 : 0))) - m1);
      for (let l = 0; l < 32; l++) y[k++] = f(f(d2 * ((at(b, ql + l) >> 4) + (at(b, qh + l) & u2 ? 16 : 0))) - m2);
      ql += 32;
      u1 <<= 2;
      u2 <<= 2;
    }
  },
  q6_k(b, o, y, yo) {
    const d = halfToFloat(u16(b, o + 208));
    let ql = o, qh = o + 128, sc = o + 192, k = yo;
    for (let n = 0; n < 256; n += 128) {
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const q1 = i8((at(b, ql + l) & 0xf) | (((at(b, qh + l) >> 0) & 3) << 4)) - 32;
        const q2 = i8((at(b, ql + l + 32) & 0xf) | (((at(b, qh + l) >> 2) & 3) << 4)) - 32;
        const q3 = i8((at(b, ql + l) >> 4) | (((at(b, qh + l) >> 4) & 3) << 4)) - 32;
        const q4 = i8((at(b, ql + l + 32) >> 4) | (((at(b, qh + l) >> 6) & 3) << 4)) - 32;
        y[k + l] = f(f(d * i8(at(b, sc + is))) * q1);
        y[k + l + 32] = f(f(d * i8(at(b, sc + is + 2))) * q2);
        y[k + l + 64] = f(f(d * i8(at(b, sc + is + 4))) * q3);
        y[k + l + 96] = f(f(d * i8(at(b, sc + is + 6))) * q4);
      }
      k += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  },
  iq4_nl(b, o, y, yo) {
    const d = halfToFloat(u16(b, o));
    for (let j = 0; j < 16; j++) {
      const q = at(b, o + 2 + j);
      y[yo + j] = f(d * (KVALUES_IQ4NL[q & 0xf] as number));
      y[yo + j + 16] = f(d * (KVALUES_IQ4NL[q >> 4] as number));
    }
  },
  iq4_xs(b, o, y, yo) {
    const d = halfToFloat(u16(b, o));
    const scalesH = u16(b, o + 2);
    let qs = o + 8;
    let k = yo;
    for (let ib = 0; ib < 8; ib++) {
      const ls = ((at(b, o + 4 + (ib >> 1)) >> (4 * (ib % 2))) & 0xf) | (((scalesH >> (2 * ib)) & 3) << 4);
      const dl = f(d * (ls - 32));
      for (let j = 0; j < 16; j++) {
        const q = at(b, qs + j);
        y[k + j] = f(dl * (KVALUES_IQ4NL[q & 0xf] as number));
        y[k + j + 16] = f(dl * (KVALUES_IQ4NL[q >> 4] as number));
      }
      k += 32;
      qs += 16;
    }
  },
};

/** Decodes raw bytes of `dtype` into `numel` float32 values (checks the byte length first). */
export function dequantizeBytesRef(dtype: DequantizeSource, bytes: Uint8Array, numel: number): Float32Array {
  const out = new Float32Array(numel);
  if (dtype === 'f32' || dtype === 'f16' || dtype === 'bf16') {
    const size = dtype === 'f32' ? 4 : 2;
    if (bytes.byteLength !== numel * size) throw lengthError(dtype, bytes.byteLength, numel);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let i = 0; i < numel; i++) {
      if (dtype === 'f32') out[i] = view.getFloat32(4 * i, true);
      else if (dtype === 'f16') out[i] = halfToFloat(view.getUint16(2 * i, true));
      else {
        f16Scratch.setUint32(0, view.getUint16(2 * i, true) << 16);
        out[i] = f16Scratch.getFloat32(0);
      }
    }
    return out;
  }
  const { blockElements, blockBytes } = BLOCK_DTYPES[dtype];
  if (numel % blockElements !== 0 || bytes.byteLength !== (numel / blockElements) * blockBytes) {
    throw lengthError(dtype, bytes.byteLength, numel);
  }
  const decode = DECODERS[dtype];
  for (let blk = 0; blk < numel / blockElements; blk++) decode(bytes, blk * blockBytes, out, blk * blockElements);
  return out;
}

function lengthError(dtype: string, bytes: number, numel: number): NinodesError {
  return new KernelsError('BLOCK_LENGTH_MISMATCH', `dequantize: ${bytes} bytes of ${dtype} do not encode ${numel} values`, {
    value: { dtype, bytes, numel },
    where: 'dequantize',
    hint: 'the byte range must hold exactly the whole blocks of the tensor shape',
  });
}

/** Reference `dequantize`: any GGUF block dtype (or f32/f16/bf16) to f32 or bf16. */
export function dequantize(x: Tensor, to: 'f32' | 'bf16' = 'f32'): Tensor<'f32'> | Tensor<'bf16'> {
  requireDType(x, DEQUANTIZE_SOURCES, 'dequantize(x)');
  const src = x;
  if (to !== 'f32' && to !== 'bf16') {
    throw new KernelsError('INVALID_ARGUMENT', `dequantize: target dtype must be 'f32' or 'bf16', got '${String(to)}'`, { value: to, where: 'dequantize(to)' });
  }
  if (isBlockDType(src.dtype)) byteSizeOf(src.dtype, src.shape, 'dequantize(x)');
  const values = dequantizeBytesRef(src.dtype, src.bytes(), src.numel);
  if (to === 'f32') return Tensor.fromArray('f32', src.shape, values);
  const bits = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) bits[i] = bf16BitsFromF32(values[i] as number);
  return Tensor.fromArray('bf16', src.shape, bits);
}
