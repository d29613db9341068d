// The H3 config of the PyTorch block fixture (fixtures/dit/h3_blocks.safetensors), from the
// metadata its generator wrote: the blocks only, so the time embedder width is a placeholder.
import { H3_DEFAULTS, type H3Config } from '../h3-config.js';

export function blockFixtureConfig(metadata: Readonly<Record<string, string>>): H3Config {
  const meta = JSON.parse(metadata.config ?? '{}') as Record<string, number>;
  return {
    ...H3_DEFAULTS,
    layers: meta.layers as number,
    hidden: meta.hidden as number,
    heads: meta.heads as number,
    headDim: meta.head_dim as number,
    ffn: meta.ffn as number,
    tDim: meta.t_dim as number,
    timeHidden: 1,
    ropeLen: Number(metadata.rot_dim) / 6,
    eps: Number(metadata.eps),
    qkEps: Number(metadata.qk_eps),
  };
}
