import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openRegularFile, readSmallFile } from './fs-errors.js';
import { isFileLock, tryLock } from './file-lock.js';
import { HOST_TAG, createExclusiveFile, createTempFile, liveTemps, releaseTemp, removeLiveTemps, sweepStaleTemps, tempOwner } from './temp-files.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-temps-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A pid that surely belongs to no process now: a child that has already exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

describe('temporary files', () => {
  it('names carry host and pid, are random, and are registered until released', () => {
    const a = createTempFile(dir, 'x.safetensors');
    const b = createTempFile(dir, 'x.safetensors');
    closeSync(a.fd);
    closeSync(b.fd);
    expect(a.path).not.toBe(b.path);
    expect(tempOwner(a.path)).toEqual({ host: HOST_TAG, pid: process.pid });
    expect(liveTemps()).toEqual(expect.arrayContaining([a.path, b.path]));
    releaseTemp(a.path);
    expect(liveTemps()).not.toContain(a.path);
    expect(removeLiveTemps()).toContain(b.path);
    expect(existsSync(b.path)).toBe(false);
    expect(existsSync(a.path)).toBe(true);
  });

  it('the sweep removes the temporaries of dead processes only', () => {
    const sub = join(dir, 'sweep');
    mkdirSync(sub);
    const pid = deadPid();
    const stale = join(sub, `.a.ninodes-${HOST_TAG}-${pid}-0123456789abcdef.tmp`);
    const staleDir = join(sub, `.b.ninodes-${HOST_TAG}-${pid}-0123456789abcdef.tmp`);
    const alive = join(sub, `.c.ninodes-${HOST_TAG}-${process.pid}-0123456789abcdef.tmp`);
    const otherHost = join(sub, `.d.ninodes-ffffff-${pid}-0123456789abcdef.tmp`);
    const user = join(sub, 'model.tmp');
    for (const f of [stale, alive, otherHost, user]) writeFileSync(f, 'x');
    mkdirSync(staleDir);
    writeFileSync(join(staleDir, 'inner'), 'x');
    expect(sweepStaleTemps(sub).sort()).toEqual([stale, staleDir].sort());
    expect(readdirSync(sub).map((n) => join(sub, n)).sort()).toEqual([alive, otherHost, user].sort());
  });

  it('a symlink planted at the name is refused, never written through', () => {
    const target = join(dir, 'victim.txt');
    writeFileSync(target, 'precious');
    const planted = join(dir, 'planted');
    symlinkSync(target, planted);
    expect(() => createExclusiveFile(planted)).toThrow(expect.objectContaining({ code: 'PATH_EXISTS' }));
    const dangling = join(dir, 'dangling');
    symlinkSync(join(dir, 'would-be-created'), dangling);
    expect(() => createExclusiveFile(dangling)).toThrow(expect.objectContaining({ code: 'PATH_EXISTS' }));
    expect(existsSync(join(dir, 'would-be-created'))).toBe(false);
    expect(readFileSync(target, 'utf8')).toBe('precious');
  });
});

describe('file locks', () => {
  it('one owner at a time; a dead owner is taken over; release removes only our own lock', () => {
    const path = join(dir, 'out.lock');
    const first = tryLock(path);
    expect(isFileLock(first)).toBe(true);
    const second = tryLock(path);
    expect(second).toEqual({ host: HOST_TAG, pid: process.pid });
    if (isFileLock(first)) first.release();
    expect(existsSync(path)).toBe(false);
    writeFileSync(path, `${HOST_TAG} ${deadPid()}\n`);
    const third = tryLock(path);
    expect(isFileLock(third)).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe(`${HOST_TAG} ${process.pid}\n`);
    if (isFileLock(third)) third.release();
    // A lock of another host is never judged by pid.
    writeFileSync(path, `ffffff ${deadPid()}\n`);
    expect(isFileLock(tryLock(path))).toBe(false);
  });
});

describe('a lock that ninodes did not write', () => {
  it('a link (to /dev/zero, dangling), a directory, garbage or an oversized file: LOCK_INVALID naming it, never an owner "pid 0"', () => {
    const cases: Array<[string, () => void]> = [
      ['zero.lock', () => symlinkSync('/dev/zero', join(dir, 'zero.lock'))],
      ['dangling.lock', () => symlinkSync(join(dir, 'nothing-here'), join(dir, 'dangling.lock'))],
      ['dir.lock', () => mkdirSync(join(dir, 'dir.lock'))],
      ['garbage.lock', () => writeFileSync(join(dir, 'garbage.lock'), 'not an owner')],
      ['big.lock', () => writeFileSync(join(dir, 'big.lock'), `${HOST_TAG} 1${' '.repeat(4096)}`)],
    ];
    for (const [name, make] of cases) {
      make();
      expect(() => tryLock(join(dir, name)), name).toThrow(expect.objectContaining({ code: 'LOCK_INVALID', value: join(dir, name) }));
    }
  });

  it('a FIFO at the lock is refused at once (a child process, so a blocking read would show as a timeout)', () => {
    const path = join(dir, 'fifo.lock');
    expect(spawnSync('mkfifo', [path]).status).toBe(0);
    const script = `import('@ninodes/kernels').then((k) => { try { k.tryLock(${JSON.stringify(path)}); process.stdout.write('taken'); } catch (e) { process.stdout.write(e.code); } })`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(r.signal).toBe(null);
    expect(r.stdout).toBe('LOCK_INVALID');
  });
});

describe('small side files', () => {
  it('are read whole up to a bound; FIFOs, devices, planted links (noFollow) and oversized files are coded errors', () => {
    const fifo = join(dir, 'side-fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    expect(() => readSmallFile(fifo, { maxBytes: 64 })).toThrow(expect.objectContaining({ code: 'NOT_A_REGULAR_FILE' }));
    expect(() => readSmallFile('/dev/zero', { maxBytes: 64 })).toThrow(expect.objectContaining({ code: 'NOT_A_REGULAR_FILE' }));
    const file = join(dir, 'side.txt');
    writeFileSync(file, 'abc');
    symlinkSync(file, join(dir, 'side-link'));
    expect(readSmallFile(join(dir, 'side-link'), { maxBytes: 64 }).data.toString()).toBe('abc');
    expect(() => readSmallFile(join(dir, 'side-link'), { maxBytes: 64, noFollow: true })).toThrow(expect.objectContaining({ code: 'SYMLINK_REFUSED' }));
    expect(() => readSmallFile(file, { maxBytes: 2 })).toThrow(expect.objectContaining({ code: 'SIDE_FILE_TOO_LARGE' }));
    expect(readSmallFile(file, { maxBytes: 3 }).data.toString()).toBe('abc');
    // procfs says size 0; the text is read all the same.
    expect(readSmallFile('/proc/self/status', { maxBytes: 1 << 16 }).data.toString()).toMatch(/^Name:/);
  });
});

describe('file locks across processes', () => {
  it('six processes racing for one stale lock: exactly one takes it over', async () => {
    const path = join(dir, 'race.lock');
    writeFileSync(path, `${HOST_TAG} ${deadPid()}\n`);
    // Each child loads, waits for a common instant (so the attempts really overlap), tries once,
    // holds what it got for a moment, and says what happened.
    const at = Date.now() + 1500;
    const script = `import('@ninodes/kernels').then(async (k) => {
      while (Date.now() < ${at});
      const got = k.tryLock(${JSON.stringify(path)});
      process.stdout.write(k.isFileLock(got) ? 'won' : 'busy');
      await new Promise((r) => setTimeout(r, 1500));
      if (k.isFileLock(got)) got.release();
    })`;
    const results = await Promise.all(
      Array.from({ length: 6 }, () => new Promise<string>((resolve) => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (d) => (out += String(d)));
        child.on('exit', () => resolve(out));
      })),
    );
    expect(results.filter((r) => r === 'won')).toHaveLength(1);
    expect(results.filter((r) => r === 'busy')).toHaveLength(5);
    expect(existsSync(path)).toBe(false);
    expect(readdirSync(dir).filter((n) => n.startsWith('race.lock') || n.startsWith('.race.lock'))).toEqual([]);
  });
});

describe('regular files only', () => {
  it('a FIFO is refused at once with a code, a directory with its own code', () => {
    const fifo = join(dir, 'pipe');
    const made = spawnSync('mkfifo', [fifo]);
    expect(made.status).toBe(0);
    expect(() => openRegularFile(fifo)).toThrow(expect.objectContaining({ code: 'NOT_A_REGULAR_FILE' }));
    expect(() => openRegularFile(dir)).toThrow(expect.objectContaining({ code: 'PATH_IS_DIRECTORY' }));
    expect(() => openRegularFile(join(dir, 'missing'))).toThrow(expect.objectContaining({ code: 'FILE_NOT_FOUND' }));
  });
});
