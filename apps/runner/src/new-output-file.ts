import { type Stats, lstatSync } from 'node:fs';
import { resolve } from 'node:path';
import { fsError } from '@ninodes/kernels';
import { RunnerError } from './error-codes.js';

/**
 * Checks `<out>` of a command that writes one new file from `inputs` (quantize, merge): not one of
 * the inputs, not a directory, and not an existing file unless `force` (the file itself is written
 * through a temporary and renamed only on success, by memory's writeSafetensors).
 */
export function checkNewOutputFile(output: string, inputs: readonly string[], options: { force: boolean }): void {
  const same = inputs.find((i) => resolve(i) === resolve(output));
  if (same !== undefined) {
    throw new RunnerError('OUTPUT_IS_INPUT', `input and output are the same file: ${output}`, { value: output, where: '<out>', hint: 'write the new checkpoint to a new path' });
  }
  let existing: Stats | undefined;
  try {
    existing = lstatSync(output);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw fsError(error, output, 'cannot use', '<out>');
  }
  if (existing?.isDirectory()) {
    throw new RunnerError('PATH_IS_DIRECTORY', `${output} is a directory`, { value: output, where: '<out>', hint: 'name the new .safetensors file, e.g. <dir>/model-int8.safetensors' });
  }
  if (existing !== undefined && !options.force) {
    throw new RunnerError('OUTPUT_EXISTS', `${output} exists`, { value: output, where: '<out>', hint: 'pass --force to replace it (it is replaced atomically, only on success)' });
  }
}
