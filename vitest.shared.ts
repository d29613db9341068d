// One vitest configuration for every workspace: each package's vitest.config.ts re-exports it.
// The reference fixtures live in the repository at fixtures/ (see its README); tests read the path
// from NINODES_FIXTURES, which points there and nowhere else, so a clone alone passes.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const repoRoot = dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results.json' },
    env: {
      NINODES_REPO_ROOT: repoRoot,
      NINODES_FIXTURES: resolve(repoRoot, 'fixtures'),
    },
  },
});
