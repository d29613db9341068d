// Peak resident memory of this process during a run, split into what it owns (anonymous) and what
// the page cache maps for it (file-backed: mmap'd weights). Sampled from the kernel's counters in
// /proc/self/status (cheap at any mapping size; smaps_rollup walked every page each sample).
import { residentMemory } from '@ninodes/memory';

export interface PeakMemory {
  peakAnonBytes: number;
  peakFileBytes: number;
  samples: number;
}

export interface PeakMemorySampler {
  /** Takes one sample now (call at phase boundaries so short runs are measured too). */
  sample(): void;
  stop(): PeakMemory;
}

export function samplePeakMemory(intervalMs = 100): PeakMemorySampler {
  const peak: PeakMemory = { peakAnonBytes: 0, peakFileBytes: 0, samples: 0 };
  const sample = () => {
    const m = residentMemory();
    peak.peakAnonBytes = Math.max(peak.peakAnonBytes, m.anonymous);
    peak.peakFileBytes = Math.max(peak.peakFileBytes, m.fileBacked);
    peak.samples++;
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  timer.unref();
  return {
    sample,
    stop() {
      clearInterval(timer);
      sample();
      return { ...peak };
    },
  };
}
