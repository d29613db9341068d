// readAll: reads every tensor, at most `concurrency` in flight, and gives back what it read when
// one read fails.
import type { PooledBuffer } from '@ninodes/memory';
import { describe, expect, it } from 'vitest';
import { type TensorReader, readAll } from './file-group-loader.js';

function fakeReader(failOn?: string): { reader: TensorReader; maxInFlight: () => number; released: string[] } {
  let inFlight = 0;
  let max = 0;
  const released: string[] = [];
  const reader: TensorReader = {
    async read(name) {
      inFlight++;
      max = Math.max(max, inFlight);
      // Settle on a later turn of the event loop, as a positioned read does.
      await new Promise((r) => setTimeout(r, 1));
      inFlight--;
      if (name === failOn) throw new Error(`read ${name}`);
      const buffer = { buffer: new ArrayBuffer(4), release: () => released.push(name) } as unknown as PooledBuffer;
      return { tensor: { name, dtype: 'u8', shape: [4], bytes: new Uint8Array(4) }, buffer };
    },
    close: async () => {},
  };
  return { reader, maxInFlight: () => max, released };
}

describe('readAll', () => {
  const names = ['a', 'b', 'c', 'd', 'e'];

  it.each([1, 2])('reads every tensor in order with at most %i in flight', async (concurrency) => {
    const f = fakeReader();
    const got = await readAll(f.reader, names, concurrency);
    expect(got.map((r) => r.tensor.name)).toEqual(names);
    expect(f.maxInFlight()).toBe(concurrency);
  });

  it('starts them all at once without a bound', async () => {
    const f = fakeReader();
    await readAll(f.reader, names);
    expect(f.maxInFlight()).toBe(names.length);
  });

  it('releases what it read and throws the failed read', async () => {
    const f = fakeReader('c');
    await expect(readAll(f.reader, names, 1)).rejects.toThrow('read c');
    // In turn: a and b were read and go back; nothing after c is started.
    expect(f.released.sort()).toEqual(['a', 'b']);
  });
});
