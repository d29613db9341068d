// Opens whatever checkpoint the user names: GGUF by its magic bytes, safetensors (single file or
// a sharded *.safetensors.index.json) otherwise. Both come back as a CheckpointSource.
import { closeSync, readSync } from 'node:fs';
import { fsError, openRegularFile } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';
import { type CheckpointSource, openSafetensors } from '@ninodes/memory';
import { GgufCheckpoint } from './gguf-checkpoint.js';

function magic(path: string): string {
  let fd: number;
  try {
    // Refuses directories, FIFOs and devices before reading a byte (a FIFO would block forever).
    fd = openRegularFile(path);
  } catch (error) {
    const e = fsError(error, path, 'cannot open checkpoint');
    if (e.code !== 'FILE_NOT_FOUND') throw e;
    throw new QuantError('FILE_NOT_FOUND', `cannot open checkpoint ${path}: no such file`, {
      value: path,
      where: path,
      hint: 'pass the path of a .safetensors, .safetensors.index.json or .gguf file',
      cause: error,
    });
  }
  try {
    const bytes = Buffer.alloc(4);
    readSync(fd, bytes, 0, 4, 0);
    return bytes.toString('latin1');
  } catch (error) {
    throw fsError(error, path, 'cannot read checkpoint');
  } finally {
    closeSync(fd);
  }
}

export function openCheckpoint(path: string): CheckpointSource {
  const head = magic(path);
  if (head === 'GGUF') return GgufCheckpoint.open(path);
  // A file named .gguf without the magic is a damaged GGUF, not a safetensors problem.
  if (/\.gguf$/i.test(path)) {
    throw new QuantError('GGUF_BAD_MAGIC', `${path} does not start with the GGUF magic`, {
      value: Buffer.from(head, 'latin1').toString('hex'),
      where: path,
      hint: 'a GGUF file starts with the bytes "GGUF"; the file is damaged or not a GGUF',
    });
  }
  return openSafetensors(path);
}
