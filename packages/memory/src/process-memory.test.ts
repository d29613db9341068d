import { describe, expect, it } from 'vitest';
import { processMemory, processMemoryFrom, residentMemory, residentMemoryFrom, systemMemory } from './process-memory.js';
import { SafetensorsFile } from './safetensors-file.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { tensorSources, writeSafetensors } from './safetensors-writer.js';

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
  });

  it('counts touched checkpoint pages as file-backed, not anonymous', async () => {
    const live = processMemory();
    expect(live.rss).toBeGreaterThan(0);
    expect(live.anonymous + live.fileBacked).toBe(live.rss);
    const sys = systemMemory();
    expect(sys.total).toBeGreaterThan(sys.available);

    const dir = mkdtempSync(join(tmpdir(), 'ninodes-pm-'));
    try {
      const path = join(dir, 'touch.safetensors');
      const mib = 2 ** 20;
      const chunk = Tensor.fromArray('u8', [8 * mib], new Uint8Array(8 * mib).fill(7));
      await writeSafetensors(path, tensorSources({ a: chunk, b: chunk, c: chunk, d: chunk }));
      const st = SafetensorsFile.open(path);
      const before = processMemory();
      for (const e of st.entries()) st.touch(e.name);
      const after = processMemory();
      const fileGrowth = after.fileBacked - before.fileBacked;
      const anonGrowth = after.anonymous - before.anonymous;
      expect(fileGrowth).toBeGreaterThan(30 * mib);
      expect(anonGrowth).toBeLessThan(8 * mib);
      st.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
