import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TensorSource, writeSafetensors } from '@ninodes/memory';
import type { LayoutGroup, LayoutTensor, ModelLayout } from '@ninodes/quant';
import { afterAll, beforeAll } from 'vitest';

/** bf16 weights of `elements` values with every bit pattern distinct per seed (finite values: exponent bits kept low). */
export function distinctBf16(elements: number, seed: number): Uint8Array {
  const u = new Uint16Array(elements);
  for (let i = 0; i < u.length; i++) u[i] = (0x3c00 + ((i * 7 + seed * 131) % 0x7ff)) ^ (i % 2 === 0 ? 0x8000 : 0);
  return new Uint8Array(u.buffer);
}

/** Writes `sources` as a safetensors file in a fresh temporary folder before the file's tests and removes it after; returns its path (valid from then). */
export function temporarySafetensors(name: string, sources: readonly TensorSource[]): () => string {
  let dir: string | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'distorch-'));
    await writeSafetensors(join(dir, name), sources);
  });
  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });
  return () => join(dir as string, name);
}

/**
 * A layout of `groups` (the first an embedder, the rest blocks), each with the linears `linears`
 * [n, k] stored in bf16 (and an f32 bias each with `bias`), and the tensors of its checkpoint:
 * weights distinct per linear, bias row r of group g r / 8 - g.
 */
export function bf16Model(groups: readonly string[], linears: readonly string[], n: number, k: number, bias: boolean): { layout: ModelLayout; sources: TensorSource[] } {
  const sources: TensorSource[] = [];
  const layout: ModelLayout = {
    architecture: 'test',
    prefix: '',
    groups: groups.map((g, i): LayoutGroup => {
      const tensors: LayoutTensor[] = [];
      for (const [j, l] of linears.entries()) {
        tensors.push({ name: `${g}.${l}.weight`, dtype: 'bf16', shape: [n, k], byteLength: 2 * n * k });
        sources.push({ name: `${g}.${l}.weight`, dtype: 'bf16', shape: [n, k], data: () => distinctBf16(n * k, i * linears.length + j) });
        if (!bias) continue;
        tensors.push({ name: `${g}.${l}.bias`, dtype: 'f32', shape: [n], byteLength: 4 * n });
        sources.push({ name: `${g}.${l}.bias`, dtype: 'f32', shape: [n], data: () => new Uint8Array(Float32Array.from({ length: n }, (_, r) => r / 8 - i).buffer) });
      }
      const kind = i === 0 ? 'pre' : 'block';
      return { name: g, kind, tensors, linears: linears.map((l) => ({ name: `${g}.${l}`, inFeatures: k, outFeatures: n, bias, storedFormat: 'bf16', role: 'column', fused: { kind: 'none' }, fp32Island: false })) };
    }),
  };
  return { layout, sources };
}
