// Peak resident memory of this process during a run, split into what it owns (anonymous) and what
// the page cache maps for it (file-backed: mmap'd weights). A thin view of device's MemorySampler
// (the one sampler; it reads the cheap /proc/self/status counters), shaped for the run report.
import { MemorySampler } from '@ninodes/device';

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
  // The sampler's whole-run peaks survive its sample cap, so a long run's early peak is kept.
  const sampler = new MemorySampler({ intervalMs }).start();
  return {
    sample: () => {
      sampler.sample();
    },
    stop() {
      const r = sampler.stop();
      return { peakAnonBytes: r.anonymous?.peak ?? 0, peakFileBytes: r.fileBacked?.peak ?? 0, samples: r.samples };
    },
  };
}
