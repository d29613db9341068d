// What `npm pack` would publish: each library ships its build, README and LICENSE and nothing
// else; the native package ships exactly what loads the addon or builds it from source on install;
// a prebuilt platform package ships the addon and its libraries only.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = process.env.NINODES_REPO_ROOT as string;

function packedFiles(dir: string): string[] {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: dir, encoding: 'utf8' });
  const [report] = JSON.parse(out) as Array<{ files: Array<{ path: string }> }>;
  return report!.files.map((f) => f.path).sort();
}

const libraries = readdirSync(join(root, 'packages'));
/** Data files a library ships beside its build: @ninodes/models carries the trained h3-shapes weights. */
const DATA_FILES: Readonly<Record<string, RegExp>> = { models: /^weights\/h3-shapes\.safetensors$/ };

describe('npm pack contents', () => {
  it.each(libraries)('@ninodes/%s packs dist/, README.md, LICENSE and package.json only', (name) => {
    const files = packedFiles(join(root, 'packages', name));
    expect(files).toContain('README.md');
    expect(files).toContain('LICENSE');
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/index.cjs');
    expect(files).toContain('dist/index.d.ts');
    const stray = files.filter((f) => !/^(dist\/.+\.(js|cjs|d\.ts|d\.cts)|README\.md|LICENSE|package\.json)$/.test(f) && !DATA_FILES[name]?.test(f));
    expect(stray).toEqual([]);
    if (DATA_FILES[name]) expect(files.filter((f) => DATA_FILES[name]!.test(f))).toHaveLength(1);
    expect(files.some((f) => f.includes('.test.'))).toBe(false);
  });

  it('@ninodes/native packs its sources and build script, not its build output', () => {
    const files = packedFiles(join(root, 'native'));
    expect(files).toContain('CMakeLists.txt');
    expect(files).toContain('install.cjs');
    expect(files).toContain('index.cjs');
    expect(files).toContain('platform.cjs');
    expect(files).toContain('src/core/addon.cc');
    expect(files.some((f) => f.startsWith('build/'))).toBe(false);
    const stray = files.filter((f) => !/^(src\/.+\.(cc|h|c)|src\/vulkan\/shaders\/(.+\.(comp|glsl)|variants\.txt)|cmake\/.+\.cmake|CMakeLists\.txt|install\.cjs|index\.cjs|platform\.cjs|index\.d\.cts|README\.md|LICENSE|package\.json)$/.test(f));
    expect(stray).toEqual([]);
  });

  it.each(readdirSync(join(root, 'native', 'platforms')))('@ninodes/native-%s packs the addon, its libraries and their licenses only', (name) => {
    // Packed as it is in the repository (the binaries are assembled by pack-prebuilt.mjs only for a
    // release), so only the allow-list is checked here; tools/package-install packs a full one.
    const files = packedFiles(join(root, 'native', 'platforms', name));
    const stray = files.filter((f) => !/^(ninodes\.node|lib[\w+-]+\.so\.[\d.]+|licenses\/[\w.+-]+|README\.md|LICENSE|package\.json)$/.test(f));
    expect(stray).toEqual([]);
    expect(files).toContain('README.md');
  });

  it('@ninodes/runner packs its CLI bundle', () => {
    const files = packedFiles(join(root, 'apps', 'runner'));
    expect(files).toContain('dist/cli.js');
    expect(files.filter((f) => f.startsWith('src/'))).toEqual([]);
  });

  it('@ninodes/runner names its bin as a packed path, which npm publish keeps', () => {
    // `npm publish` drops a bin spelled './dist/cli.js' ("script name ... was invalid and removed"),
    // and the published package would install no `ninodes` command.
    const dir = join(root, 'apps', 'runner');
    const { bin } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(bin).toEqual({ ninodes: 'dist/cli.js' });
    expect(packedFiles(dir)).toContain(bin.ninodes);
  });
});
