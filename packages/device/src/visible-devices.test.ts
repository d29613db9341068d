import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { enumerateDevices } from './enumerate.js';
import { absentHip, absentNvml, absentVulkan, recordedNvml } from './gpu-sources.js';
import { deviceUsageReader } from './memory-sampler.js';
import { machine } from './test-machines.js';
import { applyVisibility } from './visible-devices.js';

const devs = [
  { n: 0, uuid: 'GPU-3c99737f13093cd0' },
  { n: 1, uuid: 'GPU-3ce42265b99a6c53' },
  { n: 2, uuid: null },
];
const uuidOf = (d: (typeof devs)[number]): string | null => d.uuid;

describe('applyVisibility', () => {
  it('unset shows all; empty shows none; indices and unique UUID prefixes select in list order', () => {
    expect(applyVisibility(devs, undefined, uuidOf).devices).toEqual(devs);
    expect(applyVisibility(devs, '', uuidOf).devices).toEqual([]);
    expect(applyVisibility(devs, '2,0', uuidOf).devices.map((d) => d.n)).toEqual([2, 0]);
    expect(applyVisibility(devs, 'GPU-3ce4, 0', uuidOf).devices.map((d) => d.n)).toEqual([1, 0]);
  });

  it('an invalid, ambiguous or repeated entry ends the list (CUDA semantics)', () => {
    expect(applyVisibility(devs, '1,7,0', uuidOf)).toEqual({ devices: [devs[1]], invalid: '7' });
    expect(applyVisibility(devs, 'GPU-3c,1', uuidOf)).toEqual({ devices: [], invalid: 'GPU-3c' });
    expect(applyVisibility(devs, '0,0', uuidOf)).toEqual({ devices: [devs[0]], invalid: '0' });
    expect(applyVisibility(devs, 'x', uuidOf)).toEqual({ devices: [], invalid: 'x' });
  });

  it('a permutation of valid indices selects exactly those devices in that order', () => {
    fc.assert(
      fc.property(fc.shuffledSubarray([0, 1, 2]), (order) => {
        const r = applyVisibility(devs, order.join(','), uuidOf);
        expect(r.invalid).toBeNull();
        expect(r.devices.map((d) => d.n)).toEqual(order);
      }),
    );
  });
});

describe('visibility in enumeration', () => {
  it('ROCR_VISIBLE_DEVICES by UUID (as seeds/002 launches each TP rank) renumbers to hip:0', () => {
    const m = machine('w7900x2-gfx1100');
    const e = enumerateDevices({ ...m, env: { ROCR_VISIBLE_DEVICES: 'GPU-3ce42265b99a6c53' }, nvml: absentNvml(), hip: absentHip(), vulkan: absentVulkan(), includeDisk: false });
    const gpus = e.devices.filter((d) => d.kind === 'hip');
    expect(gpus.map((g) => [g.id, g.amd?.card, g.pciBusId])).toEqual([['hip:0', 'card2', '0000:83:00.0']]);
    expect(deviceUsageReader(e)()).toEqual({ 'hip:0': 29253632 });
  });

  it('HIP_VISIBLE_DEVICES indexes what ROCR left; a bad entry is a warning', () => {
    const m = machine('w7900x2-gfx1100');
    const e = enumerateDevices({ ...m, env: { HIP_VISIBLE_DEVICES: '1,5' }, nvml: absentNvml(), hip: absentHip(), vulkan: absentVulkan(), includeDisk: false });
    expect(e.devices.filter((d) => d.kind === 'hip').map((g) => g.amd?.card)).toEqual(['card2']);
    expect(e.notes.find((n) => n.source === 'visibility')).toMatchObject({ level: 'warn', message: expect.stringContaining("entry '5'") });
  });

  it('CUDA_VISIBLE_DEVICES=1 makes NVML device 1 cuda:0, and the usage reader still reads device 1', () => {
    const m = machine('rtx4090x2-container');
    const nvml = recordedNvml(`${m.dir}/nvml.json`);
    const e = enumerateDevices({ ...m, env: { CUDA_VISIBLE_DEVICES: '1' }, nvml, hip: absentHip(), vulkan: absentVulkan(), includeDisk: false });
    const cuda = e.devices.filter((d) => d.kind === 'cuda');
    expect(cuda.map((d) => [d.id, d.nvidia?.nvmlIndex, d.pciBusId])).toEqual([['cuda:0', 1, '0000:41:00.0']]);
    expect(deviceUsageReader(e, nvml)()).toEqual({ 'cuda:0': 17618173952 });
  });
});
