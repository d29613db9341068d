import { describe, expect, it } from 'vitest';
import { deviceMap } from './device-map.js';
import { formatPlacement } from './format-placement.js';
import { planPlacement } from './plan-placement.js';
import { H3_SMALL, h3Layout } from './test-support/h3-layout.js';

const devices = [
  { id: 'cpu', totalBytes: 64 * 2 ** 30 },
  { id: 'hip:0', totalBytes: 48 * 2 ** 30 },
];

describe('deviceMap (accelerate style)', () => {
  it('whole groups by module name, GPU ordinals as numbers, split groups per module', () => {
    const layout = h3Layout(H3_SMALL);
    const p = planPlacement({ layout, allocation: 'hip:0,400mb;cpu,*', devices });
    const map = deviceMap(layout, p);
    const onGpu = p.groups.filter((g) => g.kind === 'block' && g.device === 'hip:0').length;
    expect(onGpu).toBeGreaterThan(0);
    expect(onGpu).toBeLessThan(10);
    expect(map['blocks.0']).toBe(0);
    expect(map.time_embedder).toBe(0);
    expect(map.video_patch_proj).toBe(0);
    expect(map['rope']).toBe(0);
    expect(map.final_layer).toBe(0);
    // A block on cpu: its linears there, its norms on the compute device.
    expect(map['blocks.9']).toBeUndefined();
    expect(map['blocks.9.mlp.fc1']).toBe('cpu');
    expect(map['blocks.9.norm1']).toBe(0);
    expect(JSON.parse(JSON.stringify(map))).toEqual(map);
  });

  it('keeps the key prefix', () => {
    const base = h3Layout({ ...H3_SMALL, layers: 2 });
    const prefix = 'model.diffusion_model.';
    const layout = { ...base, prefix, groups: base.groups.map((g) => ({ ...g, tensors: g.tensors.map((t) => ({ ...t, name: prefix + t.name })), linears: g.linears.map((l) => ({ ...l, name: prefix + l.name })) })) };
    const map = deviceMap(layout, planPlacement({ layout, allocation: 'cpu,*', devices }));
    expect(map['model.diffusion_model.blocks.1']).toBe('cpu');
    expect(map['model.diffusion_model.time_embedder']).toBe('cpu');
  });
});

describe('formatPlacement', () => {
  it('one row per device with runs of blocks, the reserve and the suggestion when it does not fit', () => {
    const layout = h3Layout(H3_SMALL);
    const text = formatPlacement(planPlacement({ layout, allocation: 'hip:0,400mb;cpu,*', devices }));
    expect(text).toMatch(/^allocation hip:0,400mb;cpu,\* \(bytes, head-first\) for minimax-h3/);
    expect(text).toMatch(/hip:0 \(compute\) .* time_embedder, rope, video_patch_proj, blocks\.0-\d, final_layer/);
    expect(text).toMatch(/\ncpu .* blocks\.\d-9$/m);
    const small = [{ id: 'cpu', totalBytes: 512 * 2 ** 20 }];
    const tight = formatPlacement(planPlacement({ layout, allocation: 'cpu,*', devices: small }));
    expect(tight).toMatch(/does not fit; this would: --alloc "cpu,\d+mb;disk,\*"/);
    // 64 MiB cannot even stage two streamed blocks (~95 MiB each): no suggestion then.
    const none = formatPlacement(planPlacement({ layout, allocation: 'cpu,*', devices: [{ id: 'cpu', totalBytes: 64 * 2 ** 20 }] }));
    expect(none).toMatch(/does not fit, and no allocation of this machine would$/);
  });
});
