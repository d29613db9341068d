// The layer check must fail on a real violation, not only pass on a clean tree: build small
// workspaces that break each rule and run the repo's own dependency-cruiser config against them.
// Packages reach each other by package name through `node_modules/@ninodes/*` links to built
// `dist/` entry points, exactly as in the real workspace, and also by relative paths.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CruiseResult, cruise, cruiseStatus, linkPackage, removeTrees, tempTree, writeFiles } from './depcruise-run.js';

const appNames = new Set(['runner', 'bench']);
const folder = (name: string) => (name === 'native' ? 'native' : appNames.has(name) ? `apps/${name}` : `packages/${name}`);

interface Workspace {
  deps?: string[];
  src: Record<string, string>;
  /** Whether `dist/` exists (a built package); the import must fail the check either way. */
  built?: boolean;
}

/** A root package.json with workspaces, each workspace linked under node_modules/@ninodes. */
function workspaces(spec: Record<string, Workspace>): string {
  const dir = tempTree('ninodes-layers-');
  const files: Record<string, string> = {
    'package.json': JSON.stringify({ name: 'root', private: true, workspaces: ['packages/*', 'apps/*'] }),
  };
  for (const [name, ws] of Object.entries(spec)) {
    const base = folder(name);
    const dependencies = Object.fromEntries((ws.deps ?? []).map((d) => [d, '0.1.0']));
    files[`${base}/package.json`] = JSON.stringify({
      name: `@ninodes/${name}`,
      version: '0.1.0',
      type: 'module',
      exports: { '.': { import: { types: './dist/index.d.ts', default: './dist/index.js' } } },
      dependencies,
    });
    if (ws.built !== false) {
      files[`${base}/dist/index.d.ts`] = 'export declare const value: number;\n';
      files[`${base}/dist/index.js`] = 'export const value = 1;\n';
    }
    for (const [path, text] of Object.entries(ws.src)) files[`${base}/src/${path}`] = text;
  }
  writeFiles(dir, files);
  for (const name of Object.keys(spec)) linkPackage(dir, `@ninodes/${name}`, folder(name));
  return dir;
}

const importing = (name: string) => `import { value } from '${name}';\nexport const v = value;\n`;
const leaf = { 'index.ts': 'export const value = 1;\n' };

afterAll(removeTrees);

describe('layer check on a clean workspace', () => {
  it('passes a tree that imports only downwards, by package name and declared', async () => {
    const dir = workspaces({
      kernels: { src: leaf },
      device: { deps: ['@ninodes/kernels'], src: { 'index.ts': importing('@ninodes/kernels') } },
      quant: { deps: ['@ninodes/kernels', '@ninodes/device'], src: { 'index.ts': importing('@ninodes/device') } },
    });
    const [result, status] = await Promise.all([cruise(dir), cruiseStatus(dir)]);
    expect(result.violations, result.output.slice(0, 2000)).toEqual([]);
    expect(status).toBe(0);
  });
});

// One workspace, many violations, each in a file of its own: file → the rules that must report it
// (exactly those). Workspaces that declare a dependency do so to show the rank rule alone fires.
const cases: Record<string, { imports: string; rules: string[] }> = {
  'packages/kernels/src/up-by-name.ts': { imports: '@ninodes/tp', rules: ['layer-kernels'] },
  'packages/models/src/sibling-by-name.ts': { imports: '@ninodes/tp', rules: ['layer-models'] },
  // Not built yet: the name does not resolve, which is itself reported, and the rank rule still fires.
  'packages/memory/src/up-unbuilt.ts': { imports: '@ninodes/quant', rules: ['layer-memory', 'declared-dependencies-only'] },
  'packages/device/src/up-in-test.test.ts': { imports: '@ninodes/models', rules: ['layer-device'] },
  'packages/device/src/undeclared-workspace.ts': { imports: '@ninodes/kernels', rules: ['declared-dependencies-only'] },
  'packages/device/src/undeclared-npm.ts': { imports: 'left-pad-not-declared', rules: ['declared-dependencies-only'] },
  'packages/memory/src/native-by-name.ts': { imports: '@ninodes/native', rules: ['native-only-through-kernels'] },
  'packages/memory/src/native-relative.ts': { imports: '../../../native/dist/index.js', rules: ['native-only-through-kernels', 'no-relative-escape'] },
  'packages/kernels/src/up-relative.ts': { imports: '../../memory/src/index.js', rules: ['layer-kernels', 'no-relative-escape'] },
  'packages/tp/src/sibling-relative.ts': { imports: '../../distorch/src/index.js', rules: ['layer-tp', 'no-relative-escape'] },
};

describe('layer check on violations by package name and by relative path', () => {
  let result: CruiseResult;
  let status: number | null;
  beforeAll(async () => {
    const src = (pkg: string) =>
      Object.fromEntries(
        Object.entries(cases)
          .filter(([file]) => file.startsWith(`packages/${pkg}/src/`))
          .map(([file, c]) => [file.slice(`packages/${pkg}/src/`.length), importing(c.imports)]),
      );
    const dir = workspaces({
      native: { src: {} },
      kernels: { deps: ['@ninodes/tp'], src: { ...leaf, ...src('kernels') } },
      device: { deps: ['@ninodes/models'], src: { ...leaf, ...src('device') } },
      memory: { deps: ['@ninodes/quant', '@ninodes/native'], src: { ...leaf, ...src('memory') } },
      quant: { built: false, src: leaf },
      distorch: { src: leaf },
      tp: { src: { ...leaf, ...src('tp') } },
      models: { deps: ['@ninodes/tp'], src: { ...leaf, ...src('models') } },
    });
    [result, status] = await Promise.all([cruise(dir), cruiseStatus(dir)]);
  });

  it('exits non-zero, as `npm run layers` does', () => {
    expect(status).not.toBe(0);
  });

  it.each(Object.entries(cases))('%s is reported under exactly its rules', (file, c) => {
    const rules = result.violations.filter((v) => v.from === file).map((v) => v.rule);
    expect(rules.sort(), result.output.slice(0, 2000)).toEqual([...c.rules].sort());
  });

  it('reports nothing in the files without a violation', () => {
    expect(result.violations.filter((v) => !(v.from in cases))).toEqual([]);
  });
});
