// Temporary files and directories that cannot be hijacked and do not outlive their process.
// - Names are random and carry the owner's host tag and pid: `.<base>.ninodes-<host>-<pid>-<hex>.tmp`.
// - Files are created with O_CREAT|O_EXCL|O_NOFOLLOW, so a file or symlink planted at the name is
//   an error, never followed; directories with mkdir, which never follows a link either.
// - Every live temporary is registered; `removeLiveTemps()` deletes them synchronously. The CLI
//   calls it from its SIGINT/SIGTERM handlers (a library does not install signal handlers).
// - `sweepStaleTemps(dir)` deletes the temporaries of dead processes of this host; every create
//   runs it on its own directory, so an interrupted run's leftovers go at the next start.
import { randomBytes, createHash } from 'node:crypto';
import { closeSync, constants, mkdirSync, openSync, readdirSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fsError } from './fs-errors.js';

// One registry per process even when both the ESM and the CJS build of this package are loaded.
const REGISTRY = Symbol.for('ninodes.kernels.live-temps');
type Registry = Set<string>;
function live(): Registry {
  const g = globalThis as unknown as Record<symbol, Registry | undefined>;
  return (g[REGISTRY] ??= new Set());
}

/** A short tag of this host, so processes of another host (or container) sharing a disk are never judged dead by pid. */
export const HOST_TAG = createHash('sha256').update(hostname()).digest('hex').slice(0, 6);

const OWNER_RE = /\.ninodes-([0-9a-f]{6})-(\d+)-[0-9a-f]{16}\.([a-z]+)$/;

/** True when a process with this pid exists (EPERM means it exists but is not ours). */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A fresh temporary name in `dir` for something that will become `base`. `ext` is `tmp` for what
 * the sweep may delete; another extension (a journal that must be rolled back, not deleted) keeps
 * the same owner tag but is left to its own recovery.
 */
export function tempName(dir: string, base: string, ext = 'tmp'): string {
  return join(dir, `.${base}.ninodes-${HOST_TAG}-${process.pid}-${randomBytes(8).toString('hex')}.${ext}`);
}

/** Owner of a temporary name made by `tempName` with extension `ext`, or undefined for any other name. */
export function tempOwner(name: string, ext = 'tmp'): { host: string; pid: number } | undefined {
  const m = OWNER_RE.exec(name);
  return m && m[3] === ext ? { host: m[1]!, pid: Number(m[2]) } : undefined;
}

/** Deletes the temporaries in `dir` left by dead processes of this host; returns what it deleted. */
export function sweepStaleTemps(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const owner = tempOwner(name);
    if (owner === undefined || owner.host !== HOST_TAG || processAlive(owner.pid)) continue;
    try {
      rmSync(join(dir, name), { recursive: true, force: true });
      removed.push(join(dir, name));
    } catch {
      // another process swept it first, or it cannot be removed: it is not ours to fail on
    }
  }
  return removed;
}

/** Creates an empty temporary file in `dir` (exclusive, no symlink following) and registers it. */
export function createTempFile(dir: string, base: string, mode = 0o644): { path: string; fd: number } {
  sweepStaleTemps(dir);
  const path = tempName(dir, base);
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  } catch (error) {
    // Named by its directory: the random name means nothing to the user, the directory does.
    throw fsError(error, dir, `cannot create a temporary file for ${base} in`);
  }
  live().add(path);
  return { path, fd };
}

/**
 * Creates a new file at exactly `path` for writing: fails (PATH_EXISTS / SYMLINK_REFUSED) when
 * anything, a symbolic link included, is already there, so a planted link is never written through.
 */
export function createExclusiveFile(path: string, mode = 0o644): number {
  try {
    return openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  } catch (error) {
    throw fsError(error, path, 'cannot create');
  }
}

/** Creates an empty temporary directory in `dir` and registers it (`ext` as for `tempName`). */
export function createTempDir(dir: string, base: string, ext = 'tmp'): string {
  sweepStaleTemps(dir);
  const path = tempName(dir, base, ext);
  try {
    mkdirSync(path, { mode: 0o755 });
  } catch (error) {
    throw fsError(error, dir, `cannot create a staging directory for ${base} in`);
  }
  live().add(path);
  return path;
}

/** Registers an existing path (a lock file, a staging area) so `removeLiveTemps` deletes it. */
export function registerTemp(path: string): void {
  live().add(path);
}

/** Forgets a temporary that was renamed into place (or removed by its owner). */
export function releaseTemp(path: string): void {
  live().delete(path);
}

/** Removes one temporary (file or directory) and forgets it. Never throws. */
export function removeTemp(path: string, fd?: number): void {
  if (fd !== undefined) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  }
  try {
    rmSync(path, { recursive: true, force: true });
  } catch {
    // left for the next start's sweep
  }
  live().delete(path);
}

/** Synchronously removes every live temporary of this process (for signal handlers and exit). */
export function removeLiveTemps(): string[] {
  const paths = [...live()];
  for (const path of paths) removeTemp(path);
  return paths;
}

/** Paths of the temporaries this process holds now (for tests and diagnostics). */
export function liveTemps(): string[] {
  return [...live()];
}
