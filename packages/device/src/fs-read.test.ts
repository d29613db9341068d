import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatBytes } from './format-bytes.js';
import { parseUnsigned } from './fs-read.js';
import { parseProcTable } from './process-memory.js';

describe('parseUnsigned', () => {
  it('round-trips decimal and hex for every safe integer, with sysfs newlines', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), (n) => {
        expect(parseUnsigned(`${n}\n`)).toBe(n);
        expect(parseUnsigned(`0x${n.toString(16)}\n`)).toBe(n);
      }),
    );
  });

  it('rejects anything that is not a whole unsigned number', () => {
    for (const t of ['', '-1', '1.5', '0x', '12abc', 'NaN', '1e9', '0xZZ', '9007199254740993', undefined]) expect(parseUnsigned(t)).toBeUndefined();
  });
});

describe('parseProcTable', () => {
  it('reads any kB value back as bytes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 40 }), fc.integer({ min: 0, max: 12 }), (kb, pad) => {
        expect(parseProcTable(`MemTotal:${' '.repeat(pad + 1)}${kb} kB\n`).get('MemTotal')).toBe(kb * 1024);
      }),
    );
  });
});

describe('formatBytes', () => {
  it('prints a value that reads back within rounding of its decimals in its unit', () => {
    const units: Record<string, number> = { B: 1, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40, PiB: 2 ** 50 };
    fc.assert(
      fc.property(fc.maxSafeNat(), (n) => {
        const m = /^([0-9.]+) (B|KiB|MiB|GiB|TiB|PiB)$/.exec(formatBytes(n, 1));
        expect(m).not.toBeNull();
        const unit = units[m?.[2] as string] as number;
        expect(Math.abs(Number(m?.[1]) * unit - n)).toBeLessThanOrEqual(0.05 * unit + 1e-9 * n);
        if (n >= 1024) expect(Number(m?.[1])).toBeLessThan(1024.05);
      }),
    );
  });
});
