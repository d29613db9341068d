import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { openSafetensors } from '@ninodes/memory';
import { createLinearProvider, type LinearOp, type LinearProvider, type LinearSpec, maxRelError, type SequenceSplit, type Shard, sequenceRows } from '@ninodes/quant';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { h3Layout } from './h3-layout.js';
import { H3VideoModel } from './h3-model.js';
import { gaussianNoise } from './noise.js';
import { H3_PRESETS } from './presets.js';
import { writeSyntheticH3Checkpoint } from './synthetic-checkpoint.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-h3-shard-'));
const path = join(dir, 'h3-tiny.safetensors');
const config = H3_PRESETS['h3-tiny'].config;
beforeAll(async () => {
  await writeSyntheticH3Checkpoint(path, { preset: 'h3-tiny' });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Ranks in one process: each row-parallel op's forward waits for every rank's partial output of the
 * same layer and call, sums them in float64, adds the deferred bias once and hands each rank the
 * result (an in-process allreduce standing in for tp's Gloo one). The ranks' linears run
 * concurrently, as two models in one process would (see kernels' concurrent-gemm test).
 */
function reducingProviders(base: LinearProvider, size: number): LinearProvider[] {
  const pending = new Map<string, { parts: (Float32Array | undefined)[]; waiters: ((y: Tensor<'f32'>) => void)[]; shape: number[] }>();
  const calls = new Map<string, number>();
  return Array.from({ length: size }, (_, rank) => ({
    linear(spec: LinearSpec): LinearOp {
      const op = base.linear(spec);
      if (spec.shard?.role !== 'row') return op;
      return {
        spec: op.spec,
        format: op.format,
        materializedWeight: () => op.materializedWeight(),
        async forward(x) {
          const y = await op.forward(x);
          const n = (calls.get(`${spec.name}#${rank}`) ?? 0) + 1;
          calls.set(`${spec.name}#${rank}`, n);
          const key = `${spec.name}#${n}`;
          const slot = pending.get(key) ?? { parts: Array.from({ length: size }, () => undefined), waiters: [], shape: [...y.shape] };
          pending.set(key, slot);
          slot.parts[rank] = y.data;
          const done = new Promise<Tensor<'f32'>>((resolve) => slot.waiters.push(resolve));
          if (slot.parts.every((p) => p !== undefined)) {
            pending.delete(key);
            const bias = op.deferredBias?.()?.data;
            const out = new Float32Array(y.numel);
            const cols = slot.shape[1] as number;
            for (let i = 0; i < out.length; i++) {
              let s = bias ? (bias[i % cols] as number) : 0;
              for (const p of slot.parts) s += (p as Float32Array)[i] as number;
              out[i] = s;
            }
            for (const w of slot.waiters) w(Tensor.fromArray('f32', slot.shape, out.slice()));
          }
          return done;
        },
      };
    },
  }));
}

describe('tensor-parallel H3 blocks (two ranks in one process)', () => {
  it('a sharded pair of h3-tiny block groups reproduces the unsharded blocks within 1e-6 relative', async () => {
    const source = openSafetensors(path);
    try {
      const base = createLinearProvider(source, { compute: 'f32' });
      const whole = H3VideoModel.create(source, base, { capture: false });
      const [p0, p1] = reducingProviders(base, 2) as [LinearProvider, LinearProvider];
      const ranks = [p0, p1].map((p, rank) => H3VideoModel.create(source, p, { capture: false, shard: { rank, size: 2 } }));
      expect(ranks[1]?.blocks[0]?.localHeads).toBe(config.heads / 2);
      expect(ranks[1]?.blocks[0]?.linears.qkv.spec).toMatchObject({ outFeatures: (3 * config.heads * config.headDim) / 2, inFeatures: config.hidden, shard: { rank: 1, size: 2, role: 'column' } });
      expect(ranks[1]?.blocks[0]?.linears.fc2.spec).toMatchObject({ inFeatures: config.ffn / 2, outFeatures: config.hidden, shard: { role: 'row' } });
      const s = 48;
      const x = gaussianNoise([s, config.hidden], 3);
      const tEmb = await whole.timeEmbedding(0.7);
      const angles = whole.ropeAngles(3, 4, 16);
      let want = x;
      for (const b of whole.blocks.slice(0, 2)) want = await b.forward(want, tEmb, angles);
      const got = await Promise.all(
        ranks.map(async (m) => {
          let y = x;
          for (const b of m.blocks.slice(0, 2)) y = await b.forward(y, tEmb, angles);
          return y;
        }),
      );
      for (const g of got) {
        const err = maxRelError(g.data, want.data);
        expect(err).toBeLessThan(1e-6);
        // The blocks moved the state, so agreeing within 1e-6 is not agreeing on an untouched input.
        expect(maxRelError(g.data, x.data)).toBeGreaterThan(1e-2);
      }
      // The two ranks end with the same hidden state (the reduced outputs are shared).
      expect([...(got[0] as Tensor<'f32'>).data]).toEqual([...(got[1] as Tensor<'f32'>).data]);
    } finally {
      source.close();
    }
  });

  it('a rank with no reduction is wrong (the test can fail): partial sums are not the block', async () => {
    const source = openSafetensors(path);
    try {
      const base = createLinearProvider(source, { compute: 'f32' });
      const whole = H3VideoModel.create(source, base, { capture: false });
      const lonely = H3VideoModel.create(source, base, { capture: false, shard: { rank: 0, size: 2 } });
      const x = gaussianNoise([16, config.hidden], 4);
      const tEmb = await whole.timeEmbedding(0.5);
      const angles = whole.ropeAngles(1, 4, 16);
      const want = await whole.blocks[0]?.forward(x, tEmb, angles);
      const got = await lonely.blocks[0]?.forward(x, tEmb, angles);
      expect(maxRelError((got as Tensor<'f32'>).data, (want as Tensor<'f32'>).data)).toBeGreaterThan(1e-3);
    } finally {
      source.close();
    }
  });

  it('the whole sharded model (replicated embedders and final layer) matches the unsharded velocity', async () => {
    const source = openSafetensors(path);
    try {
      const base = createLinearProvider(source, { compute: 'f32' });
      const latent = gaussianNoise([1, 24, 1, 8, 8], 5);
      const want = await H3VideoModel.create(source, base, { capture: false }).forward(latent, 0.8);
      const providers = reducingProviders(base, 2);
      const got = await Promise.all(providers.map((p, rank) => H3VideoModel.create(source, p, { capture: false, shard: { rank, size: 2 } }).forward(latent, 0.8)));
      for (const g of got) expect(maxRelError(g.data, want.data)).toBeLessThan(1e-5);
      expect([...(got[0] as Tensor<'f32'>).data]).toEqual([...(got[1] as Tensor<'f32'>).data]);
    } finally {
      source.close();
    }
  });

  it('shards that do not split the heads are INVALID_SHARD; an op of the wrong width is LINEAR_WIDTH_MISMATCH', async () => {
    const source = openSafetensors(path);
    try {
      const base = createLinearProvider(source, { compute: 'f32' });
      expect(() => H3VideoModel.create(source, base, { capture: false, shard: { rank: 0, size: 3 } as Shard })).toThrow(expect.objectContaining({ code: 'INVALID_SHARD' }));
      // A provider that ignores the shard's widths: its fc1 gives 2·ffn columns where the block needs ffn.
      const ignoring: LinearProvider = {
        linear(spec) {
          if (!spec.name.endsWith('mlp.fc1')) return base.linear(spec);
          const full = base.linear({ name: spec.name, inFeatures: spec.inFeatures, outFeatures: 2 * config.ffn, bias: spec.bias });
          return { spec, format: full.format, forward: (x) => full.forward(x), materializedWeight: () => full.materializedWeight() };
        },
      };
      const [p0] = reducingProviders(ignoring, 1);
      const m = H3VideoModel.create(source, p0 as LinearProvider, { capture: false, shard: { rank: 0, size: 2 } });
      const x = gaussianNoise([4, config.hidden], 6);
      await expect(m.blocks[0]?.forward(x, await m.timeEmbedding(0.5), m.ropeAngles(1, 4, 4))).rejects.toMatchObject({ code: 'LINEAR_WIDTH_MISMATCH', where: 'blocks.0.mlp.fc1' });
    } finally {
      source.close();
    }
  });
});

describe('sequence-parallel H3 blocks', () => {
  it('a sequence split needs a shard of the same rank and size and ops made for it (INVALID_SHARD), else nothing', async () => {
    const source = openSafetensors(path);
    try {
      const base = createLinearProvider(source, { compute: 'f32' });
      const split = (rank: number, size: number): SequenceSplit => ({ rank, size, rows: (s) => sequenceRows(s, rank, size), gatherRows: async () => undefined });
      // quant's plain ops do not gather or reduce-scatter rows: refused, naming the first such layer.
      expect(() => H3VideoModel.create(source, base, { capture: false, shard: { rank: 0, size: 2 }, sequence: split(0, 2) })).toThrow(expect.objectContaining({ code: 'INVALID_SHARD', where: 'blocks.0.attn.qkv_proj' }));
      expect(() => H3VideoModel.create(source, base, { capture: false, shard: { rank: 1, size: 2 }, sequence: split(0, 2) })).toThrow(expect.objectContaining({ code: 'INVALID_SHARD', where: 'blocks.0' }));
      expect(() => H3VideoModel.create(source, base, { capture: false, sequence: split(0, 2) })).toThrow(expect.objectContaining({ code: 'INVALID_SHARD' }));
      // Ops that work on sequence-parallel rows in a model without a split: refused too.
      const marked: LinearProvider = { linear: (spec) => Object.assign(base.linear(spec), { sequenceParallel: true }) };
      expect(() => H3VideoModel.create(source, marked, { capture: false })).toThrow(expect.objectContaining({ code: 'INVALID_SHARD' }));
      // A split of one rank is no split.
      const one = H3VideoModel.create(source, base, { capture: false, sequence: split(0, 1) });
      expect(one.blocks[0]?.sequence).toBeUndefined();
    } finally {
      source.close();
    }
  });
});

describe('group hooks', () => {
  it('are awaited around every group in ModelLayout order (text and audio streams included); outputs are byte-identical with and without them', async () => {
    const source = openSafetensors(path);
    try {
      const base = createLinearProvider(source, { compute: 'f32' });
      const events: string[] = [];
      const tracing: LinearProvider = {
        linear(spec) {
          const op = base.linear(spec);
          return { ...op, spec: op.spec, format: op.format, forward: async (x) => { events.push(`run ${spec.name}`); return op.forward(x); }, materializedWeight: () => op.materializedWeight() };
        },
      };
      // The whole t2va forward, so every group of the layout runs (h3-tiny has text and audio streams).
      const input = { video: gaussianNoise([1, 24, 1, 4, 4], 7), sigma: 0.6, sigmaNext: 0.4, context: gaussianNoise([1, 3, config.textDim as number], 8), audio: gaussianNoise([1, 32, 2, 2], 9) };
      const plain = await H3VideoModel.create(source, base, { capture: false }).forwardStreams(input);
      const sleep = (): Promise<void> => new Promise((r) => setTimeout(r, 1));
      const model = H3VideoModel.create(source, tracing, {
        capture: false,
        hooks: {
          async beforeGroup(name) {
            await sleep();
            events.push(`before ${name}`);
          },
          async afterGroup(name) {
            await sleep();
            events.push(`after ${name}`);
          },
        },
      });
      const hooked = await model.forwardStreams(input);
      expect(Buffer.compare(Buffer.from(hooked.video.bytes()), Buffer.from(plain.video.bytes()))).toBe(0);
      expect(Buffer.compare(Buffer.from(hooked.audio?.bytes() ?? []), Buffer.from(plain.audio?.bytes() ?? [1]))).toBe(0);
      const layout = h3Layout(source);
      const groups = events.filter((e) => !e.startsWith('run ')).map((e) => e.split(' '));
      expect(groups).toEqual(layout.groups.flatMap((g) => [['before', g.name], ['after', g.name]]));
      // Every linear ran between its own group's hooks.
      let open = '';
      for (const e of events) {
        if (e.startsWith('before ')) open = e.slice(7);
        else if (e.startsWith('after ')) open = '';
        else expect(layout.groups.find((g) => g.name === open)?.linears.map((l) => l.name)).toContain(e.slice(4));
      }
    } finally {
      source.close();
    }
  });

  it('afterGroup runs when a group throws, and the group\'s error is the one thrown', async () => {
    const source = openSafetensors(path);
    try {
      const base = createLinearProvider(source, { compute: 'f32' });
      const failing: LinearProvider = {
        linear(spec) {
          const op = base.linear(spec);
          if (!spec.name.startsWith('blocks.1.')) return op;
          return { ...op, spec: op.spec, format: op.format, forward: async () => { throw new Error('kernel failed'); }, materializedWeight: () => op.materializedWeight() };
        },
      };
      const events: string[] = [];
      const model = H3VideoModel.create(source, failing, {
        capture: false,
        hooks: {
          beforeGroup: (name) => void events.push(`before ${name}`),
          afterGroup: (name) => {
            events.push(`after ${name}`);
            if (name === 'blocks.1') throw new Error('after failed too');
          },
        },
      });
      await expect(model.forward(gaussianNoise([1, 24, 1, 4, 4], 7), 0.6)).rejects.toThrowError('kernel failed');
      expect(events.slice(-2)).toEqual(['before blocks.1', 'after blocks.1']);
    } finally {
      source.close();
    }
  });
});
