// The weight cache with dynamic-VRAM semantics (ComfyUI's `--fast dynamic_vram`): nothing is
// loaded ahead of time; a weight is materialized on a device the first time an op asks for it,
// pinned while the op holds its lease, and evictable afterwards. A request that does not fit evicts
// unpinned weights; when nothing may be evicted it is served as a temporary that is freed when the
// lease is released. A request never fails for lack of budget alone.
import { MemoryError } from './error-codes.js';

/** Weights below this size are loaded first (ComfyUI's tiny-tensor rule). */
export const TINY_WEIGHT_BYTES = 64 * 1024;

export interface WeightDescriptor {
  readonly key: string;
  /** Bytes the materialized weight occupies on a device. */
  readonly bytes: number;
  /** Force-loaded modules rank with the tiny weights, ahead of everything else. */
  readonly forceLoad?: boolean;
}

export type LeaseKind = 'hit' | 'materialized' | 'temporary';

export interface Lease<T> {
  readonly value: T;
  readonly kind: LeaseKind;
  readonly bytes: number;
  readonly device: string;
  /** Unpins (or frees a temporary). Idempotent. */
  release(): void;
}

export interface CacheStats {
  /** Every acquire: requests = hits + materializations + temporaries + failures. */
  requests: number;
  hits: number;
  materializations: number;
  temporaries: number;
  /** Materializations that threw (nothing was kept). */
  failures: number;
  evictions: number;
  bytesMaterialized: number;
  bytesEvicted: number;
  bytesTemporary: number;
  /** Cached bytes now (never above the budget). */
  residentBytes: number;
  pinnedBytes: number;
  /** Temporaries alive now. */
  temporaryBytes: number;
  peakResidentBytes: number;
  /** Peak of cached plus temporary bytes: what the device really had to hold. */
  peakBytes: number;
  /** Resident bytes at the first eviction of the current pass (undefined when it has not evicted). */
  watermarkBytes: number | undefined;
}

export interface WeightCacheOptions<T> {
  /** Byte budget per device id. */
  budgets: Readonly<Record<string, number>>;
  /** Frees a materialized value (on eviction, or when a temporary's lease is released). */
  dispose?: (value: T, device: string, key: string) => void;
}

interface Weight {
  readonly model: string;
  readonly key: string;
  readonly bytes: number;
  /** Lower is more important: tiny and force-loaded first, then load order. */
  readonly rank: number;
}

interface Entry<T> {
  readonly weight: Weight;
  value: T | undefined;
  pending: Promise<T> | undefined;
  pins: number;
  lastPass: number;
  lastTick: number;
}

interface DeviceState<T> {
  readonly name: string;
  budget: number;
  entries: Map<string, Entry<T>>;
  stats: CacheStats;
  /** Models whose current pass evicted a weight it had used itself: the anti-thrash watermark. */
  passEvictedOwn: Set<string>;
}

const id = (model: string, key: string): string => `${model}\u0000${key}`;

function emptyStats(): CacheStats {
  return {
    requests: 0, hits: 0, materializations: 0, temporaries: 0, failures: 0, evictions: 0,
    bytesMaterialized: 0, bytesEvicted: 0, bytesTemporary: 0, residentBytes: 0, pinnedBytes: 0,
    temporaryBytes: 0, peakResidentBytes: 0, peakBytes: 0, watermarkBytes: undefined,
  };
}

function checkBytes(bytes: number, what: string): void {
  if (!Number.isSafeInteger(bytes) || bytes < 0) {
    throw new MemoryError('INVALID_ARGUMENT', `${what} must be a non-negative integer number of bytes, got ${bytes}`, { value: bytes });
  }
}

export class WeightCache<T> {
  private readonly devices = new Map<string, DeviceState<T>>();
  private readonly weights = new Map<string, Weight>();
  private readonly modelRecency = new Map<string, number>();
  private readonly dispose: ((value: T, device: string, key: string) => void) | undefined;
  private pass = 0;
  private tick = 0;
  private modelClock = 0;

  constructor(options: WeightCacheOptions<T>) {
    this.dispose = options.dispose;
    for (const [device, budget] of Object.entries(options.budgets)) this.setBudget(device, budget);
  }

  /**
   * Declares a model's weights in load order. Priority: tiny (< 64 KiB) and force-loaded weights
   * first, then the rest in load order. Re-registering a model replaces its priorities.
   */
  registerModel(model: string, weights: readonly WeightDescriptor[]): void {
    const first = weights.filter((w) => w.forceLoad === true || w.bytes < TINY_WEIGHT_BYTES);
    const rest = weights.filter((w) => !(w.forceLoad === true || w.bytes < TINY_WEIGHT_BYTES));
    [...first, ...rest].forEach((w, rank) => {
      checkBytes(w.bytes, `weight '${w.key}' bytes`);
      this.weights.set(id(model, w.key), { model, key: w.key, bytes: w.bytes, rank });
    });
    if (!this.modelRecency.has(model)) this.modelRecency.set(model, 0);
  }

  setBudget(device: string, bytes: number): void {
    checkBytes(bytes, `budget of ${device}`);
    const state = this.devices.get(device);
    if (state === undefined) {
      this.devices.set(device, { name: device, budget: bytes, entries: new Map(), stats: emptyStats(), passEvictedOwn: new Set() });
    } else {
      state.budget = bytes;
      this.shrink(device, bytes);
    }
  }

  budget(device: string): number {
    return this.state(device).budget;
  }

  /** Starts a new pass (a sampler step): recency and the anti-thrash watermark are per pass. */
  beginPass(): void {
    this.pass++;
    for (const s of this.devices.values()) {
      s.passEvictedOwn.clear();
      s.stats.watermarkBytes = undefined;
    }
  }

  /** Serves a weight synchronously; `materialize` builds it on a miss. */
  acquire(device: string, model: string, key: string, materialize: () => T): Lease<T> {
    const { state, weight } = this.begin(device, model, key);
    const hit = this.lookup(state, weight);
    if (hit !== undefined) {
      if (hit.pending !== undefined) {
        state.stats.failures++;
        throw new MemoryError('CACHE_PENDING', `'${key}' is being materialized asynchronously on ${device}`, { value: key, hint: 'use acquireAsync for weights materialized asynchronously' });
      }
      return this.hitLease(device, state, hit);
    }
    const cached = this.makeRoom(state, weight);
    let value: T;
    try {
      value = materialize();
    } catch (error) {
      this.failed(state, weight, false);
      throw error;
    }
    return cached ? this.stored(device, state, weight, value) : this.temporary(device, state, weight, value);
  }

  /** Serves a weight whose materialization is asynchronous (reserved and pinned while it runs). */
  async acquireAsync(device: string, model: string, key: string, materialize: () => Promise<T>): Promise<Lease<T>> {
    const { state, weight } = this.begin(device, model, key);
    const hit = this.lookup(state, weight);
    if (hit !== undefined) {
      hit.pins++;
      if (hit.pins === 1) state.stats.pinnedBytes += weight.bytes;
      state.stats.hits++;
      try {
        if (hit.pending !== undefined) await hit.pending;
      } catch (error) {
        hit.pins--;
        state.stats.hits--;
        state.stats.failures++;
        throw error;
      }
      return this.lease(device, state, hit, 'hit');
    }
    const cached = this.makeRoom(state, weight);
    if (!cached) {
      let value: T;
      try {
        value = await materialize();
      } catch (error) {
        this.failed(state, weight, false);
        throw error;
      }
      return this.temporary(device, state, weight, value);
    }
    // Reserve now: the entry is pinned and counted while the value is being built.
    const entry: Entry<T> = { weight, value: undefined, pending: undefined, pins: 1, lastPass: this.pass, lastTick: this.tick };
    const pending = materialize();
    entry.pending = pending;
    state.entries.set(id(model, key), entry);
    state.stats.pinnedBytes += weight.bytes;
    state.stats.residentBytes += weight.bytes;
    this.peaks(state);
    try {
      entry.value = await pending;
    } catch (error) {
      state.entries.delete(id(model, key));
      state.stats.pinnedBytes -= weight.bytes;
      this.failed(state, weight, true);
      throw error;
    } finally {
      entry.pending = undefined;
    }
    state.stats.materializations++;
    state.stats.bytesMaterialized += weight.bytes;
    return this.lease(device, state, entry, 'materialized');
  }

  /** Evicts unpinned weights until at most `targetBytes` are resident; returns the bytes freed. */
  shrink(device: string, targetBytes: number): number {
    const state = this.state(device);
    let freed = 0;
    for (const victim of this.victims(state, undefined)) {
      if (state.stats.residentBytes <= targetBytes) break;
      freed += this.evict(device, state, victim);
    }
    return freed;
  }

  /** Evicts every unpinned weight on every device (or one device). */
  evictAll(device?: string): number {
    let freed = 0;
    for (const d of device === undefined ? [...this.devices.keys()] : [device]) freed += this.shrink(d, 0);
    return freed;
  }

  /**
   * Drops a weight's materialized value on every device (disposed like an eviction), so the next
   * acquire materializes it again: for a weight whose source changed (a LoRA patch). A weight in use
   * (pinned or being materialized) is CACHE_PINNED. Returns the bytes freed.
   */
  invalidate(model: string, key: string): number {
    let freed = 0;
    for (const [device, state] of this.devices) {
      const entry = state.entries.get(id(model, key));
      if (entry === undefined) continue;
      if (entry.pins > 0 || entry.pending !== undefined) {
        throw new MemoryError('CACHE_PINNED', `weight '${key}' of model '${model}' is in use on ${device} and cannot be invalidated`, { value: key, where: model, hint: 'wait for the forward that holds it to finish' });
      }
      freed += this.evict(device, state, entry);
    }
    return freed;
  }

  stats(device: string): CacheStats {
    return { ...this.state(device).stats };
  }

  devicesWithBudgets(): string[] {
    return [...this.devices.keys()];
  }

  /** Keys resident on a device (materialized or being materialized). */
  resident(device: string): { model: string; key: string; bytes: number; pinned: boolean }[] {
    return [...this.state(device).entries.values()].map((e) => ({ model: e.weight.model, key: e.weight.key, bytes: e.weight.bytes, pinned: e.pins > 0 }));
  }

  has(device: string, model: string, key: string): boolean {
    return this.state(device).entries.has(id(model, key));
  }

  private state(device: string): DeviceState<T> {
    const s = this.devices.get(device);
    if (s === undefined) {
      throw new MemoryError('CACHE_UNKNOWN_DEVICE', `the weight cache has no budget for device '${device}'`, { value: device, hint: `known: ${[...this.devices.keys()].join(', ') || 'none'}; call setBudget first` });
    }
    return s;
  }

  private begin(device: string, model: string, key: string): { state: DeviceState<T>; weight: Weight } {
    const state = this.state(device);
    const weight = this.weights.get(id(model, key));
    if (weight === undefined) {
      throw new MemoryError('CACHE_UNKNOWN_WEIGHT', `weight '${key}' of model '${model}' was never registered`, { value: key, where: model, hint: 'registerModel() declares the weights and their load order' });
    }
    this.tick++;
    this.modelRecency.set(model, ++this.modelClock);
    state.stats.requests++;
    return { state, weight };
  }

  private lookup(state: DeviceState<T>, weight: Weight): Entry<T> | undefined {
    const entry = state.entries.get(id(weight.model, weight.key));
    if (entry !== undefined) {
      entry.lastPass = this.pass;
      entry.lastTick = this.tick;
    }
    return entry;
  }

  /** Is `a` less important than `b`? Older model first, then lower priority (higher rank). */
  private lessImportant(a: Weight, b: Weight): boolean {
    const ra = this.modelRecency.get(a.model) ?? 0;
    const rb = this.modelRecency.get(b.model) ?? 0;
    if (a.model !== b.model) return ra < rb;
    return a.rank > b.rank;
  }

  /**
   * Unpinned entries in eviction order: least recently used pass first, then the less recently used
   * model, then lower priority, then least recently used. A request may evict only weights less
   * important than itself (another, less recently used model; or a lower priority of its own model),
   * or stale weights not used for a whole pass. Its own model's weights already used in this pass
   * stay candidates only until the pass first evicts one of them (the watermark: beyond it, later
   * weights of the pass become temporaries instead of evicting their predecessors).
   */
  private victims(state: DeviceState<T>, requester: Weight | undefined): Entry<T>[] {
    const list = [...state.entries.values()].filter((e) => {
      if (e.pins > 0) return false;
      // Unused for a whole pass: stale, whatever its priority.
      if (requester === undefined || e.lastPass < this.pass - 1) return true;
      if (e.lastPass === this.pass && e.weight.model === requester.model && state.passEvictedOwn.has(requester.model)) return false;
      return this.lessImportant(e.weight, requester);
    });
    return list.sort((a, b) => {
      if (a.lastPass !== b.lastPass) return a.lastPass - b.lastPass;
      const ma = this.modelRecency.get(a.weight.model) ?? 0;
      const mb = this.modelRecency.get(b.weight.model) ?? 0;
      if (ma !== mb) return ma - mb;
      if (a.weight.rank !== b.weight.rank) return b.weight.rank - a.weight.rank;
      return a.lastTick - b.lastTick;
    });
  }

  /** Frees room for `weight`; false when it must be a temporary (nothing is evicted then). */
  private makeRoom(state: DeviceState<T>, weight: Weight): boolean {
    const free = (): number => state.budget - state.stats.residentBytes;
    if (weight.bytes > state.budget) return false;
    if (weight.bytes <= free()) return true;
    const chosen: Entry<T>[] = [];
    let room = free();
    for (const v of this.victims(state, weight)) {
      if (room >= weight.bytes) break;
      chosen.push(v);
      room += v.weight.bytes;
    }
    if (room < weight.bytes) return false;
    if (state.stats.watermarkBytes === undefined) state.stats.watermarkBytes = state.stats.residentBytes;
    for (const v of chosen) {
      if (v.lastPass === this.pass && v.weight.model === weight.model) state.passEvictedOwn.add(weight.model);
      this.evict(state.name, state, v);
    }
    return true;
  }

  private evict(device: string, state: DeviceState<T>, entry: Entry<T>): number {
    state.entries.delete(id(entry.weight.model, entry.weight.key));
    state.stats.residentBytes -= entry.weight.bytes;
    state.stats.evictions++;
    state.stats.bytesEvicted += entry.weight.bytes;
    if (entry.value !== undefined) this.dispose?.(entry.value, device, entry.weight.key);
    return entry.weight.bytes;
  }

  private failed(state: DeviceState<T>, weight: Weight, reserved: boolean): void {
    state.stats.failures++;
    if (reserved) state.stats.residentBytes -= weight.bytes;
  }

  private hitLease(device: string, state: DeviceState<T>, entry: Entry<T>): Lease<T> {
    entry.pins++;
    if (entry.pins === 1) state.stats.pinnedBytes += entry.weight.bytes;
    state.stats.hits++;
    return this.lease(device, state, entry, 'hit');
  }

  private stored(device: string, state: DeviceState<T>, weight: Weight, value: T): Lease<T> {
    const entry: Entry<T> = { weight, value, pending: undefined, pins: 1, lastPass: this.pass, lastTick: this.tick };
    state.entries.set(id(weight.model, weight.key), entry);
    state.stats.residentBytes += weight.bytes;
    state.stats.pinnedBytes += weight.bytes;
    state.stats.materializations++;
    state.stats.bytesMaterialized += weight.bytes;
    this.peaks(state);
    return this.lease(device, state, entry, 'materialized');
  }

  private lease(device: string, state: DeviceState<T>, entry: Entry<T>, kind: LeaseKind): Lease<T> {
    let released = false;
    return {
      value: entry.value as T,
      kind,
      bytes: entry.weight.bytes,
      device,
      release: () => {
        if (released) return;
        released = true;
        entry.pins--;
        if (entry.pins === 0) {
          state.stats.pinnedBytes -= entry.weight.bytes;
          // A lowered budget may have left pinned weights above it: settle now they are free.
          if (state.stats.residentBytes > state.budget) this.shrink(device, state.budget);
        }
      },
    };
  }

  private temporary(device: string, state: DeviceState<T>, weight: Weight, value: T): Lease<T> {
    state.stats.temporaries++;
    state.stats.bytesTemporary += weight.bytes;
    state.stats.temporaryBytes += weight.bytes;
    this.peaks(state);
    let released = false;
    return {
      value,
      kind: 'temporary',
      bytes: weight.bytes,
      device,
      release: () => {
        if (released) return;
        released = true;
        state.stats.temporaryBytes -= weight.bytes;
        this.dispose?.(value, device, weight.key);
      },
    };
  }

  private peaks(state: DeviceState<T>): void {
    state.stats.peakResidentBytes = Math.max(state.stats.peakResidentBytes, state.stats.residentBytes);
    state.stats.peakBytes = Math.max(state.stats.peakBytes, state.stats.residentBytes + state.stats.temporaryBytes);
  }
}
