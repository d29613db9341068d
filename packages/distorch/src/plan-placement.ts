import { DistorchError } from './error-codes.js';
import { formatBytes } from '@ninodes/device';
import { type LayoutGroup, type ModelLayout, ownerOf } from '@ninodes/quant';
import { type AllocationSpec, validateAllocationSpec } from './allocation-spec.js';
import { formatAllocation, formatAllocationBytes } from './format-allocation.js';
import { type TensorAccount, storedBytesAccount } from './memory-account.js';
import { parseAllocation } from './parse-allocation.js';

/** A device the planner may place on: an @ninodes/device DeviceInfo fits this shape. */
export interface PlanDevice {
  readonly id: string;
  /** null: unknown (not checked). `disk` is never the limit. */
  readonly totalBytes: number | null;
  readonly profile?: { readonly attentionMemoryModifier: number } | null;
}

export type FillOrder = 'head-first' | 'tail-first';

export interface PlanOptions {
  readonly layout: ModelLayout;
  /** An allocation string or a parsed spec. */
  readonly allocation: string | AllocationSpec;
  readonly devices: readonly PlanDevice[];
  /** The device that computes; default: the allocation's `#device`, else its first device that is not `disk`. */
  readonly compute?: string;
  /** Bytes of a tensor once prepared (default: as stored). */
  readonly account?: TensorAccount;
  /**
   * The most a tensor holds while its group loads (computeLoadAccount: a converted weight's buffer
   * and f32 intermediate beside its result; default: `account`): the staging reserve holds a
   * streamed group loading at that peak.
   */
  readonly loadAccount?: TensorAccount;
  /** f32 working set of one group for the run's latent (estimateActivationBytes); the profile's modifier is applied here. */
  readonly activationBytes?: number;
  /** Groups the executor prefetches ahead of the one computing (default 1): the compute device stages 1 + prefetch streamed groups. */
  readonly prefetch?: number;
  /**
   * head-first (default): the first groups of the forward fill the first device of the allocation,
   * the last groups go to the overflow device. tail-first: the reverse.
   */
  readonly fillOrder?: FillOrder;
}

export interface GroupPlacement {
  readonly name: string;
  readonly kind: LayoutGroup['kind'];
  readonly device: string;
  /** Bytes of the group's tensors placed on `device`. */
  readonly bytes: number;
  /** Norms, buffers and fp32-island tensors of a group placed off the compute device stay on it. */
  readonly keptOnCompute: readonly string[];
  readonly keptBytes: number;
  readonly reason: string;
}

export interface DevicePlacement {
  readonly id: string;
  /** Bytes the allocation gives it (null: the overflow device, '*'). */
  readonly quota: number | null;
  /** Sum of the resident bytes of the tensors placed on it. */
  readonly bytes: number;
  /** Share of the model's bytes. */
  readonly share: number;
  readonly groups: readonly string[];
  readonly capacity: number | null;
  /** Activation headroom + staging (compute device only). */
  readonly reserve: number;
}

export interface Placement {
  readonly architecture: string;
  readonly allocation: string;
  readonly mode: AllocationSpec['mode'];
  readonly compute: string;
  readonly fillOrder: FillOrder;
  readonly groups: readonly GroupPlacement[];
  /** Every tensor's device. */
  readonly tensorDevices: Readonly<Record<string, string>>;
  readonly devices: readonly DevicePlacement[];
  readonly reserve: {
    readonly device: string;
    readonly activationBytes: number;
    readonly attentionMemoryModifier: number;
    readonly stagingBytes: number;
    readonly stagingGroups: number;
  };
  readonly totalBytes: number;
  /** Every device holds what it is given plus its reserve, and every group found a place. */
  readonly fits: boolean;
  readonly warnings: readonly string[];
  /** When it does not fit: an allocation that does (checked by planning it). */
  readonly suggestion: string | undefined;
}

interface Sized {
  readonly group: LayoutGroup;
  readonly index: number;
  readonly bytes: number;
  /** Tensors that stay on the compute device wherever the group goes, and their bytes. */
  readonly kept: readonly { name: string; bytes: number }[];
  readonly tensors: readonly { name: string; bytes: number }[];
}

function fail(message: string, value: unknown, hint: string): never {
  throw new DistorchError('PLAN_INVALID', message, { value, where: 'plan', hint });
}

function sizeGroups(layout: ModelLayout, account: TensorAccount): Sized[] {
  return layout.groups.map((group, index) => {
    const tensors: { name: string; bytes: number }[] = [];
    const kept: { name: string; bytes: number }[] = [];
    for (const t of group.tensors) {
      const owner = ownerOf(group, t);
      const bytes = account(t, owner);
      if (!Number.isSafeInteger(bytes) || bytes < 0) fail(`the memory account gave ${bytes} bytes for '${t.name}'`, bytes, 'an account returns whole non-negative bytes');
      tensors.push({ name: t.name, bytes });
      // Norm weights and buffers (no linear, at most one dimension) and fp32 islands stay where the compute is.
      if ((owner === undefined && t.shape.length <= 1) || owner?.fp32Island === true) kept.push({ name: t.name, bytes });
    }
    return { group, index, bytes: tensors.reduce((a, t) => a + t.bytes, 0), kept, tensors };
  });
}

function computeOf(spec: AllocationSpec, explicit: string | undefined): string {
  if (explicit !== undefined) return explicit;
  if (spec.mode === 'virtual') return spec.compute;
  if (spec.compute !== undefined) return spec.compute;
  const first = spec.entries.find((e) => e.device !== 'disk');
  if (first === undefined) fail("the allocation names only 'disk': no device to compute on", formatAllocation(spec), "add the compute device: 'cpu,4gb;disk,*'");
  return first.device;
}

interface Slot {
  readonly id: string;
  /** Infinity for the overflow device. */
  readonly quota: number;
  readonly overflow: boolean;
}

/** The devices in fill order with their byte quotas (the overflow device last). */
function slots(spec: AllocationSpec, compute: string, modelBytes: number, capacity: (id: string) => number | null, warnings: string[]): Slot[] {
  if (spec.mode === 'virtual') {
    const out: Slot[] = [{ id: compute, quota: Math.max(0, modelBytes - spec.virtualBytes), overflow: false }];
    let remaining = spec.virtualBytes;
    spec.donors.forEach((d, i) => {
      const cap = capacity(d) ?? Number.POSITIVE_INFINITY;
      const last = i === spec.donors.length - 1;
      const give = Math.min(remaining, cap);
      remaining -= give;
      out.push({ id: d, quota: last ? Number.POSITIVE_INFINITY : give, overflow: last });
    });
    if (remaining > 0 && Number.isFinite(remaining)) warnings.push(`the donors hold ${formatBytes(spec.virtualBytes - remaining)} of the ${formatBytes(spec.virtualBytes)} asked for`);
    return out;
  }
  const wildcard = spec.entries.find((e) => e.amount === '*');
  const fixed = spec.entries.filter((e) => e.amount !== '*');
  const out: Slot[] = [];
  if (spec.mode === 'ratio') {
    const sum = fixed.reduce((a, e) => a + (e.amount as number), 0);
    // Ratios share out the whole model; the last device takes what group boundaries leave over.
    fixed.forEach((e, i) => out.push({ id: e.device, quota: i === fixed.length - 1 ? Number.POSITIVE_INFINITY : ((e.amount as number) / sum) * modelBytes, overflow: i === fixed.length - 1 }));
    return out;
  }
  for (const e of fixed) {
    let quota = e.amount as number;
    if (spec.mode === 'fraction') {
      const cap = capacity(e.device);
      if (cap === null) fail(`'${e.device},${e.amount}' is a share of ${e.device}'s memory, which is unknown`, e.device, `give ${e.device} bytes instead ('${e.device},2gb')`);
      quota = Math.floor(quota * cap);
    }
    out.push({ id: e.device, quota, overflow: false });
  }
  if (wildcard !== undefined) out.push({ id: wildcard.device, quota: Number.POSITIVE_INFINITY, overflow: true });
  return out;
}

function modifierOf(devices: readonly PlanDevice[], id: string): number {
  return devices.find((d) => d.id === id)?.profile?.attentionMemoryModifier ?? 1;
}

/**
 * Places every group of a layout on a device, deterministically. Rules:
 * - whole groups move; the groups before and after the blocks (embedders, final layer) stay on the
 *   compute device, and so do the norms, buffers and fp32-island tensors of every group;
 * - the other groups fill the allocation's devices in its order (the `*` device last), head-first
 *   by default: a device takes consecutive groups while they fit its quota, then the next device
 *   takes over (a device is never returned to, so each holds one contiguous run of blocks);
 * - the compute device reserves the activation working set × its profile's attentionMemoryModifier
 *   and staging for (1 + prefetch) of the largest group streamed to it from another device: one
 *   held (`account`) and `prefetch` loading at their peak (`loadAccount`), or one loading when
 *   prefetch is 0.
 */
export function planPlacement(options: PlanOptions): Placement {
  const placement = place(options);
  return placement.fits ? placement : { ...placement, suggestion: suggest(options, placement) };
}

function place(options: PlanOptions): Placement {
  const { layout, devices } = options;
  const spec = typeof options.allocation === 'string' ? parseAllocation(options.allocation, { devices }).spec : validateAllocationSpec(options.allocation);
  const account = options.account ?? storedBytesAccount;
  const fillOrder = options.fillOrder ?? 'head-first';
  const prefetch = options.prefetch ?? 1;
  if (!Number.isSafeInteger(prefetch) || prefetch < 0) fail(`prefetch must be a whole number >= 0, got ${prefetch}`, prefetch, 'prefetch 1 overlaps one group read with the current group');
  const compute = computeOf(spec, options.compute);
  if (compute === 'disk') fail("'disk' cannot compute", compute, 'name cpu or a GPU as the compute device');
  const capacity = (id: string): number | null => (id === 'disk' ? null : (devices.find((d) => d.id === id)?.totalBytes ?? null));
  const warnings: string[] = [];

  const sized = sizeGroups(layout, account);
  const totalBytes = sized.reduce((a, g) => a + g.bytes, 0);
  const fill = slots(spec, compute, totalBytes, capacity, warnings);
  const used = new Map<string, number>();
  const add = (id: string, bytes: number): void => void used.set(id, (used.get(id) ?? 0) + bytes);
  const assigned = new Map<number, { device: string; reason: string }>();

  // Pinned: the groups around the blocks.
  for (const g of sized) {
    if (g.group.kind !== 'block') {
      assigned.set(g.index, { device: compute, reason: `${g.group.kind === 'pre' ? 'embedder' : 'final'} group: stays on the compute device` });
      add(compute, g.bytes);
    }
  }
  // Kept tensors of every block group count on the compute device up front.
  for (const g of sized) if (g.group.kind === 'block') add(compute, g.kept.reduce((a, t) => a + t.bytes, 0));

  const blocks = sized.filter((g) => g.group.kind === 'block');
  const order = fillOrder === 'head-first' ? blocks : [...blocks].reverse();
  let cursor = 0;
  const quotaUsed = new Map<string, number>([[compute, used.get(compute) ?? 0]]);
  const spill: string[] = [];
  for (const g of order) {
    const moving = g.bytes - g.kept.reduce((a, t) => a + t.bytes, 0);
    let placed = false;
    while (cursor < fill.length) {
      const slot = fill[cursor] as Slot;
      const have = quotaUsed.get(slot.id) ?? 0;
      // The kept tensors already count on the compute device; the rest of the group moves as one.
      const need = moving;
      if (slot.overflow || have + need <= slot.quota) {
        quotaUsed.set(slot.id, have + need);
        add(slot.id, moving);
        assigned.set(g.index, {
          device: slot.id,
          reason: slot.overflow ? `'${slot.id}' takes the rest ('*' or the last device of the allocation)` : `fits ${slot.id}'s quota of ${formatBytes(slot.quota)} (${formatBytes(have + need)} used, ${fillOrder})`,
        });
        placed = true;
        break;
      }
      spill.push(`${slot.id} full at ${g.group.name}`);
      cursor++;
    }
    if (!placed) {
      // No device left: the last device of the allocation holds it over its quota.
      const last = fill[fill.length - 1] as Slot;
      add(last.id, moving);
      assigned.set(g.index, { device: last.id, reason: `no device has room left: placed on ${last.id} over its quota` });
      warnings.push(`'${g.group.name}' does not fit any device's quota`);
    }
  }

  // Staging: the largest group that streams onto the compute device from elsewhere.
  const streamed = sized.filter((g) => (assigned.get(g.index)?.device ?? compute) !== compute);
  const largest = streamed.reduce((a, g) => Math.max(a, g.bytes - g.kept.reduce((s, t) => s + t.bytes, 0)), 0);
  const stagingGroups = streamed.length === 0 ? 0 : Math.min(1 + prefetch, streamed.length);
  // What a streamed group holds at its load's peak (the kept tensors stay on the compute device).
  const loadAccount = options.loadAccount ?? account;
  const peak = streamed.reduce((a, g) => {
    const kept = new Set(g.kept.map((t) => t.name));
    return Math.max(a, g.group.tensors.reduce((s, t) => (kept.has(t.name) ? s : s + loadAccount(t, ownerOf(g.group, t))), 0));
  }, 0);
  const stagingBytes = stagingGroups === 0 ? 0 : Math.max(peak, largest + peak * (stagingGroups - 1));
  const modifier = modifierOf(devices, compute);
  const activationBytes = Math.ceil((options.activationBytes ?? 0) * modifier);

  const groups: GroupPlacement[] = sized.map((g) => {
    const a = assigned.get(g.index) as { device: string; reason: string };
    const keptHere = a.device === compute ? [] : g.kept;
    const keptBytes = keptHere.reduce((s, t) => s + t.bytes, 0);
    return { name: g.group.name, kind: g.group.kind, device: a.device, bytes: g.bytes - keptBytes, keptOnCompute: keptHere.map((t) => t.name), keptBytes, reason: a.reason };
  });
  const tensorDevices: Record<string, string> = {};
  for (const g of sized) {
    const device = (assigned.get(g.index) as { device: string }).device;
    const kept = new Set(g.kept.map((t) => t.name));
    for (const t of g.tensors) tensorDevices[t.name] = kept.has(t.name) ? compute : device;
  }

  const ids: string[] = [];
  for (const id of [compute, ...fill.map((s) => s.id)]) if (!ids.includes(id)) ids.push(id);
  let fits = true;
  const devicePlacements: DevicePlacement[] = ids.map((id) => {
    const slot = fill.find((s) => s.id === id);
    const bytes = used.get(id) ?? 0;
    const reserve = id === compute ? activationBytes + stagingBytes : 0;
    const cap = capacity(id);
    if (cap !== null && bytes + reserve > cap) {
      fits = false;
      warnings.push(`${id} is asked to hold ${formatBytes(bytes + reserve)} (${formatBytes(bytes)} of weights${reserve > 0 ? ` + ${formatBytes(reserve)} reserve` : ''}) but has ${formatBytes(cap)}`);
    }
    return {
      id,
      quota: slot === undefined ? 0 : Number.isFinite(slot.quota) ? Math.floor(slot.quota) : null,
      bytes,
      share: totalBytes === 0 ? 0 : bytes / totalBytes,
      groups: groups.filter((g) => g.device === id).map((g) => g.name),
      capacity: cap,
      reserve,
    };
  });
  if (groups.some((g) => g.reason.startsWith('no device has room'))) fits = false;
  const pinned = used.get(compute) ?? 0;
  const computeSlot = fill.find((s) => s.id === compute);
  if (computeSlot !== undefined && Number.isFinite(computeSlot.quota) && pinned > computeSlot.quota) {
    warnings.push(`the groups that stay on ${compute} (embedders, final layer, norms) hold ${formatBytes(pinned)}, above its quota of ${formatBytes(computeSlot.quota)}`);
  }

  const placement: Placement = {
    architecture: layout.architecture,
    allocation: formatAllocation(spec),
    mode: spec.mode,
    compute,
    fillOrder,
    groups,
    tensorDevices,
    devices: devicePlacements,
    reserve: { device: compute, activationBytes, attentionMemoryModifier: modifier, stagingBytes, stagingGroups },
    totalBytes,
    fits,
    warnings,
    suggestion: undefined,
  };
  return placement;
}

const MiB = 1024 ** 2;

/**
 * An allocation that fits, in bytes mode: each device with a known capacity gets at most what it can
 * hold (the compute device less its reserve), rounded down to MiB, and `disk` (the mapped checkpoint,
 * never full) takes the rest. Checked by planning it; undefined when even that does not fit (the
 * compute device cannot hold the groups that must stay on it plus the reserve).
 */
function suggest(options: PlanOptions, failed: Placement): string | undefined {
  const compute = failed.compute;
  const capacity = (id: string): number | null => failed.devices.find((d) => d.id === id)?.capacity ?? null;
  let computeCut = 0;
  for (let attempt = 0; attempt < 4; attempt++) {
    const entries: string[] = [];
    for (const d of failed.devices) {
      if (d.id === 'disk') continue;
      const cap = capacity(d.id);
      let room = cap === null ? d.bytes : Math.min(d.bytes, cap - (d.id === compute ? failed.reserve.activationBytes + failed.reserve.stagingBytes + computeCut : 0));
      room = Math.max(0, Math.floor(room / MiB) * MiB);
      entries.push(`${d.id},${formatAllocationBytes(room)}`);
    }
    entries.push('disk,*');
    const text = entries.join(';');
    let retry: Placement;
    try {
      retry = place({ ...options, allocation: text, compute });
    } catch {
      return undefined;
    }
    if (retry.fits) return retry.allocation;
    // More groups now stream: the staging reserve grew. Take it off the compute device's share and retry.
    computeCut += retry.reserve.stagingBytes;
  }
  return undefined;
}

/**
 * What a placement asks its compute device to hold: the weights placed there (within its quota)
 * plus the reserve (activations + staging), which the quota does not include. A streaming
 * executor's budget for an allocation given as quotas.
 */
export function computeDeviceBytes(placement: Placement): number {
  const d = placement.devices.find((x) => x.id === placement.compute);
  return d === undefined ? placement.reserve.activationBytes + placement.reserve.stagingBytes : d.bytes + d.reserve;
}
