// The layer check must fail on a real violation, not only pass on a clean tree: build small
// trees that break each rule and run the repo's own dependency-cruiser config against them.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = process.env.NINODES_REPO_ROOT as string;
const depcruise = join(root, 'node_modules', '.bin', 'depcruise');
const config = join(root, '.dependency-cruiser.cjs');
const trees: string[] = [];

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'ninodes-layers-'));
  trees.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

function cruise(dir: string): { status: number | null; output: string } {
  const roots = ['packages', 'apps'].filter((d) => existsSync(join(dir, d)));
  const run = spawnSync(depcruise, [...roots, '--config', config, '--output-type', 'err-long'], {
    cwd: dir,
    encoding: 'utf8',
  });
  return { status: run.status, output: run.stdout + run.stderr };
}

const pkg = (name: string, deps: Record<string, string> = {}) =>
  JSON.stringify({ name: `@ninodes/${name}`, version: '0.1.0', type: 'module', dependencies: deps });

afterAll(() => {
  for (const dir of trees) rmSync(dir, { recursive: true, force: true });
});

describe('layer check', () => {
  it('passes a tree that imports only downwards', () => {
    const dir = tree({
      'packages/kernels/package.json': pkg('kernels'),
      'packages/kernels/src/index.ts': 'export const k = 1;\n',
      'packages/device/package.json': pkg('device'),
      'packages/device/src/index.ts': "import { k } from './k.js';\nexport const d = k;\n",
      'packages/device/src/k.ts': 'export const k = 2;\n',
    });
    const result = cruise(dir);
    expect(result.output).not.toContain('error');
    expect(result.status).toBe(0);
  });

  it('fails when a lower rank reaches up by a relative path', () => {
    const dir = tree({
      'packages/kernels/package.json': pkg('kernels'),
      'packages/kernels/src/index.ts': "import { m } from '../../memory/src/index.js';\nexport const k = m;\n",
      'packages/memory/package.json': pkg('memory'),
      'packages/memory/src/index.ts': 'export const m = 1;\n',
    });
    const result = cruise(dir);
    expect(result.status).not.toBe(0);
    expect(result.output).toContain('layer-kernels');
    expect(result.output).toContain('no-relative-escape');
  });

  it('fails when siblings of one rank import each other', () => {
    const dir = tree({
      'packages/tp/package.json': pkg('tp'),
      'packages/tp/src/index.ts': "import { p } from '../../distorch/src/index.js';\nexport const t = p;\n",
      'packages/distorch/package.json': pkg('distorch'),
      'packages/distorch/src/index.ts': 'export const p = 1;\n',
    });
    const result = cruise(dir);
    expect(result.status).not.toBe(0);
    expect(result.output).toContain('layer-tp');
  });

  it('fails on an import the package.json does not declare', () => {
    const dir = tree({
      'packages/device/package.json': pkg('device'),
      'packages/device/src/index.ts': "import leftPad from 'left-pad-not-declared';\nexport const d = leftPad;\n",
    });
    const result = cruise(dir);
    expect(result.status).not.toBe(0);
    expect(result.output).toContain('declared-dependencies-only');
  });

  it('fails when anything but kernels loads the native addon', () => {
    const dir = tree({
      'native/index.cjs': 'module.exports = {};\n',
      'packages/memory/package.json': pkg('memory'),
      'packages/memory/src/index.ts': "import native from '../../../native/index.cjs';\nexport const m = native;\n",
    });
    const result = cruise(dir);
    expect(result.status).not.toBe(0);
    expect(result.output).toContain('native-only-through-kernels');
  });
});
