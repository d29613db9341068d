// A budget just large enough for the largest streamed group while it converts: its buffers of
// stored bytes, the f32 intermediates of its conversions and its results, beside what stays
// resident. A load in flight must be counted once, at what it holds at its peak (not at its
// bytes as stored, nor twice: as the measured bytes it already holds and again as pending), so the
// run stays within the budget, never loading over it.
import { Tensor, nativeBytes } from '@ninodes/kernels';
import { HostBufferPool, SafetensorsFile } from '@ninodes/memory';
import { type ComputeMode, createLinearProvider, type LayoutGroup, ownerOf } from '@ninodes/quant';
import { describe, expect, it } from 'vitest';
import { computeLoadAccount } from './memory-account.js';
import { opGroupLoader } from './op-group-loader.js';
import { StagedSource } from './staged-source.js';
import { StreamingExecutor } from './streaming-executor.js';
import { bf16Model, temporarySafetensors } from './test-support/bf16-checkpoint.js';

const N = 256;
const K = 256;
const GROUPS = ['embed', 'blocks.0', 'blocks.1', 'blocks.2', 'blocks.3'];
const LINEARS = ['fc1', 'fc2'];
const { layout, sources } = bf16Model(GROUPS, LINEARS, N, K, false);
const placement = { compute: 'cpu', groups: GROUPS.map((name) => ({ name, device: name === 'embed' ? 'cpu' : 'disk' })) };
const spec = (name: string) => ({ name, inFeatures: K, outFeatures: N, bias: false });

const file = temporarySafetensors('budget.safetensors', sources);

describe('opGroupLoader under a budget that holds one converting group', () => {
  // Per weight, by the definition of each run format: its result (f32 4 B/param, int8 1 + 4 per
  // row, fp8 1) and the f32 intermediate a conversion to int8 or fp8 widens the bf16 weight to.
  it.each<[ComputeMode, number, number]>([
    ['f32', 4 * N * K, 0],
    ['int8_convrot', N * K + 4 * N, 4 * N * K],
    ['f8_e4m3fn', N * K, 4 * N * K],
  ])('compute %s: every byte counted once, the peak within the budget, nothing loaded over it', async (compute, result, intermediate) => {
    const x = Tensor.fromArray('f32', [3, K], Float32Array.from({ length: 3 * K }, (_, i) => Math.sin(i) * 2));
    const plain = SafetensorsFile.open(file());
    const plainOps = createLinearProvider(plain, { compute });
    const want = new Map<string, Buffer>();
    for (const g of GROUPS) for (const l of LINEARS) want.set(`${g}.${l}`, Buffer.from((await plainOps.linear(spec(`${g}.${l}`)).forward(x)).bytes()));
    plain.close();

    const staged = new StagedSource(SafetensorsFile.open(file()));
    const provider = createLinearProvider(staged, { compute });
    const ops = new Map(GROUPS.flatMap((g) => LINEARS.map((l) => [`${g}.${l}`, provider.linear(spec(`${g}.${l}`))] as const)));
    const pool = new HostBufferPool({ capBytes: 2 ** 30 });
    const loader = opGroupLoader(layout, ops.values(), staged, { staged, pool });
    // A group's weights: once loaded, the results; while converting, the buffers of the stored
    // bf16 bytes too and, converting to int8 or fp8, the f32 intermediates (all of a group's ops
    // prepare at once).
    const group = LINEARS.length * result;
    const peak = LINEARS.length * (2 * N * K + intermediate + result);
    const block = layout.groups[1] as LayoutGroup;
    expect(loader.footprint?.(block, { streamed: true })).toEqual({ bytes: group, peakBytes: peak });
    // The planner's staging reserve counts a loading group the same way.
    const load = computeLoadAccount(compute);
    expect(block.tensors.reduce((a, t) => a + load(t, ownerOf(block, t)), 0)).toBe(peak);
    // The budget: the resident embed plus one streamed group at its peak. Nothing else fits.
    const budget = group + peak;

    // What the run holds, exactly and independently of the process's RSS: native memory (every
    // conversion's intermediate and result) and the pool's buffers (idle ones the executor subtracts).
    const probe = () => ({ anonymous: nativeBytes() + pool.stats().pooledBytes, fileBacked: 0 });
    const base = nativeBytes();
    let sampled = 0;
    let sampling = true;
    const sample = (): void => {
      sampled = Math.max(sampled, nativeBytes() - base + pool.stats().inUseBytes);
      if (sampling) setImmediate(sample);
    };
    const exec = new StreamingExecutor({ layout, placement, loader, budgetBytes: budget, prefetch: 1, measure: probe });
    sample();
    for (let step = 0; step < 3; step++) {
      for (const g of GROUPS) {
        await exec.beforeGroup(g);
        for (const l of LINEARS) {
          const y = await (ops.get(`${g}.${l}`) as ReturnType<typeof provider.linear>).forward(x);
          expect(Buffer.from(y.bytes()).equals(want.get(`${g}.${l}`) as Buffer), `${g}.${l} step ${step}`).toBe(true);
          y.dispose();
        }
        await exec.afterGroup(g);
      }
    }
    sampling = false;
    const stats = exec.stats();
    for (const s of stats) {
      expect(s.overBudgetLoads, `step ${s.step}`).toBe(0);
      // The executor's own count and its measurement, and what was held between its hooks.
      expect(s.peakHeldBytes, `step ${s.step}`).toBeLessThanOrEqual(budget);
      expect(s.peakMeasuredBytes, `step ${s.step}`).toBeLessThanOrEqual(budget);
      // Room for one block only: every step reads every block again.
      expect(s.bytesStreamed, `step ${s.step}`).toBeGreaterThanOrEqual((GROUPS.length - 1) * group);
    }
    expect(sampled).toBeLessThanOrEqual(budget);
    await exec.close();
    await loader.close();
    expect(pool.stats().inUseBytes).toBe(0);
    staged.close();
  });
});
