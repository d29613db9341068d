import { closeSync, fstatSync, openSync, readSync, readFileSync, statSync } from 'node:fs';
import { NinodesError, Tensor, byteSizeOf, type StorageOwner } from '@ninodes/kernels';
import type { CheckpointSource, TensorEntry } from '@ninodes/memory';
import { type GgufHeader, type GgufTensorInfo, GgufNeedMoreBytes, parseGguf } from './gguf-parser.js';
import { ggufValueToString } from './gguf-types.js';

/** A mapping of the whole file that hands out byte-range views, each with its own owner. */
export interface GgufFileMapping {
  view(offset: number, length: number): { buffer: ArrayBuffer; owner?: StorageOwner };
  release(): void;
}

export interface OpenGgufOptions {
  /** Maps the file for tensor views. Default: reads the file into memory on first `tensor()`. */
  map?: (path: string) => GgufFileMapping;
}

/** Reads and parses only the header of a GGUF file, growing the read until the header fits. */
export function readGgufHeader(path: string): GgufHeader {
  const fd = openSync(path, 'r');
  try {
    const fileSize = fstatSync(fd).size;
    let want = Math.min(fileSize, 1 << 20);
    for (;;) {
      const bytes = new Uint8Array(want);
      const got = readSync(fd, bytes, 0, want, 0);
      try {
        return parseGguf(bytes.subarray(0, got), { fileSize, where: path });
      } catch (error) {
        if (!(error instanceof GgufNeedMoreBytes) || got < want) throw error;
        want = Math.min(fileSize, Math.max(want * 2, error.needed));
      }
    }
  } finally {
    closeSync(fd);
  }
}

interface FileIdentity {
  size: number;
  mtimeMs: number;
  ino: number;
}

function identityOf(path: string): FileIdentity {
  const s = statSync(path);
  return { size: s.size, mtimeMs: s.mtimeMs, ino: s.ino };
}

/**
 * A GGUF file as a CheckpointSource: entries carry torch-order shapes (orig_shape honoured) and kernels
 * dtypes, so later packages treat it like safetensors. Opening reads the header only.
 */
export class GgufCheckpoint implements CheckpointSource {
  readonly format = 'gguf' as const;
  readonly path: string;
  readonly header: GgufHeader;
  readonly metadata: Readonly<Record<string, string>>;
  private readonly byName: Map<string, GgufTensorInfo>;
  private readonly entryList: readonly TensorEntry[];
  private readonly identity: FileIdentity;
  private readonly mapFile: (path: string) => GgufFileMapping;
  private mapped: GgufFileMapping | undefined;
  private closed = false;

  private constructor(path: string, header: GgufHeader, identity: FileIdentity, options: OpenGgufOptions) {
    this.path = path;
    this.header = header;
    this.identity = identity;
    this.mapFile = options.map ?? readWholeFile;
    const meta: Record<string, string> = {};
    for (const [k, v] of header.metadata) meta[k] = ggufValueToString(v);
    this.metadata = Object.freeze(meta);
    this.byName = new Map(header.tensors.map((t) => [t.name, t]));
    this.entryList = Object.freeze(
      header.tensors.map((t) =>
        Object.freeze({ name: t.name, dtype: t.dtype, shape: t.shape, byteOffset: t.byteOffset, byteLength: t.byteLength, file: path }),
      ),
    );
  }

  static open(path: string, options: OpenGgufOptions = {}): GgufCheckpoint {
    const identity = identityOf(path);
    return new GgufCheckpoint(path, readGgufHeader(path), identity, options);
  }

  entries(): readonly TensorEntry[] {
    return this.entryList;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  entry(name: string): TensorEntry {
    const e = this.entryList.find((x) => x.name === name);
    if (e === undefined) throw this.notFound(name);
    return e;
  }

  /** The GGUF-specific description (ggml type, stored dims) of a tensor. */
  info(name: string): GgufTensorInfo {
    const t = this.byName.get(name);
    if (t === undefined) throw this.notFound(name);
    return t;
  }

  /**
   * Zero-copy view of the tensor's bytes in its torch shape. A block tensor whose original shape
   * does not keep whole blocks on the last dimension is returned in its stored shape (see `info`);
   * dequantize it, then reshape to `entry(name).shape`.
   */
  tensor(name: string): Tensor {
    const t = this.info(name);
    if (this.closed) {
      throw new NinodesError('CHECKPOINT_CLOSED', `${this.path} was closed`, { where: name, hint: 'open the checkpoint again' });
    }
    const now = identityOf(this.path);
    if (now.size !== this.identity.size || now.mtimeMs !== this.identity.mtimeMs || now.ino !== this.identity.ino) {
      throw new NinodesError('CHECKPOINT_CHANGED', `${this.path} changed on disk since it was opened`, {
        value: { opened: this.identity, now },
        where: name,
        hint: 'open the checkpoint again',
      });
    }
    this.mapped ??= this.mapFile(this.path);
    let shape = t.shape;
    try {
      byteSizeOf(t.dtype, shape);
    } catch {
      shape = t.storedShape;
    }
    const { buffer, owner } = this.mapped.view(t.byteOffset, t.byteLength);
    return new Tensor(t.dtype, shape, buffer, owner ? { owner } : {});
  }

  close(): void {
    this.closed = true;
    this.mapped?.release();
    this.mapped = undefined;
  }

  private notFound(name: string): NinodesError {
    return new NinodesError('TENSOR_NOT_FOUND', `tensor '${name}' is not in ${this.path}`, {
      value: name,
      where: this.path,
      hint: `the file has ${this.entryList.length} tensors`,
    });
  }
}

function readWholeFile(path: string): GgufFileMapping {
  const file = readFileSync(path);
  const mapping = {
    released: false,
    view(offset: number, length: number) {
      const buffer = new ArrayBuffer(length);
      if (!mapping.released) new Uint8Array(buffer).set(file.subarray(offset, offset + length));
      return { buffer };
    },
    release() {
      mapping.released = true;
    },
  };
  return mapping;
}
