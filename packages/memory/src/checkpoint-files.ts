import type { CheckpointSource } from './checkpoint-source.js';

/** Every file `source` reads: the path opened (the index of a sharded checkpoint) and each shard. */
export function checkpointFiles(source: CheckpointSource): string[] {
  return [...new Set([source.path, ...source.entries().map((e) => e.file)])];
}

/**
 * Runs the check `tensor()` makes (size, inode, mtime, ctime) on every file of `source` at once:
 * for a caller that holds views across a long computation (a resident run), so a file rewritten
 * in place during it fails the run (FILE_MODIFIED, FILE_REPLACED, FILE_TRUNCATED) instead of
 * passing off results of mixed weights. One fstat and one stat per file; a source without
 * `verify` (nothing mapped) has nothing to check.
 */
export function verifyCheckpoint(source: CheckpointSource): void {
  if (source.verify === undefined) return;
  const seen = new Set<string>();
  for (const e of source.entries()) {
    if (seen.has(e.file)) continue;
    seen.add(e.file);
    source.verify(e.name);
  }
}
