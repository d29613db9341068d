import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HostBufferPool, SafetensorsFile, type TensorSource, writeSafetensors } from '@ninodes/memory';
import type { LayoutGroup, ModelLayout } from '@ninodes/quant';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileGroupLoader, type LoadedTensor } from './file-group-loader.js';
import { planPlacement } from './plan-placement.js';
import { type GroupLoader, StreamingExecutor } from './streaming-executor.js';

// A small checkpoint written by memory's safetensors writer: an embedder, 6 blocks, a final layer.
// Every f32 element is (tensor number * 100000 + element index) / 4, so any byte read from the
// wrong place shows.
const BLOCKS = 6;
const shapes: [string, number[], LayoutGroup['kind'], string][] = [['embed.weight', [64, 32], 'pre', 'embed']];
for (let b = 0; b < BLOCKS; b++) {
  shapes.push([`blocks.${b}.fc1.weight`, [256, 128], 'block', `blocks.${b}`], [`blocks.${b}.fc2.weight`, [128, 256], 'block', `blocks.${b}`], [`blocks.${b}.norm.weight`, [128], 'block', `blocks.${b}`]);
}
shapes.push(['final.weight', [16, 128], 'post', 'final']);
const expected = (t: number, n: number): Float32Array => Float32Array.from({ length: n }, (_, e) => (t * 100000 + e) / 4);
const sources: TensorSource[] = shapes.map(([name, shape], t) => ({ name, dtype: 'f32', shape, data: () => new Uint8Array(expected(t, shape.reduce((a, b) => a * b, 1)).buffer) }));

const groupsByName = new Map<string, LayoutGroup & { tensors: LayoutGroup['tensors'][number][] }>();
for (const [name, shape, kind, group] of shapes) {
  let g = groupsByName.get(group);
  if (g === undefined) {
    g = { name: group, kind, tensors: [], linears: [] };
    groupsByName.set(group, g);
  }
  g.tensors.push({ name, dtype: 'f32', shape, byteLength: 4 * shape.reduce((a, b) => a * b, 1) });
}
const layout: ModelLayout = { architecture: 'test', prefix: '', groups: [...groupsByName.values()] };
const blockBytes = 4 * (256 * 128 * 2 + 128);
/** embed and final: placed on the cpu, they count against every budget below. */
const residentBytes = 4 * (64 * 32 + 16 * 128);

let dir: string;
let path: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'distorch-exec-'));
  path = join(dir, 'small.safetensors');
  await writeSafetensors(path, sources);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Loaded = ReadonlyMap<string, LoadedTensor>;

/** A process whose resident memory never changes: 100 MB of runtime. */
const flat = (): { anonymous: number; fileBacked: number } => ({ anonymous: 100e6, fileBacked: 0 });

/** Runs `steps` passes of a model over the layout, checking every tensor it reads against the file's values. */
async function run(exec: StreamingExecutor<Loaded>, steps: number, onHeld?: (held: { resident: number; streamed: number }, group: string) => void): Promise<void> {
  for (let s = 0; s < steps; s++) {
    for (const g of layout.groups) {
      await exec.beforeGroup(g.name);
      const value = exec.group(g.name);
      for (const t of g.tensors) {
        const index = shapes.findIndex(([n]) => n === t.name);
        const got = value.get(t.name) as LoadedTensor;
        const values = new Float32Array(got.bytes.buffer, got.bytes.byteOffset, got.bytes.byteLength / 4);
        const want = expected(index, values.length);
        let wrong = 0;
        for (let e = 0; e < values.length; e++) if (values[e] !== want[e]) wrong++;
        expect(wrong, t.name).toBe(0);
        expect(values.length).toBe(t.byteLength / 4);
      }
      onHeld?.(exec.held(), g.name);
      // Compute: a macrotask, so reads in flight make progress meanwhile.
      await new Promise((r) => setTimeout(r, 2));
      await exec.afterGroup(g.name);
    }
  }
}

function recordingSource(): { source: SafetensorsFile; advice: string[] } {
  const source = SafetensorsFile.open(path);
  const advice: string[] = [];
  const advise = source.advise.bind(source);
  source.advise = (name: string, a: 'willneed' | 'dontneed') => {
    advice.push(`${a} ${name}`);
    advise(name, a);
  };
  return { source, advice };
}

describe('StreamingExecutor with real file reads', () => {
  const placement = (): ReturnType<typeof planPlacement> => planPlacement({ layout, allocation: 'cpu,4kb;disk,*', devices: [{ id: 'cpu', totalBytes: 2 ** 30 }] });

  it('streams the disk groups within the budget, prefetching the next one, re-reading each step', async () => {
    const p = placement();
    expect(p.groups.filter((g) => g.device === 'disk').map((g) => g.name)).toEqual(Array.from({ length: BLOCKS }, (_, b) => `blocks.${b}`));
    const { source, advice } = recordingSource();
    const loader = fileGroupLoader(source, { pool: new HostBufferPool({ capBytes: 4 * blockBytes }) });
    // A flat measurement: the loader's own count decides (the schedule alone is under test here).
    const exec = new StreamingExecutor({ layout, placement: p, loader, budgetBytes: residentBytes + 2 * blockBytes, prefetch: 1, measure: flat });
    let maxStreamed = 0;
    const seenAhead: string[] = [];
    await run(exec, 3, (held, group) => {
      maxStreamed = Math.max(maxStreamed, held.streamed);
      if (group === 'blocks.2') seenAhead.push(...exec.loadedGroups());
    });
    const stats = exec.stats();
    expect(stats).toHaveLength(3);
    // Every step reads every streamed group once (the budget holds two of six); the first also
    // reads the next step's blocks.0 ahead while its last groups compute.
    expect(stats.map((s) => s.bytesStreamed)).toEqual([(BLOCKS + 1) * blockBytes, BLOCKS * blockBytes, BLOCKS * blockBytes]);
    for (const s of stats) {
      expect(s.overBudgetLoads).toBe(0);
      // The share of the loads' time hidden behind compute, from the step's own seconds.
      expect(s.loads).toBeGreaterThan(0);
      expect(s.overlap).toBe(s.hiddenSeconds / (s.hiddenSeconds + s.exposedSeconds));
      expect(s.peakResidentBytes).toBeGreaterThan(0);
    }
    // Resident groups load lazily, once.
    expect(stats[0]?.bytesLoaded).toBe((BLOCKS + 1) * blockBytes + 4 * (64 * 32 + 16 * 128));
    expect(stats[1]?.bytesLoaded).toBe(BLOCKS * blockBytes);
    // Every group was resident or already being read when the model asked for it.
    expect(stats[1]?.hits).toBe(layout.groups.length);
    expect(maxStreamed).toBeLessThanOrEqual(2 * blockBytes);
    // While blocks.2 computes, blocks.3 is being read.
    expect(seenAhead).toContain('blocks.3');
    expect(advice).toContain('willneed blocks.3.fc1.weight');
    expect(advice).toContain('dontneed blocks.0.fc1.weight');
    await exec.close();
    expect(exec.held()).toEqual({ resident: 0, streamed: 0 });
    await loader.close();
    source.close();
  });

  it('keeps streamed groups while the budget allows: the second step reads nothing', async () => {
    const source = SafetensorsFile.open(path);
    const loader = fileGroupLoader(source);
    const exec = new StreamingExecutor({ layout, placement: placement(), loader, budgetBytes: residentBytes + BLOCKS * blockBytes, prefetch: 2, measure: flat });
    await run(exec, 2);
    const [first, second] = exec.stats();
    expect(first?.bytesStreamed).toBe(BLOCKS * blockBytes);
    expect(second?.bytesStreamed).toBe(0);
    expect(second?.hits).toBe(layout.groups.length);
    expect(second?.evictions).toBe(0);
    await exec.close();
    await loader.close();
    source.close();
  });

  it('shrink() gives back streamed groups, farthest next use first, and they are read again when needed', async () => {
    const source = SafetensorsFile.open(path);
    const loader = fileGroupLoader(source);
    const exec = new StreamingExecutor({ layout, placement: placement(), loader, budgetBytes: residentBytes + BLOCKS * blockBytes, prefetch: 1, measure: flat });
    await run(exec, 1);
    expect(exec.held().streamed).toBe(BLOCKS * blockBytes);
    // At the end of a pass the next one starts with embed, blocks.0, ...: blocks.5 is needed last.
    expect(exec.shrink(blockBytes + 1)).toBe(2 * blockBytes);
    expect(exec.loadedGroups()).toEqual(['embed', 'blocks.0', 'blocks.1', 'blocks.2', 'blocks.3', 'final']);
    await run(exec, 1);
    expect(exec.stats()[1]?.bytesStreamed).toBe(2 * blockBytes);
    await exec.close();
    await loader.close();
    source.close();
  });

  it('a budget below one group never fails: it loads over it and gives the bytes back after use', async () => {
    const source = SafetensorsFile.open(path);
    const loader = fileGroupLoader(source);
    const exec = new StreamingExecutor({ layout, placement: placement(), loader, budgetBytes: 1024, prefetch: 1, measure: flat });
    let afterUse = 0;
    await run(exec, 2, () => undefined);
    for (const s of exec.stats()) expect(s.overBudgetLoads).toBe(BLOCKS);
    afterUse = exec.held().streamed;
    expect(afterUse).toBe(0);
    await exec.close();
    await loader.close();
    source.close();
  });

  it('the budget counts measured resident bytes, not what the loader reports', async () => {
    // Like zero-copy views of a mapped file: the loader says a group holds nothing, yet its pages
    // become file-backed RSS. The probe reports those pages (and 1 MB of anonymous growth).
    const mapped = new Set<string>();
    const views: GroupLoader<string> = {
      async load(group) {
        mapped.add(group.name);
        return { value: group.name, bytes: 0, release: () => mapped.delete(group.name) };
      },
    };
    const pages = (): { anonymous: number; fileBacked: number } => {
      let file = 0;
      for (const g of layout.groups) if (mapped.has(g.name)) file += g.tensors.reduce((a, t) => a + t.byteLength, 0);
      return { anonymous: 100e6 + (mapped.size > 0 ? 2 ** 20 : 0), fileBacked: file };
    };
    const budget = 2 ** 20 + 3 * blockBytes;
    const exec = new StreamingExecutor({ layout, placement: placement(), loader: views, budgetBytes: budget, prefetch: 1, measure: pages });
    let most = 0;
    for (let s = 0; s < 2; s++) {
      for (const g of layout.groups) {
        await exec.beforeGroup(g.name);
        most = Math.max(most, [...mapped].filter((n) => n.startsWith('blocks.')).length);
        await new Promise((r) => setTimeout(r, 1));
        await exec.afterGroup(g.name);
      }
    }
    // embed and final (resident, 12 KiB) plus at most two blocks fit 1 MB + 3 blocks; never all six.
    expect(most).toBeLessThanOrEqual(2);
    const stats = exec.stats();
    expect(stats[1]?.evictions).toBeGreaterThan(0);
    expect(stats[1]?.bytesStreamed).toBe(0); // the loader's count: zero-copy
    expect(exec.held().streamed).toBe(0); // accounted
    expect(stats[1]?.peakMeasuredBytes).toBeGreaterThan(blockBytes); // measured
    expect(stats[1]?.peakMeasuredBytes).toBeLessThanOrEqual(budget);
    expect(stats[1]?.baselineBytes).toBe(100e6);
    expect(stats[1]?.peakResidentBytes).toBe(100e6 + (stats[1]?.peakMeasuredBytes ?? 0));
    await exec.close();
    // Counting what the loader reports instead, all six stay.
    const counted = new StreamingExecutor({ layout, placement: placement(), loader: views, budgetBytes: budget, prefetch: 1, measure: false });
    for (const g of layout.groups) {
      await counted.beforeGroup(g.name);
      await counted.afterGroup(g.name);
    }
    expect(mapped.size).toBe(layout.groups.length);
    await counted.close();
  });

  it('a load in flight counts once, at its peak: what it holds so far is measured, not added on top', async () => {
    // blocks.0 converts: 3000 bytes held (buffers, intermediates) while in flight, a peak of 5000,
    // 1000 once loaded. The probe measures exactly what the loader holds.
    let holding = 0;
    let inFlight = false;
    let finish = (): void => undefined;
    const loader: GroupLoader<null> = {
      load: (group) => {
        if (group.name !== 'blocks.0') return Promise.resolve({ value: null, bytes: 0, release: () => undefined });
        inFlight = true;
        holding = 3000;
        return new Promise((resolve) => {
          finish = () => {
            inFlight = false;
            holding = 1000;
            resolve({ value: null, bytes: 1000, release: () => (holding = 0) });
          };
        });
      },
      footprint: (group) => (group.name === 'blocks.0' ? { bytes: 1000, peakBytes: 5000 } : { bytes: 0, peakBytes: 0 }),
      inFlightBytes: () => (inFlight ? holding : 0),
    };
    const exec = new StreamingExecutor({ layout, placement: placement(), loader, budgetBytes: 2 ** 20, prefetch: 0, measure: () => ({ anonymous: 100e6 + holding, fileBacked: 0 }) });
    await exec.beforeGroup('embed');
    await exec.afterGroup('embed');
    const before = exec.beforeGroup('blocks.0');
    expect(inFlight).toBe(true);
    // Its peak, once: not the 3000 measured plus its peak (or its bytes as stored) again.
    expect(exec.usedBytes()).toBe(5000);
    expect(exec.held()).toEqual({ resident: 0, streamed: 5000 });
    finish();
    await before;
    expect(exec.usedBytes()).toBe(1000);
    expect(exec.held()).toEqual({ resident: 0, streamed: 1000 });
    await exec.afterGroup('blocks.0');
    await exec.close();
  });

  it('overlap counts what a load held the JS thread for: blocking work is not hidden behind compute', async () => {
    // Loads that take 20 ms off the thread, read ahead while the model computes for 30 ms; or the
    // same loads reporting more synchronous conversion than they took in all.
    const loader = (blocking: number): GroupLoader<null> => ({
      load: async () => {
        await new Promise((r) => setTimeout(r, 20));
        return { value: null, bytes: 1, blockingSeconds: blocking, release: () => undefined };
      },
    });
    const overlapOf = async (blocking: number): Promise<number> => {
      const exec = new StreamingExecutor({ layout, placement: placement(), loader: loader(blocking), budgetBytes: 2 ** 30, prefetch: 1, measure: false });
      for (let s = 0; s < 2; s++) {
        for (const g of layout.groups) {
          await exec.beforeGroup(g.name);
          await new Promise((r) => setTimeout(r, 30));
          await exec.afterGroup(g.name);
        }
      }
      // The second pass: everything was kept, so take the first, where the blocks were read ahead.
      const first = exec.stats()[0] as { overlap: number; waitSeconds: number; loadSeconds: number; blockingSeconds: number; hiddenSeconds: number; exposedSeconds: number };
      await exec.close();
      // Every load of the first pass was used in it: its time is either hidden or exposed.
      expect(first.hiddenSeconds + first.exposedSeconds).toBeCloseTo(first.loadSeconds, 9);
      expect(first.overlap).toBeCloseTo(first.hiddenSeconds / first.loadSeconds, 9);
      return first.overlap;
    };
    expect(await overlapOf(0)).toBeGreaterThan(0);
    expect(await overlapOf(10)).toBe(0);
  });

  it('a failed read surfaces at the next hook, never silently', async () => {
    const failing: GroupLoader<string> = {
      async load(group) {
        if (group.name === 'blocks.1') throw new Error('disk on fire');
        return { value: group.name, bytes: 1, release: () => undefined };
      },
    };
    const exec = new StreamingExecutor({ layout, placement: placement(), loader: failing, budgetBytes: 10 * blockBytes, prefetch: 1, measure: false });
    await exec.beforeGroup('embed');
    await exec.afterGroup('embed');
    await exec.beforeGroup('blocks.0'); // starts reading blocks.1 ahead
    await new Promise((r) => setTimeout(r, 5));
    await expect(exec.afterGroup('blocks.0')).rejects.toThrowError('disk on fire');
    await expect(exec.beforeGroup('blocks.1')).rejects.toThrowError('disk on fire');
    // Nor at the end: a read ahead that failed after the last hook is thrown by close().
    const late = new StreamingExecutor({ layout, placement: placement(), loader: failing, budgetBytes: 10 * blockBytes, prefetch: 1, measure: false });
    await late.beforeGroup('embed');
    await late.beforeGroup('blocks.0');
    await expect(late.close()).rejects.toThrowError('disk on fire');
  });

  it('rejects what it cannot run', () => {
    const loader: GroupLoader<null> = { load: async () => ({ value: null, bytes: 0, release: () => undefined }) };
    expect(() => new StreamingExecutor({ layout, placement: { compute: 'cpu', groups: [] }, loader, budgetBytes: 1 })).toThrowError(/no device for group 'embed'/);
    const exec = new StreamingExecutor({ layout, placement: placement(), loader, budgetBytes: 1, measure: false });
    expect(() => exec.group('embed')).toThrowError(/between beforeGroup and afterGroup/);
    return expect(exec.beforeGroup('nope')).rejects.toThrowError(/not in the layout/);
  });
});
