import { ModelsError } from './error-codes.js';
import { H3_DEFAULTS, type H3Config } from './h3-config.js';

/** What detection needs of a tensor: a name and a torch-order shape (a memory `TensorEntry` fits). */
export interface TensorShapeInfo {
  readonly name: string;
  readonly shape: readonly number[];
}

export interface KnownArchitecture {
  readonly family: 'h3' | 'wan2' | 'flux';
  /** Key prefix every model tensor carries in this file ('' or e.g. 'model.diffusion_model.'). */
  readonly prefix: string;
  readonly layers: number;
  readonly hidden: number;
  readonly heads: number;
  readonly headDim: number;
  readonly ffn: number;
  /** Family-specific facts (Flux double/single split, WAN input channels and variant, ...). */
  readonly details: Readonly<Record<string, number | string | boolean>>;
  /** The keys and shapes the decision rests on. */
  readonly evidence: readonly string[];
  /** The full H3 config when family is 'h3'. */
  readonly h3?: H3Config;
}

export interface UnknownArchitecture {
  readonly family: 'unknown';
  readonly prefix: string;
  readonly evidence: readonly string[];
}

export type DetectedArchitecture = KnownArchitecture | UnknownArchitecture;

const PREFIXES = ['model.diffusion_model.', 'diffusion_model.', 'model.', ''] as const;

/** The prefix under which a marker key exists, or undefined. */
function findPrefix(names: ReadonlySet<string>, marker: string): string | undefined {
  return PREFIXES.find((p) => names.has(p + marker));
}

/**
 * The number of `group.<i>` blocks: indices must run 0..n-1 (n = the blocks that carry the first of
 * `suffixes`), every block must carry all of `suffixes`, and no key may name a block past them. The count sizes every per-block structure later, so it comes
 * from what the file holds, never from the largest index a name claims: one 0-byte key
 * `blocks.999999999.…` would otherwise make a billion-block model.
 */
function countIndexed(names: ReadonlySet<string>, prefix: string, group: string, suffixes: readonly [string, ...string[]]): number {
  const suffix = suffixes[0];
  const marker = new RegExp(`^${escape(prefix + group)}\\.(\\d+)\\.${escape(suffix)}$`);
  const seen = new Set<number>();
  for (const n of names) {
    const m = marker.exec(n);
    if (m) seen.add(Number(m[1]));
  }
  let count = 0;
  while (seen.has(count)) count++;
  // Any segment where the index goes, not only digits: `blocks.-1.…` or `blocks.1e3.…` names no
  // block of the model, and skipping it would run a smaller model than the file describes.
  const anyBlock = new RegExp(`^${escape(prefix + group)}\\.([^.]+)\\.`);
  for (const n of names) {
    const m = anyBlock.exec(n);
    if (m === null || (/^\d+$/.test(m[1]!) && Number(m[1]) < count && String(Number(m[1])) === m[1])) continue;
    throw new ModelsError('BLOCK_INDEX_GAP', `${n} names block ${m[1]}, but the file holds ${group}.0..${count - 1} only (the blocks that carry ${suffix})`, {
      value: n,
      where: n,
      hint: `block indices must run 0..n-1 without gaps, each block with its ${suffix}; the file is damaged, partial or not a checkpoint of this model`,
    });
  }
  for (let i = 0; i < count; i++) {
    for (const s of suffixes) {
      const key = `${prefix}${group}.${i}.${s}`;
      if (names.has(key)) continue;
      throw new ModelsError('TENSOR_NOT_FOUND', `block ${group}.${i} has no ${key}`, {
        value: `${group}.${i}`,
        where: key,
        hint: `every block of this architecture carries ${suffixes.join(', ')}; the file is damaged, partial or not a checkpoint of this model`,
      });
    }
  }
  return count;
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

class ShapeBook {
  readonly names: ReadonlySet<string>;
  private readonly shapes: Map<string, readonly number[]>;
  readonly evidence: string[] = [];
  constructor(tensors: readonly TensorShapeInfo[]) {
    this.shapes = new Map(tensors.map((t) => [t.name, t.shape]));
    this.names = new Set(this.shapes.keys());
  }
  dim(name: string, axis: number): number {
    const shape = this.shapes.get(name);
    const v = shape?.[axis];
    if (shape === undefined || v === undefined) {
      throw new ModelsError('TENSOR_NOT_FOUND', `tensor ${name} (dimension ${axis}) is missing`, {
        value: name,
        where: name,
        hint: 'the checkpoint looks partial or from another variant of this architecture',
      });
    }
    this.evidence.push(`${name} [${shape.join(', ')}]`);
    return v;
  }
  has(name: string): boolean {
    return this.names.has(name);
  }
}

function detectH3(book: ShapeBook, prefix: string): KnownArchitecture {
  const p = prefix;
  const layers = countIndexed(book.names, p, 'blocks', ['attn.qkv_proj.weight', 'adaln_proj.linear.weight', 'norm1.weight', 'attn.q_norm.weight', 'mlp.fc2.weight']);
  const hidden = book.dim(`${p}blocks.0.norm1.weight`, 0);
  const headDim = book.dim(`${p}blocks.0.attn.q_norm.weight`, 0);
  const inner = book.dim(`${p}blocks.0.attn.qkv_proj.weight`, 0) / 3;
  const ffn = book.dim(`${p}blocks.0.mlp.fc2.weight`, 1);
  const tDim = book.dim(`${p}blocks.0.adaln_proj.linear.weight`, 1);
  // The curve form has no time embedder: its widths are placeholders the forward never reads.
  const curve = book.has(`${p}adaln_t_table`);
  const curveGrid = curve ? book.dim(`${p}adaln_t_table`, 0) : undefined;
  const timeHidden = curve ? tDim : book.dim(`${p}time_embedder.proj_in.weight`, 0);
  const freqDim = curve ? H3_DEFAULTS.freqDim : book.dim(`${p}time_embedder.proj_in.weight`, 1);
  const ropeLen = book.dim(`${p}rope.inv_freq`, 0);
  const latentChannels = book.dim(`${p}video_patch_proj.weight`, 1) / 4;
  const heads = inner / headDim;
  if (!Number.isInteger(heads) || !Number.isInteger(latentChannels)) {
    throw new ModelsError('ARCHITECTURE_INCONSISTENT', `H3 shapes do not agree: qkv inner ${inner}, head dim ${headDim}, patch input ${latentChannels * 4}`, {
      value: { inner, headDim, latentChannels },
      hint: 'qkv_proj rows must be 3 × heads × head dim; video_patch_proj input channels × 4',
    });
  }
  const audio = book.has(`${p}audio_patch_proj.weight`);
  const refiner = countIndexed(book.names, p, 'token_refiner.blocks', ['attn.qkv_proj.weight']);
  // Optional parts are keyed only when present, so a video-only file keeps today's config object.
  const extra: { curveGrid?: number; pddHeads?: number; audioChannels?: number; textDim?: number; refinerLayers?: number } = {};
  if (curveGrid !== undefined) extra.curveGrid = curveGrid;
  const heads0 = book.dim(`${p}final_layer.video_out.weight`, 0) / (latentChannels * 4);
  if (Number.isInteger(heads0) && heads0 > 1) extra.pddHeads = heads0;
  if (audio && book.has(`${p}final_layer.audio_out.weight`)) extra.audioChannels = book.dim(`${p}audio_patch_proj.weight`, 1);
  if (book.has(`${p}condition_proj.weight`)) {
    extra.textDim = book.dim(`${p}condition_proj.weight`, 1);
    extra.refinerLayers = refiner;
  }
  const h3: H3Config = { ...H3_DEFAULTS, layers, hidden, heads, headDim, ffn, tDim, timeHidden, freqDim, ropeLen, latentChannels, ...extra };
  return {
    family: 'h3',
    prefix,
    layers,
    hidden,
    heads,
    headDim,
    ffn,
    details: { tDim, timeHidden, freqDim, ropeLen, rotDim: 6 * ropeLen, latentChannels, audio, textRefinerLayers: refiner, form: curve ? 'curve' : 'full', pddHeads: extra.pddHeads ?? 1 },
    evidence: [`${p}blocks.N.adaln_proj.linear + attn.qkv_proj + video_patch_proj (MiniMax-H3 DiT)`, `${layers} blocks`, ...book.evidence],
    h3,
  };
}

function detectWan(book: ShapeBook, prefix: string): KnownArchitecture {
  const p = prefix;
  const layers = countIndexed(book.names, p, 'blocks', ['self_attn.q.weight', 'ffn.0.weight']);
  const hidden = book.dim(`${p}blocks.0.self_attn.q.weight`, 0);
  const ffn = book.dim(`${p}blocks.0.ffn.0.weight`, 0);
  const inChannels = book.dim(`${p}patch_embedding.weight`, 1);
  // WAN's q/k norms span the whole width, so heads are not in the shapes; every WAN 2.x size uses 128
  const headDim = 128;
  const heads = hidden / headDim;
  const i2v = book.has(`${p}blocks.0.cross_attn.k_img.weight`) || book.has(`${p}img_emb.proj.0.weight`);
  const variant = inChannels === 48 ? 'wan2.2-ti2v' : i2v ? 'wan2.x-i2v' : inChannels === 36 ? 'wan2.x-i2v/flf' : 'wan2.x-t2v';
  return {
    family: 'wan2',
    prefix,
    layers,
    hidden,
    heads,
    headDim,
    ffn,
    details: { inChannels, variant, imageCrossAttention: i2v },
    evidence: [`${p}blocks.N.self_attn.q + cross_attn + ffn.0 + patch_embedding (WAN 2.x)`, `${layers} blocks`, 'head dim 128 by WAN convention', ...book.evidence],
  };
}

function detectFlux(book: ShapeBook, prefix: string): KnownArchitecture {
  const p = prefix;
  const double = countIndexed(book.names, p, 'double_blocks', ['img_attn.qkv.weight', 'img_attn.norm.query_norm.scale', 'img_mlp.0.weight']);
  const single = countIndexed(book.names, p, 'single_blocks', ['linear1.weight']);
  const hidden = book.dim(`${p}img_in.weight`, 0);
  const headDim = book.dim(`${p}double_blocks.0.img_attn.norm.query_norm.scale`, 0);
  const ffn = book.dim(`${p}double_blocks.0.img_mlp.0.weight`, 0);
  const inChannels = book.dim(`${p}img_in.weight`, 1);
  return {
    family: 'flux',
    prefix,
    layers: double + single,
    hidden,
    heads: hidden / headDim,
    headDim,
    ffn,
    details: { doubleBlocks: double, singleBlocks: single, inChannels, guidanceEmbed: book.has(`${p}guidance_in.in_layer.weight`) },
    evidence: [`${p}double_blocks.N.img_attn.qkv + single_blocks.N.linear1 + img_in (Flux)`, `${double} double + ${single} single blocks`, ...book.evidence],
  };
}

/**
 * Recognizes a DiT from its tensor names and shapes alone (nothing is read): MiniMax-H3, WAN 2.x or
 * Flux, with layers, hidden size, heads, head dim and ffn derived from shapes. Anything else is
 * 'unknown' with the evidence that was looked at (most common key groups), never an exception.
 */
export function detectArchitecture(tensors: readonly TensorShapeInfo[]): DetectedArchitecture {
  const book = new ShapeBook(tensors);
  const h3 = findPrefix(book.names, 'blocks.0.adaln_proj.linear.weight');
  if (h3 !== undefined && book.has(`${h3}video_patch_proj.weight`)) return detectH3(book, h3);
  const wan = findPrefix(book.names, 'blocks.0.self_attn.q.weight');
  if (wan !== undefined && book.has(`${wan}patch_embedding.weight`)) return detectWan(book, wan);
  const flux = findPrefix(book.names, 'double_blocks.0.img_attn.qkv.weight');
  if (flux !== undefined && book.has(`${flux}img_in.weight`)) return detectFlux(book, flux);

  const groups = new Map<string, number>();
  for (const t of tensors) {
    const key = t.name.replace(/\.\d+\..*$/, '.N').split('.').slice(0, 3).join('.');
    groups.set(key, (groups.get(key) ?? 0) + 1);
  }
  const top = [...groups.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8);
  return {
    family: 'unknown',
    prefix: '',
    evidence: [
      `${tensors.length} tensors; no H3 (blocks.0.adaln_proj.linear + video_patch_proj), WAN (blocks.0.self_attn.q + patch_embedding) or Flux (double_blocks.0.img_attn.qkv + img_in) markers`,
      ...top.map(([k, n]) => `${k}: ${n} tensors`),
    ],
  };
}

/**
 * The H3 config and key prefix of a checkpoint: those given, else detected from its tensors.
 * A checkpoint of another family is ARCHITECTURE_MISMATCH naming the file.
 */
export function resolveH3Config(
  source: { readonly path: string; entries(): readonly TensorShapeInfo[] },
  given: { readonly config?: H3Config | undefined; readonly prefix?: string | undefined } = {},
): { config: H3Config; prefix: string } {
  if (given.config !== undefined && given.prefix !== undefined) return { config: given.config, prefix: given.prefix };
  const detected = detectArchitecture(source.entries());
  if (detected.family !== 'h3' || detected.h3 === undefined) {
    throw new ModelsError('ARCHITECTURE_MISMATCH', `${source.path} is not a MiniMax-H3 DiT checkpoint (detected: ${detected.family})`, {
      value: detected.family,
      where: source.path,
      hint: detected.evidence.slice(0, 3).join('; '),
    });
  }
  return { config: given.config ?? detected.h3, prefix: given.prefix ?? detected.prefix };
}
