import { NinodesError, Tensor } from '@ninodes/kernels';
import type { CheckpointSource } from '@ninodes/memory';
import { type CaptureSink, captureFromEnv } from './capture.js';
import { detectArchitecture } from './detect-architecture.js';
import { type H3Block as H3BlockType, H3Block } from './h3-block.js';
import { type H3Config, patchDim, validateH3Config } from './h3-config.js';
import { h3Linears, h3Parameters, h3UnusedKeys } from './h3-tensors.js';
import type { LinearOp, LinearProvider } from './linear-provider.js';
import { type OpProfiler, timed, timedAsync } from './op-profile.js';
import { castF32, rmsNormModulate, silu } from './ops.js';
import { latentDims, patchify, unpatchify } from './patchify.js';
import { timestepFeatures } from './timestep-embedding.js';
import { h3RopeAngles, h3VideoPositions } from './video-grid.js';

export interface H3ModelOptions {
  /** Shapes of the model; detected from the checkpoint's keys and shapes when omitted. */
  readonly config?: H3Config;
  /** Key prefix of the model tensors ('' or e.g. 'model.diffusion_model.'); detected when omitted. */
  readonly prefix?: string;
  /** Capture sink; default: `NINODES_CAPTURE` from the environment (none when unset). `false` disables. */
  readonly capture?: CaptureSink | false;
  /** Per-op wall times (bench); settable later with `setProfiler`. */
  readonly profiler?: OpProfiler;
}

/** Anything the sampler can drive: a velocity for a latent at a noise level. */
export interface VelocityModel {
  /** Channels of the latent [1, C, T, H, W] the model takes. */
  readonly latentChannels: number;
  forward(latent: Tensor<'f32'>, sigma: number): Promise<Tensor<'f32'>>;
}

/**
 * MiniMax-H3's DiT restricted to the video path, as ComfyUI computes it with no text and no audio
 * rows. Linears come from the injected provider (f32, bf16, int8 convrot, streamed or sharded ops
 * plug in unseen); norm weights and `rope.inv_freq` are read from the checkpoint and cast to f32.
 */
export class H3VideoModel implements VelocityModel {
  readonly config: H3Config;
  readonly prefix: string;
  readonly blocks: readonly H3BlockType[];
  /** The layer ops of the embedders and final layer, by checkpoint layer name (without prefix). */
  readonly linears: ReadonlyMap<string, LinearOp>;
  private readonly source: CheckpointSource;
  private readonly capture: CaptureSink | undefined;
  private readonly paramCache = new Map<string, Tensor<'f32'>>();
  private anglesCache: { key: string; angles: Tensor<'f32'> } | undefined;
  private profiler: OpProfiler | undefined;

  private constructor(source: CheckpointSource, provider: LinearProvider, config: H3Config, prefix: string, capture: CaptureSink | undefined) {
    this.source = source;
    this.config = config;
    this.prefix = prefix;
    this.capture = capture;
    const params = (name: string): Tensor<'f32'> => this.param(name);
    this.blocks = Array.from({ length: config.layers }, (_, i) => new H3Block(config, i, provider, params, prefix));
    const linears = new Map<string, LinearOp>();
    for (const l of h3Linears(config)) {
      if (l.block !== undefined) continue;
      linears.set(l.name, provider.linear({ name: `${prefix}${l.name}`, inFeatures: l.inFeatures, outFeatures: l.outFeatures, bias: l.bias }));
    }
    this.linears = linears;
  }

  /**
   * Builds the model over an open checkpoint. Checks that every tensor the video path needs exists
   * with the expected shape (TENSOR_NOT_FOUND / SHAPE_MISMATCH name it); reads nothing else.
   */
  static create(source: CheckpointSource, provider: LinearProvider, options: H3ModelOptions = {}): H3VideoModel {
    let config = options.config;
    let prefix = options.prefix;
    if (config === undefined || prefix === undefined) {
      const detected = detectArchitecture(source.entries());
      if (detected.family !== 'h3' || detected.h3 === undefined) {
        throw new NinodesError('ARCHITECTURE_MISMATCH', `${source.path} is not a MiniMax-H3 DiT checkpoint (detected: ${detected.family})`, {
          value: detected.family,
          where: source.path,
          hint: detected.evidence.slice(0, 3).join('; '),
        });
      }
      config ??= detected.h3;
      prefix ??= detected.prefix;
    }
    validateH3Config(config);
    for (const l of h3Linears(config)) {
      const name = `${prefix}${l.name}.weight`;
      if (!source.has(name)) throw missing(source, name);
      const e = source.entry(name);
      if (e.shape.length !== 2 || e.shape[0] !== l.outFeatures || e.shape[1] !== l.inFeatures) throw wrongShape(source, name, e.shape, [l.outFeatures, l.inFeatures]);
      if (l.bias && !source.has(`${prefix}${l.name}.bias`)) throw missing(source, `${prefix}${l.name}.bias`);
    }
    for (const p of h3Parameters(config)) {
      const name = `${prefix}${p.name}`;
      if (!source.has(name)) throw missing(source, name);
      const e = source.entry(name);
      if (e.shape.length !== p.shape.length || e.shape.some((d, i) => d !== p.shape[i])) throw wrongShape(source, name, e.shape, p.shape);
    }
    const capture = options.capture === false ? undefined : (options.capture ?? captureFromEnv());
    const model = new H3VideoModel(source, provider, config, prefix, capture);
    model.setProfiler(options.profiler);
    return model;
  }

  /** Routes per-op wall times to `profiler` (undefined: measure nothing). */
  setProfiler(profiler: OpProfiler | undefined): void {
    this.profiler = profiler;
    for (const b of this.blocks) b.profiler = profiler;
  }

  get latentChannels(): number {
    return this.config.latentChannels;
  }

  /** Checkpoint keys the video forward never reads (text refiner, audio, conditioning, ...). */
  unusedKeys(): string[] {
    return h3UnusedKeys(
      this.source.entries().map((e) => e.name),
      this.config,
      this.prefix,
    );
  }

  /** A norm weight or buffer as f32 (cached; f32 tensors stay zero-copy views of the source). */
  param(name: string): Tensor<'f32'> {
    let t = this.paramCache.get(name);
    if (!t) {
      t = castF32(this.source.tensor(`${this.prefix}${name}`));
      this.paramCache.set(name, t);
    }
    return t;
  }

  private linear(name: string): LinearOp {
    const op = this.linears.get(name);
    if (!op) throw new NinodesError('INTERNAL', `no linear ${name}`, { value: name });
    return op;
  }

  /** Time embedding [1, tDim] at noise level sigma (t = 1 − sigma, sigma clamped at 1e-6 like ComfyUI). */
  async timeEmbedding(sigma: number): Promise<Tensor<'f32'>> {
    const t = 1 - Math.max(Math.fround(sigma), 1e-6);
    const feats = timestepFeatures(t, this.config.freqDim);
    return this.linear('time_embedder.proj_out').forward(silu(await this.linear('time_embedder.proj_in').forward(feats)));
  }

  /** RoPE angles [S, 6L] of the video tokens of a (padded) latent, cached for the last size. */
  ropeAngles(frames: number, height: number, width: number): Tensor<'f32'> {
    const key = `${frames}x${height}x${width}`;
    if (this.anglesCache?.key !== key) {
      const inv = this.param('rope.inv_freq');
      this.anglesCache = { key, angles: h3RopeAngles(h3VideoPositions(frames, height, width), inv.data) };
    }
    return this.anglesCache.angles;
  }

  /**
   * Velocity for a latent [1, C, T, H, W] at noise level sigma: ComfyUI's H3 forward, which returns
   * the negated output of the final layer.
   */
  async forward(latent: Tensor<'f32'>, sigma: number): Promise<Tensor<'f32'>> {
    if (!Number.isFinite(sigma)) throw new NinodesError('INVALID_ARGUMENT', `sigma must be finite, got ${String(sigma)}`, { value: sigma, where: 'sigma' });
    const dims = latentDims(latent, this.config.latentChannels);
    if (latent.dtype !== 'f32') throw new NinodesError('DTYPE_MISMATCH', `latent must be f32, got ${latent.dtype}`, { value: latent.dtype, where: 'latent' });
    const cap = this.capture;
    if (cap) cap.beginCall();
    const prof = this.profiler;
    const rows = timed(prof, 'layout', () => patchify(latent));
    const tEmb = await timedAsync(prof, 'linear', () => this.timeEmbedding(sigma));
    const angles = timed(prof, 'rope', () => this.ropeAngles(dims.frames, dims.height + (dims.height % 2), dims.width + (dims.width % 2)));
    let x = await timedAsync(prof, 'linear', () => this.linear('video_patch_proj').forward(rows));
    if (cap) cap.write('embed', { patches: rows, 'out.x': x, 't_emb': tEmb, rope_angles: angles, sigma: Tensor.f32([1], [sigma]) });
    for (const block of this.blocks) {
      const input = x;
      x = await block.forward(x, tEmb, angles);
      if (cap) cap.write(`block-${String(block.index).padStart(3, '0')}`, { 'in.x': input, 'out.x': x });
    }
    const d = this.config.hidden;
    const mod = await timedAsync(prof, 'linear', () => this.linear('final_layer.adaln_proj.linear').forward(silu(tEmb)));
    const shift = mod.view('f32', [d], mod.byteOffset);
    const scale = mod.view('f32', [d], mod.byteOffset + d * 4);
    const normed = timed(prof, 'norm', () => rmsNormModulate(x, this.param('final_layer.norm.weight'), shift, scale, this.config.finalEps));
    const head = await timedAsync(prof, 'linear', () => this.linear('final_layer.video_out').forward(normed));
    if (head.shape[1] !== patchDim(this.config)) throw new NinodesError('SHAPE_MISMATCH', `video_out gave [${head.shape.join(', ')}]`, { value: head.shape });
    const out = timed(prof, 'layout', () => unpatchify(head, dims, true));
    if (cap) cap.write('final', { 'in.x': x, head, velocity: out.reshape([out.numel]) });
    return out;
  }
}

function missing(source: CheckpointSource, name: string): NinodesError {
  return new NinodesError('TENSOR_NOT_FOUND', `${source.path} has no tensor ${name}, which the H3 video model needs`, {
    value: name,
    where: source.path,
    hint: 'the checkpoint is partial, or its config/prefix differ from the ones given',
  });
}

function wrongShape(source: CheckpointSource, name: string, got: readonly number[], want: readonly number[]): NinodesError {
  return new NinodesError('SHAPE_MISMATCH', `${name} is [${got.join(', ')}], the H3 config needs [${want.join(', ')}]`, {
    value: got,
    where: `${source.path}: ${name}`,
    hint: 'detect the config from the checkpoint instead of passing one',
  });
}
