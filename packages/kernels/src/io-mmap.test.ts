import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MappedFile, adviseFile, mallocTrim, pageSize } from './io-mmap.js';

/** This process's file-backed resident bytes (RssFile of /proc/self/status). */
const rssFile = (): number => Number(/RssFile:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) * 1024;

const dir = mkdtempSync(join(tmpdir(), 'ninodes-mmap-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('MappedFile', () => {
  const path = join(dir, 'bytes.bin');
  const content = Uint8Array.from({ length: 3 * 4096 + 17 }, (_, i) => (i * 31 + 7) & 0xff);
  writeFileSync(path, content);

  it('views byte ranges without copying and detaches them on close', () => {
    const f = MappedFile.open(path);
    expect(f.byteLength).toBe(content.byteLength);
    const v = new Uint8Array(f.view(4095, 300));
    expect([...v]).toEqual([...content.subarray(4095, 4395)]);
    f.advise(0, f.byteLength, 'willneed');
    f.advise(100, 10, 'dontneed');
    expect(f.touch(0, f.byteLength)).toBeGreaterThan(0);
    expect(f.sumBytes(0, f.byteLength)).toBe(content.reduce((a, b) => a + b, 0));
    expect(f.sumBytes(5000, 17)).toBe(content.subarray(5000, 5017).reduce((a, b) => a + b, 0));
    f.close();
    expect(v.length).toBe(0);
    expect(f.released).toBe(true);
    expect(() => f.view(0, 1)).toThrow(expect.objectContaining({ code: 'FILE_CLOSED' }));
    f.close();
  });

  it('rejects out-of-range views and bad advice with typed errors', () => {
    const f = MappedFile.open(path);
    expect(() => f.view(content.byteLength - 1, 2)).toThrow(expect.objectContaining({ code: 'MMAP_RANGE' }));
    expect(() => f.view(-1, 2)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => f.advise(0, 1, 'bogus' as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    const a = f.view(0, 8);
    f.detachView(a);
    expect(a.byteLength).toBe(0);
    expect(new Uint8Array(f.view(0, 8))[1]).toBe(content[1]);
    f.close();
  });

  it('maps empty files and reports a missing file by path', () => {
    const empty = join(dir, 'empty.bin');
    writeFileSync(empty, new Uint8Array(0));
    const f = MappedFile.open(empty);
    expect(f.view(0, 0).byteLength).toBe(0);
    f.close();
    expect(() => MappedFile.open(join(dir, 'missing.bin'))).toThrow(expect.objectContaining({ code: 'FILE_NOT_FOUND' }));
  });

  it('native reads of a file truncated after mapping fail with FILE_TRUNCATED instead of killing the process', () => {
    const victim = join(dir, 'victim.bin');
    writeFileSync(victim, new Uint8Array(16 * 4096).fill(3));
    const f = MappedFile.open(victim);
    expect(f.sumBytes(0, f.byteLength)).toBe(3 * 16 * 4096);
    truncateSync(victim, 100);
    expect(() => f.verify()).toThrow(expect.objectContaining({ code: 'FILE_TRUNCATED' }));
    const truncated = expect.objectContaining({ code: 'FILE_TRUNCATED', where: victim, message: expect.stringContaining(victim) });
    expect(() => f.sumBytes(0, f.byteLength)).toThrow(truncated);
    expect(() => f.touch(0, f.byteLength)).toThrow(truncated);
    // Once a read hit a missing page the whole mapping is suspect: even ranges the file still
    // backs fail, so a run cannot go on mixing the file's bytes with zeros.
    expect(() => f.sumBytes(0, 100)).toThrow(truncated);
    f.close();
  });

  it('a file rewritten in place with its size and mtime put back (dd conv=notrunc, then touch -r) is FILE_MODIFIED', () => {
    const victim = join(dir, 'inplace.bin');
    const stamp = join(dir, 'inplace.stamp');
    writeFileSync(victim, new Uint8Array(4 * 4096).fill(1));
    expect(spawnSync('touch', ['-r', victim, stamp]).status).toBe(0);
    const f = MappedFile.open(victim);
    f.verify();
    // File times tick with the kernel's coarse clock (a few ms): let one pass, so the rewrite's ctime differs.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    expect(spawnSync('dd', ['if=/dev/zero', `of=${victim}`, 'bs=4096', 'count=1', 'conv=notrunc', 'status=none']).status).toBe(0);
    expect(spawnSync('touch', ['-r', stamp, victim]).status).toBe(0);
    expect(statSync(victim).size).toBe(4 * 4096);
    expect(statSync(victim).mtimeMs).toBe(statSync(stamp).mtimeMs);
    expect(() => f.verify()).toThrow(expect.objectContaining({ code: 'FILE_MODIFIED', where: victim }));
    f.close();
  });

  it('populate maps a range\'s pages into the process off the JS thread, and dontneed gives them back', async () => {
    const big = join(dir, 'populate.bin');
    const bytes = 32 * 2 ** 20;
    writeFileSync(big, new Uint8Array(bytes).fill(1));
    const f = MappedFile.open(big);
    f.advise(0, bytes, 'dontneed');
    const before = rssFile();
    const pending = f.populate(0, bytes);
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toBe(bytes);
    // Every page is now mapped: RssFile grew by the range (other threads move it by far less).
    expect(rssFile() - before).toBeGreaterThan(bytes * 0.9);
    f.advise(0, bytes, 'dontneed');
    expect(rssFile() - before).toBeLessThan(bytes * 0.1);
    // A range inside one page populates that page; an empty range nothing.
    expect(await f.populate(10, 5)).toBe(pageSize());
    expect(await f.populate(0, 0)).toBe(0);
    await expect(f.populate(bytes - 1, 2)).rejects.toMatchObject({ code: 'MMAP_RANGE' });
    // Closing while a populate runs unmaps after it settles: it resolves, nothing faults.
    const late = f.populate(0, bytes);
    f.close();
    expect(await late).toBe(bytes);
    expect(() => f.populate(0, 1)).toThrow(expect.objectContaining({ code: 'FILE_CLOSED' }));
    // The in-process page-cache drop: no child, and a bad advice is a typed error.
    adviseFile(big, 'dontneed');
    expect(() => adviseFile(big, 'bogus' as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => adviseFile(join(dir, 'missing.bin'), 'dontneed')).toThrow(expect.objectContaining({ code: 'FILE_NOT_FOUND' }));
  });

  it('populate of a file truncated under the mapping rejects with FILE_TRUNCATED', async () => {
    const victim = join(dir, 'victim-populate.bin');
    writeFileSync(victim, new Uint8Array(16 * 4096).fill(3));
    const f = MappedFile.open(victim);
    truncateSync(victim, 100);
    await expect(f.populate(0, f.byteLength)).rejects.toMatchObject({ code: 'FILE_TRUNCATED', where: victim });
    f.close();
  });

  it('exposes malloc_trim and the page size', () => {
    expect(typeof mallocTrim()).toBe('boolean');
    expect(pageSize() % 4096).toBe(0);
  });
});
