// The one way to write a file so that it appears whole or not at all: everything goes to a temporary
// beside the target (createTempFile: random name, O_EXCL|O_NOFOLLOW, removed on SIGINT/SIGTERM by
// the CLI), which is fsynced, renamed over the target only on success, and the directory fsynced so
// the rename reaches the disk too. The safetensors and GGUF writers, the synthetic checkpoints,
// captures, caches and bench results all write through it.
import { closeSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { rethrowFs } from './fs-errors.js';
import { createTempFile, releaseTemp, removeTemp } from './temp-files.js';

/** Appends bytes to the file being written. */
export type WriteBytes = (bytes: Uint8Array | string) => void;

function appender(fd: number): WriteBytes {
  return (data) => {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let done = 0;
    while (done < bytes.byteLength) done += writeSync(fd, bytes, done, bytes.byteLength - done);
  };
}

// Closes fd whatever happens; a failure before the rename leaves the temporary for the caller to remove.
function commit(fd: number, temp: string, path: string): void {
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  releaseTemp(temp);
  const dirFd = openSync(dirname(path), 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

/**
 * Calls `fill` with an appending writer and the temporary's descriptor (for positioned writes or a
 * truncate), then commits the temporary under `path`. On any error (thrown by `fill` or by the file
 * system) nothing partial remains under either name; file-system failures (full disk, read-only,
 * permissions) come out coded, described by `action` ('cannot write' by default).
 */
export async function writeFileAtomically<T>(path: string, fill: (write: WriteBytes, fd: number) => Promise<T> | T, action = 'cannot write'): Promise<T> {
  const temp = createTempFile(dirname(path), basename(path));
  let fd: number | undefined = temp.fd;
  try {
    const result = await fill(appender(temp.fd), temp.fd);
    fd = undefined; // commit closes it, whatever happens after
    commit(temp.fd, temp.path, path);
    return result;
  } catch (error) {
    removeTemp(temp.path, fd);
    rethrowFs(error, path, action);
  }
}

/** writeFileAtomically for a synchronous `fill`: done when it returns. */
export function writeFileAtomicallySync<T>(path: string, fill: (write: WriteBytes, fd: number) => T, action = 'cannot write'): T {
  const temp = createTempFile(dirname(path), basename(path));
  let fd: number | undefined = temp.fd;
  try {
    const result = fill(appender(temp.fd), temp.fd);
    fd = undefined;
    commit(temp.fd, temp.path, path);
    return result;
  } catch (error) {
    removeTemp(temp.path, fd);
    rethrowFs(error, path, action);
  }
}
