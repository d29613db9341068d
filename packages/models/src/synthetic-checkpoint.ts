import { ftruncateSync, mkdirSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { fsError, rethrowFs, writeFileAtomicallySync } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';
import { type TensorSource, buildHeader, writeSafetensors } from '@ninodes/memory';
import { type H3Config, validateH3Config } from './h3-config.js';
import { h3TensorSpecs } from './h3-tensors.js';
import { GaussianStream, hashSeed } from './noise.js';
import { type H3PresetName, h3Preset } from './presets.js';

export interface SyntheticCheckpointOptions {
  /** A preset name, or give `config`. */
  readonly preset?: H3PresetName;
  readonly config?: H3Config;
  /** Default 145. Same seed, same bytes. */
  readonly seed?: number;
  /**
   * Sparse: only norm weights and buffers are written, every linear stays a hole in the file (reads
   * as zeros, costs no disk). Default: true for h3-full, false otherwise.
   */
  readonly sparse?: boolean;
  /** Key prefix, e.g. 'model.diffusion_model.' to mimic a full ComfyUI checkpoint. Default ''. */
  readonly prefix?: string;
  /** Called after each tensor with bytes done and total. */
  readonly onProgress?: (done: number, total: number, name: string) => void;
}

export interface SyntheticCheckpointResult {
  readonly path: string;
  readonly config: H3Config;
  readonly seed: number;
  readonly sparse: boolean;
  /** File size (apparent size for sparse files). */
  readonly bytes: number;
  readonly tensors: number;
}

type Kind = 'weight' | 'bias' | 'norm' | 'inv_freq';

interface PlannedTensor {
  readonly name: string;
  readonly dtype: 'F32' | 'BF16';
  readonly shape: readonly number[];
  readonly kind: Kind;
  /** weight std scale relative to 1/sqrt(K) */
  readonly gain: number;
  /** Input columns of block linears fed by a hidden-state norm get a few outliers. */
  readonly outlierColumns: boolean;
  readonly begin: number;
  readonly end: number;
}

/** Weight gains: adaLN small (modulations of order 0.1–1, like trained DiTs), the rest unit. */
function gainOf(name: string): number {
  if (name.includes('adaln_proj')) return 0.5;
  return 1;
}

function plan(config: H3Config, prefix: string): { tensors: PlannedTensor[]; total: number } {
  const tensors: PlannedTensor[] = [];
  let offset = 0;
  for (const t of h3TensorSpecs(config, prefix)) {
    const bytes = t.shape.reduce((a, b) => a * b, 1) * (t.dtype === 'f32' ? 4 : 2);
    const base = t.name.slice(prefix.length);
    const kind: Kind = t.kind === 'buffer' ? 'inv_freq' : t.kind;
    const weight = t.kind === 'weight';
    // Input columns of the block linears fed by a hidden-state norm get a few outliers.
    const fedByHidden = weight && (base.endsWith('qkv_proj.weight') || base.endsWith('mlp.fc1.weight'));
    tensors.push({ name: t.name, dtype: t.dtype === 'f32' ? 'F32' : 'BF16', shape: t.shape, kind, gain: weight ? gainOf(base) : 1, outlierColumns: fedByHidden, begin: offset, end: offset + bytes });
    offset += bytes;
  }
  return { tensors, total: offset };
}

function toBf16(src: Float32Array, out: Uint16Array): void {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < src.length; i++) {
    const u = bits[i] as number;
    out[i] = ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
  }
}

/** The few hidden channels that carry outliers, the same for every layer (as in trained DiTs). */
function outlierChannels(hidden: number, seed: number): number[] {
  const g = new GaussianStream(hashSeed(seed, 'outlier-channels'));
  const set = new Set<number>();
  const want = Math.min(4, hidden);
  while (set.size < want) set.add(Math.floor(g.uniform() * hidden));
  return [...set].sort((a, b) => a - b);
}

/** One tensor's values (f32): normal rows generated in order, so the bytes depend only on seed and name. */
function generate(t: PlannedTensor, config: H3Config, seed: number, outliers: readonly number[]): Float32Array {
  const g = new GaussianStream(hashSeed(seed, t.name));
  const numel = t.shape.reduce((a, b) => a * b, 1);
  if (t.kind === 'inv_freq') return Float32Array.from({ length: numel }, (_, i) => 10000 ** (-i / numel));
  if (t.kind === 'norm') {
    const v = g.fill(new Float32Array(numel), 0.1, 1);
    // hidden-size norms amplify the outlier channels: the "massive activations" of real DiTs
    if (numel === config.hidden && !t.name.includes('final_layer')) for (const c of outliers) v[c] = (v[c] as number) * 8;
    return v;
  }
  if (t.kind === 'bias') return g.fill(new Float32Array(numel), 0.02);
  const [n, k] = t.shape as [number, number];
  const v = g.fill(new Float32Array(n * k), t.gain / Math.sqrt(k));
  if (t.outlierColumns) for (let i = 0; i < n; i++) for (const c of outliers) v[i * k + c] = (v[i * k + c] as number) * 4;
  return v;
}

function encode(t: PlannedTensor, values: Float32Array): Uint8Array {
  if (t.dtype === 'F32') return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  const b = new Uint16Array(values.length);
  toBf16(values, b);
  return new Uint8Array(b.buffer);
}

/**
 * Writes a synthetic MiniMax-H3 video checkpoint in safetensors: ComfyUI key names, bf16 with the
 * fp32 islands (`video_patch_proj`, `time_embedder`, `final_layer.video_out`, `rope.inv_freq`),
 * weights N(0, gain²/K) with a few outlier hidden channels, deterministic from the seed. Written to
 * a temporary name and renamed, so a failure never leaves a partial file at `path`.
 */
export async function writeSyntheticH3Checkpoint(path: string, options: SyntheticCheckpointOptions = {}): Promise<SyntheticCheckpointResult> {
  const config = validateH3Config(options.config ?? h3Preset(options.preset ?? 'h3-tiny').config);
  const seed = options.seed ?? 145;
  if (!Number.isSafeInteger(seed) || seed < 0) throw new ModelsError('INVALID_ARGUMENT', `seed must be a non-negative integer, got ${String(seed)}`, { value: seed, where: 'seed' });
  const sparse = options.sparse ?? (options.preset === 'h3-full' || options.preset === 'h3-full-pruned');
  const prefix = options.prefix ?? '';
  const { tensors, total } = plan(config, prefix);

  const metadata = {
    format: 'pt',
    'ninodes.synthetic': JSON.stringify({ architecture: 'minimax-h3-video', preset: options.preset ?? null, seed, sparse }),
    'ninodes.h3_config': JSON.stringify(config),
  };
  const outliers = outlierChannels(config.hidden, seed);
  let done = 0;
  const sources: TensorSource[] = tensors.map((t) => ({
    name: t.name,
    dtype: t.dtype === 'F32' ? 'f32' : 'bf16',
    shape: t.shape,
    data: () => {
      const bytes = encode(t, generate(t, config, seed, outliers));
      done += bytes.byteLength;
      options.onProgress?.(done, total, t.name);
      return bytes;
    },
  }));
  try {
    mkdirSync(dirname(path), { recursive: true });
  } catch (error) {
    throw fsError(error, dirname(path), 'cannot create directory');
  }
  try {
    if (!sparse) {
      const r = await writeSafetensors(path, sources, { metadata });
      return { path, config, seed, sparse, bytes: r.bytes, tensors: tensors.length };
    }
    return { path, config, seed, sparse, bytes: writeSparse(path, sources, tensors, metadata), tensors: tensors.length };
  } catch (error) {
    // A full disk or read-only directory keeps its own code (NO_SPACE, READ_ONLY_FILESYSTEM, ...).
    rethrowFs(error, path, 'could not write synthetic checkpoint');
  }
}

/**
 * Header, then only the norm weights and buffers; the file is extended to its full size so every
 * linear reads as zeros from a hole. Temporary name + rename, like the dense writer.
 */
function writeSparse(path: string, sources: readonly TensorSource[], tensors: readonly PlannedTensor[], metadata: Record<string, string>): number {
  const { json, sizes } = buildHeader(sources, metadata, path);
  const base = 8 + json.byteLength;
  const total = base + sizes.reduce((a, b) => a + b, 0);
  return writeFileAtomicallySync(path, (_write, fd) => {
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.byteLength), 0);
    writeSync(fd, len, 0, 8, 0);
    writeSync(fd, json, 0, json.byteLength, 8);
    let offset = base;
    for (const [i, t] of tensors.entries()) {
      if (t.kind !== 'weight' && t.kind !== 'bias') {
        const bytes = (sources[i] as TensorSource).data() as Uint8Array;
        writeSync(fd, bytes, 0, bytes.byteLength, offset);
      }
      offset += sizes[i] as number;
    }
    ftruncateSync(fd, total);
    return total;
  }, 'could not write synthetic checkpoint');
}
