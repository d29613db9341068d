import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileAtomically, writeFileAtomicallySync } from './index.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-atomic-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('writeFileAtomically', () => {
  it('writes the whole file through appends and positioned writes, leaving no temporary', async () => {
    const path = join(dir, 'a.bin');
    const n = await writeFileAtomically(path, async (write) => {
      write('head:');
      write(new Uint8Array([1, 2, 3]));
      return 8;
    });
    expect(n).toBe(8);
    expect([...readFileSync(path)]).toEqual([...Buffer.from('head:'), 1, 2, 3]);
    writeFileAtomicallySync(path, (_write, fd) => void writeSync(fd, Buffer.from('xy'), 0, 2, 4));
    expect([...readFileSync(path)]).toEqual([0, 0, 0, 0, 0x78, 0x79]);
    expect(readdirSync(dir)).toEqual(['a.bin']);
  });

  it('a failing fill leaves the old file as it was and no temporary', async () => {
    const path = join(dir, 'b.txt');
    writeFileSync(path, 'old');
    await expect(
      writeFileAtomically(path, (write) => {
        write('new, partial');
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(() =>
      writeFileAtomicallySync(path, (write) => {
        write('new, partial');
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(readFileSync(path, 'utf8')).toBe('old');
    expect(readdirSync(dir).sort()).toEqual(['a.bin', 'b.txt']);
  });

  it('a file-system failure comes out coded, naming the path', () => {
    const path = join(dir, 'missing-dir', 'c.txt');
    expect(() => writeFileAtomicallySync(path, (write) => write('x'))).toThrow(expect.objectContaining({ code: 'FILE_NOT_FOUND' }));
  });
});
