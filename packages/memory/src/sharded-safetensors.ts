import { closeSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { type Tensor, fsError, openRegularFile } from '@ninodes/kernels';
import { MemoryError, type MemoryThrownCode } from './error-codes.js';
import type { CheckpointSource, TensorEntry } from './checkpoint-source.js';
import { type OpenSafetensorsOptions, SafetensorsFile } from './safetensors-file.js';

function bad(code: MemoryThrownCode, path: string, detail: string, value?: unknown): never {
  throw new MemoryError(code, `${path}: ${detail}`, { where: path, value, hint: 'a sharded index is {"metadata": {...}, "weight_map": {"tensor": "shard.safetensors"}}' });
}

/** A `*.safetensors.index.json` and its shards, opened as one checkpoint. */
export class ShardedSafetensors implements CheckpointSource {
  readonly format = 'safetensors' as const;
  readonly path: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly shards: readonly SafetensorsFile[];
  private readonly owner: Map<string, SafetensorsFile>;
  private readonly all: readonly TensorEntry[];

  private constructor(path: string, metadata: Record<string, string>, shards: SafetensorsFile[], owner: Map<string, SafetensorsFile>) {
    this.path = path;
    this.metadata = Object.freeze(metadata);
    this.shards = shards;
    this.owner = owner;
    this.all = shards.flatMap((s) => s.entries().filter((e) => owner.get(e.name) === s));
  }

  static open(path: string, options: OpenSafetensorsOptions = {}): ShardedSafetensors {
    let parsed: unknown;
    // A directory, FIFO or unreadable index is a coded file-system error, refused before reading.
    const fd = openRegularFile(path);
    let text: string;
    try {
      text = readFileSync(fd, 'utf8');
    } catch (error) {
      throw fsError(error, path, 'cannot read the index');
    } finally {
      closeSync(fd);
    }
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      bad('SAFETENSORS_INDEX_INVALID', path, `cannot read the index: ${(error as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) bad('SAFETENSORS_INDEX_INVALID', path, 'the index is not a JSON object');
    const { weight_map: map, metadata: meta } = parsed as { weight_map?: unknown; metadata?: unknown };
    if (typeof map !== 'object' || map === null || Array.isArray(map)) bad('SAFETENSORS_INDEX_INVALID', path, 'weight_map is missing or not an object', map);
    const metadata: Record<string, string> = {};
    if (meta !== undefined && meta !== null) {
      if (typeof meta !== 'object' || Array.isArray(meta)) bad('SAFETENSORS_INDEX_INVALID', path, 'metadata is not an object', meta);
      for (const [k, v] of Object.entries(meta)) metadata[k] = typeof v === 'string' ? v : JSON.stringify(v);
    }
    const dir = dirname(path);
    const files = new Map<string, string[]>();
    for (const [name, file] of Object.entries(map)) {
      if (typeof file !== 'string' || file === '' || isAbsolute(file) || normalize(file).split(sep).includes('..')) {
        bad('SAFETENSORS_INDEX_INVALID', path, `tensor '${name}' maps to ${JSON.stringify(file)}, not a file beside the index`, file);
      }
      const list = files.get(file) ?? [];
      list.push(name);
      files.set(file, list);
    }
    const shards: SafetensorsFile[] = [];
    const owner = new Map<string, SafetensorsFile>();
    try {
      for (const [file, names] of files) {
        const shard = SafetensorsFile.open(join(dir, file), options);
        shards.push(shard);
        for (const name of names) {
          if (!shard.has(name)) bad('SAFETENSORS_INDEX_MISSING_TENSOR', path, `weight_map puts '${name}' in ${file}, which has no such tensor`, name);
          owner.set(name, shard);
        }
      }
    } catch (error) {
      for (const s of shards) s.close();
      throw error;
    }
    return new ShardedSafetensors(path, metadata, shards, owner);
  }

  entries(): readonly TensorEntry[] {
    return this.all;
  }

  has(name: string): boolean {
    return this.owner.has(name);
  }

  private shardOf(name: string): SafetensorsFile {
    const shard = this.owner.get(name);
    if (shard === undefined) {
      throw new MemoryError('TENSOR_NOT_FOUND', `${this.path} has no tensor '${name}'`, { where: this.path, value: name, hint: 'see entries()' });
    }
    return shard;
  }

  entry(name: string): TensorEntry {
    return this.shardOf(name).entry(name);
  }

  tensor(name: string): Tensor {
    return this.shardOf(name).tensor(name);
  }

  tensorRows(name: string, start: number, end: number): Tensor {
    return this.shardOf(name).tensorRows(name, start, end);
  }

  tensorColumns(name: string, start: number, end: number): Tensor {
    return this.shardOf(name).tensorColumns(name, start, end);
  }

  advise(name: string, advice: 'willneed' | 'dontneed', rows?: readonly [number, number]): void {
    this.shardOf(name).advise(name, advice, rows);
  }

  verify(name: string): void {
    this.shardOf(name).verify();
  }

  touch(name: string): number {
    return this.shardOf(name).touch(name);
  }

  populate(name: string, rows?: readonly [number, number]): Promise<number> {
    return this.shardOf(name).populate(name, rows);
  }

  sumBytes(name: string): number {
    return this.shardOf(name).sumBytes(name);
  }

  close(): void {
    for (const s of this.shards) s.close();
  }
}

/** Opens a safetensors checkpoint: a single file, or a sharded `*.index.json`. */
export function openSafetensors(path: string, options: OpenSafetensorsOptions = {}): SafetensorsFile | ShardedSafetensors {
  return path.endsWith('.index.json') ? ShardedSafetensors.open(path, options) : SafetensorsFile.open(path, options);
}
