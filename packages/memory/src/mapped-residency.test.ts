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
      await writeSafetensors(path, tensorSources({ a: chunk, b: chunk, c: chunk, d: chunk }));
      const st = SafetensorsFile.open(path);
      const before = processMemory();
      for (const e of st.entries()) st.touch(e.name);
      const after = processMemory();
      const fileGrowth = after.fileBacked - before.fileBacked;
      const anonGrowth = after.anonymous - before.anonymous;
      expect(fileGrowth).toBeGreaterThan(30 * mib);
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
      st.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
