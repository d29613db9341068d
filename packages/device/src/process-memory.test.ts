import { describe, expect, it } from 'vitest';
import { processMemory, processMemoryFrom, residentMemory, residentMemoryFrom } from './process-memory.js';

describe('process memory', () => {
  it('splits resident bytes into anonymous and file-backed from smaps_rollup', () => {
    const text = `55d0c0000000-7ffd00000000 ---p 00000000 00:00 0                          [rollup]
Rss:              204800 kB
Pss:              150000 kB
Pss_Anon:          80000 kB
Pss_File:          70000 kB
Anonymous:         81920 kB
Swap:                 12 kB
`;
    expect(processMemoryFrom(text)).toEqual({ rss: 204800 * 1024, anonymous: 81920 * 1024, fileBacked: (204800 - 81920) * 1024, pssFile: 70000 * 1024, swap: 12 * 1024 });
  });

  it('reads the cheap /proc/<pid>/status counters the same way', () => {
    const text = `Name:\tnode\nVmRSS:\t  207000 kB\nRssAnon:\t   81920 kB\nRssFile:\t  122000 kB\nRssShmem:\t     880 kB\nVmSwap:\t      12 kB\n`;
    expect(residentMemoryFrom(text)).toEqual({ rss: (81920 + 122000 + 880) * 1024, anonymous: 81920 * 1024, fileBacked: (122000 + 880) * 1024, swap: 12 * 1024 });
    // Live: the counters agree with the exact smaps_rollup walk to within a few MiB.
    const fast = residentMemory();
    const exact = processMemory();
    expect(Math.abs(fast.anonymous - exact.anonymous)).toBeLessThan(16 * 2 ** 20);
    expect(Math.abs(fast.rss - exact.rss)).toBeLessThan(16 * 2 ** 20);
    expect(exact.anonymous + exact.fileBacked).toBe(exact.rss);
  });

  it('throws when the procfs file is absent (not Linux, or a wrong root)', () => {
    expect(() => residentMemory({ procRoot: '/nonexistent-proc' })).toThrow(/nonexistent-proc/);
  });
});
