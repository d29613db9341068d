// opGroupLoader with staging, over real quant linear ops: a group's weights to convert are read
// with positioned reads into pooled buffers and the ops prepare from those bytes; weights run as
// stored are served from one view of the mapping per tensor, made once and kept (no copy). The
// outputs must be the bytes the same ops give over the plain mapping.
import { Tensor } from '@ninodes/kernels';
import { HostBufferPool, SafetensorsFile } from '@ninodes/memory';
import { type ComputeMode, createLinearProvider, type ModelLayout } from '@ninodes/quant';
import { describe, expect, it } from 'vitest';
import { opGroupLoader } from './op-group-loader.js';
import { StagedSource } from './staged-source.js';
import { StreamingExecutor } from './streaming-executor.js';
import { bf16Model, temporarySafetensors } from './test-support/bf16-checkpoint.js';

const N = 96;
const K = 64;
const GROUPS = ['embed', 'blocks.0', 'blocks.1', 'blocks.2', 'blocks.3'];
const { layout, sources } = bf16Model(GROUPS, ['fc'], N, K, true);
const placement = { compute: 'cpu', groups: GROUPS.map((name) => ({ name, device: name === 'embed' ? 'cpu' : 'disk' })) };
const x = Tensor.fromArray('f32', [3, K], Float32Array.from({ length: 3 * K }, (_, i) => Math.sin(i) * 2));

const file = temporarySafetensors('staged.safetensors', sources);

describe('opGroupLoader with a StagedSource', () => {
  it.each<[ComputeMode, boolean]>([
    ['auto', true],
    ['f32', false],
  ])('compute %s: outputs equal the mapped run; run as stored (%s): one kept view per weight, else positioned reads', async (compute, asStored) => {
    const kept = asStored;
    const plain = SafetensorsFile.open(file());
    const want = new Map<string, Uint8Array>();
    const plainOps = createLinearProvider(plain, { compute });
    for (const g of GROUPS) want.set(g, (await plainOps.linear({ name: `${g}.fc`, inFeatures: K, outFeatures: N, bias: true }).forward(x)).bytes().slice());
    plain.close();

    const mapped = SafetensorsFile.open(file());
    const viewed: string[] = [];
    const tensor = mapped.tensor.bind(mapped);
    mapped.tensor = (name: string) => {
      viewed.push(name);
      return tensor(name);
    };
    let verified = 0;
    const verify = mapped.verify.bind(mapped);
    mapped.verify = () => {
      verified++;
      verify();
    };
    // Pages populated off the JS thread, per tensor, once their read has settled.
    const populated = new Set<string>();
    let populatedBytes = 0;
    const populate = mapped.populate.bind(mapped);
    mapped.populate = async (name: string, rows?: readonly [number, number]) => {
      populated.delete(name);
      const bytes = await populate(name, rows);
      populatedBytes += bytes;
      populated.add(name);
      return bytes;
    };
    const staged = new StagedSource(mapped);
    const provider = createLinearProvider(staged, { compute });
    const ops = new Map(GROUPS.map((g) => [g, provider.linear({ name: `${g}.fc`, inFeatures: K, outFeatures: N, bias: true })]));
    const pool = new HostBufferPool({ capBytes: 2 ** 30 });
    const loader = opGroupLoader(layout, ops.values(), staged, { staged, pool });
    // Room for embed and two blocks: every step reads the blocks again.
    const exec = new StreamingExecutor({ layout, placement, loader, budgetBytes: 3 * (kept ? 2 : 4) * N * K, prefetch: 1, measure: false });
    for (let step = 0; step < 3; step++) {
      for (const g of GROUPS) {
        await exec.beforeGroup(g);
        expect(staged.isStaged(`${g}.fc.weight`)).toBe(kept);
        // What a streamed group's op uses from the mapping (the bias; the weight when run as
        // stored) was populated before the model got the group; a weight read into a buffer never
        // was, nor the resident group's tensors (the compute faults in what it reads, once).
        const streamed = g !== 'embed';
        expect(populated.has(`${g}.fc.bias`), `${g} bias`).toBe(streamed);
        expect(populated.has(`${g}.fc.weight`), `${g} weight`).toBe(streamed && kept);
        const y = await (ops.get(g) as ReturnType<typeof provider.linear>).forward(x);
        expect(Buffer.from(y.bytes()).equals(Buffer.from(want.get(g) as Uint8Array)), `${g} step ${step}`).toBe(true);
        await exec.afterGroup(g);
      }
    }
    const stats = exec.stats();
    expect(stats[2]?.bytesStreamed).toBeGreaterThan(0);
    expect(populatedBytes).toBeGreaterThanOrEqual((GROUPS.length - 1) * (kept ? 2 * N * K : 4 * N));
    const weightViews = viewed.filter((n) => n.endsWith('.weight')).sort();
    if (asStored) {
      // One view per weight for the whole run (a new one per load would be a new external buffer),
      // checked against the file on each later load; nothing copied into the pool.
      expect(weightViews).toEqual(GROUPS.map((g) => `${g}.fc.weight`).sort());
      expect(verified).toBeGreaterThanOrEqual(8);
      expect(pool.stats().allocations + pool.stats().reuses).toBe(0);
    } else {
      // No weight was read through the mapping: every one came from a positioned read.
      expect(weightViews).toEqual([]);
      // Blocks come in one size: after the first step the pool serves every read again.
      expect(pool.stats().reuses).toBeGreaterThanOrEqual(8);
    }
    await exec.close();
    // Once the read ahead in flight has settled, the executor's count of populated bytes is what
    // the source populated.
    expect(exec.stats().reduce((a, s) => a + s.bytesPopulated, 0)).toBe(populatedBytes);
    await loader.close();
    expect(pool.stats().inUseBytes).toBe(0);
    expect(GROUPS.some((g) => staged.isStaged(`${g}.fc.weight`))).toBe(false);
    staged.close();
  });

  it.each([false, true])('a weight run as stored is read ahead over the rows its forwards read, once they are known (fused of parts: %s)', async (parts) => {
    const [a, b] = [N / 3, (2 * N) / 3];
    // A linear fused of parts (H3's adaLN: a forward may compute some parts only) is not read
    // ahead at all until its rows are known; any other whole.
    const fused = parts ? ({ kind: 'parts', parts: 3 } as const) : ({ kind: 'none' } as const);
    const partsLayout: ModelLayout = { ...layout, groups: layout.groups.map((g) => ({ ...g, linears: g.linears.map((l) => ({ ...l, fused })) })) };
    const plain = SafetensorsFile.open(file());
    const want = new Map<string, Uint8Array>();
    const plainOps = createLinearProvider(plain, { compute: 'auto' });
    for (const g of GROUPS) want.set(g, (await plainOps.linear({ name: `${g}.fc`, inFeatures: K, outFeatures: N, bias: true }).forwardRows!(x, a, b)).bytes().slice());
    plain.close();

    const mapped = SafetensorsFile.open(file());
    const calls: { call: string; name: string; rows: readonly [number, number] | undefined }[] = [];
    const populate = mapped.populate.bind(mapped);
    mapped.populate = (name: string, rows?: readonly [number, number]) => {
      calls.push({ call: 'populate', name, rows });
      return populate(name, rows);
    };
    const advise = mapped.advise.bind(mapped);
    mapped.advise = (name: string, advice: 'willneed' | 'dontneed', rows?: readonly [number, number]) => {
      calls.push({ call: advice, name, rows });
      advise(name, advice, rows);
    };
    const staged = new StagedSource(mapped);
    const provider = createLinearProvider(staged, { compute: 'auto' });
    const ops = new Map(GROUPS.map((g) => [g, provider.linear({ name: `${g}.fc`, inFeatures: K, outFeatures: N, bias: true })]));
    const loader = opGroupLoader(partsLayout, ops.values(), staged, { staged });
    // Room for embed and two blocks: every block is streamed again each step, read ahead.
    const exec = new StreamingExecutor({ layout: partsLayout, placement, loader, budgetBytes: 3 * 2 * N * K, prefetch: 1, measure: false });
    const perStep: (typeof calls)[] = [];
    for (let step = 0; step < 3; step++) {
      calls.length = 0;
      for (const g of GROUPS) {
        await exec.beforeGroup(g);
        const y = await (ops.get(g) as ReturnType<typeof provider.linear>).forwardRows!(x, a, b);
        expect(Buffer.from(y.bytes()).equals(Buffer.from(want.get(g) as Uint8Array)), `${g} step ${step}`).toBe(true);
        await exec.afterGroup(g);
      }
      perStep.push([...calls]);
    }
    await exec.close();
    const weightCalls = (step: number, call: string) => (perStep[step] ?? []).filter((c) => c.call === call && c.name.endsWith('.weight'));
    // The first loads know nothing yet: whole tensors (nothing, fused of parts). The later ones
    // read the rows [a, b) only; biases stay whole (an op reads its bias whole), dontneed drops
    // every page.
    for (const call of ['populate', 'willneed']) {
      if (parts) expect(weightCalls(0, call), call).toEqual([]);
      else expect(weightCalls(0, call).length, call).toBeGreaterThan(0);
      for (const c of weightCalls(0, call)) expect(c.rows, c.name).toBeUndefined();
    }
    expect((perStep[0] ?? []).filter((c) => c.call === 'populate' && c.name.endsWith('.bias')).length).toBeGreaterThan(0);
    for (const step of [1, 2]) {
      expect(weightCalls(step, 'populate').length, `step ${step}`).toBeGreaterThan(0);
      for (const c of weightCalls(step, 'populate')) expect(c.rows, c.name).toEqual([a, b]);
      for (const c of weightCalls(step, 'willneed')) expect(c.rows, c.name).toEqual([a, b]);
      expect(weightCalls(step, 'willneed').length, `step ${step}`).toBeGreaterThan(0);
      for (const c of weightCalls(step, 'dontneed')) expect(c.rows, c.name).toBeUndefined();
      for (const c of (perStep[step] ?? []).filter((c) => c.name.endsWith('.bias'))) expect(c.rows, c.name).toBeUndefined();
    }
    await loader.close();
    staged.close();
  });
});
