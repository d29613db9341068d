// The bounded header soak of `npm test` (the long one: node dist/soak-headers.js --count 10000),
// and the soak's own ability to see a crash or a hang in a batch child.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { headerSeeds } from './header-seeds.js';
import { mutate } from './header-mutations.js';
import { runHeaderSoak } from './header-soak.js';

const fixtures = process.env.NINODES_FIXTURES as string;
const entry = fileURLToPath(new URL('../../dist/soak-headers.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'ninodes-soak-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('header soak', () => {
  const samples = headerSeeds(fixtures);

  it('mutations are reproducible by index and change the file', () => {
    const a = mutate(samples, 7, 123);
    const b = mutate(samples, 7, 123);
    expect(a.ops).toEqual(b.ops);
    expect(Buffer.from(a.sample.bytes).equals(Buffer.from(b.sample.bytes))).toBe(true);
    expect(a.ops.length).toBeGreaterThan(0);
    const changed = Array.from({ length: 50 }, (_, i) => mutate(samples, 7, i)).filter(
      (m, i) => !Buffer.from(m.sample.bytes).equals(Buffer.from((samples[i % samples.length] as (typeof samples)[number]).bytes)),
    );
    expect(changed.length).toBeGreaterThan(45);
  });

  it('400 damaged safetensors and GGUF headers: each parses or fails with a coded error; no crash, hang or uncoded error', () => {
    const report = runHeaderSoak(samples, { count: 400, seed: 17, batch: 200, entry, fixtures, timeoutMs: 60_000 });
    expect(report.crashes).toEqual([]);
    expect(report.hangs).toEqual([]);
    expect(report.uncoded).toEqual([]);
    const coded = Object.values(report.coded).reduce((a, b) => a + b, 0);
    expect(report.parsed + coded).toBe(400);
    expect(Object.keys(report.coded).some((c) => c.startsWith('GGUF_'))).toBe(true);
    expect(Object.keys(report.coded).some((c) => c.startsWith('SAFETENSORS_'))).toBe(true);
  });

  it('a batch child that dies or hangs is reported with the mutation it was on, and the batch goes on after it', () => {
    // Stands in for the real child: prints indices like it, dies by SIGSEGV at 3 and hangs at 6.
    const fake = join(dir, 'fake-child.mjs');
    writeFileSync(
      fake,
      `import { writeSync } from 'node:fs';
      const [, , , seed, start, end] = process.argv.slice(1);
      for (let i = Number(start); i < Number(end); i++) {
        writeSync(1, i + '\\n');
        if (i === 3) process.kill(process.pid, 'SIGSEGV');
        if (i === 6) for (;;) {}
        writeSync(1, i + (i % 2 ? ' ok' : ' SOME_CODE') + '\\n');
      }`,
    );
    const report = runHeaderSoak(samples, { count: 10, seed: 1, batch: 10, entry: fake, fixtures, timeoutMs: 3000 });
    expect(report.crashes.map((c) => [c.index, c.detail.includes('SIGSEGV')])).toEqual([[3, true]]);
    expect(report.hangs.map((h) => h.index)).toEqual([6]);
    expect(report.parsed).toBe(4); // 1, 5, 7, 9
    expect(report.coded).toEqual({ SOME_CODE: 4 }); // 0, 2, 4, 8
  });
});
