import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openCheckpoint } from './open-checkpoint.js';

const fixtures = process.env.NINODES_FIXTURES!;
const dir = mkdtempSync(join(tmpdir(), 'ninodes-open-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('openCheckpoint', () => {
  it('opens GGUF by its magic bytes, whatever the file is called', () => {
    const renamed = join(dir, 'model.bin');
    copyFileSync(join(fixtures, 'gguf', 'quants.gguf'), renamed);
    const source = openCheckpoint(renamed);
    expect(source.format).toBe('gguf');
    expect(source.entry('t.q8_0').shape).toEqual([3, 512]);
    source.close();
  });

  it('opens safetensors otherwise', () => {
    const source = openCheckpoint(join(fixtures, 'safetensors', 'dtypes.safetensors'));
    expect(source.format).toBe('safetensors');
    source.close();
  });

  it('names a missing file with a typed error', () => {
    expect(() => openCheckpoint(join(dir, 'missing.safetensors'))).toThrow(expect.objectContaining({ code: 'FILE_NOT_FOUND' }));
  });
});
