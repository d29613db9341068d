import { describe, expect, it } from 'vitest';
import { encodePng } from './png.js';
import { decodePng as decode } from './test-support/png-decode.js';

describe('encodePng', () => {
  it('round-trips pixels through an independent decoder', () => {
    const rgb = Uint8Array.from({ length: 5 * 3 * 3 }, (_, i) => (i * 37) % 256);
    const { width, height, rgb: back, chunks } = decode(encodePng(5, 3, rgb));
    expect([width, height]).toEqual([5, 3]);
    expect([...back]).toEqual([...rgb]);
    expect(chunks).toEqual(['IHDR', 'IDAT', 'IEND']);
  });

  it('rejects a buffer that does not match the size', () => {
    expect(() => encodePng(2, 2, new Uint8Array(11))).toThrow(RangeError);
  });
});
