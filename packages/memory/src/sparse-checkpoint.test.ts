// A 24 GB checkpoint with an H3-style key layout, written sparse (header + ftruncate), must open
// by reading its header only: resident growth stays far below the file size.
import { closeSync, ftruncateSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processMemory } from './process-memory.js';
import { SafetensorsFile } from './safetensors-file.js';
import { type TensorSource, buildHeader } from './safetensors-writer.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-sparse-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** MiniMax-H3-like DiT keys: hidden 3072, 72 blocks, bf16. */
export function h3Layout(blocks = 72, hidden = 3072): TensorSource[] {
  const out: TensorSource[] = [];
  const add = (name: string, shape: number[]): void => {
    out.push({ name, dtype: 'bf16', shape, data: () => new Uint8Array(0) });
  };
  add('x_embedder.proj.weight', [hidden, 64]);
  add('t_embedder.mlp.0.weight', [hidden, 256]);
  for (let b = 0; b < blocks; b++) {
    const p = `blocks.${b}.`;
    add(`${p}norm1.weight`, [hidden]);
    add(`${p}attn.qkv_proj.weight`, [3 * hidden, hidden]);
    add(`${p}attn.qkv_proj.bias`, [3 * hidden]);
    add(`${p}attn.q_norm.weight`, [128]);
    add(`${p}attn.k_norm.weight`, [128]);
    add(`${p}attn.out_proj.weight`, [hidden, hidden]);
    add(`${p}attn.out_proj.bias`, [hidden]);
    add(`${p}norm2.weight`, [hidden]);
    add(`${p}mlp.fc1.weight`, [2 * 4 * hidden, hidden]);
    add(`${p}mlp.fc1.bias`, [2 * 4 * hidden]);
    add(`${p}mlp.fc2.weight`, [hidden, 4 * hidden]);
    add(`${p}mlp.fc2.bias`, [hidden]);
    add(`${p}adaln_proj.linear.weight`, [6 * hidden, hidden]);
    add(`${p}adaln_proj.linear.bias`, [6 * hidden]);
  }
  add('final_layer.linear.weight', [64, hidden]);
  return out;
}

/** Writes the header and extends the file sparsely to its full size (no data blocks on disk). */
export function writeSparseCheckpoint(path: string, tensors: readonly TensorSource[]): number {
  const { json, sizes } = buildHeader(tensors, { format: 'pt', producer: 'ninodes sparse test' });
  const length = new Uint8Array(8);
  new DataView(length.buffer).setBigUint64(0, BigInt(json.byteLength), true);
  const total = 8 + json.byteLength + sizes.reduce((a, b) => a + b, 0);
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, length);
    writeSync(fd, json);
    ftruncateSync(fd, total);
  } finally {
    closeSync(fd);
  }
  return total;
}

describe('24 GB sparse checkpoint', () => {
  it('opens with 1000+ tensors and under 50 MB of resident growth', () => {
    const layout = h3Layout();
    const path = join(dir, 'h3-24g.safetensors');
    const total = writeSparseCheckpoint(path, layout);
    expect(total).toBeGreaterThan(24e9);
    expect(layout.length).toBeGreaterThan(1000);

    const before = processMemory();
    const t0 = performance.now();
    const st = SafetensorsFile.open(path);
    const openMs = performance.now() - t0;
    const after = processMemory();
    const growth = after.rss - before.rss;
    console.info(`sparse 24 GB open: ${openMs.toFixed(1)} ms, ${layout.length} tensors, resident growth ${(growth / 2 ** 20).toFixed(2)} MiB`);
    expect(st.entries().length).toBe(layout.length);
    expect(growth).toBeLessThan(50 * 2 ** 20);

    // Views of the largest tensors are zero-copy (sparse pages read as zeros) and cost no residency.
    const w = st.tensor('blocks.71.adaln_proj.linear.weight');
    expect(w.shape).toEqual([6 * 3072, 3072]);
    expect(w.byteOffset).toBe(0);
    expect((w.data as Uint16Array)[123_456]).toBe(0);
    expect(st.entry('final_layer.linear.weight').byteOffset + st.entry('final_layer.linear.weight').byteLength).toBe(total);
    st.close();
  });
});
