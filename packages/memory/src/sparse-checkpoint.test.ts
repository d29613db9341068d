// A 24 GB checkpoint of 1000+ tensors, written sparse (header + ftruncate), must open by reading
// its header only: resident growth stays far below the file size. The layout is generic on purpose
// (memory sits below models and cannot import the real H3 layout); what is measured here — header
// size, tensor count, bytes — does not depend on the key names. The io benchmark opens the real
// H3 layout from @ninodes/models.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processMemory } from '@ninodes/device';
import { SafetensorsFile } from './safetensors-file.js';
import { type TensorSpec, cachePass, patternBytes, patternTensors, readAllTensors, registerCheckpoint, writeFilledCheckpoint, writeSparseCheckpoint } from './checkpoint-workload.js';
import { WeightCache } from './weight-cache.js';

/** `groups` × (a bf16 weight [rows, cols] + its bias [rows]). */
function weightsAndBiases(groups: number, rows: number, cols: number): TensorSpec[] {
  const out: TensorSpec[] = [];
  for (let g = 0; g < groups; g++) out.push({ name: `layers.${g}.weight`, dtype: 'bf16', shape: [rows, cols] }, { name: `layers.${g}.bias`, dtype: 'bf16', shape: [rows] });
  return out;
}

const dir = mkdtempSync(join(tmpdir(), 'ninodes-sparse-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('24 GB sparse checkpoint', () => {
  it('opens with 1000+ tensors and under 50 MB of resident growth', () => {
    const layout = patternTensors(weightsAndBiases(512, 4096, 6144));
    const path = join(dir, 'h3-24g.safetensors');
    const total = writeSparseCheckpoint(path, layout);
    expect(total).toBeGreaterThan(24e9);
    expect(layout.length).toBeGreaterThan(1000);

    const before = processMemory();
    const t0 = performance.now();
    const st = SafetensorsFile.open(path);
    const openMs = performance.now() - t0;
    const after = processMemory();
    const growth = after.rss - before.rss;
    console.info(`sparse 24 GB open: ${openMs.toFixed(1)} ms, ${layout.length} tensors, resident growth ${(growth / 2 ** 20).toFixed(2)} MiB`);
    expect(st.entries().length).toBe(layout.length);
    expect(growth).toBeLessThan(50 * 2 ** 20);

    // Views of the largest tensors are zero-copy (sparse pages read as zeros) and cost no residency.
    const w = st.tensor('layers.511.weight');
    expect(w.shape).toEqual([4096, 6144]);
    expect(w.byteOffset).toBe(0);
    expect((w.data as Uint16Array)[123_456]).toBe(0);
    const last = st.entry('layers.511.bias');
    expect(st.byteLength).toBe(total);
    expect(last.byteOffset + last.byteLength).toBe(total);
    st.close();
  });
});

describe('io helpers for the benchmark', () => {
  it('reads every tensor of a filled checkpoint and runs cache passes at a budget', async () => {
    const layout = patternTensors(weightsAndBiases(6, 64, 96));
    const path = join(dir, 'small-h3.safetensors');
    const bytes = await writeFilledCheckpoint(path, layout);
    const st = SafetensorsFile.open(path);
    const total = st.entries().reduce((a, e) => a + e.byteLength, 0);
    expect(readAllTensors(st).bytes).toBe(total);
    // The full read's checksum is the sum of every byte the layout produced.
    const expectedSum = layout.reduce((a, t) => a + (t.data() as Uint8Array).reduce((x, y) => x + y, 0), 0);
    expect(readAllTensors(st).checksum).toBe(expectedSum);
    const plain = { entries: () => st.entries(), tensor: (n: string) => st.tensor(n) } as unknown as Parameters<typeof readAllTensors>[0];
    expect(readAllTensors(plain).checksum).toBe(expectedSum);
    expect(bytes).toBe(st.byteLength);
    // Every tensor's bytes are what the layout's provider produced, deterministic per name.
    expect([...(layout[0]?.data() as Uint8Array)]).toEqual([...patternBytes('layers.0.weight', 64 * 96 * 2)]);
    for (const t of layout) expect([...st.tensor(t.name).bytes()]).toEqual([...(t.data() as Uint8Array)]);

    const cache = new WeightCache<Uint8Array>({ budgets: { cpu: Math.floor(total / 2) } });
    registerCheckpoint(cache, 'h3', st);
    const first = cachePass(cache, 'cpu', 'h3', st, (t) => t.copy().bytes());
    cachePass(cache, 'cpu', 'h3', st, (t) => t.copy().bytes());
    const second = cachePass(cache, 'cpu', 'h3', st, (t) => t.copy().bytes());
    const third = cachePass(cache, 'cpu', 'h3', st, (t) => t.copy().bytes());
    expect(first.materializations + first.temporaries).toBe(layout.length);
    // Steady state: a pass neither materializes nor evicts; what fits is a hit, the rest temporary.
    expect(third.materializations - second.materializations).toBe(0);
    expect(third.evictions - second.evictions).toBe(0);
    expect(third.hits - second.hits + third.temporaries - second.temporaries).toBe(layout.length);
    expect(third.hits - second.hits).toBeGreaterThan(0);
    expect(third.peakResidentBytes).toBeLessThanOrEqual(Math.floor(total / 2));
    st.close();
  });
});
