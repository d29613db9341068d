import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
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

  it('removes its scratch directory when SIGTERM ends a run', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'bench-sigterm-'));
    try {
      const child = spawn(process.execPath, [cli, '--quick', '--suite', 'io', '--out', join(tmp, 'out')], { env: { ...process.env, TMPDIR: tmp }, stdio: 'ignore' });
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
      // Wait (bounded) for the run's scratch directory to exist, then end the run mid-way.
      const scratch = (): string[] => readdirSync(tmp).filter((n) => n.startsWith('.ninodes-bench.'));
      for (let i = 0; i < 600 && scratch().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(scratch()).toHaveLength(1);
      child.kill('SIGTERM');
      expect(await exited).toBe('SIGTERM');
      expect(scratch()).toEqual([]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  // The end-to-end `--quick --suite all` run (three outputs, valid) is src/suites/quick-all.test.ts:
  // one full quick run per `npm test`, not two.
});
