/**
 * Suite `model` (issue 6): step time (one model forward at a sampler latent) and whole-process peak
 * memory (a separate child, measured by the OS) for the synthetic H3 presets at fp32 / bf16 / int8
 * convrot, the step-time ratio against fp32 timed in the same rounds, and the share of the step per
 * op family from the model's profiler. Case `shapes` (issue 19): the trained h3-shapes model per
 * format (GGUF Q8_0 / Q4_K converted by the project's converter), its step time and the shape score
 * of its samples, so a kernel change that degrades pictures shows up as a number. Case `stored`
 * (issue 33): the preset converted to GGUF Q8_0 / Q4_K and fp8, run as stored, against int8 convrot
 * and bf16 of the same checkpoint in the same rounds, and the peak memory of such a run.
 *
 * Issue 16: every instance is also timed, interleaved, against PyTorch eager running the same
 * checkpoint and latent (tools/torch-h3) in fp32 and in bf16 (bf16 weights under
 * `torch.autocast('cpu', dtype=torch.bfloat16)`, fp32 islands kept fp32). The summary shows ours/torch
 * per mode and ours against the faster of the two. PyTorch's outputs double as a self-check: ours at
 * fp32 must match torch fp32 within 1e-4, and on h3-tiny both bf16 paths are measured against a
 * float64 torch forward. The step-time breakdown: share_<family> per op family (linear, attention,
 * norm, rope — the fused q/k norm + RoPE pass —, elementwise, layout), share_gc (V8 collection, which
 * overlaps the families) and tensor_allocations_per_step.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { type LinearPrecision, type Tensor, buildInfo, tensorAllocations } from '@ninodes/kernels';
import {
  type H3PresetName,
  type H3VideoModel,
  OP_FAMILIES,
  createOpProfiler,
  ensureSyntheticCheckpoint,
  flowSigmas,
  gaussianNoise,
  h3Linears,
  h3Preset,
  openH3Model,
  runSampler,
  samplerHints,
  cleanShapeScore,
  shapesModelPath,
} from '@ninodes/models';
import { type ComputeMode, maxRelError, openCheckpoint, quantize } from '@ninodes/quant';
import type { BenchCase, CaseContext, Contender, Metric, Params, Suite, Target, Work } from '../suite.js';
import { benchCacheDir } from './quant.js';

type StepFormat = 'f32' | 'bf16' | 'int8_convrot';
const FORMATS: readonly StepFormat[] = ['f32', 'bf16', 'int8_convrot'];

/** Noise level of the timed step: the sampler's second step at 8 steps, shift 12 (any sigma costs the same). */
const SIGMA = flowSigmas(8, 12)[1] as number;
const SEED = 145;
const PROFILED_FORWARDS = 3;
/** Models small enough for a float64 torch forward (h3-small's weights would take 4 GB in float64). */
const F64_REFERENCE_MODELS: ReadonlySet<H3PresetName> = new Set(['h3-tiny']);
let peerFiles = 0;

const checkpoints = new Map<H3PresetName, Promise<string>>();

/** The preset's checkpoint in the bench cache, generated once and verified by hash on reuse. */
function checkpointPath(preset: H3PresetName): Promise<string> {
  let p = checkpoints.get(preset);
  if (p === undefined) {
    p = ensureSyntheticCheckpoint({ dir: join(benchCacheDir(), 'models'), preset }).then((c) => c.path);
    checkpoints.set(preset, p);
  }
  return p;
}

interface StepParams {
  model: H3PresetName;
  format: StepFormat;
  frames: number;
  height: number;
  width: number;
}

function stepParams(p: Params): StepParams {
  return { model: p.model as H3PresetName, format: p.format as StepFormat, frames: p.frames as number, height: p.height as number, width: p.width as number };
}

/** Multiply-adds x2 of one forward: every linear on its rows, plus attention's two matmuls. */
function stepFlops(s: StepParams): number {
  const c = h3Preset(s.model).config;
  const tokens = s.frames * Math.ceil(s.height / 2) * Math.ceil(s.width / 2);
  let flops = 0;
  for (const l of h3Linears(c)) {
    // adaLN and the time embedder run on the single time-embedding row, the rest on every token.
    const rows = /adaln|time_embedder/.test(l.name) ? 1 : tokens;
    flops += 2 * rows * l.inFeatures * l.outFeatures;
  }
  return flops + c.layers * 4 * tokens * tokens * c.heads * c.headDim;
}

/** The model in `format`, fp32 islands (patch, time embedder, video_out) kept as stored, as a user runs it. */
/** `attention` unset: what openH3Model picks for the format (bf16 attention for bf16 where the CPU has bf16 units). */
function openModel(path: string, format: StepFormat, attention?: LinearPrecision): { model: H3VideoModel; close: () => void } {
  return openH3Model(path, { compute: format, capture: false, ...(attention === undefined ? {} : { attentionPrecision: attention }) });
}

async function forwardOnce(model: H3VideoModel, latent: Tensor<'f32'>): Promise<void> {
  (await model.forward(latent, SIGMA)).dispose();
}


function readRaw(path: string, ctor: Float32ArrayConstructor | Float64ArrayConstructor): Float32Array | Float64Array | undefined {
  if (!existsSync(path)) return undefined;
  const b = readFileSync(path);
  return new ctor(b.buffer, b.byteOffset, b.byteLength / ctor.BYTES_PER_ELEMENT);
}

interface TorchPeers {
  against: Record<string, { kind: 'peer'; contender: Contender }>;
  /** Where each torch mode wrote its velocity (absent when torch is missing). */
  outputs: { f32: string; bf16: string; f64?: string };
}

/**
 * PyTorch eager on the same checkpoint and latent (handed over as a raw f32 file), fp32 and bf16;
 * each job writes its first velocity for the numerics metrics. A missing torch is a missing peer.
 */
async function torchPeers(ctx: CaseContext, path: string, s: StepParams, latent: Tensor<'f32'>): Promise<TorchPeers> {
  const id = peerFiles++;
  const latentFile = join(ctx.tmpDir, `h3-latent-${id}.f32`);
  writeFileSync(latentFile, latent.data);
  const outputs: TorchPeers['outputs'] = { f32: join(ctx.tmpDir, `h3-torch-f32-${id}.f32`), bf16: join(ctx.tmpDir, `h3-torch-bf16-${id}.f32`) };
  if (F64_REFERENCE_MODELS.has(s.model)) outputs.f64 = join(ctx.tmpDir, `h3-torch-f64-${id}.f64`);
  const common = { checkpoint: path, latent: latentFile, shape: latent.shape, sigma: SIGMA, threads: ctx.threads };
  const against: TorchPeers['against'] = {};
  try {
    for (const mode of ['f32', 'bf16'] as const) {
      const extra = mode === 'bf16' && outputs.f64 ? { f64Out: outputs.f64 } : {};
      against[mode === 'f32' ? 'torch_fp32' : 'torch_bf16'] = { kind: 'peer', contender: await ctx.peers.python('torch.h3_step', { ...common, mode, out: outputs[mode], ...extra }) };
    }
  } catch (e) {
    // The torch model already loaded in the peer is freed before the case fails.
    for (const a of Object.values(against)) if ('dispose' in a.contender) await a.contender.dispose?.();
    throw e;
  }
  return { against, outputs };
}

/** Our velocity against torch's (and, where run, both bf16 paths against the float64 forward). */
async function numericsMetrics(model: H3VideoModel, latent: Tensor<'f32'>, s: StepParams, outputs: TorchPeers['outputs']): Promise<Record<string, Metric>> {
  const m: Record<string, Metric> = {};
  const ours = await model.forward(latent, SIGMA);
  try {
    const torchSame = readRaw(s.format === 'bf16' ? outputs.bf16 : outputs.f32, Float32Array);
    // bf16 against torch bf16; fp32 and int8 against torch fp32 (for int8: its quantization error).
    const name = s.format === 'bf16' ? 'max_rel_diff_vs_torch_bf16' : 'max_rel_diff_vs_torch_fp32';
    if (torchSame) m[name] = { value: maxRelError(ours.data, torchSame), unit: 'rel_error', better: 'lower' };
    const f64 = outputs.f64 ? readRaw(outputs.f64, Float64Array) : undefined;
    if (f64) {
      m.ours_err_vs_f64 = { value: maxRelError(ours.data, f64), unit: 'rel_error', better: 'lower' };
      const torchBf16 = readRaw(outputs.bf16, Float32Array);
      if (s.format === 'bf16' && torchBf16) m.torch_bf16_err_vs_f64 = { value: maxRelError(torchBf16, f64), unit: 'rel_error', better: 'lower' };
    }
  } finally {
    ours.dispose();
  }
  return m;
}

/** A fresh Node that loads the checkpoint, builds the model and runs two forwards (the first materializes). */
function childScript(path: string, s: StepParams): string {
  return [
    `import { gaussianNoise, openH3Model } from '@ninodes/models';`,
    `const { model, close } = openH3Model(${JSON.stringify(path)}, { compute: ${JSON.stringify(s.format)}, capture: false });`,
    `const latent = gaussianNoise([1, model.config.latentChannels, ${s.frames}, ${s.height}, ${s.width}], ${SEED});`,
    `const seconds = [];`,
    `for (let i = 0; i < 2; i++) { const t0 = performance.now(); (await model.forward(latent, ${SIGMA})).dispose(); seconds.push((performance.now() - t0) / 1000); }`,
    `process.stdout.write(JSON.stringify({ seconds }));`,
    `close();`,
  ].join('\n');
}

/** Issue 16's "done when", on h3-small (the size it was measured at), and the fp32 self-check everywhere. */
const STEP_TARGETS: readonly Target[] = [
  { source: 'issue 16', description: 'fp32 step ≤ 0.9× PyTorch eager fp32', on: { ratio: 'torch_fp32' }, op: '<=', value: 0.9, when: { model: 'h3-small', format: 'f32' } },
  { source: 'issue 16', description: 'bf16 step ≤ 0.9× PyTorch eager bf16', on: { ratio: 'torch_bf16' }, op: '<=', value: 0.9, when: { model: 'h3-small', format: 'bf16' } },
  // ≤ 0.6× the faster torch mode ⇔ ≤ 0.6× each of them.
  { source: 'issue 16', description: 'int8 convrot step ≤ 0.6× PyTorch fp32', on: { ratio: 'torch_fp32' }, op: '<=', value: 0.6, when: { model: 'h3-small', format: 'int8_convrot' } },
  { source: 'issue 16', description: 'int8 convrot step ≤ 0.6× PyTorch bf16', on: { ratio: 'torch_bf16' }, op: '<=', value: 0.6, when: { model: 'h3-small', format: 'int8_convrot' } },
  { source: 'issue 16', description: 'a steady-state forward creates no tensor storage but the velocity it returns', on: { metric: 'tensor_allocations_per_step' }, op: '<=', value: 1 },
  { source: 'issue 16', description: 'fp32 forward matches PyTorch fp32 (self-check)', on: { metric: 'max_rel_diff_vs_torch_fp32' }, op: '<=', value: 1e-4, when: { format: 'f32' } },
];

const instances = (models: readonly H3PresetName[], latent: (m: H3PresetName) => { frames: number; height: number; width: number }): Params[] =>
  models.flatMap((model) => FORMATS.map((format) => ({ model, format, ...latent(model) })));

const step: BenchCase = {
  name: 'step',
  description: 'one H3 forward (a sampler step) at the given latent [1,24,T,H,W]; bf16 / int8 convrot timed against fp32 in the same rounds',
  params: {
    // Both presets at h3-tiny's default latent (768 tokens), so the models compare at equal work per
    // token; h3-small's own default (5 frames) makes an fp32 step take ~20 s on 2 cores.
    full: instances(['h3-tiny', 'h3-small'], () => h3Preset('h3-tiny').defaultLatent),
    // Quick: h3-tiny only, a small latent, two timed steps.
    quick: instances(['h3-tiny'], () => ({ frames: 1, height: 16, width: 16 })),
  },
  work: (p): Work => ({ flops: stepFlops(stepParams(p)) }),
  targets: STEP_TARGETS,
  // A step is up to seconds (h3-small): one warm-up (materializes the weights), then at least 3 timed steps.
  budget: { warmup: 1, minRuns: 3, maxRuns: 10 },
  setup: async (p, ctx) => {
    const s = stepParams(p);
    const path = await checkpointPath(s.model);
    const closers: Array<() => void> = [];
    const { model, close } = openModel(path, s.format);
    closers.push(close);
    const latent = gaussianNoise([1, model.config.latentChannels, s.frames, s.height, s.width], SEED);
    let torch: TorchPeers;
    try {
      torch = await torchPeers(ctx, path, s, latent);
    } catch (e) {
      // A peer that broke (not a missing one) fails the case; what setup made so far is freed here.
      latent.dispose();
      close();
      throw e;
    }
    const against: Record<string, { kind: 'baseline' | 'peer'; contender: Contender }> = { ...torch.against };
    if (s.format !== 'f32') {
      const fp32 = openModel(path, 'f32');
      closers.push(fp32.close);
      against.fp32 = { kind: 'baseline', contender: { run: () => forwardOnce(fp32.model, latent) } };
    }
    // The attention precision A/B in the same rounds: bf16 and int8 convrot (bf16 attention by
    // default where the CPU has bf16 units) against themselves with the other precision.
    const other: LinearPrecision = model.attentionPrecision === 'bf16' ? 'f32' : 'bf16';
    if (s.format !== 'f32' && (other === 'f32' || buildInfo().bf16Units)) {
      const alt = openModel(path, s.format, other);
      closers.push(alt.close);
      against[`${other}_attention`] = { kind: 'baseline', contender: { run: () => forwardOnce(alt.model, latent) } };
    }
    return {
      run: () => forwardOnce(model, latent),
      against,
      metrics: async () => {
        const m: Record<string, Metric> = {};
        // Share of a step per op family, from profiled forwards separate from the timed ones (the
        // profiler's clock reads stay out of the step times). On a shared machine one forward can be
        // hit by another process, so three are profiled and the one with the median wall time is kept.
        // V8's garbage collection inside that forward is reported too (share_gc); it overlaps the op
        // families, whose ops allocate the tensors it collects.
        const profiles: Array<{ wall: number; seconds: Record<string, number>; gc: number; allocations: number }> = [];
        for (let i = 0; i < PROFILED_FORWARDS; i++) {
          const profiler = createOpProfiler();
          let gcMs = 0;
          const gcObserver = new PerformanceObserver((list) => {
            for (const e of list.getEntries()) gcMs += e.duration;
          });
          gcObserver.observe({ entryTypes: ['gc'] });
          model.setProfiler(profiler);
          const a0 = tensorAllocations();
          const t0 = performance.now();
          await forwardOnce(model, latent);
          const wall = (performance.now() - t0) / 1000;
          const allocations = tensorAllocations() - a0;
          model.setProfiler(undefined);
          // gc entries are delivered after an event-loop turn: collect the last ones before disconnecting.
          await new Promise((r) => setImmediate(r));
          for (const e of gcObserver.takeRecords()) gcMs += e.duration;
          gcObserver.disconnect();
          const gc = gcMs / 1000;
          profiles.push({ wall, seconds: { ...profiler.seconds }, gc, allocations });
        }
        const kept = [...profiles].sort((a, b) => a.wall - b.wall)[Math.floor(profiles.length / 2)]!;
        let covered = 0;
        for (const f of OP_FAMILIES) {
          const sec = kept.seconds[f] ?? 0;
          covered += sec;
          m[`share_${f}`] = { value: sec / kept.wall, unit: 'fraction' };
        }
        m.share_other = { value: Math.max(0, 1 - covered / kept.wall), unit: 'fraction' };
        m.share_gc = { value: kept.gc / kept.wall, unit: 'fraction' };
        // Tensor storages a steady-state forward creates (issue 16): 1 is the velocity it returns,
        // which the caller owns (a sampler hands it back as videoOut and allocates nothing).
        m.tensor_allocations_per_step = { value: Math.max(...profiles.map((p) => p.allocations)), unit: 'count', better: 'lower' };
        Object.assign(m, await numericsMetrics(model, latent, s, torch.outputs));
        m.profiled_step = { value: kept.wall, unit: 's', better: 'lower' };
        const child = await ctx.peakMemoryOfScript(childScript(path, s));
        const { seconds } = JSON.parse(child.stdout) as { seconds: number[] };
        m.peak_rss = { value: child.peakBytes, unit: 'bytes', better: 'lower' };
        m.child_first_step = { value: seconds[0] as number, unit: 's', better: 'lower' };
        m.child_second_step = { value: seconds[1] as number, unit: 's', better: 'lower' };
        return m;
      },
      dispose: () => {
        latent.dispose();
        for (const c of closers) c();
      },
    };
  },
};

type ShapesFormat = StepFormat | 'f8_e4m3fn' | 'q8_0' | 'q4_k';
const SHAPES_FORMATS: readonly ShapesFormat[] = ['f32', 'bf16', 'int8_convrot', 'f8_e4m3fn', 'q8_0', 'q4_k'];

/**
 * The GGUF formats run from a file: h3-shapes converted by `ninodes quantize`'s converter into the
 * bench cache (rewritten each time: the conversion is the code under test too).
 */
async function shapesModelAs(format: ShapesFormat): Promise<{ path: string; compute: ComputeMode }> {
  if (format !== 'q8_0' && format !== 'q4_k') return { path: shapesModelPath(), compute: format };
  const path = join(benchCacheDir(), 'models', `h3-shapes-${format}.gguf`);
  mkdirSync(dirname(path), { recursive: true });
  const source = openCheckpoint(shapesModelPath());
  try {
    await quantize(source, path, { format, architecture: 'h3' });
  } finally {
    source.close();
  }
  return { path, compute: 'auto' };
}

const shapes: BenchCase = {
  name: 'shapes',
  description: 'the trained h3-shapes model (3 blocks, hidden 256, latent [1,24,1,16,16]): one forward timed; shape score of its samples (seeds 0..N-1, its own steps and shift) per format',
  params: {
    // 64 seeds: the seeds tools/train-demo scored PyTorch's fp32 sampler on.
    full: SHAPES_FORMATS.map((format) => ({ model: 'h3-shapes', format, seeds: 64 })),
    quick: SHAPES_FORMATS.map((format) => ({ model: 'h3-shapes', format, seeds: 4 })),
  },
  budget: { warmup: 2, minRuns: 5, maxRuns: 30 },
  setup: async (p) => {
    const { path, compute } = await shapesModelAs(p.format as ShapesFormat);
    const { model, source, close } = openH3Model(path, { compute, capture: false });
    const hints = samplerHints(source);
    if (hints === undefined) throw new Error(`${source.path} has no ninodes.sampler metadata`);
    const latent = gaussianNoise([1, model.config.latentChannels, hints.frames, hints.height, hints.width], SEED);
    const sigma = flowSigmas(hints.steps, hints.shift)[1] as number;
    return {
      run: async () => (await model.forward(latent, sigma)).dispose(),
      metrics: async () => {
        const samples = [];
        for (let seed = 0; seed < (p.seeds as number); seed++) {
          samples.push((await runSampler(model, { seed, frames: hints.frames, height: hints.height, width: hints.width, steps: hints.steps, shift: hints.shift })).latent);
        }
        const score = cleanShapeScore(samples);
        for (const s of samples) s.dispose();
        return { shape_score: { value: score, unit: 'fraction', better: 'higher' } };
      },
      dispose: () => {
        latent.dispose();
        close();
      },
    };
  },
};

type StoredFormat = 'q8_0' | 'q4_k' | 'f8_e4m3fn';
const STORED_FORMATS: readonly StoredFormat[] = ['q8_0', 'q4_k', 'f8_e4m3fn'];

/**
 * The preset converted by `ninodes quantize`'s converter into the bench cache (rewritten each time:
 * the conversion is the code under test too): GGUF Q8_0 / Q4_K files, an fp8 e4m3fn safetensors.
 */
async function storedCheckpoint(preset: H3PresetName, format: StoredFormat): Promise<string> {
  const path = join(benchCacheDir(), 'models', `${preset}-${format}.${format === 'f8_e4m3fn' ? 'safetensors' : 'gguf'}`);
  mkdirSync(dirname(path), { recursive: true });
  const source = openCheckpoint(await checkpointPath(preset));
  try {
    await quantize(source, path, { format, architecture: 'h3' });
  } finally {
    source.close();
  }
  return path;
}

/** Issue 33's "done when": the quantized files run beside int8 convrot (GGUF) and bf16 (fp8). */
const STORED_TARGETS: readonly Target[] = [
  { source: 'issue 33', description: 'GGUF Q8_0 step ≤ 1.15× int8 convrot', on: { ratio: 'int8_convrot' }, op: '<=', value: 1.15, when: { model: 'h3-small', format: 'q8_0' } },
  { source: 'issue 33', description: 'GGUF Q4_K step ≤ 1.15× int8 convrot', on: { ratio: 'int8_convrot' }, op: '<=', value: 1.15, when: { model: 'h3-small', format: 'q4_k' } },
  { source: 'issue 33', description: 'fp8 step ≤ 1.2× bf16', on: { ratio: 'bf16' }, op: '<=', value: 1.2, when: { model: 'h3-small', format: 'f8_e4m3fn' } },
];

const stored: BenchCase = {
  name: 'stored',
  description:
    'one H3 forward over a file quantized by `ninodes quantize` (GGUF Q8_0 / Q4_K, fp8 e4m3fn), each layer computed as stored (GGUF on its blocks); int8 convrot and bf16 of the same checkpoint timed in the same rounds',
  params: {
    full: STORED_FORMATS.map((format) => ({ model: 'h3-small', format, ...h3Preset('h3-tiny').defaultLatent })),
    quick: STORED_FORMATS.map((format) => ({ model: 'h3-tiny', format, frames: 1, height: 16, width: 16 })),
  },
  work: (p): Work => ({ flops: stepFlops({ ...stepParams(p), format: 'f32' }) }),
  targets: STORED_TARGETS,
  budget: { warmup: 1, minRuns: 3, maxRuns: 10 },
  setup: async (p, ctx) => {
    const preset = p.model as H3PresetName;
    const path = await storedCheckpoint(preset, p.format as StoredFormat);
    const plain = await checkpointPath(preset);
    const closers: Array<() => void> = [];
    const open = (file: string, compute: ComputeMode) => {
      const opened = openH3Model(file, { compute, capture: false });
      closers.push(opened.close);
      return opened.model;
    };
    try {
      const model = open(path, 'auto');
      const latent = gaussianNoise([1, model.config.latentChannels, p.frames as number, p.height as number, p.width as number], SEED);
      const against: Record<string, { kind: 'baseline'; contender: Contender }> = {};
      for (const compute of ['int8_convrot', 'bf16'] as const) {
        const other = open(plain, compute);
        against[compute] = { kind: 'baseline', contender: { run: () => forwardOnce(other, latent) } };
      }
      return {
        run: () => forwardOnce(model, latent),
        against,
        metrics: async () => {
          // A fresh process holding the file's model for two steps: its peak against the file's bytes.
          const script = [
            `import { gaussianNoise, openH3Model } from '@ninodes/models';`,
            `const { model, close } = openH3Model(${JSON.stringify(path)}, { compute: 'auto', capture: false });`,
            `const latent = gaussianNoise([1, model.config.latentChannels, ${p.frames}, ${p.height}, ${p.width}], ${SEED});`,
            `for (let i = 0; i < 2; i++) (await model.forward(latent, ${SIGMA})).dispose();`,
            `close();`,
          ].join('\n');
          const child = await ctx.peakMemoryOfScript(script);
          return {
            peak_rss: { value: child.peakBytes, unit: 'bytes', better: 'lower' },
            file_bytes: { value: statSync(path).size, unit: 'bytes' },
          };
        },
        dispose: () => {
          latent.dispose();
          for (const c of closers) c();
        },
      };
    } catch (e) {
      for (const c of closers) c();
      throw e;
    }
  },
};

export const modelSuite: Suite = {
  name: 'model',
  description:
    'Synthetic H3 DiT presets: step time and peak memory per format, int8 convrot / bf16 against fp32, against PyTorch eager fp32 and bf16 on the same checkpoint, step share per op family; the trained h3-shapes model: shape score per format.',
  cases: [step, shapes, stored],
  charts: [
    { kind: 'time', title: 'step time per model and format', cases: ['step'], x: 'model', color: 'format' },
    { kind: 'ratio', title: 'step time against fp32 (same rounds)', cases: ['step'] },
    { kind: 'ratio', title: 'quantized files run as stored: step time against int8 convrot and bf16 (same rounds)', cases: ['stored'] },
    { kind: 'metric', title: 'h3-shapes: shape score of the samples per format', metric: 'shape_score', cases: ['shapes'], x: 'format' },
    { kind: 'metric', title: 'peak RSS of a process doing two steps', metric: 'peak_rss', cases: ['step'], x: 'model', color: 'format' },
    { kind: 'metric', title: 'share of step time in linears', metric: 'share_linear', cases: ['step'], x: 'model', color: 'format' },
    { kind: 'metric', title: 'share of step time in attention', metric: 'share_attention', cases: ['step'], x: 'model', color: 'format' },
    { kind: 'metric', title: 'share of step time in norms', metric: 'share_norm', cases: ['step'], x: 'model', color: 'format' },
    { kind: 'metric', title: 'share of step time in V8 garbage collection', metric: 'share_gc', cases: ['step'], x: 'model', color: 'format' },
  ],
};
