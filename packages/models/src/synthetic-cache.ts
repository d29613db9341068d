import { createHash } from 'node:crypto';
import { closeSync, createReadStream, existsSync, openSync, readFileSync, readSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NinodesError } from '@ninodes/kernels';
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
 * A synthetic preset checkpoint in `dir`, generated once and verified by hash on reuse
 * (`<preset>-seed<seed>.safetensors` plus a `.sha256` sidecar). A file that fails verification is
 * regenerated; a sparse preset (h3-full) is verified by size and header hash only.
 */
export async function ensureSyntheticCheckpoint(options: {
  readonly dir: string;
  readonly preset: H3PresetName;
  readonly seed?: number;
  readonly onProgress?: (done: number, total: number, name: string) => void;
}): Promise<CachedCheckpoint> {
  const preset = h3Preset(options.preset);
  const seed = options.seed ?? 145;
  const path = join(options.dir, `${preset.name}-seed${seed}.safetensors`);
  const sidecar = `${path}.sha256`;
  const sparse = preset.name === 'h3-full' || preset.name === 'h3-full-pruned';
  const digest = async (): Promise<string> => (sparse ? sha256File(path, headerBytes(path)) : sha256File(path));
  if (existsSync(path) && existsSync(sidecar)) {
    const [want, size] = readFileSync(sidecar, 'utf8').trim().split(/\s+/);
    if (want !== undefined && Number(size) === statSync(path).size && (await digest()) === want) {
      return { path, sha256: want, reused: true, bytes: Number(size) };
    }
  }
  const written = await writeSyntheticH3Checkpoint(path, { preset: preset.name, seed, sparse, ...(options.onProgress ? { onProgress: options.onProgress } : {}) });
  const sha256 = await digest();
  const tmp = `${sidecar}.partial-${process.pid}`;
  writeFileSync(tmp, `${sha256} ${written.bytes}\n`);
  renameSync(tmp, sidecar);
  if (statSync(path).size !== written.bytes) throw new NinodesError('WRITE_FAILED', `${path} has the wrong size after writing`, { where: path });
  return { path, sha256, reused: false, bytes: written.bytes };
}
