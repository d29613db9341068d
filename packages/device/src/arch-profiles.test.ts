import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isNinodesError } from '@ninodes/kernels';
import { describe, expect, it, onTestFinished } from 'vitest';
import { BUILTIN_ARCHS, archProfile, loadProfileConfig, parseProfileConfig } from './arch-profiles.js';

describe('built-in architecture profiles', () => {
  it('has every required architecture', () => {
    for (const a of ['gfx1151', 'gfx1100', 'gfx1201', 'sm_80', 'sm_89', 'sm_90', 'cpu-amx', 'cpu-avx512', 'cpu-avx2', 'cpu-scalar']) expect(BUILTIN_ARCHS).toContain(a);
  });

  it('gfx1151: fp32, tiles 768-1024, TF32 off, 1.5x attention memory, unified memory (seeds/000)', () => {
    expect(archProfile('gfx1151')).toEqual({
      arch: 'gfx1151', known: true, vendor: 'amd', preferredComputeDtype: 'f32', matrix: { fp8: false, int8: true, bf16: true },
      attentionMemoryModifier: 1.5, tileSize: { min: 768, max: 1024 }, tf32: false, unifiedMemory: true,
    });
  });

  it('fp8 matrix hardware: RDNA4 and Ada/Hopper yes, RDNA3 and Ampere no; TF32 only on NVIDIA', () => {
    expect(['gfx1100', 'gfx1201', 'sm_80', 'sm_89', 'sm_90'].map((a) => archProfile(a).matrix.fp8)).toEqual([false, true, false, true, true]);
    expect(['gfx1100', 'gfx1151', 'gfx1201', 'sm_80', 'sm_89', 'sm_90', 'cpu-avx2'].map((a) => archProfile(a).tf32)).toEqual([false, false, false, true, true, true, false]);
  });

  it('derives profiles for unlisted architectures, marked unknown', () => {
    expect(archProfile('sm_120')).toMatchObject({ known: false, vendor: 'nvidia', matrix: { fp8: true, int8: true, bf16: true }, tf32: true });
    expect(archProfile('sm_75')).toMatchObject({ known: false, matrix: { fp8: false, int8: true, bf16: false }, tf32: false, preferredComputeDtype: 'f16' });
    expect(archProfile('gfx1103')).toMatchObject({ known: false, vendor: 'amd', unifiedMemory: true, attentionMemoryModifier: 1.5 });
    expect(archProfile('gfx90a')).toMatchObject({ known: false, matrix: { fp8: false, int8: false } });
    expect(archProfile('riscv-v')).toMatchObject({ known: false, arch: 'riscv-v', preferredComputeDtype: 'f32', matrix: { int8: false } });
  });

  it('returns copies: mutating one result does not change the next', () => {
    const p = archProfile('gfx1100');
    p.tileSize.min = 1;
    p.matrix.int8 = false;
    expect(archProfile('gfx1100')).toMatchObject({ tileSize: { min: 512 }, matrix: { int8: true } });
  });
});

describe('profile overrides', () => {
  it('applies partial overrides and extends', () => {
    const config = parseProfileConfig({
      profiles: {
        gfx1151: { attentionMemoryModifier: 1.75, tileSize: { min: 512, max: 768 } },
        gfx1103: { extends: 'gfx1151', matrix: { bf16: false } },
        sm_89: { tf32: false },
      },
    });
    expect(archProfile('gfx1151', config)).toMatchObject({ attentionMemoryModifier: 1.75, tileSize: { min: 512, max: 768 }, tf32: false, preferredComputeDtype: 'f32' });
    expect(archProfile('gfx1103', config)).toMatchObject({ arch: 'gfx1103', attentionMemoryModifier: 1.75, matrix: { fp8: false, int8: true, bf16: false }, unifiedMemory: true });
    expect(archProfile('sm_89', config)).toMatchObject({ tf32: false, matrix: { fp8: true } });
    expect(archProfile('gfx1100', config)).toEqual(archProfile('gfx1100'));
  });

  it('rejects invalid configs with PROFILE_CONFIG_INVALID naming the path', () => {
    const cases: [unknown, RegExp][] = [
      [{ profiles: { gfx1151: { attentionMemoryModifier: -1 } } }, /profiles\.gfx1151\.attentionMemoryModifier/],
      [{ profiles: { gfx1151: { tileSize: { min: 1024, max: 512 } } } }, /profiles\.gfx1151\.tileSize/],
      [{ profiles: { gfx1151: { tile: 5 } } }, /profiles\.gfx1151/],
      [{ profiles: { GFX1151: {} } }, /profiles/],
      [{ profiles: { 'my-npu': { tf32: true } } }, /profiles\.my-npu/],
      [{ profile: {} }, /.*/],
      [[], /.*/],
    ];
    for (const [value, where] of cases) {
      try {
        parseProfileConfig(value, 'cfg.json');
        expect.unreachable(JSON.stringify(value));
      } catch (e) {
        expect(isNinodesError(e, 'PROFILE_CONFIG_INVALID'), JSON.stringify(value)).toBe(true);
        expect((e as { where: string }).where).toMatch(/^cfg\.json/);
        expect((e as { where: string }).where).toMatch(where);
      }
    }
  });

  it('detects extends cycles', () => {
    const config = parseProfileConfig({ profiles: { 'a-npu': { extends: 'b-npu' }, 'b-npu': { extends: 'a-npu' } } });
    expect(() => archProfile('a-npu', config)).toThrowError(/cycle: a-npu -> b-npu -> a-npu/);
  });

  it('loads a JSON file; missing files and bad JSON are typed errors', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ninodes-prof-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const good = join(dir, 'profiles.json');
    writeFileSync(good, JSON.stringify({ profiles: { gfx1100: { preferredComputeDtype: 'f16' } } }));
    expect(archProfile('gfx1100', loadProfileConfig(good)).preferredComputeDtype).toBe('f16');
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"profiles": ');
    expect(() => loadProfileConfig(bad)).toThrowError(expect.objectContaining({ code: 'PROFILE_CONFIG_INVALID', where: bad }));
    expect(() => loadProfileConfig(join(dir, 'none.json'))).toThrowError(expect.objectContaining({ code: 'FILE_NOT_FOUND' }));
  });
});
