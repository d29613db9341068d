import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { benchRoot } from './package-root.js';
import { ResultsSchema } from './results-schema.js';

// The built CLI, as `npm run bench` runs it (turbo builds before testing).
const cli = join(benchRoot(), 'dist', 'cli.js');
const run = (args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });

describe('ninodes-bench CLI', () => {
  it('prints usage with --help', () => {
    const r = run(['--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('usage: ninodes-bench');
  });

  it('fails with a code and hint on an unknown suite or flag', () => {
    const r = run(['--suite', 'no-such-suite']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('BENCH_UNKNOWN_SUITE: no suite named no-such-suite (at --suite)');
    expect(run(['--bogus']).stderr).toContain('BENCH_BAD_FLAG');
    expect(run(['--quick', '--compare', '/nonexistent/results.json']).stderr).toContain('BENCH_BASELINE_UNREADABLE');
  });

  it('--quick writes the three outputs, env included, for the registered suites', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ninodes-bench-cli-'));
    try {
      const r = run(['--quick', '--out', dir]);
      expect(r.stderr).not.toMatch(/Error/);
      expect(r.status).toBe(0);
      const results = ResultsSchema.parse(JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')));
      expect(results.options.quick).toBe(true);
      expect(results.env.versions.node).toBe(process.version);
      expect(existsSync(join(dir, 'summary.md'))).toBe(true);
      expect(readFileSync(join(dir, 'report.html'), 'utf8')).toMatch(/^<!doctype html>/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
