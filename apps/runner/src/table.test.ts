import { describe, expect, it } from 'vitest';
import { formatRows, formatTable } from './table.js';

describe('formatTable', () => {
  it('pads every column but the last to its widest cell', () => {
    expect(formatTable(['A', 'BB'], [['xyz', '1'], ['q', '22']])).toBe('A    BB\nxyz  1\nq    22');
    expect(formatRows([['a', 'b'], ['cc', 'd']])).toBe('a   b\ncc  d');
  });

  it('formats 300k rows (more than one call can take as arguments) without overflowing the stack', () => {
    const rows = Array.from({ length: 300_000 }, (_, i) => [`blocks.${i}`, String(i)]);
    const text = formatTable(['GROUP', 'BYTES'], rows);
    const lines = text.split('\n');
    expect(lines).toHaveLength(300_001);
    expect(lines[1]).toBe(`blocks.0${' '.repeat('blocks.299999'.length - 'blocks.0'.length)}  0`);
  });
});
