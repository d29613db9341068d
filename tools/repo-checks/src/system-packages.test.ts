// setup.sh's [build] list must cover every system file the native build uses, judged by Debian's
// own package database rather than by whether the build happens to work on this machine.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from './depcruise-run.js';
import { checkBuildPackages, collectBuildSystemFiles, describeProblems, owningPackages, parsePackageList } from './system-packages.js';

const listText = readFileSync(join(repoRoot, 'scripts', 'system-packages.txt'), 'utf8');
const withoutLine = (pkg: string) => listText.replace(new RegExp(`^${pkg}\\b.*\\n`, 'm'), '');

describe('system packages of the native build', () => {
  let files: string[];
  let owners: Map<string, string[]>;
  beforeAll(async () => {
    files = await collectBuildSystemFiles(repoRoot);
    owners = await owningPackages(files);
  });

  it('sees the oneDNN and Gloo CMake packages, their headers and the OpenCL library', () => {
    const owned = (pkg: string) => files.filter((f) => owners.get(f)?.includes(pkg));
    expect(owned('libdnnl-dev').some((f) => f.endsWith('/dnnl-config.cmake'))).toBe(true);
    expect(owned('libdnnl-dev').some((f) => f.endsWith('/dnnl.hpp') || f.endsWith('/dnnl.h'))).toBe(true);
    expect(owned('libgloo-dev').some((f) => f.endsWith('/GlooConfig.cmake'))).toBe(true);
    expect(owned('ocl-icd-opencl-dev').some((f) => f.endsWith('/libOpenCL.so'))).toBe(true);
    expect(owned('opencl-c-headers').some((f) => f.endsWith('/CL/cl.h'))).toBe(true);
  });

  it('every one is installed by setup.sh [build], given, or pulled in by Depends of one of them', async () => {
    const problems = await checkBuildPackages(files, owners, listText);
    expect(describeProblems(problems)).toBe('');
  });

  it('fails, naming the package and its file, on a list without ocl-icd-opencl-dev', async () => {
    const text = withoutLine('ocl-icd-opencl-dev');
    expect(parsePackageList(text).get('build')).not.toContain('ocl-icd-opencl-dev');
    const message = describeProblems(await checkBuildPackages(files, owners, text));
    expect(message).toMatch(/^ocl-icd-opencl-dev is not installed by scripts\/setup\.sh: the build uses .*\/libOpenCL\.so/m);
  });

  it('does not count a Recommends: libdnnl-dev recommends ocl-icd-opencl-dev, setup skips it', async () => {
    // Both OpenCL packages gone: only libdnnl-dev's Recommends would bring them.
    const text = withoutLine('opencl-c-headers').replace(/^ocl-icd-opencl-dev\b.*\n/m, '');
    const named = (await checkBuildPackages(files, owners, text)).map((p) => p.package);
    expect(named).toContain('ocl-icd-opencl-dev');
    expect(named).toContain('opencl-c-headers');
  });

  it('counts only the build set: libgloo-dev moved to [test] fails', async () => {
    const text = withoutLine('libgloo-dev').replace(/^\[test\]$/m, '[test]\nlibgloo-dev');
    expect(parsePackageList(text).get('test')).toContain('libgloo-dev');
    const named = (await checkBuildPackages(files, owners, text)).map((p) => p.package);
    expect(named).toContain('libgloo-dev');
  });
});
