import { describe, expect, it } from 'vitest';
import { SafetensorsFile } from './safetensors-file.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processMemory } from '@ninodes/device';
import { Tensor, pageSize } from '@ninodes/kernels';
import { tensorSources, writeSafetensors } from './safetensors-writer.js';

// The /proc parsers live in @ninodes/device; this checks what they report for memory's own mappings.
describe('process memory', () => {
  it('counts touched checkpoint pages as file-backed, not anonymous', async () => {
    const live = processMemory();
    expect(live.rss).toBeGreaterThan(0);
    expect(live.anonymous + live.fileBacked).toBe(live.rss);

    const dir = mkdtempSync(join(tmpdir(), 'ninodes-pm-'));
    try {
      const path = join(dir, 'touch.safetensors');
      const mib = 2 ** 20;
      const chunk = Tensor.fromArray('u8', [8 * mib], new Uint8Array(8 * mib).fill(7));
      const wide = Tensor.fromArray('u8', [32 * mib], new Uint8Array(32 * mib).fill(3));
      await writeSafetensors(path, tensorSources({ a: chunk, b: chunk, c: chunk, d: chunk, e: wide }));
      const st = SafetensorsFile.open(path);
      const before = processMemory();
      for (const e of st.entries()) st.touch(e.name);
      const after = processMemory();
      const fileGrowth = after.fileBacked - before.fileBacked;
      const anonGrowth = after.anonymous - before.anonymous;
      expect(fileGrowth).toBeGreaterThan(62 * mib);
      expect(anonGrowth).toBeLessThan(8 * mib);
      // populate: one tensor's pages come in off the JS thread, only that tensor's.
      for (const e of st.entries()) st.advise(e.name, 'dontneed');
      const dropped = processMemory();
      // The tensor widened to whole pages: its data starts mid-page after the header.
      const bytes = await st.populate('b');
      expect(bytes).toBeGreaterThanOrEqual(8 * mib);
      expect(bytes).toBeLessThanOrEqual(8 * mib + 2 * pageSize());
      const populated = processMemory().fileBacked - dropped.fileBacked;
      expect(populated).toBeGreaterThan(7.5 * mib);
      expect(populated).toBeLessThan(12 * mib);
      // populate rows: only the pages of rows [8 MiB, 24 MiB) of 'e' (u8: a row is a byte; RSS
      // counters are read with about a MiB of slack, hence the wide tensor).
      const beforeRows = processMemory();
      const rowBytes = await st.populate('e', [8 * mib, 24 * mib]);
      expect(rowBytes).toBeGreaterThanOrEqual(16 * mib);
      expect(rowBytes).toBeLessThanOrEqual(16 * mib + 2 * pageSize());
      const rowsIn = processMemory().fileBacked - beforeRows.fileBacked;
      expect(rowsIn).toBeGreaterThan(14 * mib);
      expect(rowsIn).toBeLessThan(19 * mib);
      // advise rows: dontneed of rows [8 MiB, 16 MiB) gives back half of them.
      st.advise('e', 'dontneed', [8 * mib, 16 * mib]);
      const left = processMemory().fileBacked - beforeRows.fileBacked;
      expect(left).toBeGreaterThan(6 * mib);
      expect(left).toBeLessThan(11 * mib);
      expect(() => st.populate('e', [0, 33 * mib])).toThrow(expect.objectContaining({ code: 'INDEX_OUT_OF_RANGE' }));
      st.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
