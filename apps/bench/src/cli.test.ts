import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { benchRoot } from './package-root.js';

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

  // The end-to-end `--quick --suite all` run (three outputs, valid) is src/suites/quick-all.test.ts:
  // one full quick run per `npm test`, not two.
});
