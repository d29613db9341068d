// One way to write a file so that it appears whole or not at all: everything goes to a temporary
// beside the target (kernels' createTempFile: random name, O_EXCL|O_NOFOLLOW, removed on
// SIGINT/SIGTERM by the CLI), which is fsynced and renamed over the target only on success. The
// safetensors and GGUF writers both stream through it.
import { closeSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { createTempFile, releaseTemp, removeTemp, rethrowFs } from '@ninodes/kernels';

/** Appends bytes to the file being written. */
export type WriteBytes = (bytes: Uint8Array) => void;

/**
 * Calls `fill` with an appending writer, then commits the temporary under `path`. On any error
 * (thrown by `fill` or by the file system) nothing partial remains under either name; file-system
 * failures (full disk, read-only, permissions) come out coded.
 */
export async function writeFileAtomically<T>(path: string, fill: (write: WriteBytes) => Promise<T> | T): Promise<T> {
  const temp = createTempFile(dirname(path), basename(path));
  let fd: number | undefined = temp.fd;
  try {
    const out = fd;
    const result = await fill((bytes) => {
      let done = 0;
      while (done < bytes.byteLength) done += writeSync(out, bytes, done, bytes.byteLength - done);
    });
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temp.path, path);
    releaseTemp(temp.path);
    // The rename itself must reach the disk too.
    const dirFd = openSync(dirname(path), 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
    return result;
  } catch (error) {
    removeTemp(temp.path, fd);
    rethrowFs(error, path, 'cannot write');
  }
}
