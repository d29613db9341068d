import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { buildInfo } from './index.js';

describe('buildInfo', () => {
  const info = buildInfo();

  it('names the compiler the addon was built with', () => {
    const gxx = execFileSync('g++', ['-dumpfullversion'], { encoding: 'utf8' }).trim();
    expect(info.compiler).toContain(gxx);
  });

  it('reports the oneDNN the addon links, as the Debian package says', () => {
    const deb = execFileSync('dpkg-query', ['-W', '-f=${Version}', 'libdnnl-dev'], { encoding: 'utf8' });
    expect(deb.startsWith(info.onednn)).toBe(true);
  });

  it('reports the Gloo version from its CMake package', () => {
    expect(info.gloo).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('chooses avx2 exactly when the CPU has AVX2, FMA and F16C', async () => {
    const { readFileSync } = await import('node:fs');
    const flags = readFileSync('/proc/cpuinfo', 'utf8').match(/^flags\s*:(.*)$/m)?.[1]?.split(/\s+/) ?? [];
    const capable = ['avx2', 'fma', 'f16c'].every((f) => flags.includes(f));
    const forcedScalar = process.env.NINODES_SIMD === 'scalar';
    expect(info.simd).toBe(capable && !forcedScalar ? 'avx2' : 'scalar');
  });

  it('is a release build with a positive thread count', () => {
    expect(info.buildType).toBe('Release');
    expect(info.threads).toBeGreaterThan(0);
    expect(info.modules).toContain('build_info');
  });
});
