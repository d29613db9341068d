// A consumer that requires @ninodes/kernels (CJS) while memory imports it (ESM) holds two builds of
// kernels; the writer must take the CJS build's tensors as tensors, not as raw bytes.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as esmKernels from '@ninodes/kernels';
import { afterAll, describe, expect, it } from 'vitest';
import { tensorSources, writeSafetensors } from './safetensors-writer.js';

const cjsKernels = createRequire(import.meta.url)('@ninodes/kernels') as typeof esmKernels;
const dir = mkdtempSync(join(tmpdir(), 'ninodes-cjs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('writeSafetensors with a tensor from the CJS build of kernels', () => {
  it('writes its bytes', async () => {
    expect(cjsKernels.Tensor).not.toBe(esmKernels.Tensor); // two builds really are loaded
    const values = [1.5, -2, 0.25, 3];
    const path = join(dir, 'cjs.safetensors');
    await writeSafetensors(path, tensorSources({ w: cjsKernels.Tensor.f32([2, 2], values) }));
    const file = readFileSync(path);
    const headerBytes = Number(file.readBigUInt64LE(0));
    const body = file.subarray(8 + headerBytes);
    expect([...new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength))]).toEqual(values);
  });
});
