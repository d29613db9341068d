import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ModelLayout, ownerOf, tensorResidentBytes } from '@ninodes/quant';
import { describe, expect, it } from 'vitest';
import { shardPlan } from './shard-plan.js';

/**
 * MiniMax-H3 layouts as models' layoutOf makes them (tp may not import models): two blocks, video
 * only, from synthetic checkpoints stored bf16 or converted by quant (int8 convrot, Q4_K); models'
 * layout-fixtures test writes and checks packages/models/fixtures/layouts/tp-*.json.
 */
function layout(name: 'tp-bf16' | 'tp-int8' | 'tp-q4k' | 'tp-wide-q4k' | 'tp-6-heads' | 'tp-ffn-1000'): ModelLayout {
  return JSON.parse(readFileSync(join(process.env.NINODES_REPO_ROOT as string, 'packages', 'models', 'fixtures', 'layouts', `${name}.json`), 'utf8')) as ModelLayout;
}

// The tp-* widths: 4×128 heads, hidden 512, ffn 1024, adaLN from tDim 256 to 18·hidden rows (3 parts).
const HIDDEN = 512;
const INNER = 512;
const FFN = 1024;
const T_DIM = 256;
const HEAD_DIM = 128;
const ADALN = 18 * HIDDEN;
const FINAL_ADALN = 2 * HIDDEN;
const PATCH = 96;
/** int8 weight [N, K] prepared: 1 B/param + an f32 scale per row. */
const w8 = (n: number, k: number): number => n * k + 4 * n;
/** What every rank holds whole: the fp32 islands (time embedder, patch projection, output head) with their biases, rope.inv_freq and the norms, in f32. */
const REPLICATED = 4 * (512 * 256 + 512) + 4 * (256 * 512 + 256) + 4 * (512 * PATCH + 512) + 4 * (PATCH * 512 + PATCH) + 4 * 16 + 2 * 4 * (HIDDEN + HIDDEN + HEAD_DIM + HEAD_DIM) + 4 * HIDDEN;

describe('shardPlan', () => {
  it('splits qkv by heads in each of q, k, v, fc1 by halves, adaLN by rows of each part, out_proj/fc2 by columns; replicated layers whole', () => {
    const plan = shardPlan(layout('tp-int8'), 2);
    const qkv = plan.linear('blocks.1.attn.qkv_proj')!;
    expect([qkv.localOut, qkv.localIn]).toEqual([3 * 256, 512]);
    // Rank 1 holds heads 2 and 3: rows [256, 512) of each of q, k and v.
    expect(plan.sliceOf('blocks.1.attn.qkv_proj', 1)).toEqual({ rows: [[256, 512], [INNER + 256, INNER + 512], [2 * INNER + 256, 2 * INNER + 512]] });
    expect(plan.sliceOf('blocks.0.mlp.fc1', 0)).toEqual({ rows: [[0, 512], [1024, 1536]] });
    expect(plan.sliceOf('blocks.0.mlp.fc2', 1)).toEqual({ columns: [512, 1024] });
    expect(plan.sliceOf('blocks.0.attn.out_proj', 0)).toEqual({ columns: [0, 256] });
    // The block adaLN holds one part per modality (3 × 3072 rows): rank 1 takes the second half of each.
    expect(plan.sliceOf('blocks.0.adaln_proj.linear', 1)).toEqual({ rows: [[1536, 3072], [4608, 6144], [7680, 9216]] });
    expect(plan.sliceOf('time_embedder.proj_in', 1)).toBeUndefined();
    expect(plan.shardOf('blocks.0.mlp.fc2', 1)).toEqual({ rank: 1, size: 2, role: 'row', fused: { kind: 'none' } });
    expect(plan.linears.map((l) => l.name).slice(0, 4)).toEqual(['time_embedder.proj_in', 'time_embedder.proj_out', 'video_patch_proj', 'blocks.0.adaln_proj.linear']);
    expect(() => plan.sliceOf('blocks.9.mlp.fc2', 0)).toThrow(expect.objectContaining({ code: 'LAYER_NOT_IN_PLAN' }));
    expect(() => plan.shardOf('blocks.0.mlp.fc2', 2)).toThrow(expect.objectContaining({ code: 'INVALID_SHARD', value: { rank: 2, size: 2 } }));
  });

  it("counts by quant's one memory account, as distorch's planner does: norms in f32 whatever their stored dtype (bf16 here), fp32 islands as stored", () => {
    const l = layout('tp-int8');
    // Run in int8 convrot: the stored int8 layers as they are, the bf16 final adaLN converted, the islands in f32.
    const block = w8(ADALN, T_DIM) + 4 * ADALN + w8(3 * INNER, HIDDEN) + w8(HIDDEN, INNER) + w8(2 * FFN, HIDDEN) + w8(HIDDEN, FFN);
    const plan = shardPlan(l, 1, { compute: 'int8_convrot' });
    expect(plan.singleRankBytes).toBe(REPLICATED + 2 * block + w8(FINAL_ADALN, T_DIM) + 4 * FINAL_ADALN);
    const sum = l.groups.reduce((a, g) => a + g.tensors.reduce((b, t) => b + tensorResidentBytes(t, ownerOf(g, t), 'int8_convrot'), 0), 0);
    expect(plan.singleRankBytes).toBe(sum);
  });

  it('per-rank bytes: 1/N of each split layer (int8 1 B/param + 4 B/row scales, f32 biases), replicated tensors whole', () => {
    for (const world of [1, 2]) {
      const plan = shardPlan(layout('tp-int8'), world);
      // Column and gathered layers: 1/world of rows (their scales and biases too); row layers: 1/world of columns, every row's scale.
      const blockSharded =
        w8(ADALN / world, T_DIM) + (4 * ADALN) / world +
        w8((3 * INNER) / world, HIDDEN) +
        ((HIDDEN * INNER) / world + 4 * HIDDEN) +
        w8((2 * FFN) / world, HIDDEN) +
        ((HIDDEN * FFN) / world + 4 * HIDDEN);
      // The final adaLN is stored bf16 and run as stored: 2 B/param, gathered like the block adaLN.
      const finalAdaln = (2 * FINAL_ADALN * T_DIM) / world + (4 * FINAL_ADALN) / world;
      const sharded = 2 * blockSharded + finalAdaln;
      for (const r of plan.ranks) expect(r).toEqual({ rank: r.rank, shardedBytes: sharded, replicatedBytes: REPLICATED, totalBytes: sharded + REPLICATED });
      expect(plan.ranks).toHaveLength(world);
      expect(plan.singleRankBytes).toBe(shardPlan(layout('tp-int8'), 1).ranks[0]!.totalBytes);
    }
    // Run in fp32: 4 B/param.
    const f32 = shardPlan(layout('tp-bf16'), 2, { compute: 'f32' });
    const adaln = 4 * (ADALN / 2) * T_DIM + 4 * (ADALN / 2);
    const qkv = 4 * ((3 * INNER) / 2) * HIDDEN;
    const out = 4 * HIDDEN * (INNER / 2);
    const fc1 = 4 * FFN * HIDDEN;
    const fc2 = 4 * HIDDEN * (FFN / 2);
    const finalAdaln = 4 * (FINAL_ADALN / 2) * T_DIM + 4 * (FINAL_ADALN / 2);
    expect(f32.ranks[1]!.shardedBytes).toBe(2 * (adaln + qkv + out + fc1 + fc2) + finalAdaln);
  });

  it('sequence parallel: int8 out_proj (K <= N) is exchanged, held whole by every rank; fc2 (K > N) and float out_proj stay split', () => {
    const plain = shardPlan(layout('tp-int8'), 2);
    const plan = shardPlan(layout('tp-int8'), 2, { sequence: true });
    expect(plan.sequence).toBe(true);
    expect(plain.sequence).toBe(false);
    expect(plan.linear('blocks.0.attn.out_proj')).toMatchObject({ role: 'row', exchange: true, localIn: INNER / 2, localOut: HIDDEN });
    expect(plan.linear('blocks.0.mlp.fc2')).toMatchObject({ role: 'row', exchange: false, localIn: FFN / 2 });
    expect(plain.linears.some((l) => l.exchange)).toBe(false);
    expect(plan.sliceOf('blocks.0.attn.out_proj', 1)).toBeUndefined();
    expect(plan.sliceOf('blocks.0.mlp.fc2', 1)).toEqual({ columns: [512, 1024] });
    expect(plan.shardOf('blocks.0.attn.out_proj', 1)).toEqual({ rank: 1, size: 2, role: 'row', fused: { kind: 'none' } });
    // Two blocks: each rank holds the other half of each out_proj's weight too (its scales it held already).
    const halfOut = (HIDDEN * INNER) / 2;
    expect(plan.ranks[0]!.shardedBytes).toBe(plain.ranks[0]!.shardedBytes - 2 * (halfOut + 4 * HIDDEN));
    expect(plan.ranks[0]!.replicatedBytes).toBe(plain.ranks[0]!.replicatedBytes + 2 * (HIDDEN * INNER + 4 * HIDDEN));
    expect(plan.singleRankBytes).toBe(plain.singleRankBytes);
    // Float runs (four-byte slices) would only halve the bytes: not exchanged; nor when the run format is f32.
    expect(shardPlan(layout('tp-bf16'), 2, { sequence: true }).linears.some((l) => l.exchange)).toBe(false);
    expect(shardPlan(layout('tp-int8'), 2, { sequence: true, compute: 'f32' }).linears.some((l) => l.exchange)).toBe(false);
    // bf16 weights the run converts to int8 convrot: exchanged.
    expect(shardPlan(layout('tp-bf16'), 2, { sequence: true, compute: 'int8_convrot' }).linear('blocks.0.attn.out_proj')!.exchange).toBe(true);
    // One rank: nothing to exchange.
    expect(shardPlan(layout('tp-int8'), 1, { sequence: true }).linears.some((l) => l.exchange)).toBe(false);
    // An exchanged GGUF layer is read whole: no block alignment asked of its slice. GGUF runs in f32,
    // so only an out_proj with 4 K <= N is exchanged: K = 256 (64 columns a rank at TP4, a quarter
    // of a q4_k block), N = 1024; fc2's K = 1536 > N stays split, 384 columns a rank.
    expect(() => shardPlan(layout('tp-wide-q4k'), 4)).toThrow(expect.objectContaining({ code: 'RANGE_NOT_BLOCK_ALIGNED', where: 'blocks.0.attn.out_proj' }));
    expect(() => shardPlan(layout('tp-wide-q4k'), 4, { sequence: true })).toThrow(expect.objectContaining({ code: 'RANGE_NOT_BLOCK_ALIGNED', where: 'blocks.0.mlp.fc2' }));
    // int8 convrot's rotation of the slice still needs whole groups.
    expect(() => shardPlan(layout('tp-int8'), 4, { sequence: true })).toThrow(expect.objectContaining({ code: 'SHARD_NOT_GROUP_ALIGNED', where: 'blocks.0.attn.out_proj' }));
  });

  it('fails up front, naming the layer, when heads do not divide or a row slice splits the convrot groups or GGUF blocks', () => {
    // out_proj K = 512 over 4 ranks = 128 columns: not a multiple of the 256-column convrot group.
    expect(() => shardPlan(layout('tp-int8'), 4)).toThrow(expect.objectContaining({ code: 'SHARD_NOT_GROUP_ALIGNED', where: 'blocks.0.attn.out_proj' }));
    // The same split of float weights is fine, unless the run converts them to int8 convrot.
    expect(shardPlan(layout('tp-bf16'), 4).linear('blocks.0.attn.out_proj')!.localIn).toBe(128);
    expect(() => shardPlan(layout('tp-bf16'), 4, { compute: 'int8_convrot' })).toThrow(expect.objectContaining({ code: 'SHARD_NOT_GROUP_ALIGNED' }));
    expect(() => shardPlan(layout('tp-q4k'), 4)).toThrow(expect.objectContaining({ code: 'RANGE_NOT_BLOCK_ALIGNED', where: 'blocks.0.attn.out_proj' }));
    // 6 heads over 4 ranks.
    expect(() => shardPlan(layout('tp-6-heads'), 4)).toThrow(expect.objectContaining({ code: 'SHARD_NOT_DIVISIBLE', where: 'blocks.0.attn.qkv_proj' }));
    // ffn halves of 1000 rows over 16 ranks.
    expect(() => shardPlan(layout('tp-ffn-1000'), 16)).toThrow(expect.objectContaining({ code: 'SHARD_NOT_DIVISIBLE', where: 'blocks.0.mlp.fc1' }));
    for (const bad of [0, 1.5, -2, Number.NaN]) expect(() => shardPlan(layout('tp-bf16'), bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
