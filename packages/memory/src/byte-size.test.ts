import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatBytes } from '@ninodes/device';
import { parseByteSize } from './byte-size.js';

const K = 1024;

describe('parseByteSize', () => {
  it.each([
    ['512', 512],
    ['512b', 512],
    ['64k', 64 * K],
    ['1.5m', 1.5 * K * K],
    ['2.5g', 2.5 * K ** 3],
    ['2.5gb', 2.5 * K ** 3],
    ['3gib', 3 * K ** 3],
    ['3GiB', 3 * K ** 3],
    ['1t', K ** 4],
    ['1tb', K ** 4],
    ['1TB', K ** 4],
    [' 16 MB ', 16 * K * K],
    ['0', 0],
    ['0.5k', 512],
    ['1.3k', Math.floor(1.3 * K)],
    ['2p', 2 * K ** 5],
  ])('%s = %d bytes', (text, bytes) => {
    expect(parseByteSize(text)).toBe(bytes);
  });

  it.each([
    ['', 0, 'expected a number'],
    ['abc', 0, "expected a digit, found 'a'"],
    ['-5g', 0, "expected a digit, found '-'"],
    ['12x', 2, "unknown unit 'x'"],
    ['1.g', 2, 'expected a digit after the decimal point'],
    ['5 g b', 4, "unexpected 'b'"],
    ['1.5', 0, 'a byte count must be a whole number'],
    ['3gibs', 1, "unknown unit 'gibs'"],
  ])('%j is rejected at position %d (%s)', (text, position, why) => {
    expect(() => parseByteSize(text)).toThrow(expect.objectContaining({ code: 'BYTE_SIZE_INVALID', value: text, where: `position ${position}` }));
    expect(() => parseByteSize(text)).toThrow(why);
  });

  it('rejects sizes past 2^53 bytes', () => {
    expect(() => parseByteSize('9000000p')).toThrow(expect.objectContaining({ code: 'BYTE_SIZE_TOO_LARGE' }));
  });

  it('integers with any spelling of a unit scale by the binary power (property)', () => {
    const units: [string, number][] = [['', 0], ['b', 0], ['k', 1], ['KB', 1], ['kib', 1], ['m', 2], ['Mb', 2], ['MiB', 2], ['g', 3], ['GB', 3], ['gib', 3], ['t', 4], ['tb', 4], ['TiB', 4]];
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4000 }), fc.constantFrom(...units), fc.boolean(), (n, [unit, power], space) => {
        expect(parseByteSize(`${n}${space && unit ? ' ' : ''}${unit}`)).toBe(n * 2 ** (10 * power));
      }),
    );
  });
});

// The formatter is @ninodes/device's; the round trip through this package's grammar is checked here.
describe('formatBytes (device) through parseByteSize', () => {
  it('parses back to within its rounding (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: 0, max: 1 << 20 }), fc.integer({ min: 0, max: 2 ** 52 })), (n) => {
        const back = parseByteSize(formatBytes(n));
        expect(Math.abs(back - n)).toBeLessThanOrEqual(Math.max(0.005 * n, 1));
      }),
    );
  });
});
