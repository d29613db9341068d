import { mkdtempSync, rmSync } from 'node:fs';
import { totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { deviceRows, devicesCommand, formatDeviceJson, formatDeviceTable, listDevices } from './devices-command.js';
import { enumerateDevices } from './enumerate.js';
import { formatBytes } from './format-bytes.js';
import { absentHip, absentNvml, absentVulkan, recordedNvml } from './gpu-sources.js';
import { pcieBandwidthGBs, pcieGenFromSpeed } from './pcie.js';
import { machine } from './test-machines.js';

describe('formatBytes', () => {
  it('uses binary units with one decimal', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(51522830336, 1)).toBe(`${Number((51522830336 / 2 ** 30).toFixed(1))} GiB`);
    expect(formatBytes(3 * 2 ** 30)).toBe('3 GiB');
    expect(formatBytes(24e9)).toBe('22.35 GiB');
    expect(formatBytes(2 ** 40)).toBe('1 TiB');
    expect(formatBytes(-1536)).toBe('-1.5 KiB');
    expect(formatBytes(null)).toBe('unknown');
    expect(formatBytes(Number.NaN)).toBe('unknown');
  });
});

describe('PCIe', () => {
  it('parses sysfs link speeds and computes per-direction bandwidth', () => {
    expect(['2.5 GT/s PCIe', '5.0 GT/s PCIe', '8.0 GT/s PCIe', '16.0 GT/s PCIe', '32.0 GT/s PCIe', 'Unknown'].map(pcieGenFromSpeed)).toEqual([1, 2, 3, 4, 5, undefined]);
    // 16 GT/s * 16 lanes * 128/130 / 8 bits.
    expect(pcieBandwidthGBs(4, 16)).toBeCloseTo((16 * 16 * 128) / 130 / 8, 0);
    expect(pcieBandwidthGBs(3, 8)).toBeCloseTo((8 * 8 * 128) / 130 / 8, 1);
    expect(pcieBandwidthGBs(null, 16)).toBeNull();
  });
});

describe('devices command', () => {
  it('rows for the NVIDIA host: PCIe link bandwidth for GPUs, given host bandwidth for cpu', () => {
    const m = machine('rtx4090x2-container');
    const e = enumerateDevices({ ...m, nvml: recordedNvml(`${m.dir}/nvml.json`), hip: absentHip(), vulkan: absentVulkan(), includeDisk: false });
    const rows = deviceRows(e, 18.25);
    expect(rows.map((r) => [r.id, r.arch, r.bandwidthKind])).toEqual([
      ['cpu', 'cpu-amx', 'host-memcpy'], // Xeon w5-3435X (Sapphire Rapids): AMX tiles
      ['cuda:0', 'sm_89', 'pcie-link'],
      ['cuda:1', 'sm_89', 'pcie-link'],
    ]);
    expect(rows[0]?.bandwidthGBs).toBe(18.25);
    expect(rows[2]?.bandwidthGBs).toBeCloseTo(pcieBandwidthGBs(4, 8) as number, 6);
    const table = formatDeviceTable(rows).split('\n');
    expect(table[0]).toMatch(/^ID\s+NAME\s+ARCH\s+TOTAL\s+FREE\s+BANDWIDTH$/);
    expect(table[2]).toContain('NVIDIA GeForce RTX 4090');
    expect(table[2]).toContain(formatBytes(25757220864, 1));
    expect(table[1]).toContain('18.3 GB/s');
    // Columns line up: every row has the ARCH column at the same offset as the header.
    const archAt = (table[0] as string).indexOf('ARCH');
    for (const line of table.slice(1)) expect(line.slice(archAt).startsWith(line.includes('sm_89') ? 'sm_89' : 'cpu-amx')).toBe(true);
  });

  it('unknown values print as unknown / -', () => {
    const e = enumerateDevices({ ...machine('malformed'), nvml: absentNvml(), hip: absentHip(), vulkan: absentVulkan(), includeDisk: false });
    const table = formatDeviceTable(deviceRows(e));
    expect(table.split('\n')[1]).toMatch(/^cpu\s+unknown\s+unknown\s+unknown\s+unknown\s+-$/);
  });

  it('on this machine: the CPU with RAM from /proc, measured bandwidth cached, valid JSON, no warnings for absent vendors', () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'ninodes-devcmd-'));
    onTestFinished(() => rmSync(cacheDir, { recursive: true, force: true }));
    const result = listDevices({ bandwidth: { cacheDir, bytes: 16 * 2 ** 20, iterations: 2 } });
    const cpu = result.rows.find((r) => r.id === 'cpu');
    expect(cpu?.totalBytes).toBeLessThanOrEqual(totalmem());
    expect(cpu?.bandwidthGBs).toBeGreaterThan(0);
    const again = listDevices({ bandwidth: { cacheDir, bytes: 16 * 2 ** 20, iterations: 2 } });
    expect(again.rows.find((r) => r.id === 'cpu')?.bandwidthGBs).toBe(cpu?.bandwidthGBs);
    const json = JSON.parse(formatDeviceJson(result)) as { devices: { id: string }[]; notes: { level: string; source: string }[] };
    expect(json.devices.map((d) => d.id)).toEqual(result.rows.map((r) => r.id));
    expect(json.notes.filter((n) => n.level === 'warn' && (n.source === 'nvml' || n.source === 'hip'))).toEqual([]);
  });

  it('devicesCommand: table by default, JSON with json, debug notes only when verbose', () => {
    const m = machine('w7900x2-gfx1100');
    const base = { ...m, nvml: absentNvml(), hip: absentHip(), vulkan: absentVulkan(), includeDisk: false, measureBandwidth: false };
    const plain = devicesCommand(base);
    expect(plain.stdout.split('\n').map((l) => l.split(/\s+/)[0])).toEqual(['ID', 'cpu', 'hip:0', 'hip:1']);
    expect(plain.stderr).toEqual([]);
    const verbose = devicesCommand({ ...base, verbose: true });
    expect(verbose.stderr.some((l) => /^debug: \[nvml\] NVML not available/.test(l))).toBe(true);
    const json = JSON.parse(devicesCommand({ ...base, json: true }).stdout) as { devices: { id: string; totalBytes: number }[] };
    expect(json.devices[1]).toMatchObject({ id: 'hip:0', totalBytes: 51522830336 });
  });
});
