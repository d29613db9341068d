// A run's output directory is committed as a whole: its files appear together or not at all.
//
// - One writer per --out: `<parent>/.<name>.ninodes-lock` (O_EXCL, owner host+pid; a dead owner's
//   lock is taken over). A second writer gets OUT_DIR_BUSY at once, before doing any work.
// - New --out: files are staged in a hidden directory beside it (same parent, so the same file
//   system: EXDEV cannot happen) and the directory is renamed into place in one step.
// - Existing --out (replaced only with --force, and only if it holds nothing but ninodes outputs):
//   the staging directory is made inside --out, so it is on --out's own file system even when --out
//   is a mount point (a container volume), which cannot be renamed. The commit is a journaled swap:
//   every old file is moved into the staging directory's `old/`, then every new file into place;
//   any failure (an immutable report.json, a full directory) moves everything back, so the previous
//   output stays intact. A `committed` marker ends the journal. The commit is synchronous, so no
//   signal handler runs in its middle; a crash (SIGKILL, power) in its middle is rolled back (or
//   finished, after the marker) by the next writer of that --out.
// - Staging directories are registered temporaries: SIGINT/SIGTERM remove them (the CLI's handlers).
import { closeSync, existsSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import {
  NinodesError,
  createTempDir,
  fsError,
  isFileLock,
  isNinodesError,
  processAlive,
  releaseTemp,
  removeTemp,
  sweepStaleTemps,
  tempOwner,
  tryLock,
  HOST_TAG,
  type FileLock,
} from '@ninodes/kernels';
import { RunnerError } from './error-codes.js';

export interface StagedOutput {
  /** Where to write files now. */
  readonly dir: string;
  /** Puts every staged file in place at once; returns their final paths. */
  commit(): string[];
  /** Removes the staging directory and releases the lock. Safe to call after commit. */
  discard(): void;
}

export interface StageOptions {
  /** Replace an existing non-empty --out (it must hold only files named in `ownFiles`). */
  readonly force: boolean;
  /** The names this command writes; an existing --out holding anything else is never replaced. */
  readonly ownFiles: readonly string[];
  /** The flag that named the directory, for messages. */
  readonly flag?: string;
}

const OLD = 'old';
const COMMITTED = 'committed';
// In-place staging is a journal (it may hold the only copy of the old files): its own extension
// keeps kernels' generic sweep of dead temporaries away from it; recoverStale rolls it back instead.
const JOURNAL = 'txn';
/** The lock inside --out, used only when the parent cannot be written (see lockFor). */
const INNER_LOCK = '.ninodes-lock';

/** Moves the journal of an interrupted in-place commit back (or finishes it), then removes it. */
function recoverJournal(finalDir: string, staging: string): void {
  const old = join(staging, OLD);
  if (!existsSync(join(staging, COMMITTED)) && existsSync(old)) {
    for (const name of readdirSync(old)) renameSync(join(old, name), join(finalDir, name));
  }
  rmSync(staging, { recursive: true, force: true });
}

/** Journals of dead writers inside `finalDir`: roll back (or finish) and remove them. */
function recoverStale(finalDir: string): void {
  let names: string[];
  try {
    names = readdirSync(finalDir);
  } catch {
    return;
  }
  for (const name of names) {
    const owner = tempOwner(name, JOURNAL);
    if (owner === undefined || owner.host !== HOST_TAG || processAlive(owner.pid)) continue;
    recoverJournal(finalDir, join(finalDir, name));
  }
}

function lockPathOf(finalDir: string): string {
  return join(dirname(finalDir), `.${basename(finalDir)}.ninodes-lock`);
}

/** Errors creating a lock beside --out, said in terms of --out. */
function lockError(error: unknown, finalDir: string, flag: string, outDir: string): unknown {
  if (!isNinodesError(error)) return error;
  // ENOENT while creating in a directory that exists: a pseudo file system (/proc, /sys) that
  // takes no new files. Say so instead of "not found".
  if (error.code === 'FILE_NOT_FOUND') {
    return new RunnerError('OUT_DIR_UNWRITABLE', `cannot create files in ${dirname(finalDir)} (it exists but takes no new files)`, {
      value: outDir,
      where: flag,
      hint: 'choose a directory on a writable file system',
      cause: error,
    });
  }
  return new NinodesError(error.code, `cannot write beside ${finalDir}: ${error.message}`, { value: outDir, where: flag, hint: error.hint, cause: error });
}

/** Makes the renames in `dir` durable; a file system without directory fsync just skips it. */
function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // EINVAL on file systems that do not sync directories: the rename itself has still happened
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function isDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

function lockFor(finalDir: string, flag: string, outDir: string): FileLock {
  let lockPath = lockPathOf(finalDir);
  let got: ReturnType<typeof tryLock>;
  try {
    got = tryLock(lockPath);
  } catch (error) {
    const mapped = lockError(error, finalDir, flag, outDir);
    // A volume mounted at --out under a parent this process cannot write (a container's read-only
    // root): the lock goes inside --out. A new --out needs a writable parent anyway, so every writer
    // that could create it uses the lock beside it.
    if (!isNinodesError(mapped) || !['READ_ONLY_FILESYSTEM', 'PERMISSION_DENIED', 'OUT_DIR_UNWRITABLE'].includes(mapped.code) || !isDirectory(finalDir)) throw mapped;
    lockPath = join(finalDir, INNER_LOCK);
    try {
      got = tryLock(lockPath);
    } catch (inner) {
      throw lockError(inner, finalDir, flag, outDir);
    }
  }
  if (isFileLock(got)) return got;
  throw new RunnerError('OUT_DIR_BUSY', `another ninodes process (pid ${got.pid}) is writing ${finalDir}`, {
    value: outDir,
    where: flag,
    hint: `wait for it to finish or write to another directory (if no process ${got.pid} runs ninodes, remove ${lockPath})`,
  });
}

export function stageOutput(outDir: string, options: StageOptions): StagedOutput {
  const flag = options.flag ?? '--out';
  const finalDir = resolve(outDir);
  const parent = dirname(finalDir);
  try {
    mkdirSync(parent, { recursive: true });
  } catch (error) {
    // EEXIST from a recursive mkdir: a file stands where a directory of the path should be.
    const code = (error as NodeJS.ErrnoException).code;
    throw fsError(code === 'EEXIST' ? Object.assign(error as Error, { code: 'ENOTDIR' }) : error, parent, 'cannot create the parent of the output directory', flag);
  }
  const lock = lockFor(finalDir, flag, outDir);
  try {
    sweepStaleTemps(parent);
    let exists = false;
    try {
      const st = lstatSync(finalDir);
      if (!st.isDirectory()) {
        throw new RunnerError('PATH_NOT_DIRECTORY', `${finalDir} exists and is not a directory`, {
          value: outDir,
          where: flag,
          hint: `${flag} names a directory to write into: choose a new path`,
        });
      }
      exists = true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw fsError(error, finalDir, 'cannot use', flag);
    }
    if (exists) {
      recoverStale(finalDir);
      const entries = readdirSync(finalDir, { withFileTypes: true });
      const foreign = entries.filter((e) => e.name !== INNER_LOCK && !(e.isFile() && options.ownFiles.includes(e.name)));
      if (foreign.length > 0) {
        throw new RunnerError('DIRECTORY_NOT_EMPTY', `${finalDir} holds files ninodes did not write (${foreign.slice(0, 3).map((e) => e.name).join(', ')})`, {
          value: outDir,
          where: flag,
          hint: 'choose a new or empty directory; ninodes replaces only a directory of its own outputs',
        });
      }
      if (entries.some((e) => e.name !== INNER_LOCK) && !options.force) {
        throw new RunnerError('OUTPUT_EXISTS', `${finalDir} holds the output of an earlier run`, {
          value: outDir,
          where: flag,
          hint: 'pass --force to replace it (it is replaced as a whole, only on success)',
        });
      }
    }
    // In place when --out exists (its own file system, even as a mount point), beside it otherwise.
    const dir = exists ? createTempDir(finalDir, 'staging', JOURNAL) : createTempDir(parent, basename(finalDir));
    let finished = false;
    // Set when a failed commit could not be rolled back: the journal then holds the only copy of
    // old files and must survive this process, for the next writer's recoverStale.
    let keepJournal = false;
    const finish = (): void => {
      finished = true;
      lock.release();
    };
    return {
      dir,
      commit() {
        const names = readdirSync(dir).filter((n) => n !== OLD && n !== COMMITTED);
        if (!exists) {
          try {
            renameSync(dir, finalDir);
          } catch (error) {
            throw fsError(error, finalDir, 'cannot commit the output to', flag);
          }
          releaseTemp(dir);
          fsyncDir(parent);
          finish();
          return names.map((n) => join(finalDir, n));
        }
        const old = join(dir, OLD);
        const movedOld: string[] = [];
        const movedNew: string[] = [];
        try {
          mkdirSync(old);
          for (const name of readdirSync(finalDir)) {
            if (join(finalDir, name) === dir || !options.ownFiles.includes(name)) continue;
            renameSync(join(finalDir, name), join(old, name));
            movedOld.push(name);
          }
          for (const name of names) {
            renameSync(join(dir, name), join(finalDir, name));
            movedNew.push(name);
          }
          writeFileSync(join(dir, COMMITTED), '');
        } catch (error) {
          // Put everything back as it was; the error is the commit's, the rollback is best effort.
          for (const name of movedNew) {
            try {
              renameSync(join(finalDir, name), join(dir, name));
            } catch {
              keepJournal = true;
            }
          }
          for (const name of movedOld) {
            try {
              renameSync(join(old, name), join(finalDir, name));
            } catch {
              keepJournal = true;
            }
          }
          if (keepJournal) releaseTemp(dir);
          throw fsError(error, finalDir, 'cannot commit the output to', flag);
        }
        fsyncDir(finalDir);
        removeTemp(dir);
        finish();
        return names.map((n) => join(finalDir, n));
      },
      discard() {
        if (finished) return;
        if (!keepJournal) removeTemp(dir);
        finish();
      },
    };
  } catch (error) {
    lock.release();
    throw error;
  }
}
