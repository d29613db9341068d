import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor, quantizeWeightInt8 } from '@ninodes/kernels';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeComfyQuant } from './comfy-quant-config.js';
import { createLinearProvider } from './linear-provider.js';
import { readLoraFile } from './lora-file.js';
import { type LoraTarget, mapLora } from './lora-map.js';
import { LoraPatcher } from './lora-patcher.js';
import { dequantizeInt8 } from './materialize.js';
import { memoryCheckpoint } from './testing/memory-checkpoint.js';
import { type TestLoraModule, factors, seeded, writeTestLora } from './testing/lora-files.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-lora-patch-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PREFIX = 'model.diffusion_model.';
const HEADS = 2;
const HEAD_DIM = 4;
const HIDDEN = 16;
const QKV = `${PREFIX}blocks.0.attn.qkv_proj`;
const OUT = `${PREFIX}blocks.0.attn.out_proj`;
const FC2 = `${PREFIX}blocks.1.mlp.fc2`;
const TARGETS: LoraTarget[] = [
  { name: QKV, outFeatures: 3 * HEADS * HEAD_DIM, inFeatures: HIDDEN, fused: { kind: 'qkv', heads: HEADS, headDim: HEAD_DIM } },
  { name: OUT, outFeatures: HIDDEN, inFeatures: HEADS * HEAD_DIM },
  { name: FC2, outFeatures: HIDDEN, inFeatures: 24 },
];
const weights: Record<string, Tensor> = Object.fromEntries(TARGETS.map((t, i) => [`${t.name}.weight`, Tensor.fromArray('f32', [t.outFeatures, t.inFeatures], seeded(t.outFeatures * t.inFeatures, 50 + i))]));

/** W + strength·(alpha/rank)·up·down in float64, from the test's own factors (rows: the part of W the module covers). */
function reference(w: Float32Array, k: number, mods: readonly { m: TestLoraModule; strength: number; alpha: number; row0?: number }[]): Float64Array {
  const out = Float64Array.from(w);
  for (const { m, strength, alpha, row0 = 0 } of mods) {
    const { up, down } = factors(m);
    const s = (strength * alpha) / m.rank;
    for (let i = 0; i < m.n; i++)
      for (let j = 0; j < m.k; j++) {
        let d = 0;
        for (let r = 0; r < m.rank; r++) d += (up.data[i * m.rank + r] as number) * (down.data[r * m.k + j] as number);
        const at = (row0 + i) * k + j;
        out[at] = (out[at] as number) + s * d;
      }
  }
  return out;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs((a[i] as number) - (b[i] as number)));
  return d;
}

const spec = (t: LoraTarget) => ({ name: t.name, outFeatures: t.outFeatures, inFeatures: t.inFeatures, bias: false });

describe('LoRA patches applied by the linear provider', () => {
  it('kohya LoRA: the patched weight equals a float64 W + strength·(alpha/rank)·up·down', async () => {
    const m: TestLoraModule = { path: 'blocks.1.mlp.fc2', n: HIDDEN, k: 24, rank: 4, alpha: 2, seed: 7 };
    const path = join(dir, 'kohya.safetensors');
    await writeTestLora(path, 'kohya', [m]);
    const patcher = new LoraPatcher(TARGETS, PREFIX);
    const applied = patcher.add(readLoraFile(path), 0.75);
    expect(applied.layers).toEqual([FC2]);
    const provider = createLinearProvider(memoryCheckpoint('m.safetensors', weights), { patcher });
    const got = (await provider.linear(spec(TARGETS[2] as LoraTarget)).materializedWeight()).data;
    const want = reference(weights[`${FC2}.weight`]?.data as Float32Array, 24, [{ m, strength: 0.75, alpha: 2 }]);
    const delta = maxAbsDiff(want, weights[`${FC2}.weight`]?.data as Float32Array);
    expect(delta).toBeGreaterThan(0.05);
    expect(maxAbsDiff(got, want)).toBeLessThan(1e-6);
    // The file's mapping is not applied twice by a second preparation.
    expect(patcher.patchedLayers).toBe(1);
  });

  it('peft LoRA on the q, k and v parts patches their rows of the fused qkv layer; unknown modules are listed', async () => {
    const inner = HEADS * HEAD_DIM;
    const q: TestLoraModule = { path: 'blocks.0.attn.to_q', n: inner, k: HIDDEN, rank: 2, seed: 11 };
    const v: TestLoraModule = { path: 'blocks.0.attn.to_v', n: inner, k: HIDDEN, rank: 2, seed: 12 };
    const stray: TestLoraModule = { path: 'blocks.0.attn.norm_q', n: HIDDEN, k: HIDDEN, rank: 2, seed: 13 };
    const path = join(dir, 'peft.safetensors');
    await writeTestLora(path, 'peft', [q, v, stray], { lora_alpha: '4' });
    const patcher = new LoraPatcher(TARGETS, PREFIX);
    const applied = patcher.add(readLoraFile(path), 1);
    expect(applied.unmapped).toEqual(['transformer.blocks.0.attn.norm_q']);
    const provider = createLinearProvider(memoryCheckpoint('m.safetensors', weights), { patcher });
    const got = (await provider.linear(spec(TARGETS[0] as LoraTarget)).materializedWeight()).data;
    const w = weights[`${QKV}.weight`]?.data as Float32Array;
    const want = reference(w, HIDDEN, [
      { m: q, strength: 1, alpha: 4, row0: 0 },
      { m: v, strength: 1, alpha: 4, row0: 2 * inner },
    ]);
    expect(maxAbsDiff(got, want)).toBeLessThan(1e-6);
    // k's rows are untouched.
    expect([...got.subarray(inner * HIDDEN, 2 * inner * HIDDEN)]).toEqual([...w.subarray(inner * HIDDEN, 2 * inner * HIDDEN)]);
  });

  it('a module whose shape does not fit its layer is LORA_SHAPE_MISMATCH naming the key', async () => {
    const path = join(dir, 'wrong.safetensors');
    await writeTestLora(path, 'comfy', [{ path: 'blocks.0.attn.out_proj', n: HIDDEN, k: 12, rank: 2, seed: 3 }]);
    expect(() => mapLora(readLoraFile(path), TARGETS, PREFIX)).toThrow(expect.objectContaining({ code: 'LORA_SHAPE_MISMATCH', where: 'diffusion_model.blocks.0.attn.out_proj' }));
    const other = join(dir, 'other.safetensors');
    await writeTestLora(other, 'kohya', [{ path: 'double_blocks.0.img_attn.qkv', n: 8, k: 8, rank: 2, seed: 3 }]);
    expect(() => new LoraPatcher(TARGETS, PREFIX).add(readLoraFile(other))).toThrow(expect.objectContaining({ code: 'LORA_NO_MATCH' }));
  });

  it("changing one LoRA's strength re-patches only the layers it touches", async () => {
    const a = join(dir, 'a.safetensors');
    const b = join(dir, 'b.safetensors');
    await writeTestLora(a, 'kohya', [
      { path: 'blocks.0.attn.qkv_proj', n: 3 * HEADS * HEAD_DIM, k: HIDDEN, rank: 2, alpha: 2, seed: 21 },
      { path: 'blocks.0.attn.out_proj', n: HIDDEN, k: HEADS * HEAD_DIM, rank: 2, alpha: 2, seed: 22 },
    ]);
    const fc2: TestLoraModule = { path: 'blocks.1.mlp.fc2', n: HIDDEN, k: 24, rank: 3, alpha: 3, seed: 23 };
    await writeTestLora(b, 'comfy', [fc2]);
    const patcher = new LoraPatcher(TARGETS, PREFIX);
    patcher.add(readLoraFile(a), 1);
    const lb = patcher.add(readLoraFile(b), 1);
    const provider = createLinearProvider(memoryCheckpoint('m.safetensors', weights), { patcher });
    const ops = TARGETS.map((t) => provider.linear(spec(t)));
    const x = Tensor.fromArray('f32', [1, HIDDEN], seeded(HIDDEN, 99));
    const runAll = async () => {
      await ops[0]?.forward(x);
      await ops[1]?.forward(Tensor.fromArray('f32', [1, HEADS * HEAD_DIM], seeded(HEADS * HEAD_DIM, 98)));
      await ops[2]?.forward(Tensor.fromArray('f32', [1, 24], seeded(24, 97)));
    };
    await runAll();
    expect(patcher.patchedLayers).toBe(3);
    await runAll();
    expect(patcher.patchedLayers).toBe(3);
    const stale = patcher.setStrength(lb.index, 0.25);
    expect(stale).toEqual([FC2]);
    expect(provider.repatch(stale)).toBe(1);
    await runAll();
    expect(patcher.patchedLayers).toBe(4);
    const want = reference(weights[`${FC2}.weight`]?.data as Float32Array, 24, [{ m: fc2, strength: 0.25, alpha: 3 }]);
    expect(maxAbsDiff((await ops[2]?.materializedWeight())?.data ?? [], want)).toBeLessThan(1e-6);
    // Strength 0 drops the layer from the patch: it runs as stored again.
    provider.repatch(patcher.setStrength(lb.index, 0));
    expect([...((await ops[2]?.materializedWeight())?.data ?? [])]).toEqual([...(weights[`${FC2}.weight`]?.data as Float32Array)]);
  });

  it('an int8 convrot layer is dequantized, patched in fp32 and quantized again with new row scales', async () => {
    const [n, k] = [8, 256];
    const w0 = Tensor.fromArray('f32', [n, k], seeded(n * k, 5, 0.1));
    const { q, scale } = quantizeWeightInt8(w0, { convrot: 256 });
    const marker = encodeComfyQuant({ format: 'int8_tensorwise', convrot: true, convrot_groupsize: 256 });
    const src = memoryCheckpoint('q.safetensors', { 'l.weight': q, 'l.weight_scale': scale, 'l.comfy_quant': Tensor.fromArray('u8', [marker.length], marker) });
    const m: TestLoraModule = { path: 'l', n, k, rank: 4, alpha: 4, seed: 31 };
    const path = join(dir, 'int8.safetensors');
    await writeTestLora(path, 'comfy', [m]);
    const patcher = new LoraPatcher([{ name: 'l', outFeatures: n, inFeatures: k }]);
    patcher.add(readLoraFile(path), 0.5);
    const op = createLinearProvider(src, { patcher }).linear({ name: 'l', outFeatures: n, inFeatures: k, bias: false });
    expect(op.format).toBe('int8_convrot');
    const operands = await op.int8Operands();
    expect(operands?.convrot).toBe(256);
    // New scales: the row absmax of the patched (rotated) weight, not the stored ones.
    expect([...(operands?.scale.data ?? [])]).not.toEqual([...scale.data]);
    // The dequantized file weight + the float64 delta, quantized to int8 again: within int8 error.
    const deq = (await dequantizeInt8(q, scale, 256)).data;
    const want = reference(deq, k, [{ m, strength: 0.5, alpha: 4 }]);
    const got = (await op.materializedWeight()).data;
    // Relative Frobenius error: int8 with per-row scales stays near 1 %; the patch itself moves W by far more.
    const rel = (a: ArrayLike<number>) => Math.sqrt(Array.from(want, (v, i) => (v - (a[i] as number)) ** 2).reduce((s, v) => s + v, 0) / want.reduce((s, v) => s + v * v, 0));
    expect(rel(got)).toBeLessThan(0.02);
    expect(rel(deq)).toBeGreaterThan(0.2);
  });

  it("a tensor-parallel shard's patched weight is that shard of the whole patched weight", async () => {
    const m: TestLoraModule = { path: 'blocks.0.attn.qkv_proj', n: 3 * HEADS * HEAD_DIM, k: HIDDEN, rank: 3, alpha: 1, seed: 41 };
    const path = join(dir, 'tp.safetensors');
    await writeTestLora(path, 'kohya', [m]);
    const patcher = new LoraPatcher(TARGETS, PREFIX);
    patcher.add(readLoraFile(path), 1);
    const provider = createLinearProvider(memoryCheckpoint('m.safetensors', weights), { patcher });
    const t = TARGETS[0] as LoraTarget;
    const whole = (await provider.linear(spec(t)).materializedWeight()).data;
    const fused = { kind: 'qkv', heads: HEADS, headDim: HEAD_DIM } as const;
    const col = await provider.linear({ ...spec(t), outFeatures: t.outFeatures / 2, shard: { rank: 1, size: 2, role: 'column', fused } }).materializedWeight();
    const inner = HEADS * HEAD_DIM;
    // Rank 1 of 2 holds the second half of each of q, k and v.
    const rows: [number, number][] = [0, 1, 2].map((p) => [p * inner + inner / 2, (p + 1) * inner]);
    const want = rows.flatMap(([a, b]) => [...whole.subarray(a * HIDDEN, b * HIDDEN)]);
    expect(maxAbsDiff(col.data, want)).toBeLessThan(1e-6);
    const row = await provider.linear({ ...spec(t), inFeatures: HIDDEN / 2, shard: { rank: 0, size: 2, role: 'row', fused: { kind: 'none' } } }).materializedWeight();
    const wantRow = Array.from({ length: t.outFeatures }, (_, i) => [...whole.subarray(i * HIDDEN, i * HIDDEN + HIDDEN / 2)]).flat();
    expect(maxAbsDiff(row.data, wantRow)).toBeLessThan(1e-6);
  });
});
