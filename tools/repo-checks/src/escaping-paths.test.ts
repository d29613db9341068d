// No file of the repository may read outside it; the check must also catch an injected escape.
import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { removeTrees, repoRoot, tempTree, writeFiles } from './depcruise-run.js';
import { findEscapingPaths } from './escaping-paths.js';

afterAll(removeTrees);

// Spelled in pieces so this file does not hold what it looks for.
const up = '..';
const shared = [up, 'shared', 'fixtures'].join('/');
const work = ['', 'work', 'shared', 'fixtures'].join('/');

function gitTree(files: Record<string, string>, ignored: Record<string, string> = {}): string {
  const dir = tempTree('ninodes-escape-');
  writeFiles(dir, { ...files, ...ignored, '.gitignore': Object.keys(ignored).join('\n') + '\n' });
  execFileSync('git', ['init', '-q'], { cwd: dir });
  execFileSync('git', ['add', '.gitignore', ...Object.keys(files).filter((f) => !f.startsWith('new/'))], { cwd: dir });
  return dir;
}

describe('paths that leave the repository', () => {
  it('none in this repository', () => {
    expect(findEscapingPaths(repoRoot)).toEqual([]);
  });

  it('finds each injected escape and nothing in the clean files', () => {
    const dir = gitTree(
      {
        'packages/a/tsconfig.json': `{ "extends": "${up}/${up}/tsconfig.base.json" }\n`,
        'packages/a/src/here.ts': `export const root = join(here, '${up}', '${up}', '${up}');\n`,
        'README.md': `Fixtures used to live in ${shared}.\n`,
        'vitest.shared.ts': `const fixtures = resolve(root, '${up}', 'shared', 'fixtures');\n`,
        'packages/a/src/deep.ts': `export const f = '${up}/${up}/${up}/${up}/outside.bin';\n`,
        'scripts/run.sh': `cp ${work}/x.bin .\n`,
        'package.json': `{ "scripts": { "test": "FIXTURES=${shared} vitest" } }\n`,
        // Not added yet, not ignored: git would commit it, so it is checked.
        'new/later.ts': `export const g = '${shared}/a.bin';\n`,
      },
      { 'build/out.ts': `export const h = '${shared}';\n` },
    );
    const files = findEscapingPaths(dir).map((e) => `${e.file}:${e.line}`);
    expect(files.sort()).toEqual(['new/later.ts:1', 'package.json:1', 'packages/a/src/deep.ts:1', 'scripts/run.sh:1', 'vitest.shared.ts:1']);
  });
});
