import { NinodesError } from '@ninodes/kernels';
import { type ResidentMemory, residentMemory } from '@ninodes/device';
import type { GroupHooks, LayoutGroup, ModelLayout } from '@ninodes/quant';
import { DistorchError } from './error-codes.js';

/** One group's weights, read and prepared by a GroupLoader. */
export interface LoadedGroup<T> {
  readonly value: T;
  /** Bytes it holds (what the budget counts). */
  readonly bytes: number;
  /** Frees what it holds. Called once, when the executor evicts the group. */
  release(): void;
  /** Seconds the load held the JS thread (synchronous conversion): time the model could not compute. */
  readonly blockingSeconds?: number;
  /** Bytes of mapped file pages the load made resident (populated) for the compute to use in place. */
  readonly populatedBytes?: number;
}

/** How the executor loads a group. */
export interface LoadOptions {
  /**
   * The group is placed off the compute device: read again each time it is needed, usually ahead of
   * its use. A loader prefetches what the compute would otherwise fault in (populates mapped pages);
   * a resident group (false) is loaded once on first use and its pages are left to the compute.
   */
  readonly streamed: boolean;
}

/** What loading a group costs: what it holds once loaded, and the most a load of it holds while in flight. */
export interface GroupFootprint {
  /** Bytes the loaded group holds (what `LoadedGroup.bytes` will say). */
  readonly bytes: number;
  /**
   * The most a load holds before it resolves (at least `bytes`): its result, plus the buffers it
   * reads stored bytes into, the intermediates of conversions, the mapped pages it populates.
   */
  readonly peakBytes: number;
}

/** Reads one group's weights from where they are placed and prepares them for compute. */
export interface GroupLoader<T> {
  load(group: LayoutGroup, options?: LoadOptions): Promise<LoadedGroup<T>>;
  /**
   * What a load of the group will cost (default: its bytes as stored, for both): a load in flight is
   * counted at `peakBytes`, and room is made for that much before it starts.
   */
  footprint?(group: LayoutGroup, options?: LoadOptions): GroupFootprint;
  /**
   * Bytes the loads in flight hold now (resident, so in the measured RSS), each at most its
   * `peakBytes`: the executor counts a load in flight at its peak, so it takes these out of the
   * measurement rather than counting them twice.
   */
  inFlightBytes?(): number;
  /** Page-cache hint for the group's file pages (prefetch `willneed`, after release `dontneed`). */
  advise?(group: LayoutGroup, advice: 'willneed' | 'dontneed'): void;
  /** Bytes of released buffers the loader keeps for reuse: resident, but the next load takes them instead of allocating. */
  idleBytes?(): number;
  /** Frees the buffers kept for reuse; returns the bytes freed. */
  trim?(): number;
}

/** Reads this process's resident memory (default: @ninodes/device's `residentMemory`, /proc/self/status). */
export type ResidentProbe = () => Pick<ResidentMemory, 'anonymous' | 'fileBacked'>;

export interface StreamingExecutorOptions<T> {
  readonly layout: ModelLayout;
  /** Device of every group (a Placement's `groups[].device`). */
  readonly placement: { readonly compute: string; readonly groups: readonly { readonly name: string; readonly device: string }[] };
  readonly loader: GroupLoader<T>;
  /**
   * Resident bytes the run may hold beyond what the process held when the executor was made
   * (its baseline: runtime, code, the model's skeleton): weights, their file-backed pages,
   * activations — measured, anonymous plus file-backed RSS, never less than what the loaders say
   * they hold. A group is never refused: over the budget, the least-soon-needed streamed groups
   * are evicted, and a group that still does not fit is loaded anyway and counted in `overBudgetLoads`.
   */
  readonly budgetBytes: number;
  /** Streamed groups read ahead of the one computing (default 1). */
  readonly prefetch?: number;
  /**
   * How resident memory is measured, sampled at every hook and before every load (default
   * `residentMemory`, cheap). `false`: nothing is measured and the budget counts what the loaders
   * report (for tests of the schedule alone).
   */
  readonly measure?: ResidentProbe | false;
}

/** What one pass through the model (a sampler step) cost in weight traffic. */
export interface StepStats {
  readonly step: number;
  /** Bytes read for streamed groups during the step (lazy loads of resident groups included in `bytesLoaded`). */
  readonly bytesStreamed: number;
  readonly bytesLoaded: number;
  readonly loads: number;
  /** Groups found loaded (or in flight) when the model asked for them. */
  readonly hits: number;
  readonly evictions: number;
  readonly overBudgetLoads: number;
  /** Seconds the model waited in beforeGroup for a group's weights. */
  readonly waitSeconds: number;
  /** Seconds the loads took, summed over loads (they overlap compute and each other). */
  readonly loadSeconds: number;
  /** Seconds the loads held the JS thread (synchronous conversions), summed. */
  readonly blockingSeconds: number;
  /**
   * Seconds of loading (reads, populating mapped pages, conversions) hidden behind compute, counted
   * when the model first uses a load: its duration less what the model waited for it and what it
   * held the JS thread (`blockingSeconds`), at least 0. A lower bound: blocking inside a wait is
   * counted twice.
   */
  readonly hiddenSeconds: number;
  /** Seconds of those loads the model did not compute through: waited for, or blocked by. */
  readonly exposedSeconds: number;
  /** Bytes of mapped file pages the loads populated (read in and mapped off the JS thread). */
  readonly bytesPopulated: number;
  /** Share of the loads' time hidden behind compute: hidden / (hidden + exposed); 1 when nothing was loaded. */
  readonly overlap: number;
  /** Peak bytes the loaders said they held (resident groups + streamed groups): the accounted number. */
  readonly peakHeldBytes: number;
  /** Peak of the process's RSS (anonymous + file-backed) sampled at the hooks and loads; 0 when not measured. */
  readonly peakResidentBytes: number;
  readonly peakAnonymousBytes: number;
  readonly peakFileBackedBytes: number;
  /** Peak of what the budget counts: RSS over the baseline less the loader's idle buffers (the measured number). */
  readonly peakMeasuredBytes: number;
  /** RSS when the executor was made (0 when not measured) and the budget, for comparing the peaks. */
  readonly baselineBytes: number;
  readonly budgetBytes: number;
}

interface Slot<T> {
  readonly index: number;
  readonly group: LayoutGroup;
  readonly streamed: boolean;
  /** What the load in flight is counted at (its footprint's peak); once loaded, `loaded.bytes`. */
  readonly peak: number;
  state: 'loading' | 'loaded';
  promise: Promise<LoadedGroup<T>>;
  loaded: LoadedGroup<T> | undefined;
  pins: number;
  /** Seconds from the load's start to its end; undefined while loading. */
  seconds: number | undefined;
  /** Whether the load's hidden / exposed time was counted (at its first use). */
  used: boolean;
}

const now = (): number => performance.now() / 1000;

/**
 * Runs a placement on the compute device as the model's GroupHooks. Groups placed on the compute
 * device load lazily on first use and stay. Groups placed elsewhere (the `disk` donor: the mapped
 * checkpoint) are read just in time: beforeGroup waits for the current group, then starts reading
 * the next `prefetch` streamed groups (after `advise('willneed')`) while the model computes.
 * After use a streamed group stays while the budget allows; when room is needed, the group whose
 * next use is farthest away (the schedule is the layout order, repeated every step) is evicted,
 * released and its pages advised `dontneed`. The budget is checked against measured resident
 * memory (anonymous + file-backed RSS over the baseline), not only what the loaders report.
 */
export class StreamingExecutor<T> implements GroupHooks {
  private readonly groups: readonly LayoutGroup[];
  private readonly index = new Map<string, number>();
  private readonly streamed: boolean[];
  /** Each group's footprint (a load in flight is counted at its peak). */
  private readonly footprints: GroupFootprint[];
  private readonly slots = new Map<number, Slot<T>>();
  private readonly loader: GroupLoader<T>;
  private readonly budget: number;
  private readonly prefetch: number;
  private readonly probe: ResidentProbe | undefined;
  private readonly baseline: number;
  private position = -1;
  private step = 0;
  private current: Mutable<StepStats>;
  private readonly finished: StepStats[] = [];
  private streamedHeld = 0;
  private residentHeld = 0;
  private failure: unknown;

  constructor(options: StreamingExecutorOptions<T>) {
    const { layout, placement } = options;
    this.groups = layout.groups;
    this.loader = options.loader;
    if (!Number.isSafeInteger(options.budgetBytes) || options.budgetBytes < 0) {
      throw new DistorchError('EXECUTOR_INVALID', `budgetBytes must be a whole number of bytes >= 0, got ${options.budgetBytes}`, { value: options.budgetBytes, where: 'StreamingExecutor' });
    }
    this.budget = options.budgetBytes;
    this.prefetch = options.prefetch ?? 1;
    if (!Number.isSafeInteger(this.prefetch) || this.prefetch < 0) {
      throw new DistorchError('EXECUTOR_INVALID', `prefetch must be a whole number >= 0, got ${this.prefetch}`, { value: this.prefetch, where: 'StreamingExecutor' });
    }
    this.probe = options.measure === false ? undefined : (options.measure ?? residentMemory);
    if (this.probe !== undefined) {
      const m = this.probe();
      this.baseline = m.anonymous + m.fileBacked;
    } else this.baseline = 0;
    this.current = this.empty(0);
    const device = new Map(placement.groups.map((g) => [g.name, g.device]));
    this.groups.forEach((g, i) => {
      this.index.set(g.name, i);
      if (!device.has(g.name)) {
        throw new DistorchError('EXECUTOR_INVALID', `the placement has no device for group '${g.name}'`, { value: g.name, where: 'StreamingExecutor', hint: 'plan the same layout the executor runs' });
      }
    });
    this.streamed = this.groups.map((g) => device.get(g.name) !== placement.compute);
    this.footprints = this.groups.map((g, i) => {
      const stored = g.tensors.reduce((a, t) => a + t.byteLength, 0);
      return this.loader.footprint?.(g, { streamed: this.streamed[i] as boolean }) ?? { bytes: stored, peakBytes: stored };
    });
  }

  /** The weights of a group between its beforeGroup and afterGroup. */
  group(name: string): T {
    const slot = this.slots.get(this.indexOf(name));
    if (slot?.loaded === undefined || slot.pins === 0) {
      throw new DistorchError('EXECUTOR_NOT_READY', `group '${name}' is not held: ask for it between beforeGroup and afterGroup`, { value: name, where: 'StreamingExecutor.group' });
    }
    return slot.loaded.value;
  }

  async beforeGroup(name: string): Promise<void> {
    this.rethrow();
    const i = this.indexOf(name);
    if (i <= this.position) this.endStep();
    this.position = i;
    let slot = this.slots.get(i);
    const start = now();
    if (slot === undefined) {
      this.makeRoom(i, this.peakOf(i), true);
      slot = this.start(i);
    } else {
      this.current.hits++;
    }
    slot.pins++;
    // Read ahead before waiting: the next groups load while this one finishes loading and computes.
    this.readAhead(i);
    let waited = 0;
    try {
      await slot.promise;
    } finally {
      waited = now() - start;
      this.current.waitSeconds += waited;
    }
    if (!slot.used && slot.seconds !== undefined) {
      slot.used = true;
      const exposed = Math.min(slot.seconds, waited + (slot.loaded?.blockingSeconds ?? 0));
      this.current.exposedSeconds += exposed;
      this.current.hiddenSeconds += slot.seconds - exposed;
    }
    this.sampleMemory();
  }

  async afterGroup(name: string): Promise<void> {
    this.rethrow();
    const slot = this.slots.get(this.indexOf(name));
    if (slot === undefined || slot.pins === 0) {
      throw new DistorchError('EXECUTOR_NOT_READY', `afterGroup('${name}') without its beforeGroup`, { value: name, where: 'StreamingExecutor.afterGroup' });
    }
    slot.pins--;
    // Over the budget (a group loaded over it, or activations grew), streamed groups are given back
    // as soon as they are done with, farthest next use first.
    let over = this.used() - this.budget;
    if (over > 0) {
      const victims = [...this.slots.values()]
        .filter((s) => s.streamed && s.pins === 0 && s.state === 'loaded')
        .sort((a, b) => this.distance(b.index) - this.distance(a.index));
      for (const v of victims) {
        if (over <= 0) break;
        over -= this.heldBytes(v);
        this.evict(v, true);
      }
    }
  }

  /**
   * Gives back at least `bytes` if it can by evicting unpinned streamed groups, farthest next use
   * first (a MemoryPressureMonitor's onPressure handler); returns the bytes freed. Resident groups
   * and groups in use stay. The budget is unchanged: groups are read again when needed.
   */
  shrink(bytes: number): number {
    let freed = 0;
    const victims = [...this.slots.values()]
      .filter((s) => s.streamed && s.pins === 0 && s.state === 'loaded')
      .sort((a, b) => this.distance(b.index) - this.distance(a.index));
    for (const v of victims) {
      if (freed >= bytes) break;
      freed += this.heldBytes(v);
      this.evict(v, true);
    }
    // Buffers kept for reuse are resident too: under pressure they are dropped (freed when collected).
    if (freed < bytes) freed += this.loader.trim?.() ?? 0;
    return freed;
  }

  /** Statistics of every finished step, then of the step in progress. */
  stats(): StepStats[] {
    return [...this.finished, { ...this.current, overlap: overlapOf(this.current) }];
  }

  /** Resident bytes the budget counts now (measured; the accounted bytes when not measured). */
  usedBytes(): number {
    return this.used();
  }

  /** Bytes held now: groups resident on the compute device and streamed groups. */
  held(): { resident: number; streamed: number } {
    return { resident: this.residentHeld, streamed: this.streamedHeld };
  }

  /** Names of the groups loaded or loading now. */
  loadedGroups(): string[] {
    return [...this.slots.keys()].sort((a, b) => a - b).map((i) => (this.groups[i] as LayoutGroup).name);
  }

  /** Waits for reads in flight, then releases everything; a read ahead that failed unseen is thrown here. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.slots.values()].map((s) => s.promise));
    for (const slot of [...this.slots.values()]) this.evict(slot, false);
    this.rethrow();
  }

  private indexOf(name: string): number {
    const i = this.index.get(name);
    if (i === undefined) {
      throw new DistorchError('EXECUTOR_UNKNOWN_GROUP', `the model ran group '${name}', which is not in the layout`, { value: name, where: 'StreamingExecutor', hint: `groups: ${this.groups.slice(0, 4).map((g) => g.name).join(', ')}, ...` });
    }
    return i;
  }

  private rethrow(): void {
    if (this.failure !== undefined) {
      const f = this.failure;
      this.failure = undefined;
      throw f;
    }
  }

  /** Steps from the current position until group j runs again (the forward repeats every step). */
  private distance(j: number): number {
    const n = this.groups.length;
    return (((j - this.position) % n) + n) % n;
  }

  private start(i: number): Slot<T> {
    const group = this.groups[i] as LayoutGroup;
    const streamed = this.streamed[i] as boolean;
    // Counted at its peak from the start: room was made for that much.
    const peak = this.peakOf(i);
    if (streamed) this.streamedHeld += peak;
    else this.residentHeld += peak;
    this.current.peakHeldBytes = Math.max(this.current.peakHeldBytes, this.streamedHeld + this.residentHeld);
    const t0 = now();
    const slot: Slot<T> = { index: i, group, streamed, peak, state: 'loading', promise: undefined as unknown as Promise<LoadedGroup<T>>, loaded: undefined, pins: 0, seconds: undefined, used: false };
    slot.promise = this.loader.load(group, { streamed }).then(
      (loaded) => {
        slot.loaded = loaded;
        slot.state = 'loaded';
        this.current.loads++;
        slot.seconds = now() - t0;
        this.current.loadSeconds += slot.seconds;
        this.current.bytesPopulated += loaded.populatedBytes ?? 0;
        this.current.blockingSeconds += loaded.blockingSeconds ?? 0;
        this.current.bytesLoaded += loaded.bytes;
        if (streamed) this.current.bytesStreamed += loaded.bytes;
        // Loaded: what it holds now (its buffers and intermediates given back).
        if (streamed) this.streamedHeld += loaded.bytes - peak;
        else this.residentHeld += loaded.bytes - peak;
        this.current.peakHeldBytes = Math.max(this.current.peakHeldBytes, this.streamedHeld + this.residentHeld);
        return loaded;
      },
      (error: unknown) => {
        this.slots.delete(i);
        if (streamed) this.streamedHeld -= peak;
        else this.residentHeld -= peak;
        throw error;
      },
    );
    // A failed prefetch surfaces at the next hook, not as an unhandled rejection.
    slot.promise.catch((error: unknown) => {
      if (slot.pins === 0) this.failure ??= error;
    });
    this.slots.set(i, slot);
    return slot;
  }

  private heldBytes(slot: Slot<T>): number {
    return slot.loaded?.bytes ?? slot.peak;
  }

  private peakOf(i: number): number {
    const f = this.footprints[i] as GroupFootprint;
    return Math.max(f.bytes, f.peakBytes);
  }

  /**
   * Frees room for `bytes` of group j by evicting unpinned, loaded streamed groups whose next use
   * comes later than j's, farthest first. `must`: j is needed now; when the room still cannot be
   * made it is loaded over the budget. Returns whether j fits.
   */
  private makeRoom(j: number, bytes: number, must: boolean): boolean {
    if (!(this.streamed[j] as boolean)) return true;
    const need = this.distance(j);
    const victims = [...this.slots.values()]
      .filter((s) => s.streamed && s.pins === 0 && s.state === 'loaded' && s.index !== j && this.distance(s.index) > need)
      .sort((a, b) => this.distance(b.index) - this.distance(a.index));
    let free = this.budget - this.used();
    const chosen: Slot<T>[] = [];
    for (const v of victims) {
      if (free >= bytes) break;
      chosen.push(v);
      free += this.heldBytes(v);
    }
    if (free < bytes && !must) return false;
    for (const v of chosen) this.evict(v, true);
    if (free < bytes) this.current.overBudgetLoads++;
    return true;
  }

  private readAhead(i: number): void {
    let ahead = 0;
    for (let step = 1; step < this.groups.length && ahead < this.prefetch; step++) {
      const j = (i + step) % this.groups.length;
      if (!(this.streamed[j] as boolean)) continue;
      ahead++;
      if (this.slots.has(j)) continue;
      if (!this.makeRoom(j, this.peakOf(j), false)) break;
      this.loader.advise?.(this.groups[j] as LayoutGroup, 'willneed');
      this.start(j);
    }
  }

  private evict(slot: Slot<T>, count: boolean): void {
    this.slots.delete(slot.index);
    const bytes = this.heldBytes(slot);
    if (slot.streamed) this.streamedHeld -= bytes;
    else this.residentHeld -= bytes;
    slot.loaded?.release();
    if (slot.streamed) this.loader.advise?.(slot.group, 'dontneed');
    if (count) this.current.evictions++;
  }

  /**
   * What the budget counts: the RSS measured now over the baseline, less the loader's idle buffers
   * (the next load reuses them), with each load in flight at its peak: what the loads already hold
   * is in the measurement too, so it is taken out there (`inFlightBytes`) and every byte counts
   * once. Never less than what the loaders report. Updates the step's peaks.
   */
  private used(): number {
    const accounted = this.streamedHeld + this.residentHeld;
    const c = this.current;
    c.peakHeldBytes = Math.max(c.peakHeldBytes, accounted);
    if (this.probe === undefined) return accounted;
    const m = this.probe();
    const rss = m.anonymous + m.fileBacked;
    const measured = rss - this.baseline - (this.loader.idleBytes?.() ?? 0);
    c.peakResidentBytes = Math.max(c.peakResidentBytes, rss);
    c.peakAnonymousBytes = Math.max(c.peakAnonymousBytes, m.anonymous);
    c.peakFileBackedBytes = Math.max(c.peakFileBackedBytes, m.fileBacked);
    c.peakMeasuredBytes = Math.max(c.peakMeasuredBytes, measured);
    let pending = 0;
    for (const s of this.slots.values()) if (s.state === 'loading') pending += s.peak;
    const holding = Math.min(pending, this.loader.inFlightBytes?.() ?? 0);
    return Math.max(accounted, measured - holding + pending);
  }

  private sampleMemory(): void {
    this.used();
  }

  private empty(step: number): Mutable<StepStats> {
    return { step, bytesStreamed: 0, bytesLoaded: 0, loads: 0, hits: 0, evictions: 0, overBudgetLoads: 0, waitSeconds: 0, loadSeconds: 0, blockingSeconds: 0, hiddenSeconds: 0, exposedSeconds: 0, bytesPopulated: 0, overlap: 1, peakHeldBytes: 0, peakResidentBytes: 0, peakAnonymousBytes: 0, peakFileBackedBytes: 0, peakMeasuredBytes: 0, baselineBytes: this.baseline, budgetBytes: this.budget };
  }

  private endStep(): void {
    this.finished.push({ ...this.current, overlap: overlapOf(this.current) });
    this.step++;
    this.current = this.empty(this.step);
    this.sampleMemory();
  }
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function overlapOf(s: StepStats): number {
  const total = s.hiddenSeconds + s.exposedSeconds;
  return total === 0 ? 1 : s.hiddenSeconds / total;
}
