// Random, reproducible damage to checkpoint headers: bit flips, byte and length-field overwrites,
// truncations, inserted and deleted bytes, and (safetensors) numbers and block indices rewritten in
// the JSON. Mutation i of a soak is a pure function of (seed, i), so a failure is replayed by index.

/** A checkpoint as its parser sees it: the bytes it reads, and the size of the whole file. */
export interface HeaderSample {
  readonly format: 'safetensors' | 'gguf';
  readonly name: string;
  /** The whole file (small seeds: a header parser may read any of it once lengths are damaged). */
  readonly bytes: Uint8Array;
  readonly fileSize: number;
  /** Where the header ends: mutations aim inside it. */
  readonly headerEnd: number;
}

export interface Mutation {
  readonly sample: HeaderSample;
  /** One entry per operator applied, e.g. `flip@123.4`, `u64@8=18446744073709551615`. */
  readonly ops: readonly string[];
}

/** mulberry32: small, fast and good enough to spread mutations; seeded per mutation index. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const INTERESTING_U64 = [0n, 1n, 7n, 8n, 0x7fn, 0xffn, 0x7fffffffn, 0xffffffffn, 2n ** 32n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 63n, 2n ** 64n - 1n];
const INTERESTING_BYTES = [0x00, 0xff, 0x7f, 0x80, 0x39, 0x22, 0x7b, 0x7d, 0x2c, 0x2d, 0x5b, 0x5d, 0x3a, 0x5c];
const NUMBER_TEXTS = ['999999999', '99999999999999999999999', '-1', '1e308', '0', '4294967296', '9007199254740993', '1.5', 'NaN'];

/** Mutation `index` of the soak with `seed`: one to three operators on one of the samples. */
export function mutate(samples: readonly HeaderSample[], seed: number, index: number): Mutation {
  const r = rng((seed ^ Math.imul(index + 1, 0x9e3779b9)) >>> 0);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const int = (n: number): number => Math.floor(r() * n);
  const sample = samples[index % samples.length] as HeaderSample;
  let bytes: Uint8Array = Uint8Array.from(sample.bytes);
  let fileSize = sample.fileSize;
  const ops: string[] = [];
  // Some safetensors mutations only rewrite one number, so the JSON stays valid and the damage
  // reaches what is derived from names and shapes (block counts) instead of the JSON parser.
  const structural = sample.format === 'safetensors' && r() < 0.15;
  const count = structural ? 1 : 1 + int(3);
  for (let k = 0; k < count; k++) {
    const h = Math.max(1, Math.min(bytes.length, sample.headerEnd));
    const op = structural ? 7 : int(sample.format === 'safetensors' ? 8 : 7);
    if (op === 0) {
      const n = 1 + int(4);
      for (let j = 0; j < n; j++) {
        const at = int(h);
        const bit = int(8);
        bytes[at] = (bytes[at] as number) ^ (1 << bit);
        ops.push(`flip@${at}.${bit}`);
      }
    } else if (op === 1) {
      const at = int(h);
      const v = r() < 0.5 ? pick(INTERESTING_BYTES) : int(256);
      bytes[at] = v;
      ops.push(`byte@${at}=${v}`);
    } else if (op === 2 && bytes.length >= 8) {
      // length and count fields: the first 8 bytes (safetensors) or any 4/8 bytes in the header
      const at = sample.format === 'safetensors' && r() < 0.4 ? 0 : int(Math.max(1, h - 7));
      const v = r() < 0.8 ? pick(INTERESTING_U64) : BigInt(pick([h, h + 1, h - 1, fileSize, fileSize + 1, fileSize * 2]));
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      if (r() < 0.5 && at + 8 <= bytes.length) {
        view.setBigUint64(at, BigInt.asUintN(64, v), true);
        ops.push(`u64@${at}=${v}`);
      } else if (at + 4 <= bytes.length) {
        view.setUint32(at, Number(BigInt.asUintN(32, v)), true);
        ops.push(`u32@${at}=${BigInt.asUintN(32, v)}`);
      }
    } else if (op === 3) {
      const size = int(fileSize);
      if (size < bytes.length) bytes = bytes.slice(0, size);
      fileSize = size;
      ops.push(`truncate=${size}`);
    } else if (op === 4) {
      const at = int(h);
      const n = 1 + int(16);
      const extra = Uint8Array.from({ length: n }, () => (r() < 0.5 ? pick(INTERESTING_BYTES) : int(256)));
      bytes = concat(bytes.subarray(0, at), extra, bytes.subarray(at));
      fileSize += n;
      ops.push(`insert@${at}+${n}`);
    } else if (op === 5) {
      const at = int(h);
      const n = Math.min(1 + int(16), bytes.length - at);
      bytes = concat(bytes.subarray(0, at), bytes.subarray(at + n));
      fileSize -= n;
      ops.push(`delete@${at}-${n}`);
    } else if (op === 6) {
      const from = int(h);
      const to = int(h);
      const n = Math.min(1 + int(32), bytes.length - from, bytes.length - to);
      bytes.copyWithin(to, from, from + n);
      ops.push(`copy@${from}->${to}+${n}`);
    } else if (op === 7) {
      // safetensors JSON: rewrite one run of digits (an offset, a shape, a block index)
      const text = new TextDecoder('latin1').decode(bytes.subarray(8, h));
      // half the time a block index: names are where structure (layer counts) comes from
      const runs = [...text.matchAll(r() < 0.5 ? /(?<=blocks\.)\d+/g : /\d+/g)];
      if (runs.length > 0) {
        const m = pick(runs);
        const replacement = pick(NUMBER_TEXTS);
        const at = 8 + (m.index as number);
        const enc = new TextEncoder().encode(replacement);
        const delta = enc.length - m[0].length;
        bytes = concat(bytes.subarray(0, at), enc, bytes.subarray(at + m[0].length));
        fileSize += delta;
        // the header length follows the edit, so the JSON stays whole and the number is what is tested
        const view = new DataView(bytes.buffer, bytes.byteOffset, 8);
        view.setBigUint64(0, BigInt.asUintN(64, view.getBigUint64(0, true) + BigInt(delta)), true);
        ops.push(`number@${at}:${m[0]}->${replacement}`);
      }
    }
  }
  fileSize = Math.max(fileSize, bytes.length);
  return { sample: { ...sample, bytes, fileSize }, ops };
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
