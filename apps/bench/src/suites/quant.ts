/**
 * Suite `quant` (issue 5): checkpoint conversion throughput (GB/s of source) and the peak resident
 * memory of a separate process doing the same conversion; GGUF decode GB/s per block type against the
 * memcpy bound; the output error of plain int8, int8 convrot and fp8 on a synthetic H3 checkpoint.
 */
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { defaultCacheDir } from '@ninodes/device';
import { BLOCK_DTYPES, type BlockDType, Tensor, byteSizeOf, dequantize } from '@ninodes/kernels';
import { SafetensorsFile, type TensorSource, writeSafetensors } from '@ninodes/memory';
import { type AccuracyFormat, type AccuracyRow, type QuantizeReport, type QuantizeTarget, accuracyReport, detectFormats, quantize, randomBlockTensor } from '@ninodes/quant';
import { ensureSyntheticCheckpoint } from '@ninodes/models';
import { memcpyBound } from '../peers/op-peers.js';
import { benchH3Specs, specBytes } from './h3-bench-layout.js';
import type { BenchCase, CaseContext, Metric, Params, Suite } from '../suite.js';

/** Generated inputs live here between runs (never in the repo): `$XDG_CACHE_HOME/ninodes/bench`. */
export function benchCacheDir(): string {
  const dir = process.env.NINODES_BENCH_CACHE ?? join(defaultCacheDir(), 'bench');
  mkdirSync(dir, { recursive: true });
  return dir;
}

// ---------------------------------------------------------------------------------------------
// A bf16 H3-layout checkpoint with realistic values: weights N(0, 1/K) with four outlier input
// channels at 10x (what convrot is for), norm weights near 1, small biases. Deterministic, so a
// cached file is reused when its size matches.
// ---------------------------------------------------------------------------------------------

// 2: the real H3 layout from @ninodes/models (f32 islands included) replaced memory's made-up one.
const CKPT_VERSION = 2;

interface Bf16Checkpoint {
  blocks: number;
  hidden: number;
}

function layoutOf(c: Bf16Checkpoint): TensorSource[] {
  return benchH3Specs(c.blocks, c.hidden).map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, data: () => (t.dtype === 'f32' ? widenBf16(bf16Values(t.name, t.shape)) : bf16Values(t.name, t.shape)) }));
}

/** Bytes of tensor data (the conversion's "GB of source"). */
function sourceBytesOf(c: Bf16Checkpoint): number {
  return specBytes(benchH3Specs(c.blocks, c.hidden));
}

/** Bytes of the largest tensor as stored (the unit of "a few layers"). */
function largestTensorBytes(c: Bf16Checkpoint): number {
  return Math.max(...benchH3Specs(c.blocks, c.hidden).map((t) => specBytes([t])));
}

/** The f32 islands get the same values as bf16 would, widened exactly (bf16 bits in the high half). */
function widenBf16(bf16: Uint8Array): Uint8Array {
  const src = new Uint16Array(bf16.buffer, bf16.byteOffset, bf16.byteLength / 2);
  const out = new Uint32Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = (src[i] as number) << 16;
  return new Uint8Array(out.buffer);
}

function seedOf(name: string): number {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  return h >>> 0 || 1;
}

function bf16Values(name: string, shape: readonly number[]): Uint8Array {
  const count = shape.reduce((a, b) => a * b, 1);
  const out = new Uint16Array(count);
  let s = seedOf(name);
  // Irwin–Hall(4) − 2 has variance 1/3: times √3 an approximately standard normal, cheap enough for 1e9 values.
  const normal = (): number => {
    let sum = 0;
    for (let j = 0; j < 4; j++) {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      sum += (s >>> 0) / 4294967296;
    }
    return (sum - 2) * 1.7320508;
  };
  const k = shape.length === 2 ? (shape[1] as number) : count;
  const isNorm = /norm/.test(name) && shape.length === 1;
  const isBias = /bias$/.test(name);
  const std = isNorm ? 0.05 : isBias ? 0.02 : 1 / Math.sqrt(k);
  const mean = isNorm ? 1 : 0;
  const outlier = new Float32Array(k).fill(1);
  if (shape.length === 2) for (const f of [0.13, 0.37, 0.61, 0.89]) outlier[Math.floor(f * k)] = 10;
  const f32 = new Float32Array(4096);
  const u32 = new Uint32Array(f32.buffer);
  for (let base = 0; base < count; base += f32.length) {
    const n = Math.min(f32.length, count - base);
    for (let i = 0; i < n; i++) f32[i] = mean + std * normal() * (outlier[(base + i) % k] as number);
    // Round to nearest even into bf16 (values are finite by construction).
    for (let i = 0; i < n; i++) {
      const u = u32[i] as number;
      out[base + i] = (u + 0x7fff + ((u >>> 16) & 1)) >>> 16;
    }
  }
  return new Uint8Array(out.buffer);
}

const pending = new Map<string, Promise<string>>();

/** The cached checkpoint's path, written (atomically) the first time. */
function ensureBf16Checkpoint(c: Bf16Checkpoint): Promise<string> {
  const path = join(benchCacheDir(), `quant-h3-bf16-${c.blocks}x${c.hidden}-v${CKPT_VERSION}.safetensors`);
  let p = pending.get(path);
  if (p === undefined) {
    p = (async () => {
      const expected = sourceBytesOf(c);
      if (existsSync(path)) {
        // Same parameters and version give the same bytes; a size or header mismatch means regenerate.
        try {
          const f = SafetensorsFile.open(path);
          const ok = f.entries().reduce((a, e) => a + e.byteLength, 0) === expected && statSync(path).size > expected;
          f.close();
          if (ok) return path;
        } catch {
          // unreadable: rewritten below
        }
      }
      await writeSafetensors(path, layoutOf(c), { metadata: { format: 'pt', generator: `ninodes-bench quant v${CKPT_VERSION}` } });
      return path;
    })();
    pending.set(path, p);
  }
  return p;
}

// ---------------------------------------------------------------------------------------------
// Conversion: throughput in the bench process, peak RSS in a child measured by the OS.
// ---------------------------------------------------------------------------------------------

/** ~2.0 GB (22 H3 blocks at hidden 1536, bf16 with f32 islands); quick: ~21 MB. */
const FULL_CKPT: Bf16Checkpoint = { blocks: 22, hidden: 1536 };
const QUICK_CKPT: Bf16Checkpoint = { blocks: 2, hidden: 512 };

function ckptOf(p: Params): Bf16Checkpoint {
  return { blocks: p.blocks as number, hidden: p.hidden as number };
}

function conversionScript(input: string, output: string, format: QuantizeTarget | 'none'): string {
  // `none` opens the checkpoint and imports everything but converts nothing: the idle baseline.
  return [
    `import { SafetensorsFile } from '@ninodes/memory';`,
    `import { quantize } from '@ninodes/quant';`,
    `const source = SafetensorsFile.open(${JSON.stringify(input)});`,
    format === 'none'
      ? `process.stdout.write(JSON.stringify({ tensors: source.entries().length }));`
      : `const r = await quantize(source, ${JSON.stringify(output)}, { format: ${JSON.stringify(format)} });\n` +
        `process.stdout.write(JSON.stringify({ sourceBytes: r.sourceBytes, seconds: r.seconds, peakHeldBytes: r.peakHeldBytes, bytesWritten: r.bytesWritten }));`,
    `source.close();`,
  ].join('\n');
}

const conversion: BenchCase = {
  name: 'convert',
  description: 'quantize() of a bf16 H3-layout checkpoint (streaming, atomic write); peak RSS from a separate process',
  params: {
    full: [
      { format: 'int8_convrot', ...FULL_CKPT },
      { format: 'f8_e4m3fn', ...FULL_CKPT },
    ],
    quick: [
      { format: 'int8_convrot', ...QUICK_CKPT },
      { format: 'f8_e4m3fn', ...QUICK_CKPT },
    ],
  },
  work: (p) => ({ bytes: sourceBytesOf(ckptOf(p)) }),
  // A full conversion is seconds of work and writes a file each time: few, whole runs.
  budget: { warmup: 1, minRuns: 3, maxRuns: 3, seconds: 0 },
  targets: [
    {
      source: 'issue 5',
      description: 'streaming conversion: peak RSS growth over an idle process at most 8x the largest bf16 tensor ("a few layers, not the model")',
      on: { metric: 'peak_growth_largest_tensors' },
      op: '<=',
      value: 8,
      // The claim is about a 2 GB checkpoint; at quick size the process's fixed costs dominate.
      when: { blocks: FULL_CKPT.blocks, hidden: FULL_CKPT.hidden },
    },
  ],
  setup: async (p, ctx) => {
    const c = ckptOf(p);
    const format = p.format as QuantizeTarget;
    const input = await ensureBf16Checkpoint(c);
    const source = SafetensorsFile.open(input);
    const out = join(ctx.tmpDir, `convert-${format}.safetensors`);
    let last: QuantizeReport | undefined;
    return {
      run: async () => {
        last = await quantize(source, out, { format });
      },
      metrics: async () => {
        const childOut = join(ctx.tmpDir, `convert-child-${format}.safetensors`);
        const idle = await ctx.peakMemoryOfScript(conversionScript(input, childOut, 'none'));
        const busy = await ctx.peakMemoryOfScript(conversionScript(input, childOut, format));
        await rm(childOut, { force: true });
        const child = JSON.parse(busy.stdout) as { sourceBytes: number; seconds: number; peakHeldBytes: number };
        const m: Record<string, Metric> = {
          peak_rss: { value: busy.peakBytes, unit: 'bytes', better: 'lower' },
          idle_rss: { value: idle.peakBytes, unit: 'bytes', better: 'lower' },
          peak_growth_largest_tensors: { value: (busy.peakBytes - idle.peakBytes) / largestTensorBytes(c), unit: 'x', better: 'lower' },
          peak_rss_fraction_of_source: { value: busy.peakBytes / child.sourceBytes, unit: 'x', better: 'lower' },
          child_gbps: { value: child.sourceBytes / child.seconds / 1e9, unit: 'GB/s', better: 'higher' },
          peak_held: { value: child.peakHeldBytes, unit: 'bytes', better: 'lower' },
        };
        if (last) m.output_bytes = { value: last.bytesWritten, unit: 'bytes' };
        return m;
      },
      dispose: async () => {
        source.close();
        await rm(out, { force: true });
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// GGUF decode per block type.
// ---------------------------------------------------------------------------------------------

const GGUF_TYPES = Object.keys(BLOCK_DTYPES) as BlockDType[];

const decode: BenchCase = {
  name: 'gguf_decode',
  description: 'dequantize() of a GGUF block tensor to f32 into a reused output (reads the blocks, writes f32)',
  params: {
    full: GGUF_TYPES.map((type) => ({ type, rows: 4096, cols: 4096 })),
    quick: GGUF_TYPES.map((type) => ({ type, rows: 512, cols: 2048 })),
  },
  work: (p) => {
    const shape = [p.rows as number, p.cols as number];
    return { bytes: byteSizeOf(p.type as BlockDType, shape) + 4 * shape[0]! * shape[1]! };
  },
  setup: (p, ctx) => {
    const shape = [p.rows as number, p.cols as number];
    const x = randomBlockTensor(p.type as BlockDType, shape);
    const out = Tensor.zeros('f32', shape);
    const bytes = byteSizeOf(p.type as BlockDType, shape) + out.byteLength;
    return {
      run: () => dequantize(x, 'f32', { out }),
      against: memcpyBound(ctx, { bytes }),
      dispose: () => {
        x.dispose();
        out.dispose();
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// Error table: plain int8 (rowwise), int8 convrot, fp8 e4m3fn on the synthetic model's block linears.
// ---------------------------------------------------------------------------------------------

const ERROR_FORMATS: readonly AccuracyFormat[] = ['int8_rowwise', 'int8_convrot', 'f8_e4m3fn'];

/** @ninodes/models' synthetic H3 presets: bf16, N(0, gain²/K) weights with four outlier hidden channels. */
const ERROR_SAMPLES: Record<string, number> = { 'h3-tiny': 16, 'h3-small': 32 };

const errorCheckpoints = new Map<string, Promise<string>>();

function presetCheckpoint(preset: 'h3-tiny' | 'h3-small'): Promise<string> {
  let p = errorCheckpoints.get(preset);
  if (p === undefined) {
    p = ensureSyntheticCheckpoint({ dir: join(benchCacheDir(), 'models'), preset }).then((c) => c.path);
    errorCheckpoints.set(preset, p);
  }
  return p;
}

function blockLinears(source: SafetensorsFile): string[] {
  return [...detectFormats(source).layers.values()].filter((l) => l.shape.length === 2 && /(?:^|\.)blocks\.\d+\./.test(l.name)).map((l) => l.name);
}

function familyOf(layer: string): string {
  return layer.replace(/^.*blocks\.\d+\./, '').replace(/\.linear$/, '').replace(/^(attn|mlp)\./, '');
}

function summarizeErrors(rows: readonly AccuracyRow[], format: AccuracyFormat): Record<string, Metric> {
  const values = rows.map((r) => r.error[format]).filter((v): v is number => v !== undefined);
  const m: Record<string, Metric> = {};
  if (values.length === 0) return m;
  const sorted = [...values].sort((a, b) => a - b);
  m.rel_error_mean = { value: values.reduce((a, b) => a + b, 0) / values.length, unit: 'rel_error', better: 'lower' };
  m.rel_error_median = { value: sorted[Math.floor(sorted.length / 2)] as number, unit: 'rel_error', better: 'lower' };
  m.rel_error_max = { value: sorted[sorted.length - 1] as number, unit: 'rel_error', better: 'lower' };
  const families = new Map<string, number[]>();
  for (const r of rows) {
    const v = r.error[format];
    if (v === undefined) continue;
    const f = familyOf(r.layer);
    families.set(f, [...(families.get(f) ?? []), v]);
  }
  for (const [f, vs] of families) m[`err_${f}`] = { value: vs.reduce((a, b) => a + b, 0) / vs.length, unit: 'rel_error', better: 'lower' };
  return m;
}

const errorTable: BenchCase = {
  name: 'quant_error',
  description: 'relative error of y = x·Wᵀ against the f32 linear, per format, over the block linears of the synthetic H3 preset (inputs with 1% outlier channels at 20x)',
  params: {
    full: ERROR_FORMATS.map((format) => ({ model: 'h3-small', format })),
    quick: ERROR_FORMATS.map((format) => ({ model: 'h3-tiny', format })),
  },
  // The error is the measurement; the time is only how long assessing it takes.
  budget: { warmup: 0, minRuns: 1, maxRuns: 1, seconds: 0 },
  targets: [
    {
      source: 'issue 5',
      description: 'int8 convrot has lower output error than plain int8 on outlier channels (mean over block linears)',
      on: { metric: 'vs_int8_rowwise' },
      op: '<=',
      value: 1,
      when: { format: 'int8_convrot' },
    },
  ],
  setup: async (p: Params, _ctx: CaseContext) => {
    const preset = p.model as 'h3-tiny' | 'h3-small';
    const format = p.format as AccuracyFormat;
    const source = SafetensorsFile.open(await presetCheckpoint(preset));
    const layers = blockLinears(source);
    const options = { layers, samples: ERROR_SAMPLES[preset] ?? 32, seed: 145 };
    let rows: AccuracyRow[] = [];
    return {
      run: async () => {
        rows = await accuracyReport(source, { ...options, formats: [format] });
      },
      metrics: async () => {
        const m = summarizeErrors(rows, format);
        if (format !== 'int8_rowwise' && m.rel_error_mean) {
          const plain = summarizeErrors(await accuracyReport(source, { ...options, formats: ['int8_rowwise'] }), 'int8_rowwise');
          if (plain.rel_error_mean) m.vs_int8_rowwise = { value: m.rel_error_mean.value / plain.rel_error_mean.value, unit: 'x', better: 'lower' };
        }
        m.layers = { value: rows.length, unit: 'count' };
        return m;
      },
      dispose: () => source.close(),
    };
  },
};

export const quantSuite: Suite = {
  name: 'quant',
  description: 'Checkpoint conversion (int8 convrot, fp8) throughput and peak memory, GGUF decode per type, quantization error per format.',
  cases: [conversion, decode, errorTable],
  charts: [
    { kind: 'throughput', title: 'conversion throughput (GB/s of bf16 source)', cases: ['convert'] },
    { kind: 'metric', title: 'peak RSS of a converting process', metric: 'peak_rss', cases: ['convert'], x: 'format' },
    { kind: 'throughput', title: 'GGUF decode to f32 against the memcpy bound', cases: ['gguf_decode'] },
    { kind: 'ratio', title: 'GGUF decode time / memcpy of the same bytes', cases: ['gguf_decode'] },
    { kind: 'metric', title: 'output error per format (mean over block linears)', metric: 'rel_error_mean', cases: ['quant_error'], x: 'format' },
    { kind: 'metric', title: 'worst layer output error per format', metric: 'rel_error_max', cases: ['quant_error'], x: 'format' },
  ],
};
