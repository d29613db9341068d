// Opens whatever checkpoint the user names: GGUF by its magic bytes, safetensors (single file or
// a sharded *.safetensors.index.json) otherwise. Both come back as a CheckpointSource.
import { closeSync, openSync, readSync } from 'node:fs';
import { NinodesError } from '@ninodes/kernels';
import { type CheckpointSource, openSafetensors } from '@ninodes/memory';
import { GgufCheckpoint } from './gguf-checkpoint.js';

function magic(path: string): string {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    throw new NinodesError('CHECKPOINT_NOT_FOUND', `cannot open checkpoint ${path}: ${e.code ?? e.message}`, {
      value: path,
      hint: 'pass the path of a .safetensors, .safetensors.index.json or .gguf file',
      cause: error,
    });
  }
  try {
    const bytes = Buffer.alloc(4);
    readSync(fd, bytes, 0, 4, 0);
    return bytes.toString('latin1');
  } finally {
    closeSync(fd);
  }
}

export function openCheckpoint(path: string): CheckpointSource {
  return magic(path) === 'GGUF' ? GgufCheckpoint.open(path) : openSafetensors(path);
}
