// File-system failures a user can cause (a directory where a file belongs, a full disk, a read-only
// mount, a FIFO) become coded NinodesErrors with a hint, never an INTERNAL "this is a bug". Every
// layer that touches the file system maps its errors through here, so one errno has one code.
import { closeSync, constants, existsSync, fstatSync, mkdirSync, openSync, readSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { NinodesError } from './errors.js';
import { KernelsError, type KernelsErrorCode } from './error-codes.js';

/** errno -> [code, what happened, what to do]. */
const ERRNO: Readonly<Record<string, readonly [KernelsErrorCode, string, string]>> = {
  ENOENT: ['FILE_NOT_FOUND', 'no such file or directory', 'check the path'],
  EISDIR: ['PATH_IS_DIRECTORY', 'is a directory', 'pass a file, not a directory'],
  ENOTDIR: ['PATH_NOT_DIRECTORY', 'a part of the path is not a directory', 'a file stands where a directory is needed: choose another path'],
  EACCES: ['PERMISSION_DENIED', 'permission denied', 'check the permissions of the file and of its directory'],
  EPERM: ['PERMISSION_DENIED', 'operation not permitted', 'check the permissions, and whether the file is immutable (lsattr)'],
  EROFS: ['READ_ONLY_FILESYSTEM', 'the file system is read-only', 'write to a writable location'],
  ENOSPC: ['NO_SPACE', 'no space left on the device', 'free disk space or write elsewhere'],
  EDQUOT: ['NO_SPACE', 'disk quota exceeded', 'free space within your quota or write elsewhere'],
  EFBIG: ['FILE_TOO_LARGE', 'file too large for this file system', 'write to a file system that allows larger files'],
  EXDEV: ['CROSS_DEVICE', 'cannot move a file between file systems', 'keep the path on one file system'],
  EEXIST: ['PATH_EXISTS', 'already exists', 'choose another path or remove the existing one'],
  ELOOP: ['SYMLINK_REFUSED', 'a symbolic link stands at a path that must be a real file', 'remove the link; ninodes does not write through links at its own temporary names'],
  ENAMETOOLONG: ['PATH_TOO_LONG', 'path too long', 'use a shorter path'],
  EMFILE: ['TOO_MANY_OPEN_FILES', 'too many open files', 'raise the open-file limit (ulimit -n)'],
  ENFILE: ['TOO_MANY_OPEN_FILES', 'too many open files in the system', 'close other programs or raise fs.file-max'],
  EBUSY: ['PATH_BUSY', 'device or resource busy', 'the path is a mount point or in use: choose another path'],
  ETXTBSY: ['PATH_BUSY', 'file is busy', 'stop the program that uses the file'],
  ENOTEMPTY: ['DIRECTORY_NOT_EMPTY', 'directory not empty', 'choose an empty or new directory'],
  EIO: ['IO_ERROR', 'input/output error', 'the disk or network file system failed: check it (dmesg)'],
  ENOMEM: ['OUT_OF_MEMORY', 'not enough memory', 'close other programs or use a smaller model or size'],
  ENXIO: ['NOT_A_REGULAR_FILE', 'no such device or address', 'pass a regular file'],
};

/** A Node.js system error (it has an errno code such as 'ENOENT' and the syscall that failed). */
export function isSystemError(error: unknown): error is NodeJS.ErrnoException & { code: string } {
  const e = error as { code?: unknown; syscall?: unknown };
  return typeof e === 'object' && e !== null && typeof e.code === 'string' && /^E[A-Z0-9]+$/.test(e.code) && typeof e.syscall === 'string';
}

/**
 * The NinodesError for a failed file-system call on `path`: `action` says what was being done
 * ("cannot open", "cannot write"), `where` which input named the path (a flag, an argument).
 * Errors that are already NinodesErrors pass through unchanged.
 */
export function fsError(error: unknown, path: string, action: string, where?: string): NinodesError {
  if (error instanceof NinodesError) return error;
  const errno = isSystemError(error) ? error.code : undefined;
  const known = errno === undefined ? undefined : ERRNO[errno];
  const [code, what, hint]: readonly [KernelsErrorCode, string, string] = known ?? ['FS_ERROR', errno ?? (error instanceof Error ? error.message : String(error)), 'check the path, its permissions and the file system'];
  return new KernelsError(code, `${action} ${path}: ${what}${errno !== undefined ? ` (${errno})` : ''}`, {
    value: path,
    where: where ?? path,
    hint,
    cause: error,
  });
}

/** Throws `fsError(...)` for a system error (ENOSPC, EACCES, ...), and any other error unchanged. */
export function rethrowFs(error: unknown, path: string, action: string, where?: string): never {
  throw isSystemError(error) ? fsError(error, path, action, where) : error;
}

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

/**
 * Opens `path` read-only and makes sure it is a regular file before anything reads from it.
 * O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer (for a regular
 * file it changes nothing), and the check runs on the opened descriptor, so a path swapped between
 * a check and the open cannot slip through. Returns the descriptor; the caller closes it.
 */
export function openRegularFile(path: string, where?: string, options: { noFollow?: boolean } = {}): number {
  return openRegular(path, where, options).fd;
}

function openRegular(path: string, where: string | undefined, options: { noFollow?: boolean }): { fd: number; st: Stats } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | (options.noFollow === true ? constants.O_NOFOLLOW : 0));
  } catch (error) {
    throw fsError(error, path, 'cannot open', where);
  }
  let st: Stats;
  try {
    st = fstatSync(fd);
  } catch (error) {
    closeSync(fd);
    throw fsError(error, path, 'cannot stat', where);
  }
  if (!st.isFile()) {
    closeSync(fd);
    const code = st.isDirectory() ? 'PATH_IS_DIRECTORY' : 'NOT_A_REGULAR_FILE';
    throw new KernelsError(code, `${path} is ${kindOf(st)}, not a regular file`, {
      value: path,
      where: where ?? path,
      hint: st.isDirectory() ? 'pass a file inside the directory, not the directory' : 'pass a regular file; ninodes does not read from pipes or devices',
    });
  }
  return { fd, st };
}

/**
 * Reads a small side file (a lock, a checksum, a JSON config, a procfs table) whole, safely: opened
 * as openRegularFile does (a FIFO or device is refused at once, never waited on), `noFollow` for
 * files ninodes writes itself (a link planted there is SYMLINK_REFUSED, never followed), and at most
 * `maxBytes` read (SIDE_FILE_TOO_LARGE beyond). The size is not taken from fstat: procfs and sysfs
 * files say 0 or 4096 whatever they hold. Returns the bytes and the opened file's stat.
 */
export function readSmallFile(path: string, options: { maxBytes: number; where?: string; noFollow?: boolean }): { data: Buffer; stat: Stats } {
  const { fd, st } = openRegular(path, options.where, options);
  try {
    // Chunks, not one buffer of maxBytes: a bound of megabytes costs nothing for a file of a line.
    const chunks: Buffer[] = [];
    let got = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(1 << 16, options.maxBytes + 1 - got));
      const n = readSync(fd, chunk, 0, chunk.byteLength, null);
      if (n === 0) break;
      chunks.push(chunk.subarray(0, n));
      got += n;
      if (got > options.maxBytes) {
        throw new KernelsError('SIDE_FILE_TOO_LARGE', `${path} holds more than ${options.maxBytes} bytes, more than such a file can`, {
          value: path,
          where: options.where ?? path,
          hint: 'it is not the small file ninodes expects there: remove or replace it',
        });
      }
    }
    return { data: Buffer.concat(chunks, got), stat: st };
  } catch (error) {
    throw fsError(error, path, 'cannot read', options.where);
  } finally {
    closeSync(fd);
  }
}

/**
 * mkdir -p with the true reason on failure: Node's recursive mkdir reports ENOENT when it meets a
 * read-only or unwritable file system on the way (it retries the parent and forgets the first
 * errno), so on ENOENT the first missing directory is made alone, which fails with the real errno
 * (EROFS, EACCES).
 */
export function makeDirectories(path: string, action: string, where?: string): void {
  try {
    mkdirSync(path, { recursive: true });
    return;
  } catch (error) {
    if (!isSystemError(error) || error.code !== 'ENOENT') throw fsError(error, path, action, where);
    let missing = path;
    while (dirname(missing) !== missing && !existsSync(dirname(missing))) missing = dirname(missing);
    try {
      mkdirSync(missing);
    } catch (inner) {
      if (!isSystemError(inner) || inner.code !== 'EEXIST') throw fsError(inner, path, action, where);
    }
    try {
      mkdirSync(path, { recursive: true });
    } catch (again) {
      throw fsError(again, path, action, where);
    }
  }
}
