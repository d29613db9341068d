import type { DType } from '@ninodes/kernels';
import { type LayoutGroup, type LayoutLinear, type LayoutTensor, type ModelLayout, type WeightFormat, ownerOf, tensorResidentBytes } from '@ninodes/quant';
import { describe, expect, it } from 'vitest';
import { shardPlan } from './shard-plan.js';

interface Dims {
  heads: number;
  headDim: number;
  hidden: number;
  ffn: number;
  tDim: number;
}

const ELEMENT_BYTES: Partial<Record<DType, number>> = { f32: 4, i8: 1 };

/** An H3-shaped layout (one pre group, `blocks` blocks) stored in `format`, built by hand. */
function h3LikeLayout(d: Dims, format: WeightFormat, blocks = 2): ModelLayout {
  const int8 = format.startsWith('int8');
  const tensor = (name: string, dtype: DType, shape: number[]): LayoutTensor => ({
    name,
    dtype,
    shape,
    byteLength: shape.reduce((a, b) => a * b, 1) * (ELEMENT_BYTES[dtype] ?? 1),
  });
  const linear = (name: string, n: number, k: number, role: LayoutLinear['role'], fused: LayoutLinear['fused']): { l: LayoutLinear; t: LayoutTensor[] } => ({
    l: { name, inFeatures: k, outFeatures: n, bias: true, storedFormat: format, role, fused, fp32Island: false },
    t: [
      tensor(`${name}.weight`, int8 ? 'i8' : 'f32', [n, k]),
      ...(int8 ? [tensor(`${name}.weight_scale`, 'f32', [n, 1]), tensor(`${name}.comfy_quant`, 'u8', [70])] : []),
      tensor(`${name}.bias`, 'f32', [n]),
    ],
  });
  const inner = d.heads * d.headDim;
  const groups: LayoutGroup[] = [];
  const pre = linear('time_embedder.linear', d.hidden, d.tDim, 'replicated', { kind: 'none' });
  groups.push({ name: 'time_embedder', kind: 'pre', tensors: pre.t, linears: [pre.l] });
  for (let b = 0; b < blocks; b++) {
    const p = `blocks.${b}`;
    const ls = [
      linear(`${p}.adaln_proj`, 6 * d.hidden, d.tDim, 'gathered', { kind: 'none' }),
      linear(`${p}.attn.qkv_proj`, 3 * inner, d.hidden, 'column', { kind: 'qkv', heads: d.heads, headDim: d.headDim }),
      linear(`${p}.attn.out_proj`, d.hidden, inner, 'row', { kind: 'none' }),
      linear(`${p}.mlp.fc1`, 2 * d.ffn, d.hidden, 'column', { kind: 'halves' }),
      linear(`${p}.mlp.fc2`, d.hidden, d.ffn, 'row', { kind: 'none' }),
    ];
    const norms = [tensor(`${p}.norm1.weight`, 'f32', [d.hidden]), tensor(`${p}.attn.q_norm.weight`, 'f32', [d.headDim])];
    groups.push({ name: p, kind: 'block', tensors: [...ls.flatMap((x) => x.t), ...norms], linears: ls.map((x) => x.l) });
  }
  return { architecture: 'h3-like', prefix: '', groups };
}

const DIMS: Dims = { heads: 4, headDim: 128, hidden: 512, ffn: 1024, tDim: 64 };

describe('shardPlan', () => {
  it('splits qkv by heads in each of q, k, v, fc1 by halves, adaLN by rows, out_proj/fc2 by columns; replicated layers whole', () => {
    const plan = shardPlan(h3LikeLayout(DIMS, 'int8_convrot'), 2);
    const inner = 512;
    const qkv = plan.linear('blocks.1.attn.qkv_proj')!;
    expect([qkv.localOut, qkv.localIn]).toEqual([3 * 256, 512]);
    // Rank 1 holds heads 2 and 3: rows [256, 512) of each of q, k and v.
    expect(plan.sliceOf('blocks.1.attn.qkv_proj', 1)).toEqual({ rows: [[256, 512], [inner + 256, inner + 512], [2 * inner + 256, 2 * inner + 512]] });
    expect(plan.sliceOf('blocks.0.mlp.fc1', 0)).toEqual({ rows: [[0, 512], [1024, 1536]] });
    expect(plan.sliceOf('blocks.0.mlp.fc2', 1)).toEqual({ columns: [512, 1024] });
    expect(plan.sliceOf('blocks.0.attn.out_proj', 0)).toEqual({ columns: [0, 256] });
    expect(plan.sliceOf('blocks.0.adaln_proj', 1)).toEqual({ rows: [[3 * 512, 6 * 512]] });
    expect(plan.sliceOf('time_embedder.linear', 1)).toBeUndefined();
    expect(plan.shardOf('blocks.0.mlp.fc2', 1)).toEqual({ rank: 1, size: 2, role: 'row', fused: { kind: 'none' } });
    expect(plan.linears.map((l) => l.name).slice(0, 3)).toEqual(['time_embedder.linear', 'blocks.0.adaln_proj', 'blocks.0.attn.qkv_proj']);
    expect(() => plan.sliceOf('blocks.9.mlp.fc2', 0)).toThrow(expect.objectContaining({ code: 'LAYER_NOT_IN_PLAN' }));
    expect(() => plan.shardOf('blocks.0.mlp.fc2', 2)).toThrow(expect.objectContaining({ code: 'INVALID_SHARD', value: { rank: 2, size: 2 } }));
  });

  it("counts by quant's one memory account, as distorch's planner does: norms in f32 whatever their stored dtype, fp32 islands as stored", () => {
    const { hidden, ffn, tDim, heads, headDim } = DIMS;
    const inner = heads * headDim;
    const stored = h3LikeLayout(DIMS, 'f32');
    const layout: ModelLayout = {
      ...stored,
      groups: stored.groups.map((g) => ({
        ...g,
        tensors: g.tensors.map((t) => (t.name.includes('norm') ? { ...t, dtype: 'bf16', byteLength: t.byteLength / 2 } : t)),
        linears: g.linears.map((l) => (l.name === 'time_embedder.linear' ? { ...l, fp32Island: true } : l)),
      })),
    };
    const int8 = (n: number, k: number): number => n * k + 4 * n + 4 * n; // weight, row scales, f32 bias
    const block = int8(6 * hidden, tDim) + int8(3 * inner, hidden) + int8(hidden, inner) + int8(2 * ffn, hidden) + int8(hidden, ffn) + 4 * (hidden + headDim);
    const island = 4 * hidden * tDim + 4 * hidden;
    const plan = shardPlan(layout, 1, { compute: 'int8_convrot' });
    expect(plan.singleRankBytes).toBe(island + 2 * block);
    const sum = layout.groups.reduce((a, g) => a + g.tensors.reduce((b, t) => b + tensorResidentBytes(t, ownerOf(g, t), 'int8_convrot'), 0), 0);
    expect(plan.singleRankBytes).toBe(sum);
  });

  it('per-rank bytes: 1/N of each split layer (int8 1 B/param + 4 B/row scales, f32 biases), replicated tensors whole', () => {
    const { hidden, ffn, tDim } = DIMS;
    const inner = 512;
    const int8 = (n: number, k: number): number => n * k + 4 * n + 4 * n; // weight, prepared row scales, f32 bias
    for (const world of [1, 2]) {
      const plan = shardPlan(h3LikeLayout(DIMS, 'int8_convrot'), world);
      // Column and gathered layers: 1/world of rows (their scales and biases too); row layers: 1/world of columns, every row's scale and bias.
      const blockSharded =
        int8((6 * hidden) / world, tDim) +
        int8((3 * inner) / world, hidden) +
        ((hidden * inner) / world + 8 * hidden) +
        int8((2 * ffn) / world, hidden) +
        ((hidden * ffn) / world + 8 * hidden);
      const blockReplicated = 4 * hidden + 4 * 128;
      const sharded = 2 * blockSharded;
      const replicated = int8(hidden, tDim) + 2 * blockReplicated;
      for (const r of plan.ranks) expect(r).toEqual({ rank: r.rank, shardedBytes: sharded, replicatedBytes: replicated, totalBytes: sharded + replicated });
      expect(plan.ranks).toHaveLength(world);
      expect(plan.singleRankBytes).toBe(shardPlan(h3LikeLayout(DIMS, 'int8_convrot'), 1).ranks[0]!.totalBytes);
    }
    // fp32 weights: 4 B/param.
    const f32 = shardPlan(h3LikeLayout(DIMS, 'f32', 1), 2);
    const qkvBytes = 4 * ((3 * inner) / 2) * hidden + 4 * ((3 * inner) / 2);
    const outBytes = 4 * hidden * (inner / 2) + 4 * hidden;
    const fc1Bytes = 4 * ffn * hidden + 4 * ffn;
    const fc2Bytes = 4 * hidden * (ffn / 2) + 4 * hidden;
    const adalnBytes = 4 * ((6 * hidden) / 2) * tDim + 4 * ((6 * hidden) / 2);
    expect(f32.ranks[1]!.shardedBytes).toBe(adalnBytes + qkvBytes + outBytes + fc1Bytes + fc2Bytes);
  });

  it('sequence parallel: int8 out_proj (K <= N) is exchanged, held whole by every rank; fc2 (K > N) and float out_proj stay split', () => {
    const { hidden, ffn } = DIMS;
    const inner = 512;
    const plain = shardPlan(h3LikeLayout(DIMS, 'int8_convrot'), 2);
    const plan = shardPlan(h3LikeLayout(DIMS, 'int8_convrot'), 2, { sequence: true });
    expect(plan.sequence).toBe(true);
    expect(plain.sequence).toBe(false);
    expect(plan.linear('blocks.0.attn.out_proj')).toMatchObject({ role: 'row', exchange: true, localIn: inner / 2, localOut: hidden });
    expect(plan.linear('blocks.0.mlp.fc2')).toMatchObject({ role: 'row', exchange: false, localIn: ffn / 2 });
    expect(plain.linears.some((l) => l.exchange)).toBe(false);
    expect(plan.sliceOf('blocks.0.attn.out_proj', 1)).toBeUndefined();
    expect(plan.sliceOf('blocks.0.mlp.fc2', 1)).toEqual({ columns: [512, 1024] });
    expect(plan.shardOf('blocks.0.attn.out_proj', 1)).toEqual({ rank: 1, size: 2, role: 'row', fused: { kind: 'none' } });
    // Two blocks: each rank holds the other half of each out_proj's weight too (its scales and bias it held already).
    const halfOut = (hidden * inner) / 2;
    expect(plan.ranks[0]!.shardedBytes).toBe(plain.ranks[0]!.shardedBytes - 2 * (halfOut + 8 * hidden));
    expect(plan.ranks[0]!.replicatedBytes).toBe(plain.ranks[0]!.replicatedBytes + 2 * (hidden * inner + 8 * hidden));
    expect(plan.singleRankBytes).toBe(plain.singleRankBytes);
    // fp32 (four-byte slices) would only halve the bytes: not exchanged; nor when the run format is f32.
    expect(shardPlan(h3LikeLayout(DIMS, 'f32'), 2, { sequence: true }).linears.some((l) => l.exchange)).toBe(false);
    expect(shardPlan(h3LikeLayout(DIMS, 'int8_convrot'), 2, { sequence: true, compute: 'f32' }).linears.some((l) => l.exchange)).toBe(false);
    // f32 weights the run converts to int8 convrot: exchanged.
    expect(shardPlan(h3LikeLayout(DIMS, 'f32'), 2, { sequence: true, compute: 'int8_convrot' }).linear('blocks.0.attn.out_proj')!.exchange).toBe(true);
    // One rank: nothing to exchange.
    expect(shardPlan(h3LikeLayout(DIMS, 'int8_convrot'), 1, { sequence: true }).linears.some((l) => l.exchange)).toBe(false);
    // An exchanged GGUF layer is read whole: no block alignment asked of its slice. GGUF runs in f32,
    // so only an out_proj with 4 K <= N is exchanged: K = 256 (64 columns a rank at TP4, a quarter
    // of a q4_k block), N = 1024; fc2's K = 1536 > N stays split, 384 columns a rank.
    const wide = { ...DIMS, headDim: 64, hidden: 1024, ffn: 1536 };
    expect(() => shardPlan(h3LikeLayout(wide, 'q4_k'), 4)).toThrow(expect.objectContaining({ code: 'RANGE_NOT_BLOCK_ALIGNED', where: 'blocks.0.attn.out_proj' }));
    expect(() => shardPlan(h3LikeLayout(wide, 'q4_k'), 4, { sequence: true })).toThrow(expect.objectContaining({ code: 'RANGE_NOT_BLOCK_ALIGNED', where: 'blocks.0.mlp.fc2' }));
    // int8 convrot's rotation of the slice still needs whole groups.
    expect(() => shardPlan(h3LikeLayout(DIMS, 'int8_convrot'), 4, { sequence: true })).toThrow(expect.objectContaining({ code: 'SHARD_NOT_GROUP_ALIGNED', where: 'blocks.0.attn.out_proj' }));
  });

  it('fails up front, naming the layer, when heads do not divide or a row slice splits the convrot groups or GGUF blocks', () => {
    // out_proj K = 512 over 4 ranks = 128 columns: not a multiple of the 256-column convrot group.
    expect(() => shardPlan(h3LikeLayout(DIMS, 'int8_convrot'), 4)).toThrow(
      expect.objectContaining({ code: 'SHARD_NOT_GROUP_ALIGNED', where: 'blocks.0.attn.out_proj' }),
    );
    // The same split of fp32 weights is fine, unless the run converts them to int8 convrot.
    expect(shardPlan(h3LikeLayout(DIMS, 'f32'), 4).linear('blocks.0.attn.out_proj')!.localIn).toBe(128);
    expect(() => shardPlan(h3LikeLayout(DIMS, 'f32'), 4, { compute: 'int8_convrot' })).toThrow(expect.objectContaining({ code: 'SHARD_NOT_GROUP_ALIGNED' }));
    expect(() => shardPlan(h3LikeLayout(DIMS, 'q4_k'), 4)).toThrow(expect.objectContaining({ code: 'RANGE_NOT_BLOCK_ALIGNED', where: 'blocks.0.attn.out_proj' }));
    // 6 heads over 4 ranks.
    expect(() => shardPlan(h3LikeLayout({ ...DIMS, heads: 6, headDim: 64, hidden: 384 }, 'f32'), 4)).toThrow(
      expect.objectContaining({ code: 'SHARD_NOT_DIVISIBLE', where: 'blocks.0.attn.qkv_proj' }),
    );
    // ffn halves of 1000 rows over 16 ranks.
    expect(() => shardPlan(h3LikeLayout({ ...DIMS, heads: 16, headDim: 32, ffn: 1000 }, 'f32'), 16)).toThrow(
      expect.objectContaining({ code: 'SHARD_NOT_DIVISIBLE', where: 'blocks.0.mlp.fc1' }),
    );
    for (const bad of [0, 1.5, -2, Number.NaN]) expect(() => shardPlan(h3LikeLayout(DIMS, 'f32'), bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
