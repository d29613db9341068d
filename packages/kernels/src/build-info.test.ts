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

  it('chooses the best path the CPU has (avx512: F, BW, DQ, VL; avx2: AVX2, FMA, F16C) unless NINODES_SIMD caps it', async () => {
    const { readFileSync } = await import('node:fs');
    const flags = readFileSync('/proc/cpuinfo', 'utf8').match(/^flags\s*:(.*)$/m)?.[1]?.split(/\s+/) ?? [];
    const avx2 = ['avx2', 'fma', 'f16c'].every((f) => flags.includes(f));
    const avx512 = avx2 && ['avx512f', 'avx512bw', 'avx512dq', 'avx512vl'].every((f) => flags.includes(f));
    const best = avx512 ? 'avx512' : avx2 ? 'avx2' : 'scalar';
    const forced = process.env.NINODES_SIMD;
    expect(info.simd).toBe(forced === 'scalar' ? 'scalar' : forced === 'avx2' && avx2 ? 'avx2' : best);
  });

  it('reports bf16 units exactly when the selected path is avx512 and the CPU lists avx512_bf16', async () => {
    const { readFileSync } = await import('node:fs');
    const flags = readFileSync('/proc/cpuinfo', 'utf8').match(/^flags\s*:(.*)$/m)?.[1]?.split(/\s+/) ?? [];
    expect(info.bf16Units).toBe(info.simd === 'avx512' && flags.includes('avx512_bf16'));
  });

  it('is a release build with a positive thread count', () => {
    expect(info.buildType).toBe('Release');
    expect(info.threads).toBeGreaterThan(0);
    expect(info.modules).toContain('build_info');
  });
});
