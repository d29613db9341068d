// Row- and column-parallel linears across real rank processes (Gloo over loopback, FileStore in a
// temp dir). Each rank reads only its slice of a checkpoint written here; their outputs are compared
// with the unsplit layers run by quant's provider in this process: int8 convrot bytes must be
// identical; fp32 no further from a float64 reference than one rank is.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type Communicator, Tensor, quantizeWeightInt8 } from '@ninodes/kernels';
import { SafetensorsFile, tensorSources, writeSafetensors } from '@ninodes/memory';
import { type LayoutLinear, type LinearProvider, type LinearSpec, type ModelLayout, createLinearProvider, encodeComfyQuant } from '@ninodes/quant';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parallelLinearProvider } from './parallel-linear.js';
import { shardPlan } from './shard-plan.js';

const HANG_MS = Number(process.env.NINODES_TEST_HANG_MS ?? 900_000); // the shared hang guard (vitest.shared.ts)

const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url));
const pkgDist = (pkg: string): string => pathToFileURL(here(`../../${pkg}/dist/index.js`)).href;
const dist = { kernels: pkgDist('kernels'), memory: pkgDist('memory'), quant: pkgDist('quant'), tp: pkgDist('tp') };
const inputsUrl = pathToFileURL(here('./test-support/parallel-inputs.mjs')).href;
const worker = here('./test-support/parallel-rank.mjs');
const M = 5;

type InputOf = (name: string, m: number, k: number) => Float32Array;
let inputOf: InputOf;

interface Layer {
  name: string;
  n: number;
  k: number;
  int8: boolean;
  role: LayoutLinear['role'];
  fused: LayoutLinear['fused'];
}

const LAYERS: Layer[] = [
  // N = 40: the epilogue's 8-wide path and its tail; K = 1024: 4 convrot groups, 1 per rank at TP4.
  { name: 'rp8', n: 40, k: 1024, int8: true, role: 'row', fused: { kind: 'none' } },
  { name: 'rp32', n: 40, k: 1024, int8: false, role: 'row', fused: { kind: 'none' } },
  // Sequence-parallel plans exchange these (whole weight, all-to-all): int8 with K <= N (H3's
  // out_proj), float with 4 K <= N.
  { name: 'op8', n: 1024, k: 1024, int8: true, role: 'row', fused: { kind: 'none' } },
  { name: 'op32', n: 256, k: 64, int8: false, role: 'row', fused: { kind: 'none' } },
  { name: 'qkv8', n: 3 * 4 * 16, k: 256, int8: true, role: 'column', fused: { kind: 'qkv', heads: 4, headDim: 16 } },
  { name: 'fc1_8', n: 64, k: 512, int8: true, role: 'column', fused: { kind: 'halves' } },
  { name: 'emb32', n: 24, k: 48, int8: false, role: 'replicated', fused: { kind: 'none' } },
  // adaLN-like: split by output rows, the ranks' output columns gathered (M = 5 rows: the reorder).
  { name: 'ada8', n: 96, k: 256, int8: true, role: 'gathered', fused: { kind: 'none' } },
  { name: 'ada32', n: 48, k: 64, int8: false, role: 'gathered', fused: { kind: 'none' } },
  // H3's block adaLN: three modality parts, each rank holding its slice of every part.
  { name: 'ada8p', n: 96, k: 256, int8: true, role: 'gathered', fused: { kind: 'parts', parts: 3 } },
  { name: 'ada32p', n: 48, k: 64, int8: false, role: 'gathered', fused: { kind: 'parts', parts: 3 } },
];

const dir = mkdtempSync(join(tmpdir(), 'ninodes-tp-'));
const file = join(dir, 'layers.safetensors');
let layout: ModelLayout;

function weightOf(l: Layer): Float32Array {
  return Float32Array.from({ length: l.n * l.k }, (_, i) => Math.cos(i * 0.0071 + l.n) * (0.5 + ((i * 13) % 7) / 7));
}
function biasOf(l: Layer): Float32Array {
  return Float32Array.from({ length: l.n }, (_, i) => (i - l.n / 2) * 0.031);
}

beforeAll(async () => {
  inputOf = ((await import(inputsUrl)) as { inputOf: InputOf }).inputOf;
  const tensors: Record<string, Tensor> = {};
  const linears: LayoutLinear[] = [];
  for (const l of LAYERS) {
    const w = Tensor.f32([l.n, l.k], weightOf(l));
    if (l.int8) {
      const { q, scale } = quantizeWeightInt8(w, { convrot: 256 });
      tensors[`${l.name}.weight`] = q;
      tensors[`${l.name}.weight_scale`] = scale;
      const marker = encodeComfyQuant({ format: 'int8_tensorwise', convrot: true, convrot_groupsize: 256 });
      tensors[`${l.name}.comfy_quant`] = Tensor.fromArray('u8', [marker.length], marker);
    } else {
      tensors[`${l.name}.weight`] = w;
    }
    tensors[`${l.name}.bias`] = Tensor.f32([l.n], biasOf(l));
    linears.push({ name: l.name, inFeatures: l.k, outFeatures: l.n, bias: true, storedFormat: l.int8 ? 'int8_convrot' : 'f32', role: l.role, fused: l.fused, fp32Island: false });
  }
  await writeSafetensors(file, tensorSources(tensors));
  layout = { architecture: 'test-layers', prefix: '', groups: [{ name: 'layers', kind: 'block', tensors: [], linears }] };
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface RankOut {
  rank: number;
  ok: boolean;
  y?: Record<string, { shape: number[]; b64: string }>;
  gathered?: number[];
  error?: { code: string; message: string; stack: string };
}

function runRanks(size: number, sequence = false): Promise<RankOut[]> {
  const storeDir = mkdtempSync(join(dir, 'store-'));
  return Promise.all(
    Array.from(
      { length: size },
      (_, rank) =>
        new Promise<RankOut>((resolve) => {
          const job = { rank, size, storeDir, prefix: `tp${size}`, file, layout, m: M, dist, inputs: inputsUrl, sequence };
          const child = spawn(process.execPath, [worker], { env: { ...process.env, NINODES_TP_JOB: JSON.stringify(job) }, stdio: ['ignore', 'pipe', 'pipe'] });
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
          child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
          const killer = setTimeout(() => {
            stderr += `\n[killed by the test's hang guard after ${HANG_MS} ms]`;
            child.kill('SIGKILL');
          }, HANG_MS);
          child.on('exit', (code, signal) => {
            clearTimeout(killer);
            try {
              resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '') as RankOut);
            } catch {
              resolve({ rank, ok: false, error: { code: `EXIT ${code ?? signal}`, message: stderr, stack: '' } });
            }
          });
        }),
    ),
  );
}

const f32 = (b64: string): Float32Array => {
  const b = Buffer.from(b64, 'base64');
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
};

/** The unsplit layers, run by quant's provider in this process. */
async function singleRank(): Promise<Map<string, Float32Array>> {
  const source = SafetensorsFile.open(file);
  try {
    const provider = createLinearProvider(source);
    const out = new Map<string, Float32Array>();
    for (const l of LAYERS) {
      const y = await provider.linear({ name: l.name, inFeatures: l.k, outFeatures: l.n, bias: true }).forward(Tensor.fromArray('f32', [M, l.k], inputOf(l.name, M, l.k)));
      out.set(l.name, y.data.slice());
    }
    return out;
  } finally {
    source.close();
  }
}

/** The full [M, N] output from the ranks' column parts: each rank's rows of every segment, in order. */
function assembleColumns(l: Layer, parts: Float32Array[]): Float32Array {
  const size = parts.length;
  const segments = l.fused.kind === 'qkv' ? 3 : l.fused.kind === 'halves' ? 2 : 1;
  const seg = l.n / segments;
  const per = seg / size;
  const y = new Float32Array(M * l.n);
  for (let r = 0; r < size; r++) {
    const local = parts[r]!;
    for (let m = 0; m < M; m++) {
      for (let s = 0; s < segments; s++) {
        for (let j = 0; j < per; j++) y[m * l.n + s * seg + r * per + j] = local[m * (segments * per) + s * per + j]!;
      }
    }
  }
  return y;
}

function float64Reference(l: Layer): Float64Array {
  const x = inputOf(l.name, M, l.k);
  const w = weightOf(l);
  const b = biasOf(l);
  const y = new Float64Array(M * l.n);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < l.n; n++) {
      let s = 0;
      for (let k = 0; k < l.k; k++) s += x[m * l.k + k]! * w[n * l.k + k]!;
      y[m * l.n + n] = s + b[n]!;
    }
  }
  return y;
}

/** ||a - b|| / ||b|| (Frobenius). */
const relFrobenius = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let d = 0;
  let n = 0;
  for (let i = 0; i < a.length; i++) {
    d += (a[i]! - b[i]!) ** 2;
    n += b[i]! ** 2;
  }
  return Math.sqrt(d / n);
};

const maxRel = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let d = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  return d / scale;
};

describe('parallel linears across rank processes', () => {
  for (const size of [2, 4]) {
    it(`TP${size}: int8 convrot row/column-parallel bytes equal the unsplit layers; fp32 row-parallel as accurate as one rank`, async () => {
      const [ranks, single] = await Promise.all([runRanks(size), singleRank()]);
      for (const r of ranks) expect(r.ok, JSON.stringify(r.error)).toBe(true);
      for (const l of LAYERS) {
        const outs = ranks.map((r) => f32(r.y![l.name]!.b64));
        const whole = single.get(l.name)!;
        if (l.role === 'column') {
          for (const o of outs) expect(o.length).toBe((M * l.n) / size);
          expect(Buffer.from(assembleColumns(l, outs).buffer).equals(Buffer.from(whole.buffer)), l.name).toBe(true);
          continue;
        }
        // Row-parallel, gathered and replicated layers: every rank holds the same bytes.
        for (const o of outs) expect(Buffer.from(o.buffer).equals(Buffer.from(outs[0]!.buffer)), `${l.name} ranks agree`).toBe(true);
        if (l.role === 'gathered') {
          // forwardRows over whole parts and over a range that cuts them: the columns of one rank's output.
          const part = l.n / (l.fused.kind === 'parts' ? l.fused.parts : 1);
          for (const [a, b] of (part < l.n ? [[part, l.n], [0, part], [5, part + 3]] : [[0, part], [5, part - 3]]) as [number, number][]) {
            const cols = new Float32Array(M * (b - a));
            for (let i = 0; i < M; i++) cols.set(whole.subarray(i * l.n + a, i * l.n + b), i * (b - a));
            for (const r of ranks) expect(Buffer.from(f32(r.y![`${l.name}[${a},${b})`]!.b64).buffer).equals(Buffer.from(cols.buffer)), `${l.name}[${a},${b}) rank ${r.rank}`).toBe(true);
          }
          if (!l.int8) {
            const w = weightOf(l);
            for (const r of ranks) expect(Buffer.from(f32(r.y![`${l.name}.weight`]!.b64).buffer).equals(Buffer.from(w.buffer)), `${l.name} weight rank ${r.rank}`).toBe(true);
          }
        }
        // A gathered layer computes each output element whole on one rank: one rank's bytes, any format.
        if (l.int8 || l.role === 'gathered') {
          expect(Buffer.from(outs[0]!.buffer).equals(Buffer.from(whole.buffer)), `${l.name} equals one rank`).toBe(true);
        } else {
          // fp32 sums in another order: the split must cost no more accuracy than fp32 itself has
          // here (one rank is ~2.5e-6 from float64 at K = 1024; TP2 measured 0, TP4 2.4e-6 from one rank).
          const exact = float64Reference(l);
          const oneRankError = relFrobenius(whole, exact);
          expect(oneRankError).toBeGreaterThan(0);
          expect(relFrobenius(outs[0]!, exact), l.name).toBeLessThanOrEqual(2 * oneRankError);
          expect(relFrobenius(outs[0]!, whole), l.name).toBeLessThanOrEqual(2 * oneRankError);
          expect(relFrobenius(outs[0]!, whole), l.name).toBeLessThanOrEqual(5e-6);
        }
      }
      // The int8 path is a real approximation of the float layer (not, say, zeros on every rank).
      const rp8 = LAYERS[0]!;
      expect(maxRel(single.get('rp8')!, float64Reference(rp8))).toBeLessThan(0.05);
    });
  }
});

describe('sequence-parallel linears across rank processes', () => {
  // M = 5 rows over 2 and 4 ranks: own rows [0, 2), [2, 5) and [0, 1), [1, 2), [2, 3), [3, 5).
  const ownRows = (rank: number, size: number): [number, number] => [Math.floor((rank * M) / size), Math.floor(((rank + 1) * M) / size)];
  for (const size of [2, 4]) {
    it(`TP${size}: column layers read only their own rows and return every row; row layers finish their own rows; int8 bytes equal the unsplit layers`, async () => {
      const [ranks, single] = await Promise.all([runRanks(size, true), singleRank()]);
      for (const r of ranks) expect(r.ok, JSON.stringify(r.error)).toBe(true);
      for (const l of LAYERS) {
        const outs = ranks.map((r) => f32(r.y![l.name]!.b64));
        const whole = single.get(l.name)!;
        if (l.role === 'column') {
          // Every row, though each rank's input held only its own.
          expect(Buffer.from(assembleColumns(l, outs).buffer).equals(Buffer.from(whole.buffer)), l.name).toBe(true);
          continue;
        }
        if (l.role === 'row') {
          if (!l.int8) {
            // Each rank's materialized weight: its input columns of the file's weight.
            const w = weightOf(l);
            const k = l.k / size;
            for (const r of ranks) {
              const cols = Float32Array.from({ length: l.n * k }, (_, i) => w[Math.floor(i / k) * l.k + r.rank * k + (i % k)]!);
              expect(Buffer.from(f32(r.y![`${l.name}.weight`]!.b64).buffer).equals(Buffer.from(cols.buffer)), `${l.name} weight rank ${r.rank}`).toBe(true);
            }
          }
          // Each rank's own rows, put together: the layer's output.
          const y = new Float32Array(M * l.n);
          for (const r of ranks) {
            const [a, b] = ownRows(r.rank, size);
            y.set(outs[r.rank]!.subarray(a * l.n, b * l.n), a * l.n);
          }
          if (l.int8) {
            expect(Buffer.from(y.buffer).equals(Buffer.from(whole.buffer)), l.name).toBe(true);
          } else {
            // Exchanged (op32) or reduced (rp32) fp32 sums.
            // As the plain row-parallel fp32 layer (see above): no less accurate than one rank.
            const exact = float64Reference(l);
            expect(relFrobenius(y, exact), l.name).toBeLessThanOrEqual(2 * relFrobenius(whole, exact));
            expect(relFrobenius(y, whole), l.name).toBeLessThanOrEqual(5e-6);
          }
          continue;
        }
        // Gathered and replicated layers are not sequence parallel: every rank, every row.
        for (const o of outs) expect(Buffer.from(o.buffer).equals(Buffer.from(whole.buffer)), l.name).toBe(true);
      }
      // gatherRows: every row of [M, 3] from its owner, on every rank.
      const want = Array.from({ length: M * 3 }, (_, i) => {
        const row = Math.floor(i / 3);
        const owner = Array.from({ length: size }, (_, r) => r).find((r) => row >= ownRows(r, size)[0] && row < ownRows(r, size)[1])!;
        return 100 * owner + row;
      });
      for (const r of ranks) expect(r.gathered).toEqual(want);
    });
  }
});

describe('parallelLinearProvider (no processes)', () => {
  // Only rank and size are read before a forward.
  const comm = (rank: number, size: number): Communicator => ({ rank, size }) as unknown as Communicator;

  it('a sequence-parallel plan exchanges narrow-input row layers: the whole weight is asked for, the op answers as the row shard', () => {
    const asked: LinearSpec[] = [];
    const recorder: LinearProvider = {
      linear(spec) {
        asked.push(spec);
        return { spec, format: 'f32', forward: async (x) => x, materializedWeight: async () => Tensor.zeros('f32', [spec.outFeatures, spec.inFeatures]) };
      },
    };
    const plan = shardPlan(layout, 2, { sequence: true });
    const provider = parallelLinearProvider({ provider: recorder, plan, comm: comm(1, 2), sequence: true });
    const op = provider.linear({ name: 'op8', inFeatures: 1024, outFeatures: 1024, bias: true });
    expect(asked.at(-1)).toEqual({ name: 'op8', inFeatures: 1024, outFeatures: 1024, bias: true });
    expect(op.spec).toMatchObject({ inFeatures: 512, outFeatures: 1024, shard: { rank: 1, size: 2, role: 'row' } });
    expect(op.sequenceParallel).toBe(true);
    // K > N stays reduced: its slice is read. A float layer with 4 K <= N is exchanged too.
    expect(provider.linear({ name: 'op32', inFeatures: 64, outFeatures: 256, bias: true }).spec).toMatchObject({ inFeatures: 32, shard: { role: 'row' } });
    expect(asked.at(-1)).toEqual({ name: 'op32', inFeatures: 64, outFeatures: 256, bias: true });
    provider.linear({ name: 'rp8', inFeatures: 1024, outFeatures: 40, bias: true });
    expect(asked.at(-1)).toMatchObject({ inFeatures: 512, outFeatures: 40, shard: { role: 'row' } });
    // Plan and provider must agree on sequence parallelism.
    expect(() => parallelLinearProvider({ provider: recorder, plan, comm: comm(1, 2) })).toThrow(expect.objectContaining({ code: 'SHARD_COMM_MISMATCH' }));
    expect(() => parallelLinearProvider({ provider: recorder, plan: shardPlan(layout, 2), comm: comm(1, 2), sequence: true })).toThrow(expect.objectContaining({ code: 'SHARD_COMM_MISMATCH' }));
  });

  it('asks quant for the local part of each planned layer, whole widths or already-local specs alike', () => {
    const asked: LinearSpec[] = [];
    const recorder: LinearProvider = {
      linear(spec) {
        asked.push(spec);
        return { spec, format: 'f32', forward: async (x) => x, materializedWeight: async () => Tensor.zeros('f32', [spec.outFeatures, spec.inFeatures]) };
      },
    };
    const plan = shardPlan(layout, 2);
    const provider = parallelLinearProvider({ provider: recorder, plan, comm: comm(1, 2) });
    const qkv = provider.linear({ name: 'qkv8', inFeatures: 256, outFeatures: 192, bias: true });
    expect(qkv.spec).toMatchObject({ inFeatures: 256, outFeatures: 96, shard: { rank: 1, size: 2, role: 'column', fused: { kind: 'qkv', heads: 4, headDim: 16 } } });
    const row = provider.linear({ name: 'rp8', inFeatures: 512, outFeatures: 40, bias: true, shard: { rank: 1, size: 2, role: 'row', fused: { kind: 'none' } } });
    expect(asked[1]).toMatchObject({ inFeatures: 512, outFeatures: 40, shard: { role: 'row' } });
    // The row-parallel op is wrapped (it reduces), the column one is quant's op itself.
    expect(row).not.toBe(asked[1]);
    expect(provider.linear({ name: 'emb32', inFeatures: 48, outFeatures: 24, bias: true }).spec.shard).toMatchObject({ role: 'replicated' });
    // A gathered layer asked whole reads its rows and answers whole widths.
    const ada = provider.linear({ name: 'ada8', inFeatures: 256, outFeatures: 96, bias: true });
    expect(asked.at(-1)).toMatchObject({ inFeatures: 256, outFeatures: 48, shard: { rank: 1, size: 2, role: 'gathered' } });
    expect(ada.spec).toEqual({ name: 'ada8', inFeatures: 256, outFeatures: 96, bias: true });
    expect(() => provider.linear({ name: 'rp8', inFeatures: 300, outFeatures: 40, bias: true })).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => provider.linear({ name: 'nope', inFeatures: 1, outFeatures: 1, bias: false })).toThrow(expect.objectContaining({ code: 'LAYER_NOT_IN_PLAN' }));
    expect(() => parallelLinearProvider({ provider: recorder, plan, comm: comm(0, 4) })).toThrow(expect.objectContaining({ code: 'SHARD_COMM_MISMATCH' }));
  });

  it('refuses an int8 op that does not declare the PreparedLinearOp contract instead of running it on the float path', () => {
    const undeclared: LinearProvider = {
      linear: (spec) => ({ spec, format: 'int8_convrot', forward: async (x) => x, materializedWeight: async () => Tensor.zeros('f32', [spec.outFeatures, spec.inFeatures]) }),
    };
    for (const sequence of [false, true]) {
      const provider = parallelLinearProvider({ provider: undeclared, plan: shardPlan(layout, 2, { sequence }), comm: comm(1, 2), sequence });
      for (const name of ['rp8', 'op8']) {
        const whole = layout.groups.flatMap((g) => g.linears).find((l) => l.name === name) as LayoutLinear;
        expect(() => provider.linear({ name, inFeatures: whole.inFeatures, outFeatures: whole.outFeatures, bias: true })).toThrow(
          expect.objectContaining({ code: 'INVALID_ARGUMENT', value: 'int8_convrot', where: name }),
        );
      }
    }
  });
});
