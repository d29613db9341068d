// One vitest configuration for every workspace: each package's vitest.config.ts re-exports it.
// The reference fixtures live in the repository at fixtures/ (see its README); tests read the path
// from NINODES_FIXTURES, which points there and nowhere else, so a clone alone passes.
//
// Timing: no test's length is the point of the test (speed lives in apps/bench), so there is no
// per-test wall-clock limit that a busy 2-core machine could trip. What remains is a hang guard:
// NINODES_TEST_HANG_MS (15 minutes unless set) bounds a test, a hook and every child process a
// test starts, and a test that hits it says so. Workers: scripts/test.sh divides the cores among
// the packages turbo runs at once and passes the share as NINODES_TEST_WORKERS.
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const repoRoot = dirname(fileURLToPath(import.meta.url));
const hangMs = Number(process.env.NINODES_TEST_HANG_MS ?? 15 * 60_000);
const workers = Math.max(1, Number(process.env.NINODES_TEST_WORKERS ?? Math.max(1, cpus().length - 1)));

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Children get the hang guard; vitest's own limit sits a minute above it so that a child killed
    // by the guard reports itself before vitest reports the test.
    testTimeout: hangMs + 60_000,
    hookTimeout: hangMs + 60_000,
    maxWorkers: workers,
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results.json' },
    globalSetup: [resolve(repoRoot, 'scripts/vitest-temp-dir.ts')],
    env: {
      NINODES_REPO_ROOT: repoRoot,
      NINODES_FIXTURES: resolve(repoRoot, 'fixtures'),
      NINODES_TEST_HANG_MS: String(hangMs),
    },
  },
});
