import { Tensor, attention, layerNorm, ropeSplitHalf, swiglu } from '@ninodes/kernels';
import type { CheckpointSource, TensorEntry } from '@ninodes/memory';
import { type ComputeMode, type FormatDetection, type GroupHooks, type LayoutGroup, type LayoutLinear, type LayoutTensor, type ModelLayout, createLinearProvider, detectFormats, openCheckpoint } from '@ninodes/quant';
import { ModelsError } from './error-codes.js';
import { inGroup } from './group-hooks.js';
import type { LinearOp, LinearProvider } from './linear-provider.js';
import { castF32, rmsNorm } from './ops.js';

/*
 * MiniMax-H3's video VAE decoder (facts from stable-diffusion.cpp's minimax_h3_vae.hpp): not a conv
 * stack but a transformer over latent tokens. The latent (24 channels, 4x16x16 pixels per token) is
 * un-normalized, mixed by a 1x1x1 conv, embedded, joined by 4 register tokens and one zero token, run
 * through pre-norm blocks (full attention with q/k RMSNorm and 3-D RoPE, SwiGLU, per-channel residual
 * scales), projected to pixel patches and un-normalized to [0, 1]. A video decodes in overlapping
 * chunks of 7 latent frames blended over 5 frames.
 */

/** Per-channel statistics of the diffusion latent: the VAE sees latent · std + mean. */
export const H3_LATENTS_MEAN = [
  0.858090341091156, -0.960659146308899, 1.066164016723633, -0.509032547473907, -0.272758185863495, -1.367541432380676, -0.255325496196747, -0.26907554268837, -0.537684082984924, -0.046409729868174, 0.66573703289032, 0.196901276707649,
  -0.546060800552368, -0.403534203767776, -0.236830249428749, 0.259284526109695, -0.301339447498322, 0.211341992020607, -1.120684862136841, 0.358193337917328, -0.042251437902451, 0.260482996702194, 0.228640928864479, 0.705603182315826,
] as const;
export const H3_LATENTS_STD = [
  1.222377419471741, 1.276726365089417, 1.683177471160889, 1.754945516586304, 1.563621640205383, 2.194143533706665, 0.965313792228699, 1.056988596916199, 0.841948926448822, 0.772995293140411, 1.895593762397766, 0.946841835975647,
  0.799680948257446, 0.449889004230499, 0.719739973545075, 0.693629324436188, 2.961095094680786, 2.76941990852356, 3.049618482589722, 2.108805418014527, 3.276226282119751, 3.1627357006073, 2.281681299209595, 2.612784385681153,
] as const;
/** ImageNet statistics the decoder's output is un-normalized with. */
export const H3_PIXEL_MEAN = [0.485, 0.456, 0.406] as const;
export const H3_PIXEL_STD = [0.229, 0.224, 0.225] as const;
/** Pixels per latent token: time, height, width. */
export const H3_VAE_PATCH = { t: 4, h: 16, w: 16 } as const;
export const H3_VAE_LATENT_CHANNELS = 24;
const HEAD_DIM = 64;
const ROPE_AXIS_DIM = 16;
const ROPE_DIM = 3 * ROPE_AXIS_DIM;
const REGISTERS = 4;
const EPS = 1e-5;
/** The temporal chunking of a video latent (stable-diffusion.cpp's decode). */
const CHUNK = { tokens: 5, overlapTokens: 2, dropTokens: 3, framesKept: 20, prePadding: 3, blend: 5 } as const;

export interface H3VideoDecoderConfig {
  /** Transformer width (2048 in H3). */
  readonly dim: number;
  readonly heads: number;
  readonly layers: number;
  /** SwiGLU inner width (8192 in H3). */
  readonly ffn: number;
}

/** Pixel frames a video latent of `t` frames decodes to: ((t - 2) / 5) · 17 + 5 (one frame for t = 1). */
export function h3PixelFrames(t: number): number {
  return t <= 1 ? 1 : Math.max(1, Math.floor((t - 2) / 5) * 17 + 5);
}

/** Latent frames for `frames` pixel frames on the 17k + 5 grid: 5k + 2. */
export function h3LatentFrames(frames: number): number {
  return frames <= 1 ? 1 : ((frames - 5) / 17) * 5 + 2;
}

function findPrefix(source: CheckpointSource): string {
  const hits = source.entries().filter((e) => e.name.endsWith('decoder.x_embedder.weight'));
  if (hits.length !== 1) {
    throw new ModelsError('ARCHITECTURE_MISMATCH', `${source.path} is not a MiniMax-H3 video VAE: ${hits.length === 0 ? 'it has no decoder.x_embedder.weight' : 'it has several decoders'}`, {
      value: hits.map((e) => e.name),
      where: source.path,
      hint: 'pass the H3 video VAE file (--vae)',
    });
  }
  return hits[0]!.name.slice(0, -'decoder.x_embedder.weight'.length);
}

function shape(source: CheckpointSource, name: string): readonly number[] {
  if (!source.has(name)) throw new ModelsError('TENSOR_NOT_FOUND', `${source.path} has no tensor ${name}, which the H3 video VAE decoder needs`, { value: name, where: source.path });
  return source.entry(name).shape;
}

/** Sizes and key prefix of an H3 video VAE decoder, from its tensor shapes (head dim 64, as H3's). */
export function resolveH3VideoDecoder(source: CheckpointSource): { config: H3VideoDecoderConfig; prefix: string } {
  const prefix = findPrefix(source);
  const [dim, latent] = shape(source, `${prefix}decoder.x_embedder.weight`) as [number, number];
  const blockKey = `${prefix}decoder.transformer_blocks.`;
  const indices = new Set(source.entries().filter((e) => e.name.startsWith(blockKey)).map((e) => Number(e.name.slice(blockKey.length).split('.')[0])));
  const layers = indices.size;
  for (let i = 0; i < layers; i++) if (!indices.has(i)) throw new ModelsError('BLOCK_INDEX_GAP', `${source.path}: video VAE decoder block ${i} is missing`, { value: i, where: source.path });
  const ffn = (shape(source, `${prefix}decoder.transformer_blocks.0.ff.w1.weight`)[0] as number) / 2;
  const patch = 3 * H3_VAE_PATCH.t * H3_VAE_PATCH.h * H3_VAE_PATCH.w;
  const out = shape(source, `${prefix}decoder.proj_out.weight`)[0];
  if (latent !== H3_VAE_LATENT_CHANNELS || dim % HEAD_DIM !== 0 || out !== patch || layers === 0) {
    throw new ModelsError('ARCHITECTURE_INCONSISTENT', `${source.path}: decoder sizes (latent ${latent}, width ${dim}, ${layers} blocks, ${out} outputs per token) are not an H3 video VAE's`, {
      value: { latent, dim, layers, out },
      where: `${prefix}decoder`,
      hint: `expected ${H3_VAE_LATENT_CHANNELS} latent channels, a width that is a multiple of ${HEAD_DIM}, and ${patch} outputs per token`,
    });
  }
  return { config: { dim, heads: dim / HEAD_DIM, layers, ffn }, prefix };
}

/** Group names of the decoder in forward order: `decoder.in`, `decoder.transformer_blocks.N`, `decoder.out`. */
export function h3VideoDecoderGroups(config: H3VideoDecoderConfig): string[] {
  return ['decoder.in', ...Array.from({ length: config.layers }, (_, i) => `decoder.transformer_blocks.${i}`), 'decoder.out'];
}

interface DecoderLinear {
  readonly group: string;
  readonly name: string;
  readonly inFeatures: number;
  readonly outFeatures: number;
}

function decoderLinears(config: H3VideoDecoderConfig): DecoderLinear[] {
  const { dim, ffn } = config;
  const out: DecoderLinear[] = [{ group: 'decoder.in', name: 'decoder.x_embedder', inFeatures: H3_VAE_LATENT_CHANNELS, outFeatures: dim }];
  for (let i = 0; i < config.layers; i++) {
    const g = `decoder.transformer_blocks.${i}`;
    out.push(
      { group: g, name: `${g}.attn.to_qkv`, inFeatures: dim, outFeatures: 3 * dim },
      { group: g, name: `${g}.attn.to_out`, inFeatures: dim, outFeatures: dim },
      { group: g, name: `${g}.ff.w1`, inFeatures: dim, outFeatures: 2 * ffn },
      { group: g, name: `${g}.ff.w2`, inFeatures: ffn, outFeatures: dim },
    );
  }
  out.push({ group: 'decoder.out', name: 'decoder.proj_out', inFeatures: dim, outFeatures: 3 * H3_VAE_PATCH.t * H3_VAE_PATCH.h * H3_VAE_PATCH.w });
  return out;
}

function decoderParameters(config: H3VideoDecoderConfig): { group: string; name: string; shape: number[] }[] {
  const { dim } = config;
  const out = [
    { group: 'decoder.in', name: 'post_quant_conv.weight', shape: [H3_VAE_LATENT_CHANNELS, H3_VAE_LATENT_CHANNELS, 1, 1, 1] },
    { group: 'decoder.in', name: 'post_quant_conv.bias', shape: [H3_VAE_LATENT_CHANNELS] },
    { group: 'decoder.in', name: 'decoder.register_tokens', shape: [REGISTERS, dim] },
  ];
  for (let i = 0; i < config.layers; i++) {
    const g = `decoder.transformer_blocks.${i}`;
    for (const n of ['norm1.weight', 'norm2.weight', 'scale1', 'scale2']) out.push({ group: g, name: `${g}.${n}`, shape: [dim] });
  }
  out.push({ group: 'decoder.out', name: 'decoder.norm_out.weight', shape: [dim] }, { group: 'decoder.out', name: 'decoder.norm_out.bias', shape: [dim] });
  return out;
}

function layoutTensor(e: TensorEntry): LayoutTensor {
  return { name: e.name, dtype: e.dtype, shape: e.shape, byteLength: e.byteLength };
}

/** The decoder's ModelLayout (architecture `minimax-h3-video-vae`): what distorch plans and streams. */
export function h3VideoDecoderLayout(source: CheckpointSource, detection: FormatDetection = detectFormats(source)): ModelLayout & { config: H3VideoDecoderConfig } {
  const { config, prefix } = resolveH3VideoDecoder(source);
  const groups = new Map<string, { tensors: LayoutTensor[]; linears: LayoutLinear[] }>(h3VideoDecoderGroups(config).map((g) => [g, { tensors: [], linears: [] }]));
  for (const l of decoderLinears(config)) {
    const name = `${prefix}${l.name}`;
    const layer = detection.layers.get(name);
    if (layer === undefined) throw new ModelsError('TENSOR_NOT_FOUND', `${source.path} has no tensor ${name}.weight, which the H3 video VAE decoder needs`, { value: `${name}.weight`, where: source.path });
    const g = groups.get(l.group)!;
    g.linears.push({ name, inFeatures: l.inFeatures, outFeatures: l.outFeatures, bias: true, storedFormat: layer.format, role: 'replicated', fused: { kind: 'none' }, fp32Island: false });
    for (const key of Object.values(layer.tensors)) if (key !== undefined && source.has(key)) g.tensors.push(layoutTensor(source.entry(key)));
    if (source.has(`${name}.bias`)) g.tensors.push(layoutTensor(source.entry(`${name}.bias`)));
  }
  for (const p of decoderParameters(config)) groups.get(p.group)!.tensors.push(layoutTensor(source.entry(`${prefix}${p.name}`)));
  const kinds = (name: string): LayoutGroup['kind'] => (name === 'decoder.in' ? 'pre' : name === 'decoder.out' ? 'post' : 'block');
  return { architecture: 'minimax-h3-video-vae', prefix, config, groups: [...groups].map(([name, g]) => ({ name, kind: kinds(name), tensors: g.tensors, linears: g.linears })) };
}

/**
 * RoPE angles [N + 5, 24] of a t × h × w token grid: 8 frequencies 1/100^(2k/16) per axis (t, h, w),
 * positions (2 (i + 0.5) / n - 1) · 2π, zero angles for the 5 extra tokens; float32 steps as
 * stable-diffusion.cpp computes them.
 */
export function h3VaeRopeAngles(t: number, h: number, w: number): Tensor<'f32'> {
  const f = Math.fround;
  const omega = Array.from({ length: ROPE_AXIS_DIM / 2 }, (_, k) => f(1 / f(100 ** f((2 * k) / ROPE_AXIS_DIM))));
  const twoPi = f(6.283185307179586);
  const pos = (i: number, n: number): number => f(f(2 * f(f(i + 0.5) / n) - 1) * twoPi);
  const n = t * h * w;
  const half = ROPE_DIM / 2;
  const out = new Float32Array((n + REGISTERS + 1) * half);
  let row = 0;
  for (let it = 0; it < t; it++) {
    for (let ih = 0; ih < h; ih++) {
      for (let iw = 0; iw < w; iw++, row++) {
        const p = [pos(it, t), pos(ih, h), pos(iw, w)];
        for (let a = 0; a < 3; a++) for (let k = 0; k < omega.length; k++) out[row * half + a * omega.length + k] = (p[a] as number) * (omega[k] as number);
      }
    }
  }
  return Tensor.fromArray('f32', [n + REGISTERS + 1, half], out);
}

export interface H3VideoDecoderOptions {
  readonly hooks?: GroupHooks;
  /**
   * Spatial tile side in latent cells (stable-diffusion.cpp decodes H3 in 16×16 tiles): a frame
   * larger than a tile is decoded tile by tile, neighbours overlapping by a quarter of a tile and
   * blended linearly across the overlap, so a chunk's activations are set by the tile, not the
   * frame. 0: never tile. Default 16.
   */
  readonly tile?: number;
}

/** Tile starts along one axis of n cells: tiles of `size` every `size - overlap`, the last one ending at n. */
function tileStarts(n: number, size: number, overlap: number): number[] {
  if (n <= size) return [0];
  const starts: number[] = [];
  for (let s = 0; s + size < n; s += size - overlap) starts.push(s);
  starts.push(n - size);
  return starts;
}

/**
 * Blend weight of pixel p (of len) along one axis of a tile: a ramp over `ramp` pixels on each side
 * that has a neighbour, 1 elsewhere.
 */
function rampWeight(p: number, len: number, ramp: number, before: boolean, after: boolean): number {
  let w = 1;
  if (before) w = Math.min(w, (p + 0.5) / ramp);
  if (after) w = Math.min(w, (len - p - 0.5) / ramp);
  return Math.max(w, 0);
}

/** MiniMax-H3's video VAE decoder: a diffusion-space latent [1, 24, T, H, W] -> RGB frames in [0, 1]. */
export class H3VideoDecoder {
  readonly config: H3VideoDecoderConfig;
  readonly prefix: string;
  private readonly source: CheckpointSource;
  private readonly ops: ReadonlyMap<string, LinearOp>;
  private readonly params = new Map<string, Tensor<'f32'>>();
  private hooks: GroupHooks | undefined;
  /** H3VideoDecoderOptions.tile. */
  tile = 16;

  private constructor(source: CheckpointSource, provider: LinearProvider, config: H3VideoDecoderConfig, prefix: string) {
    this.source = source;
    this.config = config;
    this.prefix = prefix;
    this.ops = new Map(decoderLinears(config).map((l) => [l.name, provider.linear({ name: `${prefix}${l.name}`, inFeatures: l.inFeatures, outFeatures: l.outFeatures, bias: true })]));
  }

  /** Builds the decoder over an open checkpoint after checking every tensor it reads (names, shapes). */
  static create(source: CheckpointSource, provider: LinearProvider, options: H3VideoDecoderOptions = {}): H3VideoDecoder {
    const { config, prefix } = resolveH3VideoDecoder(source);
    const check = (name: string, want: readonly number[]): void => {
      const got = shape(source, name);
      if (got.length !== want.length || got.some((d, i) => d !== want[i])) {
        throw new ModelsError('SHAPE_MISMATCH', `${source.path}: ${name} is [${got.join(', ')}], the decoder needs [${want.join(', ')}]`, { value: got, where: name });
      }
    };
    for (const l of decoderLinears(config)) {
      check(`${prefix}${l.name}.weight`, [l.outFeatures, l.inFeatures]);
      check(`${prefix}${l.name}.bias`, [l.outFeatures]);
    }
    for (const p of decoderParameters(config)) check(`${prefix}${p.name}`, p.shape);
    const decoder = new H3VideoDecoder(source, provider, config, prefix);
    decoder.hooks = options.hooks;
    const tile = options.tile ?? 16;
    if (!Number.isSafeInteger(tile) || tile < 0 || tile === 1) {
      throw new ModelsError('INVALID_ARGUMENT', `the VAE tile must be 0 (off) or at least 2 latent cells, got ${String(tile)}`, { value: tile, where: 'tile', hint: 'stable-diffusion.cpp uses 16' });
    }
    decoder.tile = tile;
    return decoder;
  }

  allLinears(): LinearOp[] {
    return [...this.ops.values()];
  }

  setHooks(hooks: GroupHooks | undefined): void {
    this.hooks = hooks;
  }

  private param(name: string): Float32Array {
    let t = this.params.get(name);
    if (t === undefined) {
      t = castF32(this.source.tensor(`${this.prefix}${name}`));
      this.params.set(name, t);
    }
    return t.data;
  }

  private tensorParam(name: string): Tensor<'f32'> {
    this.param(name);
    return this.params.get(name)!;
  }

  private op(name: string): LinearOp {
    return this.ops.get(name)!;
  }

  private group<R>(name: string, body: () => Promise<R> | R): Promise<R> {
    return inGroup(this.hooks, name, body);
  }

  /** One chunk, tiled in space when its frame is larger than a tile (see H3VideoDecoderOptions.tile). */
  private async decodeChunk(z: Float32Array, t: number, h: number, w: number): Promise<Tensor<'f32'>> {
    const size = this.tile;
    if (size === 0 || (h <= size && w <= size)) return this.decodeTile(z, t, h, w);
    const overlap = Math.max(1, Math.round(size / 4));
    const c = H3_VAE_LATENT_CHANNELS;
    const { t: pt, h: ph, w: pw } = H3_VAE_PATCH;
    const [F, Hp, Wp] = [t * pt, h * ph, w * pw];
    const sum = new Float64Array(3 * F * Hp * Wp);
    const weight = new Float64Array(Hp * Wp);
    const ys = tileStarts(h, size, overlap);
    const xs = tileStarts(w, size, overlap);
    for (const [iy, y0] of ys.entries()) {
      for (const [ix, x0] of xs.entries()) {
        const th = Math.min(size, h);
        const tw = Math.min(size, w);
        const sub = new Float32Array(t * th * tw * c);
        for (let it = 0; it < t; it++) for (let yy = 0; yy < th; yy++) sub.set(z.subarray(((it * h + y0 + yy) * w + x0) * c, ((it * h + y0 + yy) * w + x0 + tw) * c), ((it * th + yy) * tw) * c);
        const px = await this.decodeTile(sub, t, th, tw);
        const [tHp, tWp] = [th * ph, tw * pw];
        // Ramps as wide as the overlap with each neighbour (in pixels).
        const rampY = (iy > 0 ? (ys[iy - 1] as number) + th - y0 : 0) * ph;
        const rampYAfter = (iy < ys.length - 1 ? y0 + th - (ys[iy + 1] as number) : 0) * ph;
        const rampX = (ix > 0 ? (xs[ix - 1] as number) + tw - x0 : 0) * pw;
        const rampXAfter = (ix < xs.length - 1 ? x0 + tw - (xs[ix + 1] as number) : 0) * pw;
        for (let yy = 0; yy < tHp; yy++) {
          const wy = Math.min(rampWeight(yy, tHp, rampY, rampY > 0, false), rampWeight(yy, tHp, rampYAfter, false, rampYAfter > 0));
          for (let xx = 0; xx < tWp; xx++) {
            const wx = Math.min(rampWeight(xx, tWp, rampX, rampX > 0, false), rampWeight(xx, tWp, rampXAfter, false, rampXAfter > 0));
            const wgt = wy * wx;
            const at = (y0 * ph + yy) * Wp + x0 * pw + xx;
            weight[at] = (weight[at] as number) + wgt;
            for (let ch = 0; ch < 3; ch++) for (let f = 0; f < F; f++) sum[(ch * F + f) * Hp * Wp + at] = (sum[(ch * F + f) * Hp * Wp + at] as number) + wgt * (px.data[((ch * F + f) * tHp + yy) * tWp + xx] as number);
          }
        }
      }
    }
    const out = new Float32Array(sum.length);
    for (let i = 0; i < out.length; i++) out[i] = (sum[i] as number) / (weight[i % (Hp * Wp)] as number);
    return Tensor.fromArray('f32', [3, F, Hp, Wp], out);
  }

  /** One tile: VAE-space latent tokens z [T·H·W, 24] (t, h, w order) -> pixels [3, 4T, 16H, 16W]. */
  private async decodeTile(z: Float32Array, t: number, h: number, w: number): Promise<Tensor<'f32'>> {
    const { dim, heads, layers } = this.config;
    const n = t * h * w;
    const s = n + REGISTERS + 1;
    let x = await this.group('decoder.in', async () => {
      const e = await this.op('decoder.x_embedder').forward(Tensor.fromArray('f32', [n, H3_VAE_LATENT_CHANNELS], z));
      const all = new Float32Array(s * dim);
      all.set(e.data);
      all.set(this.param('decoder.register_tokens'), n * dim);
      return Tensor.fromArray('f32', [s, dim], all);
    });
    const angles = h3VaeRopeAngles(t, h, w);
    for (let i = 0; i < layers; i++) {
      const g = `decoder.transformer_blocks.${i}`;
      const xin = x;
      x = await this.group(g, async () => {
        const qkv = (await this.op(`${g}.attn.to_qkv`).forward(rmsNorm(xin, this.tensorParam(`${g}.norm1.weight`), EPS))).data;
        // to_qkv's output holds each head's [q | k | v] side by side.
        const part = (which: number): Tensor<'f32'> => {
          const out = new Float32Array(s * heads * HEAD_DIM);
          for (let r = 0; r < s; r++) for (let hh = 0; hh < heads; hh++) out.set(qkv.subarray((r * heads + hh) * 3 * HEAD_DIM + which * HEAD_DIM, (r * heads + hh) * 3 * HEAD_DIM + (which + 1) * HEAD_DIM), (r * heads + hh) * HEAD_DIM);
          return Tensor.fromArray('f32', [s, heads, HEAD_DIM], out);
        };
        const normRope = (v: Tensor<'f32'>): Tensor<'f32'> => ropeSplitHalf(rmsNorm(v.reshape([s * heads, HEAD_DIM]), null, EPS).reshape([s, heads, HEAD_DIM]), angles, ROPE_DIM);
        const a = await attention(headsFirst(normRope(part(0))), headsFirst(normRope(part(1))), headsFirst(part(2)), { mergeHeads: true });
        const x1 = scaledResidual(xin, await this.op(`${g}.attn.to_out`).forward(a), this.param(`${g}.scale1`));
        const f = await this.op(`${g}.ff.w2`).forward(swiglu(await this.op(`${g}.ff.w1`).forward(rmsNorm(x1, this.tensorParam(`${g}.norm2.weight`), EPS))));
        return scaledResidual(x1, f, this.param(`${g}.scale2`));
      });
    }
    return this.group('decoder.out', async () => {
      const y = await this.op('decoder.proj_out').forward(layerNorm(x.rows(0, n), this.tensorParam('decoder.norm_out.weight'), this.tensorParam('decoder.norm_out.bias'), EPS));
      return unpatchifyPixels(y.data, t, h, w);
    });
  }

  /**
   * Decodes a diffusion-space latent [1, 24, T, H, W] to RGB frames [3, F, 16H, 16W] in [0, 1],
   * F = h3PixelFrames(T): chunks of 7 latent frames, 5 apart, blended over 5 pixel frames.
   */
  async decode(latent: Tensor<'f32'>): Promise<Tensor<'f32'>> {
    if (latent.rank !== 5 || latent.shape[0] !== 1 || latent.shape[1] !== H3_VAE_LATENT_CHANNELS || latent.numel === 0) {
      throw new ModelsError('SHAPE_MISMATCH', `the H3 video VAE decodes a latent [1, ${H3_VAE_LATENT_CHANNELS}, T, H, W], got [${latent.shape.join(', ')}]`, { value: latent.shape, where: 'latent' });
    }
    const [, , t, h, w] = latent.shape as [number, number, number, number, number];
    const z = this.toVaeTokens(latent.data, t, h, w);
    const frameRows = h * w * H3_VAE_LATENT_CHANNELS;
    const slice = (from: number, to: number): Float32Array => z.subarray(from * frameRows, to * frameRows);
    if (t === 1) return lastFrame(await this.decodeChunk(slice(0, 1), 1, h, w));
    const pseudo = t + CHUNK.dropTokens;
    let pad = (CHUNK.tokens - (pseudo % CHUNK.tokens)) % CHUNK.tokens;
    let chunks = (pseudo + pad) / CHUNK.tokens - 1;
    if (chunks < 1) {
      pad += CHUNK.tokens;
      chunks += 1;
    }
    const padded = new Float32Array((t + pad) * frameRows);
    padded.set(z);
    for (let i = 0; i < pad; i++) padded.set(slice(t - 1, t), (t + i) * frameRows);
    const frames: Float32Array[] = [];
    let overlap: Float32Array[] | undefined;
    for (let i = 0; i < chunks; i++) {
      const start = i * CHUNK.tokens;
      const end = Math.min(start + CHUNK.tokens + CHUNK.overlapTokens, t + pad);
      const d = splitFrames(await this.decodeChunk(padded.subarray(start * frameRows, end * frameRows), end - start, h, w));
      const firstEnd = Math.min(CHUNK.framesKept, d.length);
      const first = d.slice(Math.min(CHUNK.prePadding, firstEnd), firstEnd);
      if (overlap !== undefined) {
        const e = Math.min(CHUNK.blend, overlap.length, first.length);
        for (let k = 0; k < e; k++) {
          const wb = Math.fround(k / e);
          const wa = Math.fround(1 - wb);
          const prev = overlap[overlap.length - e + k]!;
          first[k] = first[k]!.map((v, j) => Math.fround(Math.fround((prev[j] as number) * wa) + Math.fround(v * wb)));
        }
        overlap = undefined;
      }
      frames.push(...first);
      if (d.length > CHUNK.framesKept + CHUNK.prePadding) overlap = d.slice(CHUNK.framesKept + CHUNK.prePadding);
      if (i === chunks - 1 && overlap !== undefined) frames.push(...overlap);
    }
    return joinFrames(frames.slice(0, h3PixelFrames(t)), h * H3_VAE_PATCH.h, w * H3_VAE_PATCH.w);
  }

  /** [1, 24, T, H, W] diffusion latent -> VAE-space tokens [T, H, W, 24] after post_quant_conv. */
  private toVaeTokens(data: Float32Array, t: number, h: number, w: number): Float32Array {
    const c = H3_VAE_LATENT_CHANNELS;
    const weight = this.param('post_quant_conv.weight');
    const bias = this.param('post_quant_conv.bias');
    const plane = t * h * w;
    const out = new Float32Array(plane * c);
    const v = new Float64Array(c);
    for (let p = 0; p < plane; p++) {
      for (let ci = 0; ci < c; ci++) v[ci] = Math.fround(Math.fround((data[ci * plane + p] as number) * (H3_LATENTS_STD[ci] as number)) + (H3_LATENTS_MEAN[ci] as number));
      for (let o = 0; o < c; o++) {
        let acc = bias[o] as number;
        for (let ci = 0; ci < c; ci++) acc += (weight[o * c + ci] as number) * (v[ci] as number);
        out[p * c + o] = acc;
      }
    }
    return out;
  }
}

/** [S, H, D] -> [H, S, D]. */
function headsFirst(x: Tensor<'f32'>): Tensor<'f32'> {
  const [s, h, d] = x.shape as [number, number, number];
  const out = new Float32Array(x.numel);
  for (let r = 0; r < s; r++) for (let hh = 0; hh < h; hh++) out.set(x.data.subarray((r * h + hh) * d, (r * h + hh + 1) * d), (hh * s + r) * d);
  return Tensor.fromArray('f32', [h, s, d], out);
}

/** x + y · scale (scale per channel), in float32 steps. */
function scaledResidual(x: Tensor<'f32'>, y: Tensor<'f32'>, scale: Float32Array): Tensor<'f32'> {
  const dim = scale.length;
  const out = new Float32Array(x.numel);
  for (let i = 0; i < out.length; i++) out[i] = (x.data[i] as number) + Math.fround((y.data[i] as number) * (scale[i % dim] as number));
  return Tensor.fromArray('f32', x.shape, out);
}

/** Patch rows [T·H·W, 3·4·16·16] (c, pt, ph, pw) -> pixels [3, 4T, 16H, 16W], un-normalized and clamped to [0, 1]. */
function unpatchifyPixels(y: Float32Array, t: number, h: number, w: number): Tensor<'f32'> {
  const { t: pt, h: ph, w: pw } = H3_VAE_PATCH;
  const [F, Hp, Wp] = [t * pt, h * ph, w * pw];
  const out = new Float32Array(3 * F * Hp * Wp);
  const per = 3 * pt * ph * pw;
  for (let it = 0; it < t; it++) {
    for (let ih = 0; ih < h; ih++) {
      for (let iw = 0; iw < w; iw++) {
        const row = ((it * h + ih) * w + iw) * per;
        for (let c = 0; c < 3; c++) {
          for (let a = 0; a < pt; a++) {
            for (let b = 0; b < ph; b++) {
              for (let d = 0; d < pw; d++) {
                const v = y[row + ((c * pt + a) * ph + b) * pw + d] as number;
                const px = Math.fround(Math.fround(v * (H3_PIXEL_STD[c] as number)) + (H3_PIXEL_MEAN[c] as number));
                out[((c * F + it * pt + a) * Hp + ih * ph + b) * Wp + iw * pw + d] = Math.min(1, Math.max(0, px));
              }
            }
          }
        }
      }
    }
  }
  return Tensor.fromArray('f32', [3, F, Hp, Wp], out);
}

/** [3, F, H, W] -> F frames, each [3, H, W] (channel planes). */
function splitFrames(x: Tensor<'f32'>): Float32Array[] {
  const [, f, h, w] = x.shape as [number, number, number, number];
  return Array.from({ length: f }, (_, i) => {
    const frame = new Float32Array(3 * h * w);
    for (let c = 0; c < 3; c++) frame.set(x.data.subarray((c * f + i) * h * w, (c * f + i + 1) * h * w), c * h * w);
    return frame;
  });
}

function joinFrames(frames: readonly Float32Array[], h: number, w: number): Tensor<'f32'> {
  const f = frames.length;
  const out = new Float32Array(3 * f * h * w);
  frames.forEach((frame, i) => {
    for (let c = 0; c < 3; c++) out.set(frame.subarray(c * h * w, (c + 1) * h * w), (c * f + i) * h * w);
  });
  return Tensor.fromArray('f32', [3, f, h, w], out);
}

function lastFrame(x: Tensor<'f32'>): Tensor<'f32'> {
  const frames = splitFrames(x);
  return joinFrames(frames.slice(-1), x.shape[2] as number, x.shape[3] as number);
}

export interface OpenedH3VideoDecoder {
  readonly decoder: H3VideoDecoder;
  readonly source: CheckpointSource;
  close(): void;
}

/** Opens an H3 video VAE file (safetensors or GGUF) with linear ops in `compute` (default as stored). */
export function openH3VideoDecoder(path: string, options: H3VideoDecoderOptions & { compute?: ComputeMode; provider?: LinearProvider; wrapSource?: (s: CheckpointSource) => CheckpointSource } = {}): OpenedH3VideoDecoder {
  const opened = openCheckpoint(path);
  let source: CheckpointSource = opened;
  try {
    if (options.wrapSource !== undefined) source = options.wrapSource(opened);
    const provider = options.provider ?? createLinearProvider(source, { compute: options.compute ?? 'auto' });
    const decoder = H3VideoDecoder.create(source, provider, options);
    return { decoder, source, close: () => source.close() };
  } catch (error) {
    source.close();
    throw error;
  }
}
