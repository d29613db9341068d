import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { afterAll, describe, expect, it } from 'vitest';
import { captureFromEnv, compareCaptures, createCaptureSink } from './capture.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-capture-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('capture', () => {
  it('exists only when NINODES_CAPTURE is set', () => {
    expect(captureFromEnv({})).toBeUndefined();
    expect(captureFromEnv({ NINODES_CAPTURE: '' })).toBeUndefined();
    expect(captureFromEnv({ NINODES_CAPTURE: join(dir, 'x') })?.dir).toBe(join(dir, 'x'));
  });

  it('orders files embed, blocks, final per call and reports missing files and tolerance', async () => {
    const a = createCaptureSink(join(dir, 'a'));
    const b = createCaptureSink(join(dir, 'b'));
    for (const [sink, bump] of [[a, 0], [b, 1e-3]] as const) {
      sink.beginCall();
      await sink.write('embed', { x: Tensor.f32([2], [1, 2]) });
      await sink.write('block-000', { 'out.x': Tensor.f32([2], [3, 4]) });
      await sink.write('block-001', { 'out.x': Tensor.f32([2], [5, 6 + bump]) });
      await sink.write('final', { head: Tensor.f32([1], [7 + bump]) });
    }
    expect(readdirSync(join(dir, 'a', 'call-0000')).sort()).toEqual(['block-000.safetensors', 'block-001.safetensors', 'embed.safetensors', 'final.safetensors']);
    expect(compareCaptures(join(dir, 'a'), join(dir, 'b')).first).toMatchObject({ file: 'call-0000/block-001', tensor: 'out.x' });
    expect(compareCaptures(join(dir, 'a'), join(dir, 'b'), { atol: 2e-3 })).toMatchObject({ equal: true, filesCompared: 4 });
    rmSync(join(dir, 'b', 'call-0000', 'block-000.safetensors'));
    expect(compareCaptures(join(dir, 'a'), join(dir, 'b')).first).toMatchObject({ file: 'call-0000/block-000', reason: 'missing' });
    expect(() => compareCaptures(join(dir, 'nope'), join(dir, 'b'))).toThrow(expect.objectContaining({ code: 'FILE_NOT_FOUND' }));
    expect(existsSync(join(dir, 'a', 'call-0000', 'final.safetensors'))).toBe(true);
  });
});
