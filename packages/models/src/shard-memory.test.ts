import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { residentMemory } from '@ninodes/device';
import { openSafetensors } from '@ninodes/memory';
import { type LinearOp, createLinearProvider } from '@ninodes/quant';
import { afterAll, describe, expect, it } from 'vitest';
import { h3Layout } from './h3-layout.js';
import { writeSyntheticH3Checkpoint } from './synthetic-checkpoint.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-shard-mem-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs every op once on one row (faulting in / materializing its whole weight); returns the ops, kept alive. */
async function runAll(ops: LinearOp[]): Promise<LinearOp[]> {
  for (const op of ops) await op.forward(Tensor.fromArray('f32', [1, op.spec.inFeatures], new Float32Array(op.spec.inFeatures).fill(0.5)));
  return ops;
}

describe('a rank reads only its slices', () => {
  it('h3-small, half-width shard: resident bytes of its tensor-parallel linears ≤ 55% of the whole layer set', async () => {
    // Sparse: linears read as zeros from holes, but every page read still becomes resident.
    const path = join(dir, 'h3-small.safetensors');
    await writeSyntheticH3Checkpoint(path, { preset: 'h3-small', sparse: true });
    const probe = openSafetensors(path);
    const layout = h3Layout(probe);
    probe.close();
    // The layers a shard splits (qkv, fc1, the adaLN projections by rows; out_proj, fc2 by columns), all bf16 here.
    const split = layout.groups.flatMap((g) => g.linears).filter((l) => l.role !== 'replicated');
    expect(split.filter((l) => l.name.startsWith('blocks.'))).toHaveLength(5 * 10);
    const wholeBytes = split.reduce((a, l) => a + 2 * l.inFeatures * l.outFeatures, 0);

    const whole = openSafetensors(path);
    const r0 = residentMemory();
    const wholeOps = await runAll(split.map((l) => createLinearProvider(whole).linear({ name: l.name, inFeatures: l.inFeatures, outFeatures: l.outFeatures, bias: l.bias })));
    const r1 = residentMemory();
    const wholeDelta = r1.rss - r0.rss;
    expect(wholeOps).toHaveLength(split.length);
    whole.close();

    const shardSource = openSafetensors(path);
    const provider = createLinearProvider(shardSource);
    const r2 = residentMemory();
    const shardOps = await runAll(
      split.map((l) => {
        const shard = { rank: 1, size: 2, role: l.role, fused: l.fused };
        return provider.linear(l.role !== 'row' ? { name: l.name, inFeatures: l.inFeatures, outFeatures: l.outFeatures / 2, bias: l.bias, shard } : { name: l.name, inFeatures: l.inFeatures / 2, outFeatures: l.outFeatures, bias: l.bias, shard });
      }),
    );
    const r3 = residentMemory();
    const shardDelta = r3.rss - r2.rss;
    const held = shardOps.reduce((a, op) => a + (op as unknown as { heldBytes(): number }).heldBytes(), 0);
    console.log(`whole ${(wholeDelta / 2 ** 20).toFixed(0)} MiB resident for ${(wholeBytes / 2 ** 20).toFixed(0)} MiB of weights; half shard ${(shardDelta / 2 ** 20).toFixed(0)} MiB (${((100 * shardDelta) / wholeDelta).toFixed(1)}%), its ops hold ${(held / 2 ** 20).toFixed(0)} MiB`);
    // The whole run really had the layers resident, the shard really holds its half, and no more.
    expect(wholeDelta).toBeGreaterThan(0.9 * wholeBytes);
    expect(held).toBe(wholeBytes / 2);
    expect(shardDelta).toBeGreaterThan(0.45 * wholeBytes);
    expect(shardDelta).toBeLessThanOrEqual(0.55 * wholeDelta);
    shardSource.close();
  });
});
