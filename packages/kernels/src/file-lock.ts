// A lock file: one owner at a time for a path (an output directory, a cache entry). Created with
// O_EXCL|O_NOFOLLOW and holding `<host> <pid>`; removed on release and, through the temporaries
// registry, on SIGINT/SIGTERM. A lock whose owner died (same host, pid gone) is taken over: the
// taker first wins `<lock>.takeover-<deadpid>` (also O_EXCL), so two processes that both find the
// same stale lock cannot both remove it and both believe they hold a new one.
import { closeSync, constants, linkSync, lstatSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { KernelsError } from './error-codes.js';
import { type NinodesError, isNinodesError } from './errors.js';
import { fsError, readSmallFile } from './fs-errors.js';
import { HOST_TAG, processAlive, registerTemp, releaseTemp, tempName } from './temp-files.js';

export interface FileLock {
  readonly path: string;
  release(): void;
}

export interface LockOwner {
  readonly host: string;
  readonly pid: number;
}

/** Why a path that readSmallFile refused cannot be a lock, by the code it refused it with. */
const NOT_A_LOCK: Readonly<Record<string, string>> = {
  SYMLINK_REFUSED: 'it is a symbolic link',
  NOT_A_REGULAR_FILE: 'it is a FIFO, socket or device, not a regular file',
  PATH_IS_DIRECTORY: 'it is a directory',
  SIDE_FILE_TOO_LARGE: 'it holds more than an owner line',
};

const OWNER_LINE = /^(\S+) ([1-9]\d{0,9})\n?$/;

/**
 * The owner written in the lock at `path`, or undefined when there is no lock. Read as a side file
 * (no link followed, no FIFO waited on, a few bytes at most): anything but `<host> <pid>` in a
 * regular file is not a lock this code wrote (it writes the owner before the lock name exists) and
 * is LOCK_INVALID, never an anonymous owner that would hold the path forever.
 */
function readOwner(path: string): { owner: LockOwner; ino: number } | undefined {
  let read: ReturnType<typeof readSmallFile>;
  try {
    read = readSmallFile(path, { maxBytes: 128, noFollow: true });
  } catch (error) {
    if (isNinodesError(error) && error.code === 'FILE_NOT_FOUND') return undefined;
    const what = isNinodesError(error) ? NOT_A_LOCK[error.code] : undefined;
    if (what !== undefined) throw invalidLock(path, what, error);
    throw fsError(error, path, 'cannot read lock');
  }
  const m = OWNER_LINE.exec(read.data.toString('latin1'));
  if (m === null) throw invalidLock(path, `holds ${read.data.byteLength} bytes that name no owner`);
  return { owner: { host: m[1]!, pid: Number(m[2]) }, ino: read.stat.ino };
}

function invalidLock(path: string, what: string, cause?: unknown): NinodesError {
  return new KernelsError('LOCK_INVALID', `the lock ${path} is not a ninodes lock: ${what}`, {
    value: path,
    where: path,
    hint: `no ninodes process wrote it: remove ${path} and run again`,
    ...(cause === undefined ? {} : { cause }),
  });
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

function dead(owner: LockOwner): boolean {
  // A lock written by another host is never judged stale by pid.
  return owner.host === HOST_TAG && !processAlive(owner.pid);
}

/** Removes the stale lock at `path` if its owner is dead; true when the lock is gone afterwards. */
function takeOver(path: string, seen: { owner: LockOwner; ino: number }): boolean {
  const marker = `${path}.takeover-${seen.owner.pid}`;
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
    if (!dead(seen.owner)) return seen.owner;
    takeOver(path, seen);
  }
  const seen = readOwner(path);
  return seen?.owner ?? { host: HOST_TAG, pid: 0 };
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
