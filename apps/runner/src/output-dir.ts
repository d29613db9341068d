// Everything a command writes goes to a staging directory beside --out and is renamed into place
// only when the whole run succeeded, so a failed or interrupted run never leaves half-written
// results under the name the user asked for.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { NinodesError } from '@ninodes/kernels';

export interface StagedOutput {
  /** Where to write files now. */
  readonly dir: string;
  /** Moves every staged file into the final directory (created if needed). */
  commit(): string[];
  /** Removes the staging directory and everything in it. */
  discard(): void;
}

export function stageOutput(outDir: string): StagedOutput {
  const finalDir = resolve(outDir);
  const parent = dirname(finalDir);
  mkdirSync(parent, { recursive: true });
  if (existsSync(finalDir) && !readdirSync(finalDir, { withFileTypes: true }).every((e) => e.isFile())) {
    throw new NinodesError('OUT_DIR_NOT_EMPTY', `output directory ${finalDir} holds subdirectories`, {
      value: outDir,
      where: '--out',
      hint: 'choose a new or empty directory; ninodes only replaces the files it writes',
    });
  }
  const dir = mkdtempSync(join(parent, `.${basename(finalDir)}.staging-`));
  let done = false;
  return {
    dir,
    commit() {
      mkdirSync(finalDir, { recursive: true });
      const moved: string[] = [];
      for (const name of readdirSync(dir)) {
        renameSync(join(dir, name), join(finalDir, name));
        moved.push(join(finalDir, name));
      }
      rmSync(dir, { recursive: true, force: true });
      done = true;
      return moved;
    },
    discard() {
      if (!done) rmSync(dir, { recursive: true, force: true });
      done = true;
    },
  };
}
