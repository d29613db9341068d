// The layer check on the real tree, not a model of it: copy the workspaces, the root package.json
// and .dependency-cruiser.cjs into a temporary folder (node_modules linked as npm links them),
// inject one violation per rule, each in a file of its own, and expect every one reported under
// its rule, and nothing else.
import { existsSync, cpSync, readdirSync, readFileSync, symlinkSync, mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CruiseResult, cruise, linkPackage, removeTrees, repoRoot, tempTree, writeFiles } from './depcruise-run.js';

/** Workspace folders of the real tree (`native`, `packages/*`, `apps/*`) by package name. */
function workspaceFolders(): Map<string, string> {
  const folders = new Map<string, string>([['@ninodes/native', 'native']]);
  for (const group of ['packages', 'apps', 'tools']) {
    for (const entry of readdirSync(join(repoRoot, group))) {
      // tools/ also holds Python tools (train-demo, torch-h3) that are not workspaces.
      if (!existsSync(join(repoRoot, group, entry, 'package.json'))) continue;
      const manifest = JSON.parse(readFileSync(join(repoRoot, group, entry, 'package.json'), 'utf8')) as { name: string };
      folders.set(manifest.name, `${group}/${entry}`);
    }
  }
  return folders;
}

const skipped = new Set(['node_modules', 'build', '.turbo', 'test-results.json', 'coverage']);

function copyRealTree(): string {
  const dir = tempTree('ninodes-layers-real-');
  for (const file of ['package.json', '.dependency-cruiser.cjs', 'vitest.shared.ts', 'tsconfig.base.json']) cpSync(join(repoRoot, file), join(dir, file));
  const folders = workspaceFolders();
  for (const folder of folders.values()) {
    cpSync(join(repoRoot, folder), join(dir, folder), { recursive: true, filter: (src) => !skipped.has(basename(src)) });
  }
  // Third-party packages are the real ones; the workspace links point into the copy.
  mkdirSync(join(dir, 'node_modules'));
  for (const entry of readdirSync(join(repoRoot, 'node_modules'))) {
    if (entry === '@ninodes') continue;
    symlinkSync(join(repoRoot, 'node_modules', entry), join(dir, 'node_modules', entry));
  }
  for (const [name, folder] of folders) linkPackage(dir, name, folder);
  return dir;
}

const importing = (name: string) => `import * as injected from '${name}';\nexport const zzInjected = injected;\n`;

// file → [what it imports, the rule that must report it]
const injections: Record<string, [string, string]> = {
  'packages/kernels/src/zz-layer.ts': ['@ninodes/device', 'layer-kernels'],
  'packages/kernels/scripts/zz-layer.mjs': ['@ninodes/models', 'layer-kernels'],
  'packages/device/src/zz-layer.ts': ['@ninodes/memory', 'layer-device'],
  'packages/memory/src/zz-layer.ts': ['@ninodes/quant', 'layer-memory'],
  'packages/quant/src/zz-layer.ts': ['@ninodes/tp', 'layer-quant'],
  'packages/distorch/src/zz-layer.ts': ['@ninodes/models', 'layer-distorch'],
  'packages/tp/src/zz-layer.ts': ['@ninodes/distorch', 'layer-tp'],
  'packages/models/src/zz-layer.test.ts': ['@ninodes/tp', 'layer-models'],
  'apps/runner/src/zz-layer.ts': ['@ninodes/bench', 'layer-runner'],
  'apps/bench/src/zz-layer.ts': ['@ninodes/runner', 'layer-bench'],
  'packages/quant/src/zz-native.ts': ['@ninodes/native', 'native-only-through-kernels'],
  'packages/memory/src/zz-relative.ts': ['../../kernels/src/index.js', 'no-relative-escape'],
  'packages/device/src/zz-undeclared.ts': ['vega', 'declared-dependencies-only'],
  'packages/memory/src/zz-dev-dep.ts': ['fast-check', 'no-dev-deps-in-runtime-code'],
  'packages/quant/src/zz-circular-a.ts': ['./zz-circular-b.js', 'no-circular'],
};
// The other half of the cycle; the cycle is reported once, from zz-circular-a.
const cycleEnd = { 'packages/quant/src/zz-circular-b.ts': importing('./zz-circular-a.js') };

afterAll(removeTrees);

describe('layer check on a copy of the real tree', () => {
  let result: CruiseResult;
  beforeAll(async () => {
    const dir = copyRealTree();
    writeFiles(dir, Object.fromEntries(Object.entries(injections).map(([file, [target]]) => [file, importing(target)])));
    writeFiles(dir, cycleEnd);
    result = await cruise(dir, join(dir, '.dependency-cruiser.cjs'));
  });

  it.each(Object.entries(injections))('reports %s under its rule', (file, [, rule]) => {
    const rulesForFile = result.violations.filter((v) => v.from === file).map((v) => v.rule);
    expect(rulesForFile, result.output.slice(0, 2000)).toContain(rule);
  });

  it('reports nothing in the files it did not touch', () => {
    expect(result.violations.filter((v) => !(v.from in injections) && !(v.from in cycleEnd))).toEqual([]);
  });
});
