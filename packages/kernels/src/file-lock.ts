// A lock file: one owner at a time for a path (an output directory, a cache entry). Created with
// O_EXCL|O_NOFOLLOW and holding `<host> <pid>`; removed on release and, through the temporaries
// registry, on SIGINT/SIGTERM. A lock whose owner died (same host, pid gone) is taken over: the
// taker first wins `<lock>.takeover-<deadpid>` (also O_EXCL), so two processes that both find the
// same stale lock cannot both remove it and both believe they hold a new one.
import { closeSync, constants, linkSync, lstatSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { KernelsError } from './error-codes.js';
import { fsError } from './fs-errors.js';
import { HOST_TAG, processAlive, registerTemp, releaseTemp, tempName } from './temp-files.js';

export interface FileLock {
  readonly path: string;
  release(): void;
}

export interface LockOwner {
  readonly host: string;
  readonly pid: number;
}

function readOwner(path: string): { owner: LockOwner | undefined; ino: number } | undefined {
  try {
    const ino = lstatSync(path).ino;
    const [host, pid] = readFileSync(path, 'utf8').trim().split(/\s+/);
    return { owner: host && pid ? { host, pid: Number(pid) } : undefined, ino };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw fsError(error, path, 'cannot read lock');
  }
}

// The content is written to a private temporary first and hard-linked to the lock name, so a
// lock never exists without its owner (a crash between create and write would leave an ownerless,
// never-stale lock); link(2) fails with EEXIST and never replaces an existing lock.
function createExclusive(path: string, content: string): boolean {
  const temp = tempName(dirname(path), basename(path));
  let fd: number;
  try {
    fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  } catch (error) {
    throw fsError(error, path, 'cannot create lock');
  }
  try {
    writeSync(fd, content);
    closeSync(fd);
    linkSync(temp, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw fsError(error, path, 'cannot create lock');
  } finally {
    try {
      closeSync(fd);
    } catch {
      // closed above
    }
    try {
      unlinkSync(temp);
    } catch {
      // nothing to remove
    }
  }
}

function dead(owner: LockOwner | undefined): boolean {
  // A lock written by another host, or one we cannot parse, is never judged stale by pid.
  return owner !== undefined && owner.host === HOST_TAG && !processAlive(owner.pid);
}

/** Removes the stale lock at `path` if its owner is dead; true when the lock is gone afterwards. */
function takeOver(path: string, seen: { owner: LockOwner | undefined; ino: number }): boolean {
  const marker = `${path}.takeover-${seen.owner!.pid}`;
  if (!createExclusive(marker, `${HOST_TAG} ${process.pid}\n`)) {
    // Someone else is taking this stale lock over; if that someone died too, clear its marker.
    const other = readOwner(marker);
    if (other !== undefined && dead(other.owner)) {
      try {
        unlinkSync(marker);
      } catch {
        // already gone
      }
    }
    return false;
  }
  try {
    const now = readOwner(path);
    if (now === undefined) return true;
    if (now.ino === seen.ino && dead(now.owner)) {
      unlinkSync(path);
      return true;
    }
    return false;
  } finally {
    try {
      unlinkSync(marker);
    } catch {
      // already gone
    }
  }
}

/**
 * Takes the lock at `path` now, or returns the live owner that holds it. Never waits.
 */
export function tryLock(path: string): FileLock | LockOwner {
  for (let attempt = 0; attempt < 8; attempt++) {
    if (createExclusive(path, `${HOST_TAG} ${process.pid}\n`)) {
      registerTemp(path);
      const ino = lstatSync(path).ino;
      let held = true;
      return {
        path,
        release() {
          if (!held) return;
          held = false;
          releaseTemp(path);
          // Only our own lock file is removed, never one that replaced it.
          try {
            if (lstatSync(path).ino === ino) unlinkSync(path);
          } catch {
            // already gone
          }
        },
      };
    }
    const seen = readOwner(path);
    if (seen === undefined) continue; // released between our create and our read: try again
    if (!dead(seen.owner)) return seen.owner ?? { host: 'unknown', pid: 0 };
    takeOver(path, seen);
  }
  const seen = readOwner(path);
  return seen?.owner ?? { host: 'unknown', pid: 0 };
}

export function isFileLock(value: FileLock | LockOwner): value is FileLock {
  return typeof (value as FileLock).release === 'function';
}

/**
 * Waits for the lock at `path` (polling every `pollMs`), calling `onWait` once with the owner when
 * it has to wait. Fails with LOCK_TIMEOUT after `timeoutMs` (default: no limit while the owner lives).
 */
export async function waitLock(path: string, options: { pollMs?: number; timeoutMs?: number; onWait?: (owner: LockOwner) => void } = {}): Promise<FileLock> {
  const started = Date.now();
  let told = false;
  for (;;) {
    const got = tryLock(path);
    if (isFileLock(got)) return got;
    if (!told) {
      told = true;
      options.onWait?.(got);
    }
    if (options.timeoutMs !== undefined && Date.now() - started > options.timeoutMs) {
      throw new KernelsError('LOCK_TIMEOUT', `${path} is still held by process ${got.pid} after ${options.timeoutMs} ms`, {
        value: path,
        where: path,
        hint: `wait for process ${got.pid} to finish, or remove ${path} if no such process runs`,
      });
    }
    await new Promise((r) => setTimeout(r, options.pollMs ?? 100));
  }
}
