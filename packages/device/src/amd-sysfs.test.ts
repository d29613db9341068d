import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gfxTargetName, parseKfdProperties, readAmdGpus } from './amd-sysfs.js';
import { resolveRoots } from './fs-read.js';
import { NoteLog } from './notes.js';
import { machine } from './test-machines.js';

describe('gfxTargetName', () => {
  it('decodes the KFD targets ninodes profiles', () => {
    expect(gfxTargetName(110000)).toBe('gfx1100');
    expect(gfxTargetName(110501)).toBe('gfx1151');
    expect(gfxTargetName(120001)).toBe('gfx1201');
    expect(gfxTargetName(90010)).toBe('gfx90a');
    expect(gfxTargetName(90402)).toBe('gfx942');
    expect(gfxTargetName(0)).toBeNull();
    expect(gfxTargetName(99999999)).toBeNull();
  });

  it('inverts the encoding major*10000 + minor*100 + stepping for every hex-digit minor/stepping', () => {
    fc.assert(
      fc.property(fc.integer({ min: 7, max: 12 }), fc.integer({ min: 0, max: 15 }), fc.integer({ min: 0, max: 15 }), (major, minor, step) => {
        const name = gfxTargetName(major * 10000 + minor * 100 + step);
        expect(name).toBe(`gfx${major}${minor.toString(16)}${step.toString(16)}`);
      }),
    );
  });
});

describe('parseKfdProperties', () => {
  it('reads key/value lines and skips garbage', () => {
    const p = parseKfdProperties('simd_count 192\ngfx_target_version 110000\nnonsense\nunique_id 5300137425458187472\n');
    expect(p.get('simd_count')).toBe('192');
    expect(p.get('gfx_target_version')).toBe('110000');
    expect(p.get('unique_id')).toBe('5300137425458187472');
    expect(p.has('nonsense')).toBe(false);
  });
});

describe('readAmdGpus on recorded machines', () => {
  it('2x W7900: both cards, the BMC VGA and connectors ignored, gfx1100 from KFD, 48 GiB VRAM each', () => {
    const log = new NoteLog();
    const gpus = readAmdGpus(resolveRoots(machine('w7900x2-gfx1100')), log);
    expect(gpus.map((g) => g.card)).toEqual(['card1', 'card2']);
    for (const g of gpus) {
      expect(g).toMatchObject({ gfxTarget: 'gfx1100', gfxTargetVersion: 110000, productName: 'AMD Radeon PRO W7900', pciDeviceId: 0x7448, vramTotalBytes: 51522830336, pcieGen: 4, pcieWidth: 16, computeUnits: 96 });
    }
    // UUIDs are the KFD unique_id in hex, the ids seeds/002's launcher passes in ROCR_VISIBLE_DEVICES.
    expect(gpus.map((g) => [g.pciBusId, g.renderMinor, g.kfdNode, g.vramUsedBytes, g.uuid])).toEqual([
      ['0000:03:00.0', 128, 1, 1316737024, 'GPU-3c99737f13093cd0'],
      ['0000:83:00.0', 129, 2, 29253632, 'GPU-3ce42265b99a6c53'],
    ]);
    expect(log.notes.filter((n) => n.level === 'warn')).toEqual([]);
  });

  it('Strix Halo APU: gfx1151, 512 MiB carve-out plus GTT, link speed unknown', () => {
    const log = new NoteLog();
    const [g, ...rest] = readAmdGpus(resolveRoots(machine('strix-halo-gfx1151')), log);
    expect(rest).toEqual([]);
    expect(g).toMatchObject({ card: 'card0', gfxTarget: 'gfx1151', gfxTargetVersion: 110501, productName: null, vramTotalBytes: 536870912, gttTotalBytes: 66496790528, gttUsedBytes: 5127438336, pcieGen: null, pcieWidth: null, computeUnits: 40, uuid: null });
    expect(log.notes.filter((n) => n.level === 'warn')).toEqual([]);
  });

  it('NVIDIA host: no AMD GPU (nvidia-drm cards have vendor 0x10de)', () => {
    expect(readAmdGpus(resolveRoots(machine('rtx4090x2-container')), new NoteLog())).toEqual([]);
  });

  it('malformed tree: unknown fields with warnings, never an exception', () => {
    const log = new NoteLog();
    const gpus = readAmdGpus(resolveRoots(machine('malformed')), log);
    // card1 has a KFD node, so HIP numbers it first; card0 (no KFD node) comes last.
    expect(gpus.map((g) => g.card)).toEqual(['card1', 'card0']);
    const [c1, c0] = gpus;
    expect(c0).toMatchObject({ vramTotalBytes: null, vramUsedBytes: null, gfxTarget: null, pcieGen: null, pcieWidth: null, kfdNode: null });
    expect(c1).toMatchObject({ vramTotalBytes: 25753026560, vramUsedBytes: null, gfxTarget: null, gfxTargetVersion: 99999999, kfdNode: 1 });
    const warnings = log.notes.filter((n) => n.level === 'warn').map((n) => n.message);
    expect(warnings.some((m) => /mem_info_vram_total is not a number/.test(m))).toBe(true);
    expect(warnings.some((m) => /card0: no KFD topology node/.test(m))).toBe(true);
    expect(warnings.some((m) => /card1: gfx_target_version '99999999'/.test(m))).toBe(true);
    expect(warnings.some((m) => /mem_info_vram_used is not a number \('NaN'\)/.test(m))).toBe(true);
    expect(warnings.some((m) => /unparsable PCI vendor 'AMD'/.test(m))).toBe(true);
  });
});
