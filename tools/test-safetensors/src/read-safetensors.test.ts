// The reader against bytes laid out by hand from the safetensors spec (8-byte LE header length,
// JSON header, data), with values whose float64 forms are known exactly.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeF64, f32Of, readSafetensorsFile, tensorF64 } from './index.js';

function file(header: object, data: number[]): Buffer {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([len, json, Buffer.from(data)]);
}

describe('readSafetensorsFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ninodes-test-st-'));
  it('reads metadata, shapes and exact values of f32, bf16 and f16 tensors', () => {
    // f32 1.5 = 0x3fc00000; bf16 -2 = 0xc000; f16 0.25 = 0x3400, f16 smallest subnormal = 0x0001.
    const path = join(dir, 'a.safetensors');
    writeFileSync(
      path,
      file(
        {
          __metadata__: { format: 'pt' },
          a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] },
          b: { dtype: 'BF16', shape: [1], data_offsets: [4, 6] },
          c: { dtype: 'F16', shape: [2], data_offsets: [6, 10] },
        },
        [0x00, 0x00, 0xc0, 0x3f, 0x00, 0xc0, 0x00, 0x34, 0x01, 0x00],
      ),
    );
    const ck = readSafetensorsFile(path);
    expect(ck.metadata).toEqual({ format: 'pt' });
    expect([...ck.tensors.keys()]).toEqual(['a', 'b', 'c']);
    expect([...f32Of(ck.tensors.get('a')!)]).toEqual([1.5]);
    expect([...tensorF64(ck, 'b')]).toEqual([-2]);
    expect([...decodeF64(ck.tensors.get('c')!)]).toEqual([0.25, 2 ** -24]);
    expect(ck.tensors.get('c')?.shape).toEqual([2]);
    expect(() => tensorF64(ck, 'missing')).toThrow(/missing tensor/);
  });

  it('rejects an entry that runs past the file', () => {
    const path = join(dir, 'b.safetensors');
    writeFileSync(path, file({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } }, [0, 0, 0, 0]));
    expect(() => readSafetensorsFile(path)).toThrow(/out of bounds/);
    rmSync(dir, { recursive: true, force: true });
  });
});
