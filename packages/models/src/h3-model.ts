import { type LinearPrecision, NinodesError, Tensor, buildInfo } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';
import type { CheckpointSource } from '@ninodes/memory';
import { type CaptureSink, captureFromEnv } from './capture.js';
import { resolveH3Config } from './detect-architecture.js';
import { type H3Block as H3BlockType, H3Block } from './h3-block.js';
import { type H3Config, H3_SIGMA_SHIFTS, patchDim, pddHeads, validateH3Config } from './h3-config.js';
import type { GroupHooks, SequenceSplit, Shard } from '@ninodes/quant';
import { H3_POST_GROUPS, h3LinearSpec } from './h3-layout.js';
import { H3RefinerBlock } from './h3-refiner.js';
import { H3_MODALITY, type ModSegment, combinePddHeads, curveTimeEmbedding, packAudio, pddHeadWeights, timeShiftSigma, unpackAudio } from './h3-streams.js';
import { h3Linears, h3Parameters, h3UnusedKeys } from './h3-tensors.js';
import type { LinearOp, LinearProvider } from './linear-provider.js';
import { type OpProfiler, timed, timedAsync } from './op-profile.js';
import { castF32, rmsNorm, rmsNormModulate, silu } from './ops.js';
import { latentDims, patchify, unpatchify } from './patchify.js';
import { timestepFeatures } from './timestep-embedding.js';
import { Workspace } from './workspace.js';
import { inGroup } from './group-hooks.js';
import { h3PackedPositions, h3RopeAngles } from './video-grid.js';

export interface H3ModelOptions {
  /** Shapes of the model; detected from the checkpoint's keys and shapes when omitted. */
  readonly config?: H3Config;
  /** Key prefix of the model tensors ('' or e.g. 'model.diffusion_model.'); detected when omitted. */
  readonly prefix?: string;
  /** Capture sink; default: `NINODES_CAPTURE` from the environment (none when unset). `false` disables. */
  readonly capture?: CaptureSink | false;
  /** Per-op wall times (bench); settable later with `setProfiler`. */
  readonly profiler?: OpProfiler;
  /**
   * This process's rank of a tensor-parallel world: blocks are built from local heads and a local
   * MLP slice, their linears asked for with `LinearSpec.shard` set (see h3LinearSpec). The
   * provider's row-parallel ops must reduce their partial outputs inside forward.
   */
  readonly shard?: Shard;
  /**
   * Sequence parallelism, with `shard` (same rank and size): between their linears the blocks hold
   * only this rank's token rows (the provider must have been made for it: tp's
   * `parallelLinearProvider({ sequence: true })` and `sequenceSplit(comm)`); the rows are gathered
   * after the last block, so the final layer and the output are whole on every rank.
   */
  readonly sequence?: SequenceSplit;
  /** Awaited around every execution group, in ModelLayout order (see h3Layout). */
  readonly hooks?: GroupHooks;
  /**
   * What attention computes in (blocks and token refiner): 'bf16' runs kernels' bf16 attention
   * (PyTorch's bf16 SDPA; needs `buildInfo().bf16Units`, else the first forward fails
   * BACKEND_UNAVAILABLE). Default 'f32'. openH3Model picks 'bf16' for bf16 compute where it can.
   */
  readonly attentionPrecision?: LinearPrecision;
}

/** One forward of the packed [text | audio | video] model. */
export interface H3StreamsInput {
  /** Video latent [1, C, T, H, W]. */
  readonly video: Tensor<'f32'>;
  /** The video sigma the sampler runs; the audio stream's sigma is derived from it (shift 12 -> 3). */
  readonly sigma: number;
  /** The sampler's next video sigma: picks the PDD heads of a head bank (head 0 alone without it). */
  readonly sigmaNext?: number;
  /** Stereo audio latent [1, audioChannels, 2, T] in its own (unscaled) form. */
  readonly audio?: Tensor<'f32'>;
  /** Text states [1, L, textDim] (run through condition_proj and the refiner) or [1, L, hidden] (used as is). */
  readonly context?: Tensor<'f32'>;
  /**
   * Where the video velocity goes (f32 [1, C, T, H, W], e.g. the previous step's velocity): a sampler
   * that hands it back each step allocates nothing in the steady state. Default: a fresh tensor.
   */
  readonly videoOut?: Tensor<'f32'>;
}

/** Velocities of the streams given: video [1, C, T, H, W] and, with audio in, audio [1, C, 2, T]. */
export interface H3StreamsOutput {
  readonly video: Tensor<'f32'>;
  readonly audio?: Tensor<'f32'>;
}

/** Anything the sampler can drive: a velocity for a latent at a noise level. */
export interface VelocityModel {
  /** Channels of the latent [1, C, T, H, W] the model takes. */
  readonly latentChannels: number;
  forward(latent: Tensor<'f32'>, sigma: number): Promise<Tensor<'f32'>>;
  /** Audio latent channels, when the model has an audio stream. */
  readonly audioChannels?: number | undefined;
  /** The packed text/audio/video forward with the next sigma (PDD heads); the sampler prefers it. */
  forwardStreams?(input: H3StreamsInput): Promise<H3StreamsOutput>;
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
  /** The token refiner's blocks (text stream; empty without one). */
  readonly refiner: readonly H3RefinerBlock[];
  /** The layer ops of the embedders and final layer, by checkpoint layer name (without prefix). */
  readonly linears: ReadonlyMap<string, LinearOp>;
  /** What attention computes in (H3ModelOptions.attentionPrecision), for reports. */
  readonly attentionPrecision: LinearPrecision;
  private readonly source: CheckpointSource;
  private readonly capture: CaptureSink | undefined;
  private readonly paramCache = new Map<string, Tensor<'f32'>>();
  private anglesCache: { key: string; angles: Tensor<'f32'> } | undefined;
  /** Activation buffers the forward in flight reuses step to step (issue 16); a concurrent forward allocates. */
  private readonly workspace = new Workspace();
  private workspaceBusy = false;
  private profiler: OpProfiler | undefined;
  /** Settable later with `setHooks` (an executor attaches after the model is built). */
  private hooks: GroupHooks | undefined;
  /** The blocks' sequence split (undefined: every rank holds every row). */
  private readonly sequence: SequenceSplit | undefined;

  private constructor(source: CheckpointSource, provider: LinearProvider, config: H3Config, prefix: string, capture: CaptureSink | undefined, shard: Shard | undefined, attentionPrecision: LinearPrecision, sequence: SequenceSplit | undefined) {
    this.source = source;
    this.attentionPrecision = attentionPrecision;
    this.config = config;
    this.prefix = prefix;
    this.capture = capture;
    const params = (name: string): Tensor<'f32'> => this.param(name);
    this.blocks = Array.from({ length: config.layers }, (_, i) => new H3Block(config, i, provider, params, prefix, undefined, shard, sequence));
    this.sequence = this.blocks[0]?.sequence;
    this.refiner = config.textDim === undefined ? [] : Array.from({ length: config.refinerLayers ?? 0 }, (_, i) => new H3RefinerBlock(config, i, provider, params, prefix));
    for (const b of [...this.blocks, ...this.refiner]) b.attentionPrecision = attentionPrecision;
    const linears = new Map<string, LinearOp>();
    for (const l of h3Linears(config)) {
      if (l.block !== undefined || l.name.startsWith('token_refiner.')) continue;
      // Embedders and the final layer: every rank gets their whole output (the final adaLN is
      // `gathered`: a tensor-parallel provider may split its rows and concatenate them).
      linears.set(l.name, provider.linear(h3LinearSpec(config, l, prefix)));
    }
    this.linears = linears;
  }

  /**
   * Every linear op of the model: embedders and final layer, the token refiner's, the blocks'. What
   * a loader preparing weights ahead of use (distorch's opGroupLoader) needs, for each layout group.
   */
  allLinears(): LinearOp[] {
    return [...this.linears.values(), ...this.refiner.flatMap((b) => Object.values(b.linears)), ...this.blocks.flatMap((b) => Object.values(b.linears))];
  }

  /** Hooks awaited around every execution group (undefined: none). */
  setHooks(hooks: GroupHooks | undefined): void {
    this.hooks = hooks;
  }

  /** Runs `body` between the hooks of group `name` (see inGroup). */
  private group<R>(name: string, body: () => Promise<R> | R): Promise<R> {
    return inGroup(this.hooks, name, body);
  }

  /**
   * Builds the model over an open checkpoint. Checks that every tensor the video path needs exists
   * with the expected shape (TENSOR_NOT_FOUND / SHAPE_MISMATCH name it); reads nothing else.
   */
  static create(source: CheckpointSource, provider: LinearProvider, options: H3ModelOptions = {}): H3VideoModel {
    const { config, prefix } = resolveH3Config(source, options);
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
    if (options.attentionPrecision === 'bf16' && !buildInfo().bf16Units) {
      throw new ModelsError('BACKEND_UNAVAILABLE', "attention precision 'bf16' needs a CPU with AVX512_BF16 (this one has none, or NINODES_SIMD caps it)", {
        value: options.attentionPrecision,
        where: 'H3ModelOptions.attentionPrecision',
        hint: "use attentionPrecision 'f32' on this CPU",
      });
    }
    const capture = options.capture === false ? undefined : (options.capture ?? captureFromEnv());
    const model = new H3VideoModel(source, provider, config, prefix, capture, options.shard, options.attentionPrecision ?? 'f32', options.sequence);
    model.setProfiler(options.profiler);
    model.setHooks(options.hooks);
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

  get audioChannels(): number | undefined {
    return this.config.audioChannels;
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
    if (!op) throw new ModelsError('INTERNAL', `no linear ${name}`, { value: name });
    return op;
  }

  /** Time embedding [1, tDim] at noise level sigma (t = 1 − sigma, sigma clamped at 1e-6 like ComfyUI). */
  async timeEmbedding(sigma: number): Promise<Tensor<'f32'>> {
    return this.timeEmbeddings([1 - Math.max(Math.fround(sigma), 1e-6)]);
  }

  /**
   * Time embeddings [M, tDim] of timesteps t (= 1 − sigma): the time embedder's MLP in the full
   * form, the interpolated `adaln_t_table` rows in the curve form. With a workspace, one timestep's
   * MLP runs in its buffers.
   */
  async timeEmbeddings(ts: readonly number[], workspace?: Workspace): Promise<Tensor<'f32'>> {
    if (this.config.curveGrid !== undefined) return curveTimeEmbedding(this.param('adaln_t_table'), ts);
    const ws = workspace;
    const rows: Tensor<'f32'>[] = [];
    const projIn = this.linear('time_embedder.proj_in');
    const projOut = this.linear('time_embedder.proj_out');
    // Each timestep's MLP in its own buffers (the rows are stacked after the last one ran).
    for (const [i, t] of ts.entries()) {
      const feats = timestepFeatures(t, this.config.freqDim, ws?.f32(`time.features.${i}`, [1, this.config.freqDim]));
      const h = await projIn.forward(feats, ws?.f32(`time.hidden.${i}`, [1, projIn.spec.outFeatures]));
      rows.push(await projOut.forward(silu(h, ws?.f32(`time.silu.${i}`, h.shape)), ws?.f32(`time.emb.${i}`, [1, projOut.spec.outFeatures])));
    }
    return rows.length === 1 ? (rows[0] as Tensor<'f32'>) : concatRows(rows, ws, 'time.rows');
  }

  /** What every adaLN linear takes: SiLU(t_emb) in the full form, t_emb itself in the curve form. */
  private adalnInput(tEmb: Tensor<'f32'>, ws?: Workspace): Tensor<'f32'> {
    return this.config.curveGrid === undefined ? silu(tEmb, ws?.f32('final.silu_t', tEmb.shape)) : tEmb;
  }

  /** Text states [1, L, W] -> rows [L, hidden]: condition_proj and the refiner unless W is already hidden. */
  private async textRows(context: Tensor<'f32'>, ws: Workspace | undefined): Promise<Tensor<'f32'>> {
    const { hidden, textDim } = this.config;
    const w = context.shape[context.rank - 1] as number;
    if (context.dtype !== 'f32' || context.rank !== 3 || context.shape[0] !== 1 || !(context.shape[1] as number >= 1) || (w !== hidden && w !== textDim)) {
      throw new ModelsError('SHAPE_MISMATCH', `context must be f32 [1, L, ${textDim ?? '(no text stream)'}] or [1, L, ${hidden}], got ${context.dtype} [${context.shape.join(', ')}]`, {
        value: context.shape,
        where: 'context',
        hint: textDim === undefined ? 'this checkpoint has no condition_proj: pass states of hidden width or no context' : 'pass the text encoder states the checkpoint was trained on',
      });
    }
    const rows = context.reshape([context.shape[1] as number, w]);
    if (w === hidden) return rows;
    const proj = this.linear('condition_proj');
    let x = await this.group('condition_proj', () => proj.forward(rows, ws?.f32('text.proj', [rows.shape[0] as number, proj.spec.outFeatures])));
    for (const b of this.refiner) {
      const input = x;
      x = await this.group(`token_refiner.blocks.${b.index}`, () => b.forward(input, ws));
    }
    const xs = x;
    return this.group('token_refiner', () => rmsNorm(xs, this.param('token_refiner.final_norm.weight'), this.config.finalEps, ws?.f32('text.rows', xs.shape)));
  }

  /**
   * RoPE angles [S, 6L] of a packed sequence of `textLen` text rows, `audioFrames` stereo audio
   * frames and the video tokens of a (padded) latent, cached for the last size.
   */
  ropeAngles(frames: number, height: number, width: number, textLen = 0, audioFrames = 0): Tensor<'f32'> {
    const key = `${frames}x${height}x${width}:${textLen}:${audioFrames}`;
    if (this.anglesCache?.key !== key) {
      const inv = this.param('rope.inv_freq');
      this.anglesCache = { key, angles: h3RopeAngles(h3PackedPositions(textLen, audioFrames, frames, height, width), inv.data) };
    }
    return this.anglesCache.angles;
  }

  /**
   * Velocity for a latent [1, C, T, H, W] at noise level sigma: ComfyUI's H3 forward, which returns
   * the negated output of the final layer (video rows alone; head 0 of a PDD head bank).
   */
  async forward(latent: Tensor<'f32'>, sigma: number): Promise<Tensor<'f32'>> {
    return (await this.forwardStreams({ video: latent, sigma })).video;
  }

  /**
   * The whole forward over the packed sequence [text | audio | video] (ComfyUI's t2va layout):
   * each stream's rows read the adaLN row of their modality at their own timestep (text and video
   * at 1 − sigma, audio at 1 − its shift-3 sigma), the final layer runs per stream with its own
   * row, and a PDD head bank mixes its heads for the step sigma -> sigmaNext. Without context and
   * audio this is the video-only forward, op for op.
   */
  async forwardStreams(input: H3StreamsInput): Promise<H3StreamsOutput> {
    // Capture keeps block inputs and outputs, so it runs on fresh memory.
    const ws = this.workspaceBusy || this.capture !== undefined ? undefined : this.workspace;
    if (ws) this.workspaceBusy = true;
    try {
      return await this.runStreams(input, ws);
    } finally {
      if (ws) this.workspaceBusy = false;
    }
  }

  private async runStreams(input: H3StreamsInput, ws: Workspace | undefined): Promise<H3StreamsOutput> {
    const { video: latent, sigma, audio, context, sigmaNext } = input;
    if (!Number.isFinite(sigma)) throw new ModelsError('INVALID_ARGUMENT', `sigma must be finite, got ${String(sigma)}`, { value: sigma, where: 'sigma' });
    if (sigmaNext !== undefined && !Number.isFinite(sigmaNext)) throw new ModelsError('INVALID_ARGUMENT', `sigmaNext must be finite, got ${String(sigmaNext)}`, { value: sigmaNext, where: 'sigmaNext' });
    const dims = latentDims(latent, this.config.latentChannels);
    if (latent.dtype !== 'f32') throw new ModelsError('DTYPE_MISMATCH', `latent must be f32, got ${latent.dtype}`, { value: latent.dtype, where: 'latent' });
    const audioChannels = this.config.audioChannels;
    if (audio !== undefined && audioChannels === undefined) {
      throw new ModelsError('INVALID_ARGUMENT', 'this checkpoint has no audio stream (no audio_patch_proj / final_layer.audio_out)', { value: audio.shape, where: 'audio', hint: 'run it without audio' });
    }
    if (audio !== undefined && audio.dtype !== 'f32') throw new ModelsError('DTYPE_MISMATCH', `audio must be f32, got ${audio.dtype}`, { value: audio.dtype, where: 'audio' });
    const cap = this.capture;
    if (cap) cap.beginCall();
    const prof = this.profiler;
    const d = this.config.hidden;
    const text = context === undefined ? undefined : await this.textRows(context, ws);
    const textLen = text === undefined ? 0 : (text.shape[0] as number);
    const audioRows = audio === undefined ? undefined : packAudio(audio, audioChannels as number, audio.rank === 4 ? ws?.f32('audio.rows', [(audio.shape[2] as number) * (audio.shape[3] as number), audioChannels as number]) : undefined);
    const audioFrames = audioRows === undefined ? 0 : (audioRows.shape[0] as number) / 2;
    // Timesteps as ComfyUI derives them: sigma clamped at 1e-6 in fp32; audio on its own schedule.
    const sv = Math.max(Math.fround(sigma), 1e-6);
    const tV = 1 - sv;
    const sA = timeShiftSigma(sv, H3_SIGMA_SHIFTS.video, H3_SIGMA_SHIFTS.audio);
    const tA = 1 - sA;
    const ts = audioRows === undefined || tA === tV ? [tV] : [tV, tA].sort((p, q) => p - q);
    const rowOf = (t: number): number => ts.indexOf(t);
    const tokens = dims.frames * Math.ceil(dims.height / 2) * Math.ceil(dims.width / 2);
    const rows = timed(prof, 'layout', () => patchify(latent, ws?.f32('patches', [tokens, 4 * dims.channels])));
    const timeGroup = this.config.curveGrid === undefined ? 'time_embedder' : 'adaln_t_table';
    const tEmb = await this.group(timeGroup, () => timedAsync(prof, 'linear', () => this.timeEmbeddings(ts, ws)));
    const angles = await this.group('rope', () => timed(prof, 'rope', () => this.ropeAngles(dims.frames, dims.height + (dims.height % 2), dims.width + (dims.width % 2), textLen, audioFrames)));
    const patchProj = this.linear('video_patch_proj');
    const videoEmbed = await this.group('video_patch_proj', () => timedAsync(prof, 'linear', () => patchProj.forward(rows, ws?.f32('embed', [tokens, patchProj.spec.outFeatures]))));
    const audioEmbed =
      audioRows === undefined
        ? undefined
        : await this.group('audio_patch_proj', () => {
            const proj = this.linear('audio_patch_proj');
            return proj.forward(audioRows, ws?.f32('audio.embed', [audioRows.shape[0] as number, proj.spec.outFeatures]));
          });
    let x = videoEmbed;
    let segments: ModSegment[] | undefined;
    const audioStart = textLen;
    const videoStart = textLen + 2 * audioFrames;
    if (text !== undefined || audioEmbed !== undefined) {
      x = concatRows([...(text ? [text] : []), ...(audioEmbed ? [audioEmbed] : []), videoEmbed], ws, 'packed');
      segments = [];
      if (textLen > 0) segments.push({ start: 0, stop: textLen, row: rowOf(tV) * 3 + H3_MODALITY.text });
      if (audioFrames > 0) segments.push({ start: audioStart, stop: videoStart, row: rowOf(tA) * 3 + H3_MODALITY.audio });
      segments.push({ start: videoStart, stop: x.shape[0] as number, row: rowOf(tV) * 3 + H3_MODALITY.video });
    }
    if (cap) await cap.write('embed', { patches: rows, 'out.x': x, 't_emb': tEmb, rope_angles: angles, sigma: Tensor.f32([1], [sigma]) });
    for (const block of this.blocks) {
      const input = x;
      x = await this.group(`blocks.${block.index}`, () => block.forward(input, tEmb, angles, undefined, segments, ws));
      // Under a sequence split a block's output holds this rank's rows only (so does the capture).
      if (cap) await cap.write(`block-${String(block.index).padStart(3, '0')}`, { 'in.x': input, 'out.x': x });
    }
    // The final layer (a few columns per row) runs whole on every rank: the rows are gathered first.
    if (this.sequence !== undefined && this.blocks.length > 0) await this.sequence.gatherRows(x);
    const [finalGroup] = H3_POST_GROUPS;
    const xs = x;
    const n = pddHeads(this.config);
    const heads = await this.group(finalGroup, async () => {
      const finalAdaln = this.linear('final_layer.adaln_proj.linear');
      const mod = await timedAsync(prof, 'linear', () => finalAdaln.forward(this.adalnInput(tEmb, ws), ws?.f32('final.mod', [tEmb.shape[0] as number, finalAdaln.spec.outFeatures])));
      const stream = async (start: number, stop: number, t: number, out: string): Promise<Tensor<'f32'>> => {
        const r = rowOf(t);
        const shift = mod.view('f32', [d], mod.byteOffset + 2 * r * d * 4);
        const scale = mod.view('f32', [d], mod.byteOffset + (2 * r + 1) * d * 4);
        const part = start === 0 && stop === xs.shape[0] ? xs : xs.rows(start, stop);
        const normed = timed(prof, 'norm', () => rmsNormModulate(part, this.param('final_layer.norm.weight'), shift, scale, this.config.finalEps, ws?.f32(`${out}.in`, part.shape)));
        const head = this.linear(out);
        return timedAsync(prof, 'linear', () => head.forward(normed, ws?.f32(out, [part.shape[0] as number, head.spec.outFeatures])));
      };
      const v = await stream(videoStart, xs.shape[0] as number, tV, 'final_layer.video_out');
      const a = audioFrames > 0 ? await stream(audioStart, videoStart, tA, 'final_layer.audio_out') : undefined;
      return { v, a };
    });
    if (heads.v.shape[1] !== n * patchDim(this.config)) throw new ModelsError('SHAPE_MISMATCH', `video_out gave [${heads.v.shape.join(', ')}]`, { value: heads.v.shape });
    // ComfyUI reads the next sigma from the sampler's fp32 schedule; both streams' heads take their
    // intervals from the video sigmas and their weights from their own shift.
    const nextV = sigmaNext === undefined ? undefined : Math.fround(sigmaNext);
    const head = n === 1 ? heads.v : combinePddHeads(heads.v, patchDim(this.config), pddHeadWeights(n, sv, nextV, H3_SIGMA_SHIFTS.video, H3_SIGMA_SHIFTS.video));
    const out = timed(prof, 'layout', () => unpatchify(head, dims, true, input.videoOut));
    if (cap) await cap.write('final', { 'in.x': x, head, velocity: out.reshape([out.numel]) });
    if (heads.a === undefined) return { video: out };
    const aHead = n === 1 ? heads.a : combinePddHeads(heads.a, audioChannels as number, pddHeadWeights(n, sv, nextV, H3_SIGMA_SHIFTS.video, H3_SIGMA_SHIFTS.audio));
    return { video: out, audio: unpackAudio(aHead, true) };
  }
}

/** Rows of several [Si, W] tensors stacked into one [ΣSi, W] (in the workspace's buffer when given). */
function concatRows(parts: readonly Tensor<'f32'>[], ws: Workspace | undefined, key: string): Tensor<'f32'> {
  const w = parts[0]?.shape[1] as number;
  const total = parts.reduce((n, p) => n + (p.shape[0] as number), 0);
  const out = ws?.f32(key, [total, w]) ?? Tensor.zeros('f32', [total, w]);
  let r = 0;
  for (const p of parts) {
    out.data.set(p.data, r * w);
    r += p.shape[0] as number;
  }
  return out;
}

function missing(source: CheckpointSource, name: string): NinodesError {
  return new ModelsError('TENSOR_NOT_FOUND', `${source.path} has no tensor ${name}, which the H3 video model needs`, {
    value: name,
    where: source.path,
    hint: 'the checkpoint is partial, or its config/prefix differ from the ones given',
  });
}

function wrongShape(source: CheckpointSource, name: string, got: readonly number[], want: readonly number[]): NinodesError {
  return new ModelsError('SHAPE_MISMATCH', `${name} is [${got.join(', ')}], the H3 config needs [${want.join(', ')}]`, {
    value: got,
    where: `${source.path}: ${name}`,
    hint: 'detect the config from the checkpoint instead of passing one',
  });
}
