// End to end: the built CLI runs every registered suite at quick size, as CI does, and the three
// outputs are written and valid. This is how a suite that breaks (throws, or wires a contender of
// ours that throws) fails `npm test`. Numbers are not judged here.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { benchRoot } from '../package-root.js';
import { ResultsSchema } from '../results-schema.js';
import { SUITES } from './index.js';

const HANG_MS = Number(process.env.NINODES_TEST_HANG_MS ?? 900_000); // the shared hang guard (vitest.shared.ts)

const cli = join(benchRoot(), 'dist', 'cli.js');

describe('npm run bench -- --quick --suite all', () => {
  it('runs every suite and writes valid results.json, summary.md and report.html', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ninodes-bench-all-'));
    const cache = mkdtempSync(join(tmpdir(), 'ninodes-bench-cache-'));
    try {
      // A cache of this run's own: the cold-cache cases drop their file from the page cache, which
      // fails when another run (a second `npm test` beside this one) has the same cached file mapped.
      const env = { ...process.env, NINODES_CACHE: cache };
      const r = spawnSync(process.execPath, [cli, '--quick', '--suite', 'all', '--out', dir], { encoding: 'utf8', timeout: HANG_MS, env });
      expect(r.error?.message, `the child was killed by the test's hang guard after ${HANG_MS} ms`).toBeUndefined();
      expect(r.stderr.split('\n').filter((l) => l.includes(': FAILED ')), r.stderr.slice(-4000)).toEqual([]);
      expect(r.status, r.stderr.slice(-4000)).toBe(0);

      const results = ResultsSchema.parse(JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')));
      expect(results.options.quick).toBe(true);
      expect(results.env.versions.node).toBe(process.version);
      expect(results.suites.map((s) => s.name)).toEqual(SUITES.map((s) => s.name));
      // Every quick instance of every case ran, without error, with samples for ours.
      for (const suite of SUITES) {
        for (const c of suite.cases) {
          const got = results.cases.filter((x) => x.suite === suite.name && x.case === c.name);
          expect(got.length, `${suite.name}/${c.name}`).toBe(c.params.quick.length);
          for (const x of got) {
            expect(x.error, x.key).toBeUndefined();
            expect(x.contenders[0]?.name).toBe('ours');
            expect(x.contenders[0]?.samples.length, x.key).toBeGreaterThan(0);
            // A peer may be missing on a machine; a contender that failed means broken wiring.
            for (const k of x.contenders) expect(k.status, `${x.key} ${k.name}: ${k.reason ?? ''}`).not.toBe('failed');
            for (const t of x.targets) expect(t.measured !== null || t.note !== undefined, `${x.key}: ${t.description}`).toBe(true);
          }
        }
      }

      const summary = readFileSync(join(dir, 'summary.md'), 'utf8');
      for (const suite of SUITES) expect(summary).toContain(`## ${suite.name}`);
      const html = readFileSync(join(dir, 'report.html'), 'utf8');
      expect(html).toMatch(/^<!doctype html>/);
      expect(html).toContain('<svg');
      expect(existsSync(join(dir, 'results.json'))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(cache, { recursive: true, force: true });
    }
  });
});
