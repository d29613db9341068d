import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { memcpyContender } from './memcpy-peer.js';
import { PythonPeer } from './python-peer.js';
import { catContender, ddContender, dropFileCache, which } from './shell-peers.js';

const imports = new Map<string, boolean>();
/** Independent of the peer: does a fresh python3 import the module? */
function importable(mod: string): boolean {
  if (!imports.has(mod)) imports.set(mod, spawnSync('python3', ['-c', `import ${mod}`]).status === 0);
  return imports.get(mod) as boolean;
}

/** A safetensors file by the format's definition: u64 LE header length, JSON header, raw data. */
function writeSafetensors(file: string): void {
  const data = Buffer.alloc(4 * 6);
  for (let i = 0; i < 6; i++) data.writeFloatLE(i + 0.5, i * 4);
  let header = JSON.stringify({ w: { dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] } });
  header += ' '.repeat((8 - (header.length % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(header.length));
  writeFileSync(file, Buffer.concat([len, Buffer.from(header), data]));
}
const hasPython = spawnSync('python3', ['--version']).status === 0;

describe('python peer', () => {
  const peer = new PythonPeer();
  afterAll(() => peer.close());

  it('reports each library as available exactly when python can import it', async () => {
    const probe = await peer.probe();
    expect(probe.python !== null).toBe(hasPython);
    for (const lib of ['torch', 'safetensors', 'numpy']) expect(probe.libs[lib] != null).toBe(importable(lib));
  });

  for (const [kind, mod, params] of [
    ['torch.linear', 'torch', { m: 32, n: 48, k: 64, threads: 1 }],
    ['torch.int_mm', 'torch', { m: 32, n: 64, k: 64, threads: 1 }],
    ['torch.sdpa', 'torch', { heads: 2, seq: 32, dim: 16, threads: 1 }],
  ] as const) {
    it(`${kind}: timed when ${mod} imports, missing otherwise`, async () => {
      const c = await peer.job(kind, params);
      if (!importable(mod)) {
        expect(c).toHaveProperty('missing');
        return;
      }
      if (!('time' in c)) throw new Error(`expected a timed contender, got ${JSON.stringify(c)}`);
      const s = await c.time(1);
      expect(s).toBeGreaterThan(0);
      expect(s).toBeLessThan(60);
      await c.dispose?.();
    });
  }

  it('safetensors.load reads a file when safetensors and numpy import, missing otherwise', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ninodes-st-'));
    try {
      const file = join(dir, 'w.safetensors');
      writeSafetensors(file);
      const c = await peer.job('safetensors.load', { file, framework: 'numpy' });
      if (!importable('safetensors') || !importable('numpy')) {
        expect(c).toHaveProperty('missing');
        return;
      }
      if (!('time' in c)) throw new Error(`expected a timed contender, got ${JSON.stringify(c)}`);
      expect(await c.time(1)).toBeGreaterThan(0);
      // A corrupt file must surface as a failed run, not a time.
      writeFileSync(file, Buffer.from('not a safetensors file'));
      await expect(c.time(1)).rejects.toMatchObject({ code: 'BENCH_PEER_FAILED' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an unknown job kind is an error, not a missing peer', async () => {
    if (!hasPython) return;
    await expect(peer.job('torch.nope', {})).rejects.toMatchObject({ code: 'BENCH_PEER_FAILED' });
  });

  it('a python that starts but cannot run the peer is a failure, not a missing peer', async () => {
    if (!hasPython) return;
    const broken = new PythonPeer(process.execPath); // node cannot run a .py file: it exits with an error
    await expect(broken.job('torch.linear', { m: 1, n: 1, k: 1 })).rejects.toMatchObject({ code: 'BENCH_PEER_FAILED' });
  });

  it('a python that does not exist makes every job missing', async () => {
    const absent = new PythonPeer('/nonexistent/python3');
    const c = await absent.job('torch.linear', { m: 1, n: 1, k: 1 });
    expect(c).toHaveProperty('missing');
    expect((await absent.probe()).python).toBeNull();
  });
});

describe('shell and memcpy peers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ninodes-peers-'));
  const file = join(dir, 'blob.bin');
  writeFileSync(file, Buffer.alloc(1 << 20, 7));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('cat and dd time a read of the file', async () => {
    for (const c of [catContender(file), ddContender(file, '64K')]) {
      if (!('time' in c)) throw new Error('cat and dd are part of coreutils and must be present');
      expect(await c.time(1)).toBeGreaterThan(0);
    }
  });

  it('dropFileCache evicts the file from the page cache (checked with fincore)', async () => {
    const fs = spawnSync('stat', ['-f', '-c', '%T', dir], { encoding: 'utf8' }).stdout.trim();
    const resident = () => Number(spawnSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', file], { encoding: 'utf8' }).stdout.trim());
    spawnSync('cat', [file]);
    await dropFileCache(file);
    if (which('fincore') && fs !== 'tmpfs') expect(resident()).toBe(0);
    await expect(dropFileCache(join(dir, 'absent.bin'))).rejects.toMatchObject({ code: 'BENCH_CACHE_DROP_FAILED' });
  });

  it('a missing file is a failure of the peer, not a time', async () => {
    const c = catContender(join(dir, 'absent.bin'));
    if (!('time' in c)) throw new Error('cat must be present');
    await expect(c.time(1)).rejects.toMatchObject({ code: 'BENCH_PEER_FAILED' });
  });

  it('memcpy copies half the counted bytes each way', () => {
    const c = memcpyContender(2048);
    if (!('run' in c)) throw new Error('memcpy is always available');
    expect(() => c.run()).not.toThrow();
  });
});
