// Opens whatever checkpoint the user names, by its first bytes before its name: GGUF, safetensors
// (single file, or a sharded *.safetensors.index.json by name), or a coded NOT_A_CHECKPOINT that
// says what the file looks like instead. Both formats come back as a CheckpointSource.
import { closeSync, fstatSync, readSync } from 'node:fs';
import { fsError, openRegularFile } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';
import { type CheckpointSource, openSafetensors } from '@ninodes/memory';
import { GgufCheckpoint } from './gguf-checkpoint.js';
import { fileKind } from './file-kind.js';

function head(path: string): { bytes: Uint8Array; size: number } {
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
    const bytes = Buffer.alloc(16);
    const n = readSync(fd, bytes, 0, 16, 0);
    return { bytes: bytes.subarray(0, n), size: fstatSync(fd).size };
  } catch (error) {
    throw fsError(error, path, 'cannot read checkpoint');
  } finally {
    closeSync(fd);
  }
}

export function openCheckpoint(path: string): CheckpointSource {
  // A shard index is JSON text by design: its shards are checked when they are opened.
  if (/\.safetensors\.index\.json$/i.test(path)) return openSafetensors(path);
  const first = head(path);
  const kind = fileKind(first.bytes, first.size, path);
  if (kind.kind === 'gguf') return GgufCheckpoint.open(path);
  if (kind.kind === 'other') {
    throw new QuantError('NOT_A_CHECKPOINT', `${path} is not a safetensors or GGUF checkpoint: it looks like ${kind.looksLike}`, { value: path, where: path, hint: kind.hint });
  }
  // A file named .gguf without the magic is a damaged GGUF, not a safetensors problem.
  if (kind.kind === 'unknown' && /\.gguf$/i.test(path)) {
    throw new QuantError('GGUF_BAD_MAGIC', `${path} does not start with the GGUF magic`, {
      value: Buffer.from(first.bytes.subarray(0, 4)).toString('hex'),
      where: path,
      hint: 'a GGUF file starts with the bytes "GGUF"; the file is damaged or not a GGUF',
    });
  }
  // safetensors, or nothing recognizable: the safetensors reader says what is wrong with it.
  return openSafetensors(path);
}
