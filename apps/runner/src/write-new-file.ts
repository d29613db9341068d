import { closeSync, fsyncSync, writeSync } from 'node:fs';
import { createExclusiveFile, rethrowFs } from '@ninodes/kernels';

/** Writes and fsyncs a new file (never through a planted link, never over an existing one), errors coded. */
export function writeNewFile(path: string, data: string | Uint8Array): void {
  const fd = createExclusiveFile(path);
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    let done = 0;
    while (done < bytes.byteLength) done += writeSync(fd, bytes, done, bytes.byteLength - done);
    // On disk before the directory holding it is renamed into place.
    fsyncSync(fd);
  } catch (error) {
    rethrowFs(error, path, 'cannot write');
  } finally {
    closeSync(fd);
  }
}
