import { join } from 'node:path';
import type { ModelLayout } from '@ninodes/quant';
import { describe, expect, it } from 'vitest';
import { computeAccount, computeLoadAccount } from './memory-account.js';
import { parseAllocation } from './parse-allocation.js';
import { machineDevices } from './machine-devices.js';
import { type Placement, type PlanDevice, planPlacement } from './plan-placement.js';
import { H3_FULL, h3Layout } from './test-support/h3-layout.js';

const GiB = 2 ** 30;
const machines = join(process.env.NINODES_REPO_ROOT as string, 'packages', 'device', 'fixtures', 'machines');
const rtx = machineDevices(join(machines, 'rtx4090x2-container'));
const w7900 = machineDevices(join(machines, 'w7900x2-gfx1100'));
const strix = machineDevices(join(machines, 'strix-halo-gfx1151'));
const full = h3Layout(H3_FULL);

// Reference sizes of h3-full in bf16 (fp32 islands f32), from the shapes alone.
const { hidden: H, heads, headDim: D, ffn: F, tDim: T, timeHidden: TH } = H3_FULL;
const inner = heads * D;
const blockMoving = 2 * (18 * H * T + 18 * H + 3 * inner * H + H * inner + 2 * F * H + H * F);
const blockKept = 2 * (2 * H + 2 * D);
const pre = 4 * (H * 96 + H) + 4 * (TH * 256 + TH) + 4 * (T * TH + T) + 4 * 16;
const post = 2 * (2 * H * T + 2 * H) + 2 * H + 4 * (96 * H + 96);
const total = pre + post + 50 * (blockMoving + blockKept);

/** Per-device totals recomputed from the tensor map and the layout's own byte counts. */
function totalsFromTensors(layout: ModelLayout, p: Placement): Record<string, number> {
  const out: Record<string, number> = {};
  for (const g of layout.groups) for (const t of g.tensors) out[p.tensorDevices[t.name] as string] = (out[p.tensorDevices[t.name] as string] ?? 0) + t.byteLength;
  return out;
}

function blocksOn(p: Placement, device: string): number[] {
  return p.groups.filter((g) => g.kind === 'block' && g.device === device).map((g) => Number(g.name.split('.')[1]));
}

const range = (a: number, b: number): number[] => Array.from({ length: b - a }, (_, i) => a + i);

describe('planPlacement on the real-shape h3-full layout', () => {
  it('the layout has the real size (~64.7 GB of bf16)', () => {
    expect(full.groups).toHaveLength(54);
    expect(full.groups.reduce((a, g) => a + g.tensors.reduce((s, t) => s + t.byteLength, 0), 0)).toBe(total);
    expect(total / 1e9).toBeCloseTo(64.7, 1);
  });

  it.each([
    ['cuda:0,20gb;cpu,*', rtx],
    ['cuda:0,10gb;cuda:1,20gb;cpu,*', rtx],
    ['cuda:0,25%;cpu,75%', rtx],
    ['cuda:0,0.5;cpu,*', rtx],
    ['#cuda:0;50gb;cpu', rtx],
    ['hip:0,40gb;hip:1,*', w7900],
    ['hip:0,30%;hip:1,70%', w7900],
    ['cpu,4mb;disk,*', rtx],
  ])('%s: places all 54 groups (50 blocks); per-device totals equal the sum of their tensors', (alloc, devices) => {
    const p = planPlacement({ layout: full, allocation: alloc, devices });
    expect(p.groups).toHaveLength(54);
    expect(p.groups.filter((g) => g.kind === 'block')).toHaveLength(50);
    const fromTensors = totalsFromTensors(full, p);
    for (const d of p.devices) expect(d.bytes).toBe(fromTensors[d.id] ?? 0);
    expect(p.devices.reduce((a, d) => a + d.bytes, 0)).toBe(total);
    expect(Object.keys(p.tensorDevices)).toHaveLength(full.groups.reduce((a, g) => a + g.tensors.length, 0));
  });

  it('bytes mode, head-first: cuda:0 holds the pinned groups, every norm and the first blocks that fit 20 GiB', () => {
    const p = planPlacement({ layout: full, allocation: 'cuda:0,20gb;cpu,*', devices: rtx });
    const n = Math.floor((20 * GiB - pre - post - 50 * blockKept) / blockMoving);
    expect(n).toBeGreaterThan(10);
    expect(blocksOn(p, 'cuda:0')).toEqual(range(0, n));
    expect(blocksOn(p, 'cpu')).toEqual(range(n, 50));
    expect(p.devices.find((d) => d.id === 'cuda:0')?.bytes).toBe(pre + post + 50 * blockKept + n * blockMoving);
    // Norms of a block on cpu stay on the compute device; the embedders and final layer too.
    expect(p.tensorDevices['blocks.49.norm1.weight']).toBe('cuda:0');
    expect(p.tensorDevices['blocks.49.mlp.fc1.weight']).toBe('cpu');
    expect(p.tensorDevices['final_layer.video_out.weight']).toBe('cuda:0');
    expect(p.groups.find((g) => g.name === 'blocks.49')).toMatchObject({ keptOnCompute: ['blocks.49.norm1.weight', 'blocks.49.norm2.weight', 'blocks.49.attn.q_norm.weight', 'blocks.49.attn.k_norm.weight'], keptBytes: blockKept });
    expect(p.groups[0]?.reason).toMatch(/stays on the compute device/);
    expect(p.groups.find((g) => g.name === 'blocks.20')?.reason).toMatch(/takes the rest/);
    expect(p.fits).toBe(true);
    // Staging: two of the largest streamed group (the current one and one prefetched).
    expect(p.reserve).toMatchObject({ device: 'cuda:0', stagingGroups: 2, stagingBytes: 2 * blockMoving });
  });

  it('tail-first puts the last blocks on the first device', () => {
    const p = planPlacement({ layout: full, allocation: 'cuda:0,20gb;cpu,*', devices: rtx, fillOrder: 'tail-first' });
    expect(blocksOn(p, 'cuda:0')).toEqual(range(50 - Math.floor((20 * GiB - pre - post - 50 * blockKept) / blockMoving), 50));
  });

  it('a device is never returned to: each holds one contiguous run', () => {
    const p = planPlacement({ layout: full, allocation: 'cuda:0,10gb;cuda:1,20gb;cpu,*', devices: rtx });
    const n0 = Math.floor((10 * GiB - pre - post - 50 * blockKept) / blockMoving);
    const n1 = Math.floor((20 * GiB) / blockMoving);
    expect(blocksOn(p, 'cuda:0')).toEqual(range(0, n0));
    expect(blocksOn(p, 'cuda:1')).toEqual(range(n0, n0 + n1));
    expect(blocksOn(p, 'cpu')).toEqual(range(n0 + n1, 50));
  });

  it('ratio: the first device takes blocks while within its share of the whole model', () => {
    const p = planPlacement({ layout: full, allocation: 'cuda:0,25%;cpu,75%', devices: rtx });
    const n = Math.floor((0.25 * total - pre - post - 50 * blockKept) / blockMoving);
    expect(blocksOn(p, 'cuda:0')).toEqual(range(0, n));
    expect(p.devices.find((d) => d.id === 'cuda:0')?.share).toBeLessThanOrEqual(0.25);
  });

  it('fraction: a share of the device memory', () => {
    const p = planPlacement({ layout: full, allocation: 'cuda:0,0.5;cpu,*', devices: rtx });
    const n = Math.floor((Math.floor(0.5 * 25757220864) - pre - post - 50 * blockKept) / blockMoving);
    expect(blocksOn(p, 'cuda:0')).toEqual(range(0, n));
  });

  it('virtual VRAM: the compute device keeps the model less the virtual bytes', () => {
    const p = planPlacement({ layout: full, allocation: '#cuda:0;50gb;cpu', devices: rtx });
    const n = Math.floor((total - 50 * GiB - pre - post - 50 * blockKept) / blockMoving);
    expect(blocksOn(p, 'cuda:0')).toEqual(range(0, n));
    expect(p.compute).toBe('cuda:0');
  });

  it('the W7900 pair, planned from a recorded machine directory', () => {
    const p = planPlacement({ layout: full, allocation: 'hip:0,40gb;hip:1,*', devices: w7900 });
    expect(p.fits).toBe(true);
    expect(p.devices.map((d) => [d.id, d.capacity])).toEqual([['hip:0', 51522830336], ['hip:1', 51522830336]]);
    expect(blocksOn(p, 'hip:1')[0]).toBe(blocksOn(p, 'hip:0').length);
  });

  it('the reserve is the activation estimate × the profile modifier (gfx1151: 1.5) plus staging', () => {
    const p = planPlacement({ layout: full, allocation: 'hip:0,30gb;cpu,*', devices: strix, activationBytes: 1_000_000 });
    expect(p.reserve).toMatchObject({ device: 'hip:0', attentionMemoryModifier: 1.5, activationBytes: 1_500_000 });
    expect(p.devices.find((d) => d.id === 'hip:0')?.reserve).toBe(1_500_000 + 2 * blockMoving);
  });

  it('when it cannot fit: a warning and an allocation that does (checked by planning it)', () => {
    // 23 GiB of weights + 2 staged blocks + 1 GiB of activations is more than a 24 GiB card.
    const p = planPlacement({ layout: full, allocation: 'cuda:0,23gb;cpu,*', devices: rtx, activationBytes: GiB });
    expect(p.fits).toBe(false);
    expect(p.warnings.join('\n')).toMatch(/cuda:0 is asked to hold .* but has 23\.99 GiB/);
    expect(p.suggestion).toBeDefined();
    const again = planPlacement({ layout: full, allocation: p.suggestion as string, devices: rtx, activationBytes: GiB });
    expect(again.fits).toBe(true);
    expect(parseAllocation(p.suggestion as string).spec.mode).toBe('bytes');

    // Two cards and no overflow device: the rest does not fit anywhere.
    const q = planPlacement({ layout: full, allocation: 'cuda:0,20gb;cuda:1,20gb', devices: rtx });
    expect(q.fits).toBe(false);
    expect(q.warnings.join('\n')).toMatch(/does not fit any device's quota/);
    expect(q.suggestion).toMatch(/;disk,\*$/);
    expect(planPlacement({ layout: full, allocation: q.suggestion as string, devices: rtx }).fits).toBe(true);

    // 64 GiB of RAM holds the 60.2 GiB model, but not with 8 GiB of activations beside it; the
    // suggestion streams blocks from disk, which adds staging the first plan did not have.
    const r = planPlacement({ layout: full, allocation: 'cpu,*', devices: rtx, activationBytes: 8 * GiB });
    expect(r.fits).toBe(false);
    expect(r.suggestion).toMatch(/^cpu,[0-9.]+[kmgt]?b;disk,\*$/);
    expect(planPlacement({ layout: full, allocation: r.suggestion as string, devices: rtx, activationBytes: 8 * GiB }).fits).toBe(true);
  });

  it('sizes groups after the compute format (int8 convrot: 1 B/param + f32 row scales; biases and norms f32)', () => {
    const p = planPlacement({ layout: full, allocation: 'cuda:0,10gb;cpu,*', devices: rtx, account: computeAccount('int8_convrot') });
    const rows = (n: number, k: number): number => n * k + 4 * n;
    const block = rows(18 * H, T) + 4 * 18 * H + rows(3 * inner, H) + rows(H, inner) + rows(2 * F, H) + rows(H, F) + 4 * (2 * H + 2 * D);
    // Islands run as stored (f32); final_layer.adaln_proj is not an island.
    const islands = 4 * (H * 96 + H) + 4 * (TH * 256 + TH) + 4 * (T * TH + T) + 4 * (96 * H + 96);
    const rest = 4 * 16 + rows(2 * H, T) + 4 * 2 * H + 4 * H;
    expect(p.totalBytes).toBe(50 * block + islands + rest);
    const n = Math.floor((10 * GiB - islands - rest - 50 * 4 * (2 * H + 2 * D)) / (block - 4 * (2 * H + 2 * D)));
    expect(blocksOn(p, 'cuda:0')).toEqual(range(0, n));
    // Staging: one streamed block held and one loading at its peak, each bf16 weight [n, k] read
    // into a buffer (2 B/param) and widened to f32 (4 B/param) beside its int8 result.
    const moving = block - 4 * (2 * H + 2 * D);
    const loading = (n: number, k: number): number => rows(n, k) + 2 * n * k + 4 * n * k;
    const peak = loading(18 * H, T) + 4 * 18 * H + loading(3 * inner, H) + loading(H, inner) + loading(2 * F, H) + loading(H, F);
    expect(p.reserve.stagingBytes).toBe(2 * moving);
    const q = planPlacement({ layout: full, allocation: 'cuda:0,10gb;cpu,*', devices: rtx, account: computeAccount('int8_convrot'), loadAccount: computeLoadAccount('int8_convrot') });
    expect(q.reserve).toMatchObject({ stagingGroups: 2, stagingBytes: moving + peak });
    expect(planPlacement({ layout: full, allocation: 'cuda:0,10gb;cpu,*', devices: rtx, account: computeAccount('int8_convrot'), loadAccount: computeLoadAccount('int8_convrot'), prefetch: 0 }).reserve.stagingBytes).toBe(peak);
  });

  it('is deterministic', () => {
    const a = planPlacement({ layout: full, allocation: 'cuda:0,10gb;cuda:1,20gb;cpu,*', devices: rtx });
    const b = planPlacement({ layout: full, allocation: 'cuda:0,10gb;cuda:1,20gb;cpu,*', devices: rtx });
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  });

  it('a CPU plan with the mapped file as donor: cpu,4mb;disk,* streams every block', () => {
    const p = planPlacement({ layout: full, allocation: 'cpu,4mb;disk,*', devices: rtx });
    expect(p.compute).toBe('cpu');
    expect(blocksOn(p, 'disk')).toEqual(range(0, 50));
    expect(p.fits).toBe(true);
    expect(p.warnings.join('\n')).toMatch(/stay on cpu .* above its quota of 4 MiB/);
  });

  it('rejects what cannot be planned', () => {
    const devices: PlanDevice[] = [{ id: 'cpu', totalBytes: null }];
    expect(() => planPlacement({ layout: full, allocation: 'disk,*', devices })).toThrowError(/only 'disk'/);
    expect(() => planPlacement({ layout: full, allocation: 'cpu,0.5;disk,*', devices })).toThrowError(/memory, which is unknown/);
    expect(() => planPlacement({ layout: full, allocation: 'cuda:0,1gb;cpu,*', devices })).toThrowError(/not present on this machine/);
  });
});
