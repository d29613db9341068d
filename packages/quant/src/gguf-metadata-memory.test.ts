// A GGUF header costs memory in proportion to its bytes (issue 17.9): metadata arrays (a
// tokenizer's vocabulary, a 24M-element u8 table) stay as views over the header bytes and are
// decoded on access, instead of one JS object per element (70-150x the file's bytes).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const HANG_MS = Number(process.env.NINODES_TEST_HANG_MS ?? 900_000); // the shared hang guard (vitest.shared.ts)

const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'ninodes-gguf-mem-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Builds, in the child, a GGUF with a 24 MB u8 array and a 1.5M-string array (about 24 MB), parses
// it with the header kept alive, and reports the heap it holds (after a full GC) per header byte.
const script = `
const q = await import(${JSON.stringify(dist)});
const fs = await import('node:fs');
const path = process.argv[1];
const nU8 = 24 * 1024 * 1024, nStr = 1_500_000;
const strings = []; let strBytes = 0;
for (let i = 0; i < nStr; i++) { const s = 'tok_' + i.toString(36); strings.push(s); strBytes += 8 + s.length; }
const keys = ['big.u8', 'big.tokens'];
const size = 24 + keys.reduce((a, k) => a + 8 + k.length + 4 + 4 + 8, 0) + nU8 + strBytes;
const b = Buffer.alloc(size); let o = 0;
o = b.writeUInt32LE(0x46554747, o); o = b.writeUInt32LE(3, o); b.writeBigUInt64LE(0n, o); o += 8; b.writeBigUInt64LE(2n, o); o += 8;
const key = (k) => { b.writeBigUInt64LE(BigInt(k.length), o); o += 8; o += b.write(k, o, 'latin1'); };
key('big.u8'); o = b.writeUInt32LE(9, o); o = b.writeUInt32LE(0, o); b.writeBigUInt64LE(BigInt(nU8), o); o += 8;
for (let i = 0; i < nU8; i++) b[o + i] = i % 251; o += nU8;
key('big.tokens'); o = b.writeUInt32LE(9, o); o = b.writeUInt32LE(8, o); b.writeBigUInt64LE(BigInt(nStr), o); o += 8;
for (const s of strings) { b.writeBigUInt64LE(BigInt(s.length), o); o += 8; o += b.write(s, o, 'latin1'); }
if (o !== size) throw new Error('size ' + o + ' != ' + size);
fs.writeFileSync(path, b);
strings.length = 0;
globalThis.gc(); globalThis.gc();
const base = process.memoryUsage();
const held = q.readGgufHeader(path);
const ck = q.GgufCheckpoint.open(path);
globalThis.gc(); globalThis.gc();
const now = process.memoryUsage();
const heldBytes = (now.heapUsed - base.heapUsed) + (now.arrayBuffers - base.arrayBuffers);
const u8 = held.metadata.get('big.u8'), tok = held.metadata.get('big.tokens');
const u8v = u8.value, tokv = tok.value;
const out = {
  size,
  ratio: heldBytes / size,
  u8: { type: u8.type, itemType: u8.itemType, length: u8v.length, at: [u8v.at(0), u8v.at(250), u8v.at(251), u8v.at(nU8 - 1)] },
  tokens: { itemType: tok.itemType, length: tokv.length, at: [tokv.at(0), tokv.at(35), tokv.at(nStr - 1)], plainHead: q.plainGgufValue(tok).slice(0, 2) },
  metaHead: ck.metadata['big.tokens'].slice(0, 20),
  metaKeys: Object.keys(ck.metadata),
};
ck.close();
console.log(JSON.stringify(out));
`;

describe('GGUF metadata memory (issue 17.9)', () => {
  it('a 48 MB metadata header is held in a small multiple of its bytes, its arrays decoded on access', () => {
    const r = spawnSync(process.execPath, ['--expose-gc', '--max-old-space-size=1024', '--input-type=module', '-e', script, join(dir, 'big-meta.gguf')], {
      encoding: 'utf8',
      timeout: HANG_MS,
    });
    expect(r.error?.message, `the child was killed by the test's hang guard after ${HANG_MS} ms`).toBeUndefined();
    expect(r.signal, r.stderr.slice(-2000)).toBeNull();
    expect(r.status, r.stderr.slice(-2000)).toBe(0);
    const out = JSON.parse(r.stdout.trim().split('\n').pop() as string);
    expect(out.size).toBeGreaterThan(48_000_000);
    // two parses are alive (readGgufHeader's and the checkpoint's): each may hold the header's bytes
    // and one offset per string, nothing per element beyond that
    expect(out.ratio).toBeLessThan(6);
    expect(out.u8).toEqual({
      type: 'array',
      itemType: 'u8',
      length: 24 * 1024 * 1024,
      at: [{ type: 'u8', value: 0 }, { type: 'u8', value: 250 }, { type: 'u8', value: 0 }, { type: 'u8', value: (24 * 1024 * 1024 - 1) % 251 }],
    });
    expect(out.tokens).toEqual({
      itemType: 'string',
      length: 1_500_000,
      at: [{ type: 'string', value: 'tok_0' }, { type: 'string', value: 'tok_z' }, { type: 'string', value: `tok_${(1_500_000 - 1).toString(36)}` }],
      plainHead: ['tok_0', 'tok_1'],
    });
    expect(out.metaHead).toBe('["tok_0","tok_1","to');
    expect(out.metaKeys).toEqual(['big.u8', 'big.tokens']);
  });
});
