import { describe, expect, it } from 'vitest';
import { sequenceCounts, sequenceRows } from './sequence-split.js';

describe('sequenceRows', () => {
  it('gives rank r of n the rows [floor(r·S/n), floor((r+1)·S/n)): tiles the sequence in rank order', () => {
    expect([0, 1, 2].map((r) => sequenceRows(256, r, 3))).toEqual([
      { start: 0, stop: 85 },
      { start: 85, stop: 170 },
      { start: 170, stop: 256 },
    ]);
    expect([0, 1].map((r) => sequenceRows(23, r, 2))).toEqual([
      { start: 0, stop: 11 },
      { start: 11, stop: 23 },
    ]);
    // Fewer rows than ranks: some own none.
    expect([0, 1, 2, 3].map((r) => sequenceRows(2, r, 4))).toEqual([
      { start: 0, stop: 0 },
      { start: 0, stop: 1 },
      { start: 1, stop: 1 },
      { start: 1, stop: 2 },
    ]);
    expect(sequenceCounts(256, 3, 10)).toEqual([850, 850, 860]);
  });

  it('refuses a rank outside the world (INVALID_SHARD) and a row count that is not one (INVALID_ARGUMENT)', () => {
    expect(() => sequenceRows(8, 2, 2)).toThrow(expect.objectContaining({ code: 'INVALID_SHARD' }));
    expect(() => sequenceRows(8, 0, 0)).toThrow(expect.objectContaining({ code: 'INVALID_SHARD' }));
    expect(() => sequenceRows(-1, 0, 2)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => sequenceRows(2.5, 0, 2)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
