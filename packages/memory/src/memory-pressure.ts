// Watches system memory and asks the weight cache to shrink when the machine runs low, with
// hysteresis so it does not flap: pressure starts at `thresholdPercent` used and ends only below
// `thresholdPercent - hysteresisPercent` (default 85% / 80%). "System memory" is what this process
// may use: device's effective figures, where a cgroup limit tighter than the host RAM is the total —
// in a container, the host's /proc/meminfo alone may never reach the threshold before the OOM kill.
import { type SystemRoots, readSystemMemory } from '@ninodes/device';
import { mallocTrim } from '@ninodes/kernels';
import { MemoryError } from './error-codes.js';
import type { WeightCache } from './weight-cache.js';

/** Total and still-available bytes, as the monitor judges them. */
export interface MemoryReading {
  readonly total: number;
  readonly available: number;
}

/**
 * The effective memory of this process: the cgroup limit and its headroom when tighter than
 * MemTotal / MemAvailable. Throws when neither meminfo nor a cgroup limit can be read (pressure
 * cannot be judged; a monitor that never triggers would be a silent fallback).
 */
export function effectiveMemory(roots: SystemRoots = {}): MemoryReading {
  const m = readSystemMemory(roots);
  if (m.totalBytes === null || m.freeBytes === null) {
    throw new MemoryError('PRESSURE_UNREADABLE', 'cannot read system memory (/proc/meminfo or a cgroup limit)', {
      value: roots,
      where: 'MemoryPressureMonitor',
      hint: 'memory pressure needs Linux procfs; pass `read` to supply readings elsewhere',
    });
  }
  return { total: m.totalBytes, available: m.freeBytes };
}

export interface PressureReading {
  readonly usedPercent: number;
  readonly underPressure: boolean;
  /** Bytes to free to get back below the release level (0 when not under pressure). */
  readonly bytesToFree: number;
}

export interface MemoryPressureOptions {
  thresholdPercent?: number;
  hysteresisPercent?: number;
  /** Poll period for start() (default 1000 ms). */
  intervalMs?: number;
  /** Where readings come from (default `effectiveMemory(roots)`: meminfo capped by the cgroup limit). */
  read?: () => MemoryReading;
  /** procfs / sysfs roots for the default reader (tests point them at recorded trees). */
  roots?: SystemRoots;
  /** Called on every check while under pressure. */
  onPressure: (bytesToFree: number, reading: PressureReading) => void;
}

export class MemoryPressureMonitor {
  readonly thresholdPercent: number;
  readonly hysteresisPercent: number;
  private readonly intervalMs: number;
  private readonly read: () => MemoryReading;
  private readonly onPressure: MemoryPressureOptions['onPressure'];
  private pressure = false;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(options: MemoryPressureOptions) {
    this.thresholdPercent = options.thresholdPercent ?? 85;
    this.hysteresisPercent = options.hysteresisPercent ?? 5;
    if (!(this.thresholdPercent > 0 && this.thresholdPercent <= 100) || !(this.hysteresisPercent >= 0 && this.hysteresisPercent < this.thresholdPercent)) {
      throw new MemoryError('INVALID_ARGUMENT', `memory pressure threshold ${this.thresholdPercent}% with hysteresis ${this.hysteresisPercent}% is not usable`, {
        value: { thresholdPercent: this.thresholdPercent, hysteresisPercent: this.hysteresisPercent },
        hint: 'threshold in (0, 100], hysteresis in [0, threshold)',
      });
    }
    this.intervalMs = options.intervalMs ?? 1000;
    const roots = options.roots ?? {};
    this.read = options.read ?? (() => effectiveMemory(roots));
    this.onPressure = options.onPressure;
  }

  get underPressure(): boolean {
    return this.pressure;
  }

  check(): PressureReading {
    const { total, available } = this.read();
    const used = Math.max(0, total - available);
    const usedPercent = total > 0 ? (used / total) * 100 : 0;
    const release = this.thresholdPercent - this.hysteresisPercent;
    if (!this.pressure && usedPercent >= this.thresholdPercent) this.pressure = true;
    else if (this.pressure && usedPercent < release) this.pressure = false;
    const bytesToFree = this.pressure ? Math.max(0, Math.ceil(used - (release / 100) * total)) : 0;
    const reading = { usedPercent, underPressure: this.pressure, bytesToFree };
    if (this.pressure) this.onPressure(bytesToFree, reading);
    return reading;
  }

  start(): void {
    if (this.timer !== undefined) return;
    // An unreadable source throws here, to the caller, not later from inside the timer.
    this.read();
    this.timer = setInterval(() => this.check(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}

/** An onPressure handler: shrinks the cache on `device` by the bytes asked, then trims malloc. */
export function shrinkCacheOnPressure<T>(cache: WeightCache<T>, device = 'cpu'): (bytesToFree: number) => number {
  return (bytesToFree) => {
    const resident = cache.stats(device).residentBytes;
    const freed = cache.shrink(device, Math.max(0, resident - bytesToFree));
    if (freed > 0) mallocTrim();
    return freed;
  };
}
