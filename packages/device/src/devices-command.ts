import { hostBandwidth, type HostBandwidthOptions } from './bandwidth.js';
import { enumerateDevices, type EnumerateOptions, type Enumeration } from './enumerate.js';
import { formatBytes } from './format-bytes.js';
import type { ProbeNote } from './notes.js';
import { pcieBandwidthGBs } from './pcie.js';

/** One row of `ninodes devices`. Byte counts are exact integers; null means unknown. */
export interface DeviceRow {
  id: string;
  name: string;
  arch: string;
  totalBytes: number | null;
  freeBytes: number | null;
  /** GB/s: measured host memcpy for `cpu`, theoretical PCIe link rate for GPUs. */
  bandwidthGBs: number | null;
  bandwidthKind: 'host-memcpy' | 'pcie-link' | null;
  unifiedMemory: boolean;
}

export interface DevicesCommandOptions extends EnumerateOptions {
  /** Measure (or read from cache) the host memcpy bandwidth; default true. */
  measureBandwidth?: boolean;
  bandwidth?: Omit<HostBandwidthOptions, 'cpuModel' | 'memTotalBytes'>;
}

export interface DevicesResult {
  rows: DeviceRow[];
  notes: ProbeNote[];
  enumeration: Enumeration;
}

/** Rows for an enumeration; `hostGBs` fills the cpu row's bandwidth. */
export function deviceRows(enumeration: Enumeration, hostGBs: number | null = null): DeviceRow[] {
  return enumeration.devices.map((d) => {
    const link = d.pcie === null ? null : pcieBandwidthGBs(d.pcie.gen, d.pcie.width);
    const isCpu = d.kind === 'cpu';
    const bandwidth = isCpu ? hostGBs : link;
    return {
      id: d.id,
      name: d.name,
      arch: d.arch,
      totalBytes: d.totalBytes,
      freeBytes: d.freeBytes,
      bandwidthGBs: bandwidth,
      bandwidthKind: bandwidth === null ? null : isCpu ? 'host-memcpy' : 'pcie-link',
      unifiedMemory: d.unifiedMemory,
    };
  });
}

/** What `ninodes devices` shows: enumerate, measure host bandwidth once per machine (cached). */
export function listDevices(options: DevicesCommandOptions = {}): DevicesResult {
  const enumeration = enumerateDevices(options);
  let hostGBs: number | null = null;
  const cpu = enumeration.devices.find((d) => d.kind === 'cpu');
  if (options.measureBandwidth !== false && cpu?.cpu !== undefined) {
    const bw = hostBandwidth({ cpuModel: cpu.cpu.model, memTotalBytes: cpu.cpu.memTotalBytes, ...options.bandwidth });
    hostGBs = bw.gbPerSecond;
    if (bw.cacheError !== null) enumeration.notes.push({ level: 'warn', source: 'bandwidth', message: `measured host bandwidth not cached (it will be measured again next time): ${bw.cacheError}` });
  }
  return { rows: deviceRows(enumeration, hostGBs), notes: enumeration.notes, enumeration };
}

function bandwidthText(row: DeviceRow): string {
  if (row.bandwidthGBs === null) return '-';
  const value = `${row.bandwidthGBs.toFixed(1)} GB/s`;
  return row.bandwidthKind === 'pcie-link' ? `${value} (PCIe)` : value;
}

/** A plain-text table (id, name, arch, total, free, bandwidth) with aligned columns. */
export function formatDeviceTable(rows: readonly DeviceRow[]): string {
  const header = ['ID', 'NAME', 'ARCH', 'TOTAL', 'FREE', 'BANDWIDTH'];
  const body = rows.map((r) => [r.id, r.name, r.arch, formatBytes(r.totalBytes, 1) + (r.unifiedMemory ? ' (shared)' : ''), formatBytes(r.freeBytes, 1), bandwidthText(r)]);
  const all = [header, ...body];
  const widths = header.map((_, c) => Math.max(...all.map((row) => (row[c] as string).length)));
  return all.map((row) => row.map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c] as number))).join('  ').trimEnd()).join('\n');
}

/** JSON for `ninodes devices --json`: rows plus the probe notes. */
export function formatDeviceJson(result: DevicesResult): string {
  return JSON.stringify({ devices: result.rows, notes: result.notes }, null, 2);
}

export interface DevicesCommandOutput {
  /** The table, or JSON with --json. */
  stdout: string;
  /** One line per note to show: warnings always, debug notes only when verbose. */
  stderr: string[];
  result: DevicesResult;
}

/** Everything `ninodes devices [--json] [--verbose]` prints; the runner only writes it out. */
export function devicesCommand(options: DevicesCommandOptions & { json?: boolean; verbose?: boolean } = {}): DevicesCommandOutput {
  const { json, verbose, ...rest } = options;
  const result = listDevices(rest);
  const shown = result.notes.filter((n) => n.level === 'warn' || verbose === true);
  return {
    stdout: json === true ? formatDeviceJson(result) : formatDeviceTable(result.rows),
    stderr: shown.map((n) => `${n.level}: [${n.source}] ${n.message}${n.where === undefined ? '' : ` (${n.where})`}`),
    result,
  };
}
