import { createHash } from 'node:crypto';
import { closeSync, createReadStream, existsSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type LockOwner, makeDirectories, readSmallFile, sweepStaleTemps, waitLock, writeFileAtomicallySync } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';
import { type H3PresetName, h3Preset } from './presets.js';
import { writeSyntheticH3Checkpoint } from './synthetic-checkpoint.js';

export interface CachedCheckpoint {
  readonly path: string;
  /** SHA-256 of the file (dense presets) or of its header (sparse ones). */
  readonly sha256: string;
  /** True when an existing file passed verification and was not rewritten. */
  readonly reused: boolean;
  readonly bytes: number;
}

async function sha256File(path: string, limit?: number): Promise<string> {
  const hash = createHash('sha256');
  const stream = createReadStream(path, limit === undefined ? {} : { start: 0, end: limit - 1 });
  for await (const chunk of stream) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function headerBytes(path: string): number {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(8);
    readSync(fd, head, 0, 8, 0);
    return 8 + Number(head.readBigUInt64LE(0));
  } finally {
    closeSync(fd);
  }
}

/**
 * The H3 config a synthetic checkpoint was written with (its `ninodes.h3_config` metadata), so a
 * file cached before a preset changed shape (h3-tiny gaining its text and audio streams) is
 * regenerated rather than reused. Undefined when the header cannot be read.
 */
function cachedConfig(path: string): string | undefined {
  try {
    const fd = openSync(path, 'r');
    try {
      const n = headerBytes(path) - 8;
      const json = Buffer.alloc(n);
      readSync(fd, json, 0, n, 8);
      const meta = (JSON.parse(json.toString('utf8')) as { __metadata__?: Record<string, string> }).__metadata__;
      return meta?.['ninodes.h3_config'];
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

function readSidecar(sidecar: string): { sha256: string; bytes: number } | undefined {
  try {
    // Our own file: no link followed, no FIFO waited on; anything unreadable is re-verified and rewritten.
    const [sha256, size] = readSmallFile(sidecar, { maxBytes: 256, noFollow: true }).data.toString('utf8').trim().split(/\s+/);
    return sha256 === undefined || size === undefined ? undefined : { sha256, bytes: Number(size) };
  } catch {
    return undefined;
  }
}

/**
 * A synthetic preset checkpoint in `dir`, generated once and verified by hash on reuse
 * (`<preset>-seed<seed>.safetensors` plus a `.sha256` sidecar). A file that fails verification is
 * regenerated, and so is one written for another shape of the preset (its config metadata differs);
 * a sparse preset (h3-full) is verified by size and header hash only.
 *
 * Generation runs under `<file>.lock`: a second process waits, then finds the file verified and
 * reuses it, so nothing is ever renamed over a checkpoint another process has just written and
 * mapped. The lock is released on error; a lock left by a killed process is taken over.
 */
export async function ensureSyntheticCheckpoint(options: {
  readonly dir: string;
  readonly preset: H3PresetName;
  readonly seed?: number;
  readonly onProgress?: (done: number, total: number, name: string) => void;
  /** Called once when another process holds the generation lock and this one waits for it. */
  readonly onWait?: (owner: LockOwner) => void;
}): Promise<CachedCheckpoint> {
  const preset = h3Preset(options.preset);
  const seed = options.seed ?? 145;
  const path = join(options.dir, `${preset.name}-seed${seed}.safetensors`);
  const sidecar = `${path}.sha256`;
  const sparse = preset.name === 'h3-full' || preset.name === 'h3-full-pruned';
  const digest = async (): Promise<string> => (sparse ? sha256File(path, headerBytes(path)) : sha256File(path));
  const verified = async (): Promise<CachedCheckpoint | undefined> => {
    const want = readSidecar(sidecar);
    if (want === undefined || !existsSync(path) || statSync(path).size !== want.bytes) return undefined;
    if (cachedConfig(path) !== JSON.stringify(preset.config)) return undefined;
    return (await digest()) === want.sha256 ? { path, sha256: want.sha256, reused: true, bytes: want.bytes } : undefined;
  };
  // Temporaries of generations killed earlier (pid gone) go now, even when nothing is generated.
  sweepStaleTemps(options.dir);
  const ready = await verified();
  if (ready) return ready;
  makeDirectories(options.dir, 'cannot create the cache directory', 'NINODES_CACHE');
  const lock = await waitLock(`${path}.lock`, options.onWait ? { onWait: options.onWait } : {});
  try {
    // Another process may have generated it while this one waited.
    const again = await verified();
    if (again) return again;
    const written = await writeSyntheticH3Checkpoint(path, { preset: preset.name, seed, sparse, ...(options.onProgress ? { onProgress: options.onProgress } : {}) });
    const sha256 = await digest();
    writeFileAtomicallySync(sidecar, (write) => write(`${sha256} ${written.bytes}\n`));
    if (statSync(path).size !== written.bytes) throw new ModelsError('WRITE_FAILED', `${path} has the wrong size after writing`, { where: path });
    return { path, sha256, reused: false, bytes: written.bytes };
  } finally {
    lock.release();
  }
}
