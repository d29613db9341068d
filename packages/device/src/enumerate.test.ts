import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { totalmem } from 'node:os';
import { describe, expect, it } from 'vitest';
import { parseDeviceId } from './device-id.js';
import { deviceIds, enumerateDevices } from './enumerate.js';
import { vulkanProbe } from '@ninodes/kernels';
import { absentHip, absentNvml, absentVulkan, recordedHip, recordedNvml, recordedVulkan } from './gpu-sources.js';
import { machine } from './test-machines.js';

const noGpuLibs = { nvml: absentNvml(), hip: absentHip(), vulkan: absentVulkan() };

describe('enumerateDevices on recorded machines', () => {
  it('2x W7900 box: cpu, hip:0, hip:1, disk; HIP runtime marks both cards usable', () => {
    const m = machine('w7900x2-gfx1100');
    const hip = recordedHip({
      available: true,
      library: 'libamdhip64.so',
      runtimeVersion: 60443483,
      devices: [
        { index: 0, name: 'AMD Radeon PRO W7900', pciBusId: '0000:03:00.0', totalBytes: 51522830336 },
        { index: 1, name: 'AMD Radeon PRO W7900', pciBusId: '0000:83:00.0', totalBytes: 51522830336 },
      ],
    });
    const e = enumerateDevices({ ...m, nvml: absentNvml(), hip, vulkan: absentVulkan(), includeDisk: false });
    expect(deviceIds(e)).toEqual(['cpu', 'hip:0', 'hip:1']);
    const [cpu, h0, h1] = e.devices;
    expect(cpu).toMatchObject({ arch: 'cpu-avx512', vendor: 'amd', totalBytes: 263772604 * 1024 });
    expect(h0).toMatchObject({ name: 'AMD Radeon PRO W7900', arch: 'gfx1100', totalBytes: 51522830336, usedBytes: 1316737024, freeBytes: 51522830336 - 1316737024, unifiedMemory: false, pciBusId: '0000:03:00.0', runtimeAvailable: true, pcie: { gen: 4, width: 16 } });
    expect(h1).toMatchObject({ arch: 'gfx1100', usedBytes: 29253632, pciBusId: '0000:83:00.0', runtimeAvailable: true });
    expect(h0?.profile).toMatchObject({ arch: 'gfx1100', matrix: { fp8: false, int8: true } });
    expect(e.notes.filter((n) => n.level === 'warn')).toEqual([]);
    expect(e.notes.some((n) => n.level === 'debug' && n.source === 'nvml')).toBe(true);
    // The ids it lists are exactly what the parser accepts on this machine.
    expect(parseDeviceId('rocm:1', { available: deviceIds(e) })).toEqual({ kind: 'hip', index: 1 });
    expect(() => parseDeviceId('cuda:0', { available: deviceIds(e) })).toThrowError(/valid ids here: cpu, hip:0, hip:1/);
  });

  it('without the HIP runtime the cards are still listed (from sysfs), marked not usable, with a debug note', () => {
    const e = enumerateDevices({ ...machine('w7900x2-gfx1100'), ...noGpuLibs, includeDisk: false });
    expect(e.devices.filter((d) => d.kind === 'hip').map((d) => d.runtimeAvailable)).toEqual([false, false]);
    expect(e.notes.filter((n) => n.level === 'warn')).toEqual([]);
    expect(e.notes.find((n) => n.source === 'hip')?.level).toBe('debug');
  });

  it('Strix Halo: gfx1151 with unified memory counts VRAM carve-out plus GTT', () => {
    const e = enumerateDevices({ ...machine('strix-halo-gfx1151'), ...noGpuLibs, includeDisk: false });
    const gpu = e.devices.find((d) => d.id === 'hip:0');
    expect(gpu).toMatchObject({ arch: 'gfx1151', unifiedMemory: true, totalBytes: 536870912 + 66496790528, usedBytes: 161742848 + 5127438336, pcie: null });
    expect(gpu?.profile).toMatchObject({ attentionMemoryModifier: 1.5, tileSize: { min: 768, max: 1024 }, tf32: false });
    expect(gpu?.name).toBe('AMD GPU 0x1586 (gfx1151)');
    const cpu = e.devices[0];
    expect(cpu?.cpu?.simd).toContain('avx_vnni');
    expect(cpu?.cpu?.physicalCores).toBe(16);
    expect(e.notes.filter((n) => n.level === 'warn')).toEqual([]);
  });

  it('2x RTX 4090 container: cuda:0/1 from recorded NVML answers, CPU limited by the cgroup', () => {
    const m = machine('rtx4090x2-container');
    const e = enumerateDevices({ ...m, nvml: recordedNvml(`${m.dir}/nvml.json`), hip: absentHip(), vulkan: absentVulkan(), includeDisk: false });
    expect(deviceIds(e)).toEqual(['cpu', 'cuda:0', 'cuda:1']);
    const recorded = JSON.parse(readFileSync(`${m.dir}/nvml.json`, 'utf8')) as { devices: { totalBytes: number; freeBytes: number }[] };
    const [cpu, c0, c1] = e.devices;
    expect(cpu).toMatchObject({ vendor: 'intel', totalBytes: 64 * 2 ** 30 });
    expect(c0).toMatchObject({ name: 'NVIDIA GeForce RTX 4090', arch: 'sm_89', totalBytes: recorded.devices[0]?.totalBytes, freeBytes: recorded.devices[0]?.freeBytes, pciBusId: '0000:01:00.0', pcie: { gen: 4, width: 16 } });
    expect(c1).toMatchObject({ arch: 'sm_89', freeBytes: recorded.devices[1]?.freeBytes, pcie: { gen: 4, width: 8 } });
    expect(c0?.nvidia).toEqual({ uuid: 'GPU-5a1f2c4e-7b3d-9e08-6c21-0f4d8a9b3e57', nvmlIndex: 0, computeCapability: '8.9', driverVersion: '550.127.05' });
    expect(c0?.profile).toMatchObject({ arch: 'sm_89', known: true, matrix: { fp8: true }, tf32: true });
    expect(e.notes.filter((n) => n.level === 'warn')).toEqual([]);
  });

  it('GPUs of different models without CUDA_DEVICE_ORDER=PCI_BUS_ID warn that CUDA may number them differently', () => {
    const m = machine('rtx4090x2-container');
    const answer = JSON.parse(readFileSync(`${m.dir}/nvml.json`, 'utf8')) as { devices: { name: string }[] };
    (answer.devices[1] as { name: string }).name = 'NVIDIA RTX A4000';
    const nvml = recordedNvml(answer as never);
    const mixed = enumerateDevices({ ...m, nvml, hip: absentHip(), vulkan: absentVulkan(), includeDisk: false });
    expect(mixed.notes.find((n) => n.level === 'warn')?.message).toMatch(/CUDA_DEVICE_ORDER=PCI_BUS_ID/);
    const ordered = enumerateDevices({ ...m, env: { CUDA_DEVICE_ORDER: 'PCI_BUS_ID' }, nvml, hip: absentHip(), vulkan: absentVulkan(), includeDisk: false });
    expect(ordered.notes.filter((n) => n.level === 'warn')).toEqual([]);
  });

  it('NVIDIA hardware on the PCI bus without NVML is a warning (a broken driver, not an absent vendor)', () => {
    const e = enumerateDevices({ ...machine('rtx4090x2-container'), ...noGpuLibs, includeDisk: false });
    expect(deviceIds(e)).toEqual(['cpu']);
    expect(e.notes.find((n) => n.source === 'nvml')).toMatchObject({ level: 'warn', message: expect.stringMatching(/2 NVIDIA display device/) });
  });

  it('malformed tree: devices with unknown fields and warnings, never an exception', () => {
    const e = enumerateDevices({ ...machine('malformed'), ...noGpuLibs, includeDisk: false });
    expect(deviceIds(e)).toEqual(['cpu', 'hip:0', 'hip:1']);
    const [cpu, h0, h1] = e.devices;
    expect(cpu).toMatchObject({ name: 'unknown', arch: 'unknown', totalBytes: null, freeBytes: null });
    expect(h0).toMatchObject({ arch: 'unknown', profile: null, totalBytes: 25753026560, usedBytes: null, freeBytes: null });
    expect(h1).toMatchObject({ arch: 'unknown', profile: null, totalBytes: null, freeBytes: null, pcie: null });
    expect(e.notes.filter((n) => n.level === 'warn').length).toBeGreaterThanOrEqual(6);
  });
});

describe('Vulkan devices (vk:N)', () => {
  const heap = (sizeBytes: number, deviceLocal: boolean, budget?: [number, number]) => ({
    sizeBytes,
    deviceLocal,
    hostVisible: !deviceLocal,
    ...(budget === undefined ? {} : { budgetBytes: budget[0], usageBytes: budget[1] }),
  });
  const record = {
    index: 0,
    name: 'NVIDIA GeForce RTX 4090',
    type: 'discrete' as const,
    vendorId: 0x10de,
    deviceId: 0x2684,
    apiVersion: '1.3.277',
    driverName: 'NVIDIA',
    driverInfo: '550.127.05',
    driverId: 4,
    pciBusId: '0000:01:00.0',
    heaps: [heap(25757220864, true, [24000000000, 1000000000]), heap(33000000000, false, [30000000000, 0])],
    unifiedMemory: false,
    memoryBudget: true,
    subgroupSize: 32,
    maxStorageBufferRange: 4294967295,
    maxComputeSharedMemorySize: 49152,
    maxComputeWorkGroupInvocations: 1024,
    shaderInt8: true,
    shaderFloat16: true,
    integerDotProduct: true,
    cooperativeMatrix: true,
  };

  it('a card seen by NVML and Vulkan is listed twice, vk:0 tied to cuda:0 by PCI address, free memory from the budget', () => {
    const m = machine('rtx4090x2-container');
    const vulkan = recordedVulkan({ available: true, loaderVersion: '1.3.277', validation: false, devices: [record] });
    const e = enumerateDevices({ ...m, nvml: recordedNvml(`${m.dir}/nvml.json`), hip: absentHip(), vulkan, includeDisk: false });
    expect(deviceIds(e)).toEqual(['cpu', 'cuda:0', 'cuda:1', 'vk:0']);
    const vk = e.devices.find((d) => d.id === 'vk:0');
    expect(vk).toMatchObject({ kind: 'vk', vendor: 'nvidia', arch: 'sm_89', totalBytes: 25757220864, freeBytes: 23000000000, unifiedMemory: false, pciBusId: '0000:01:00.0' });
    expect(vk?.vulkan).toMatchObject({ sameAs: 'cuda:0', driverName: 'NVIDIA', memoryBudget: true });
    expect(parseDeviceId('vulkan:0', { available: deviceIds(e) })).toEqual({ kind: 'vk', index: 0 });
  });

  it('lavapipe: a CPU device with unified memory, no PCI address and no budget (free unknown, a debug note)', () => {
    const lavapipe = { ...record, name: 'llvmpipe (LLVM 15.0.6, 256 bits)', type: 'cpu' as const, vendorId: 0x10005, driverName: 'llvmpipe', heaps: [heap(2147483648, true)], unifiedMemory: true, memoryBudget: false };
    delete (lavapipe as { pciBusId?: string }).pciBusId;
    const e = enumerateDevices({ ...machine('malformed'), nvml: absentNvml(), hip: absentHip(), vulkan: recordedVulkan({ available: true, loaderVersion: '1.3.239', validation: false, devices: [lavapipe] }), includeDisk: false });
    expect(e.devices.find((d) => d.id === 'vk:0')).toMatchObject({ arch: 'vulkan-cpu', vendor: 'unknown', totalBytes: 2147483648, freeBytes: null, unifiedMemory: true, pciBusId: null });
    expect(e.notes.some((n) => n.source === 'vulkan' && n.level === 'debug')).toBe(true);
  });

  it('no Vulkan loader: no vk device and only a debug note', () => {
    const e = enumerateDevices({ ...machine('malformed'), nvml: absentNvml(), hip: absentHip(), vulkan: absentVulkan(), includeDisk: false });
    expect(e.devices.some((d) => d.kind === 'vk')).toBe(false);
    expect(e.notes.filter((n) => n.source === 'vulkan').map((n) => n.level)).toEqual(['debug']);
  });

  it('on this machine, vk:N are exactly the devices the addon probes', () => {
    const probe = vulkanProbe();
    const e = enumerateDevices({ includeDisk: false });
    expect(e.devices.filter((d) => d.kind === 'vk').map((d) => d.name)).toEqual(probe.available ? probe.devices.map((d) => d.name) : []);
  });
});

describe('enumerateDevices on this machine', () => {
  it('lists the CPU with true RAM figures and no warnings about missing vendor libraries', () => {
    const e = enumerateDevices({ diskPath: '/' });
    const cpu = e.devices.find((d) => d.id === 'cpu');
    expect(cpu?.cpu?.memTotalBytes).toBe(totalmem());
    expect(cpu?.totalBytes).toBeLessThanOrEqual(totalmem());
    const disk = e.devices.find((d) => d.id === 'disk');
    expect(disk?.totalBytes).toBeGreaterThan(0);
    const vendorWarnings = e.notes.filter((n) => n.level === 'warn' && (n.source === 'nvml' || n.source === 'hip'));
    // Only a machine with NVIDIA hardware but no usable NVML may warn about it.
    if (!existsSync('/dev/nvidia0')) expect(vendorWarnings).toEqual([]);
    if (!existsSync('/sys/class/drm') && !existsSync('/dev/nvidia0')) {
      expect(e.devices.filter((d) => d.kind === 'cuda' || d.kind === 'hip')).toEqual([]);
      expect(e.notes.filter((n) => n.level === 'warn')).toEqual([]);
    }
  });
});

describe('a recorded tree with FIFOs where files belong', () => {
  it('proc/meminfo as a FIFO reads as absent at once; a FIFO nvml.json is NOT_A_REGULAR_FILE (in a child, so a blocked read shows as a timeout)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ninodes-fifo-machine-'));
    try {
      cpSync(machine('rtx4090x2-container').dir, dir, { recursive: true });
      rmSync(join(dir, 'proc', 'meminfo'));
      for (const f of ['proc/meminfo', 'fifo-nvml.json']) expect(spawnSync('mkfifo', [join(dir, f)]).status).toBe(0);
      const script = `import('@ninodes/device').then((d) => {
        const roots = { procRoot: ${JSON.stringify(join(dir, 'proc'))}, sysRoot: ${JSON.stringify(join(dir, 'sys'))}, env: {} };
        const e = d.enumerateDevices({ ...roots, nvml: d.recordedNvml(${JSON.stringify(join(dir, 'nvml.json'))}), hip: d.absentHip(), vulkan: d.absentVulkan(), includeDisk: false });
        let code = 'none';
        try { d.recordedNvml(${JSON.stringify(join(dir, 'fifo-nvml.json'))}); } catch (error) { code = error.code; }
        process.stdout.write(JSON.stringify({ ids: e.devices.map((x) => x.id), code }));
      })`;
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 120_000 });
      expect([r.signal, r.status], r.stderr).toEqual([null, 0]);
      expect(JSON.parse(r.stdout)).toEqual({ ids: ['cpu', 'cuda:0', 'cuda:1'], code: 'NOT_A_REGULAR_FILE' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
