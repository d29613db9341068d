// Test helper: a ModelLayout with MiniMax-H3's real tensor names and shapes, built by hand from the
// preset numbers (packages/models/src/presets.ts: h3-full is 50 layers, hidden 5376, 56×128 heads,
// ffn 14336, time_embed_dim 2688), stored bf16 with ComfyUI's fp32 islands. distorch may not import
// models, so the layout is written out here; layoutOf builds the same from a checkpoint.
import type { DType } from '@ninodes/kernels';
import type { LayoutGroup, LayoutLinear, LayoutTensor, ModelLayout } from '@ninodes/quant';

export interface H3Shape {
  layers: number;
  hidden: number;
  heads: number;
  headDim: number;
  ffn: number;
  tDim: number;
  timeHidden: number;
}

export const H3_FULL: H3Shape = { layers: 50, hidden: 5376, heads: 56, headDim: 128, ffn: 14336, tDim: 2688, timeHidden: 5376 };
export const H3_SMALL: H3Shape = { layers: 10, hidden: 1536, heads: 12, headDim: 128, ffn: 4096, tDim: 768, timeHidden: 1536 };

const SIZE: Record<string, number> = { f32: 4, bf16: 2, f16: 2, i8: 1 };

function tensor(name: string, dtype: DType, shape: number[]): LayoutTensor {
  return { name, dtype, shape, byteLength: shape.reduce((a, b) => a * b, 1) * (SIZE[dtype] as number) };
}

function linear(name: string, k: number, n: number, bias: boolean, fp32Island: boolean, role: LayoutLinear['role'] = 'replicated'): { linear: LayoutLinear; tensors: LayoutTensor[] } {
  const dtype: DType = fp32Island ? 'f32' : 'bf16';
  const tensors = [tensor(`${name}.weight`, dtype, [n, k])];
  if (bias) tensors.push(tensor(`${name}.bias`, dtype, [n]));
  return { linear: { name, inFeatures: k, outFeatures: n, bias, storedFormat: fp32Island ? 'f32' : 'bf16', role, fused: { kind: 'none' }, fp32Island }, tensors };
}

function group(name: string, kind: LayoutGroup['kind'], parts: { linear: LayoutLinear; tensors: LayoutTensor[] }[], extra: LayoutTensor[] = []): LayoutGroup {
  return { name, kind, linears: parts.map((p) => p.linear), tensors: [...parts.flatMap((p) => p.tensors), ...extra] };
}

export function h3Layout(s: H3Shape): ModelLayout {
  const inner = s.heads * s.headDim;
  const patch = 24 * 4;
  // Group names and order as models' layoutOf makes them.
  const groups: LayoutGroup[] = [
    group('time_embedder', 'pre', [linear('time_embedder.proj_in', 256, s.timeHidden, true, true), linear('time_embedder.proj_out', s.timeHidden, s.tDim, true, true)]),
    group('rope', 'pre', [], [tensor('rope.inv_freq', 'f32', [16])]),
    group('video_patch_proj', 'pre', [linear('video_patch_proj', patch, s.hidden, true, true)]),
  ];
  for (let i = 0; i < s.layers; i++) {
    const p = `blocks.${i}`;
    groups.push(
      group(
        p,
        'block',
        [
          linear(`${p}.adaln_proj.linear`, s.tDim, 18 * s.hidden, true, false),
          linear(`${p}.attn.qkv_proj`, s.hidden, 3 * inner, false, false, 'column'),
          linear(`${p}.attn.out_proj`, inner, s.hidden, false, false, 'row'),
          linear(`${p}.mlp.fc1`, s.hidden, 2 * s.ffn, false, false, 'column'),
          linear(`${p}.mlp.fc2`, s.ffn, s.hidden, false, false, 'row'),
        ],
        [tensor(`${p}.norm1.weight`, 'bf16', [s.hidden]), tensor(`${p}.norm2.weight`, 'bf16', [s.hidden]), tensor(`${p}.attn.q_norm.weight`, 'bf16', [s.headDim]), tensor(`${p}.attn.k_norm.weight`, 'bf16', [s.headDim])],
      ),
    );
  }
  groups.push(group('final_layer', 'post', [linear('final_layer.adaln_proj.linear', s.tDim, 2 * s.hidden, true, false), linear('final_layer.video_out', s.hidden, patch, true, true)], [tensor('final_layer.norm.weight', 'bf16', [s.hidden])]));
  return { architecture: 'minimax-h3', prefix: '', groups };
}
