import { join, listDir, parseUnsigned, readText, type ResolvedRoots } from './fs-read.js';
import type { NoteLog } from './notes.js';
import { pcieGenFromSpeed } from './pcie.js';

export const AMD_VENDOR_ID = 0x1002;

export interface AmdSysfsGpu {
  /** DRM card name, `card1`. */
  card: string;
  /** sysfs device directory (under the injected root). */
  devicePath: string;
  pciBusId: string | null;
  pciDeviceId: number | null;
  productName: string | null;
  vramTotalBytes: number | null;
  vramUsedBytes: number | null;
  gttTotalBytes: number | null;
  gttUsedBytes: number | null;
  pcieGen: number | null;
  pcieWidth: number | null;
  renderMinor: number | null;
  /** KFD topology node that is this GPU, when found. */
  kfdNode: number | null;
  /** `gfx_target_version` from KFD, e.g. 110000. */
  gfxTargetVersion: number | null;
  /** `gfx1100`, or null when KFD does not say. */
  gfxTarget: string | null;
  /** Compute units (simd_count / simd_per_cu) from KFD. */
  computeUnits: number | null;
  /** ROCm UUID from the KFD unique_id (`GPU-3c99737f13093cd0`); null on parts without one (APUs). */
  uuid: string | null;
}

/**
 * KFD encodes the target as major*10000 + minor*100 + stepping; the gfx name spells minor and
 * stepping as one hex digit each (90010 -> gfx90a, 110501 -> gfx1151).
 */
export function gfxTargetName(version: number): string | null {
  if (!Number.isInteger(version) || version <= 0) return null;
  const major = Math.floor(version / 10000);
  const minor = Math.floor(version / 100) % 100;
  const step = version % 100;
  if (minor > 15 || step > 15) return null;
  return `gfx${major}${minor.toString(16)}${step.toString(16)}`;
}

/**
 * `key value` lines of a KFD properties file, values kept as decimal text: some (unique_id) exceed
 * 2^53 and must be read as BigInt.
 */
export function parseKfdProperties(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^([a-z0-9_]+)\s+(-?\d+)\s*$/.exec(line.trim());
    if (m !== null) out.set(m[1] as string, m[2] as string);
  }
  return out;
}

/** A KFD property as a number, when it is a safe integer. */
export function kfdNumber(props: Map<string, string>, key: string): number | undefined {
  const raw = props.get(key);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** The ROCm device UUID (`GPU-` + unique_id in 16 hex digits), as ROCR_VISIBLE_DEVICES accepts it. */
export function rocmUuid(uniqueId: string | undefined): string | null {
  if (uniqueId === undefined || !/^[0-9]+$/.test(uniqueId)) return null;
  const id = BigInt(uniqueId);
  return id === 0n || id >= 2n ** 64n ? null : `GPU-${id.toString(16).padStart(16, '0')}`;
}

interface KfdNode {
  node: number;
  props: Map<string, string>;
}

function readKfdNodes(roots: ResolvedRoots, log: NoteLog): KfdNode[] {
  const dir = join(roots.sysRoot, 'class', 'kfd', 'kfd', 'topology', 'nodes');
  const nodes: KfdNode[] = [];
  for (const name of listDir(dir)) {
    if (!/^\d+$/.test(name)) continue;
    const path = join(dir, name, 'properties');
    const text = readText(path);
    if (text === undefined) {
      log.warn('amd-sysfs', 'unreadable KFD node properties', path);
      continue;
    }
    nodes.push({ node: Number(name), props: parseKfdProperties(text) });
  }
  return nodes.sort((a, b) => a.node - b.node);
}

function readBytes(path: string, label: string, log: NoteLog): number | null {
  const text = readText(path);
  if (text === undefined) return null;
  const n = parseUnsigned(text);
  if (n === undefined) {
    log.warn('amd-sysfs', `${label} is not a number ('${text.trim().slice(0, 40)}'); treating it as unknown`, path);
    return null;
  }
  return n;
}

function readUsed(devicePath: string, file: string): number | null {
  return parseUnsigned(readText(join(devicePath, file))) ?? null;
}

/** Current VRAM and GTT use of one card, read fresh (the sampler calls this every interval). */
export function readAmdUsage(devicePath: string): { vramUsedBytes: number | null; gttUsedBytes: number | null } {
  return { vramUsedBytes: readUsed(devicePath, 'mem_info_vram_used'), gttUsedBytes: readUsed(devicePath, 'mem_info_gtt_used') };
}

/**
 * AMD GPUs from sysfs: DRM cards whose PCI vendor is 0x1002, joined to the KFD topology by render
 * minor for the gfx target. Ordered as HIP numbers them: by KFD node, cards KFD does not know last.
 */
export function readAmdGpus(roots: ResolvedRoots, log: NoteLog): AmdSysfsGpu[] {
  const drm = join(roots.sysRoot, 'class', 'drm');
  const cards = listDir(drm).filter((n) => /^card\d+$/.test(n));
  const kfd = readKfdNodes(roots, log);
  const gpus: AmdSysfsGpu[] = [];
  for (const card of cards) {
    const devicePath = join(drm, card, 'device');
    const vendorText = readText(join(devicePath, 'vendor'));
    const vendor = parseUnsigned(vendorText);
    if (vendor === undefined) {
      if (vendorText !== undefined) log.warn('amd-sysfs', `unparsable PCI vendor '${vendorText.trim().slice(0, 20)}'`, join(devicePath, 'vendor'));
      continue;
    }
    if (vendor !== AMD_VENDOR_ID) continue;
    const uevent = readText(join(devicePath, 'uevent')) ?? '';
    const slot = /^PCI_SLOT_NAME=(.+)$/m.exec(uevent)?.[1]?.trim() ?? null;
    const renderName = listDir(join(devicePath, 'drm')).find((n) => /^renderD\d+$/.test(n));
    const renderMinor = renderName === undefined ? null : Number(renderName.slice('renderD'.length));
    const node = renderMinor === null ? undefined : kfd.find((k) => kfdNumber(k.props, 'drm_render_minor') === renderMinor);
    const gfxRaw = node?.props.get('gfx_target_version');
    const gfxVersion = node === undefined ? null : (kfdNumber(node.props, 'gfx_target_version') ?? null);
    const gfxTarget = gfxVersion === null ? null : gfxTargetName(gfxVersion);
    if (node === undefined) {
      log.warn('amd-sysfs', `${card}: no KFD topology node with drm_render_minor ${renderMinor ?? '?'}; gfx target unknown`, devicePath);
    } else if (gfxTarget === null) {
      log.warn('amd-sysfs', `${card}: gfx_target_version '${gfxRaw ?? 'missing'}' is not a valid target; gfx target unknown`, join(roots.sysRoot, 'class', 'kfd', 'kfd', 'topology', 'nodes', String(node.node), 'properties'));
    }
    const simd = node === undefined ? undefined : kfdNumber(node.props, 'simd_count');
    const simdPerCu = node === undefined ? undefined : kfdNumber(node.props, 'simd_per_cu');
    const vramTotal = readBytes(join(devicePath, 'mem_info_vram_total'), 'mem_info_vram_total', log);
    if (vramTotal === null) log.warn('amd-sysfs', `${card}: VRAM size unknown (mem_info_vram_total missing or invalid)`, devicePath);
    const width = parseUnsigned(readText(join(devicePath, 'current_link_width')));
    gpus.push({
      card,
      devicePath,
      pciBusId: slot,
      pciDeviceId: parseUnsigned(readText(join(devicePath, 'device'))) ?? null,
      productName: readText(join(devicePath, 'product_name'))?.trim() || null,
      vramTotalBytes: vramTotal,
      vramUsedBytes: readBytes(join(devicePath, 'mem_info_vram_used'), 'mem_info_vram_used', log),
      gttTotalBytes: readBytes(join(devicePath, 'mem_info_gtt_total'), 'mem_info_gtt_total', log),
      gttUsedBytes: readBytes(join(devicePath, 'mem_info_gtt_used'), 'mem_info_gtt_used', log),
      pcieGen: pcieGenFromSpeed(readText(join(devicePath, 'current_link_speed'))) ?? null,
      pcieWidth: width !== undefined && width > 0 ? width : null,
      renderMinor,
      kfdNode: node?.node ?? null,
      gfxTargetVersion: gfxVersion,
      gfxTarget,
      computeUnits: simd !== undefined && simdPerCu !== undefined && simdPerCu > 0 ? simd / simdPerCu : null,
      uuid: rocmUuid(node?.props.get('unique_id')),
    });
  }
  const rank = (g: AmdSysfsGpu): number => g.kfdNode ?? Number.MAX_SAFE_INTEGER;
  return gpus.sort((a, b) => rank(a) - rank(b) || a.card.localeCompare(b.card, 'en', { numeric: true }));
}

/** PCI display controllers of a vendor listed under /sys/bus/pci/devices (independent of drivers). */
export function countPciDisplayDevices(roots: ResolvedRoots, vendorId: number): number {
  const dir = join(roots.sysRoot, 'bus', 'pci', 'devices');
  let count = 0;
  for (const name of listDir(dir)) {
    const vendor = parseUnsigned(readText(join(dir, name, 'vendor')));
    const cls = parseUnsigned(readText(join(dir, name, 'class')));
    // Class 0x03xxxx: display controller (VGA 0x0300, 3D 0x0302).
    if (vendor === vendorId && cls !== undefined && cls >> 16 === 0x03) count += 1;
  }
  return count;
}
