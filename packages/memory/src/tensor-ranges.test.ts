import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor, isNinodesError } from '@ninodes/kernels';
import { afterAll, describe, expect, it } from 'vitest';
import { SafetensorsFile } from './safetensors-file.js';
import { writeSafetensors } from './safetensors-writer.js';
import { copyColumnRange, viewRowRange } from './tensor-ranges.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-ranges-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const [N, K] = [6, 10];
const values = Float32Array.from({ length: N * K }, (_, i) => i * 0.5 - 7);
const bf = Uint16Array.from({ length: N * K }, (_, i) => 0x3f80 + i);

function code(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return isNinodesError(e) ? e.code : 'OTHER';
  }
  return 'NONE';
}

describe('row and column ranges of a safetensors tensor', async () => {
  const path = join(dir, 'r.safetensors');
  await writeSafetensors(path, [
    { name: 'pad', dtype: 'u8', shape: [3], data: () => new Uint8Array([1, 2, 3]) },
    { name: 'w', dtype: 'f32', shape: [N, K], data: () => new Uint8Array(values.buffer) },
    { name: 'b', dtype: 'bf16', shape: [N, K], data: () => new Uint8Array(bf.buffer) },
  ]);
  const file = SafetensorsFile.open(path);

  it('rows are a view of the mapping with the rows of the whole tensor', () => {
    const r = file.tensorRows('w', 2, 5);
    expect(r.shape).toEqual([3, K]);
    expect(r.owner).toBeDefined();
    expect([...(r.data as Float32Array)]).toEqual([...values.subarray(2 * K, 5 * K)]);
    const b = file.tensorRows('b', 5, 6);
    expect([...(b.data as Uint16Array)]).toEqual([...bf.subarray(5 * K, 6 * K)]);
    expect(file.tensorRows('w', 3, 3).shape).toEqual([0, K]);
  });

  it('columns are a copy of exactly those columns of every row', () => {
    const c = file.tensorColumns('w', 3, 7);
    expect(c.shape).toEqual([N, 4]);
    const want: number[] = [];
    for (let r = 0; r < N; r++) for (let j = 3; j < 7; j++) want.push(values[r * K + j] as number);
    expect([...(c.data as Float32Array)]).toEqual(want);
    const b = file.tensorColumns('b', 0, 5);
    const wantB: number[] = [];
    for (let r = 0; r < N; r++) for (let j = 0; j < 5; j++) wantB.push(bf[r * K + j] as number);
    expect([...(b.data as Uint16Array)]).toEqual(wantB);
    expect([...(file.tensorColumns('w', 0, K).data as Float32Array)]).toEqual([...values]);
  });

  it('out-of-range requests are coded errors', () => {
    expect(code(() => file.tensorRows('w', 4, 7))).toBe('INDEX_OUT_OF_RANGE');
    expect(code(() => file.tensorRows('w', 3, 2))).toBe('INDEX_OUT_OF_RANGE');
    expect(code(() => file.tensorColumns('w', 0, K + 1))).toBe('INDEX_OUT_OF_RANGE');
    expect(code(() => file.tensorColumns('nope', 0, 1))).toBe('TENSOR_NOT_FOUND');
  });

  it('in-memory helpers give the same results', () => {
    const t = Tensor.fromArray('f32', [N, K], values.slice());
    expect([...(viewRowRange(t, 'w', 2, 5).data as Float32Array)]).toEqual([...(file.tensorRows('w', 2, 5).data as Float32Array)]);
    expect([...(copyColumnRange(t, 'w', 3, 7).data as Float32Array)]).toEqual([...(file.tensorColumns('w', 3, 7).data as Float32Array)]);
  });
});
