import { type Stats, lstatSync, statSync } from 'node:fs';
import { fsError } from '@ninodes/kernels';
import { RunnerError } from './error-codes.js';

/** The file a path reaches through every link (device + inode), or undefined when nothing is there. */
function identity(path: string, where: string): Stats | undefined {
  try {
    return statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw fsError(error, path, 'cannot use', where);
  }
}

/**
 * Checks `<out>` of a command that writes one new file from `inputs` (quantize, merge: every file
 * the inputs read, shards included: memory's checkpointFiles): not one of the inputs, not a directory, and not an
 * existing file unless `force` (the file itself is written through a temporary and renamed only on
 * success, by memory's writeSafetensors). Files are compared by device and inode, not by path, so a
 * symlinked folder, an input that is a link to the output, or a shard named through its index are
 * caught; a hard link to an input is refused too (it names the same file).
 */
export function checkNewOutputFile(output: string, inputs: readonly string[], options: { force: boolean }): void {
  const target = identity(output, '<out>');
  if (target !== undefined && !target.isDirectory()) {
    const same = inputs.find((input) => {
      const st = identity(input, input);
      return st !== undefined && st.dev === target.dev && st.ino === target.ino;
    });
    if (same !== undefined) {
      throw new RunnerError('OUTPUT_IS_INPUT', `the output ${output} is the file ${same}, which this command reads`, {
        value: output,
        where: '<out>',
        hint: 'write the new checkpoint to a new path',
      });
    }
  }
  let existing: Stats | undefined;
  try {
    existing = lstatSync(output);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw fsError(error, output, 'cannot use', '<out>');
  }
  if (existing?.isDirectory() || (existing?.isSymbolicLink() && target?.isDirectory())) {
    throw new RunnerError('PATH_IS_DIRECTORY', `${output} is a directory`, { value: output, where: '<out>', hint: 'name the new .safetensors file, e.g. <dir>/model-int8.safetensors' });
  }
  if (existing !== undefined && !options.force) {
    throw new RunnerError('OUTPUT_EXISTS', `${output} exists`, { value: output, where: '<out>', hint: 'pass --force to replace it (it is replaced atomically, only on success)' });
  }
}
