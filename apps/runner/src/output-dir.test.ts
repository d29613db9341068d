import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOST_TAG } from '@ninodes/kernels';
import { afterAll, describe, expect, it } from 'vitest';
import { stageOutput } from './output-dir.js';

const root = mkdtempSync(join(tmpdir(), 'ninodes-outdir-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const own = ['a.bin', 'b.json'];
const deadPid = () => Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout);

function fill(dir: string, tag: string): void {
  for (const f of own) writeFileSync(join(dir, f), `${tag}:${f}`);
}
const contents = (dir: string) => Object.fromEntries(readdirSync(dir).sort().map((f) => [f, readFileSync(join(dir, f), 'utf8')]));

describe('stageOutput', () => {
  it('a new directory appears whole on commit; discard leaves nothing', () => {
    const out = join(root, 'new');
    const s = stageOutput(out, { force: false, ownFiles: own });
    fill(s.dir, 'one');
    expect(existsSync(out)).toBe(false);
    expect(s.commit().sort()).toEqual(own.map((f) => join(out, f)));
    s.discard();
    expect(contents(out)).toEqual({ 'a.bin': 'one:a.bin', 'b.json': 'one:b.json' });
    expect(readdirSync(root)).toEqual(['new']);
    const t = stageOutput(join(root, 'gone'), { force: false, ownFiles: own });
    fill(t.dir, 'x');
    t.discard();
    expect(readdirSync(root)).toEqual(['new']);
  });

  it('an existing output needs force; foreign files are never replaced', () => {
    const out = join(root, 'existing');
    mkdirSync(out);
    fill(out, 'old');
    expect(() => stageOutput(out, { force: false, ownFiles: own })).toThrow(expect.objectContaining({ code: 'OUTPUT_EXISTS' }));
    writeFileSync(join(out, 'mine.txt'), 'user data');
    expect(() => stageOutput(out, { force: true, ownFiles: own })).toThrow(expect.objectContaining({ code: 'DIRECTORY_NOT_EMPTY' }));
    rmSync(join(out, 'mine.txt'));
    const s = stageOutput(out, { force: true, ownFiles: own });
    fill(s.dir, 'new');
    s.commit();
    expect(contents(out)).toEqual({ 'a.bin': 'new:a.bin', 'b.json': 'new:b.json' });
  });

  it('a journal left by a writer that died mid-commit is rolled back before the next write; a committed one is finished', () => {
    const out = join(root, 'crashed');
    mkdirSync(out);
    // Died after moving a.bin aside and putting the new a.bin in place, before b.json: a mix.
    const journal = join(out, `.staging.ninodes-${HOST_TAG}-${deadPid()}-0123456789abcdef.txn`);
    mkdirSync(join(journal, 'old'), { recursive: true });
    writeFileSync(join(journal, 'old', 'a.bin'), 'old:a.bin');
    writeFileSync(join(out, 'a.bin'), 'half:a.bin');
    writeFileSync(join(out, 'b.json'), 'old:b.json');
    writeFileSync(join(journal, 'b.json'), 'half:b.json');
    const s = stageOutput(out, { force: true, ownFiles: own });
    // Recovered before anything else: the previous output, whole.
    expect(readFileSync(join(out, 'a.bin'), 'utf8')).toBe('old:a.bin');
    expect(readFileSync(join(out, 'b.json'), 'utf8')).toBe('old:b.json');
    expect(existsSync(journal)).toBe(false);
    s.discard();
    expect(contents(out)).toEqual({ 'a.bin': 'old:a.bin', 'b.json': 'old:b.json' });

    const done = join(out, `.staging.ninodes-${HOST_TAG}-${deadPid()}-fedcba9876543210.txn`);
    mkdirSync(join(done, 'old'), { recursive: true });
    writeFileSync(join(done, 'old', 'a.bin'), 'older:a.bin');
    writeFileSync(join(done, 'committed'), '');
    stageOutput(out, { force: true, ownFiles: own }).discard();
    expect(contents(out)).toEqual({ 'a.bin': 'old:a.bin', 'b.json': 'old:b.json' });
  });

  it('a second writer of the same directory is refused while the first holds it', () => {
    const out = join(root, 'busy');
    const first = stageOutput(out, { force: false, ownFiles: own });
    // Same pid here, so the lock is live: exactly what a second process would meet.
    expect(() => stageOutput(out, { force: false, ownFiles: own })).toThrow(expect.objectContaining({ code: 'OUT_DIR_BUSY' }));
    first.discard();
    stageOutput(out, { force: false, ownFiles: own }).discard();
  });
});
