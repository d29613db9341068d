"""The trainable MiniMax-H3 video DiT of the demo: its parameters (ComfyUI key names) and their
initialisation here, the forward itself from tools/torch-h3/h3_torch.py (the bench's PyTorch peer,
written from packages/models/src/h3-*.ts with ninodes' fp32 roundings), so the model is trained and
scored by the same forward the bench compares ninodes with. float32 or float64 (for fixtures).
"""

import math
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'torch-h3'))
from h3_torch import ISLANDS, H3Torch  # noqa: E402


class H3Config:
    def __init__(self, layers=3, hidden=256, heads=4, head_dim=64, ffn=512, t_dim=256, time_hidden=256,
                 freq_dim=256, rope_len=8, channels=24, eps=1e-5, qk_eps=1e-5, final_eps=1e-5):
        self.layers = layers
        self.hidden = hidden
        self.heads = heads
        self.head_dim = head_dim
        self.ffn = ffn
        self.t_dim = t_dim
        self.time_hidden = time_hidden
        self.freq_dim = freq_dim
        self.rope_len = rope_len
        self.channels = channels
        self.eps = eps
        self.qk_eps = qk_eps
        self.final_eps = final_eps

    def as_json(self):
        # the field names of ninodes' H3Config (packages/models/src/h3-config.ts)
        return {
            'layers': self.layers, 'hidden': self.hidden, 'heads': self.heads, 'headDim': self.head_dim,
            'ffn': self.ffn, 'tDim': self.t_dim, 'timeHidden': self.time_hidden, 'freqDim': self.freq_dim,
            'ropeLen': self.rope_len, 'latentChannels': self.channels, 'eps': self.eps, 'qkEps': self.qk_eps,
            'finalEps': self.final_eps,
        }


class Block(nn.Module):
    """One DiT block's parameters (the math is H3Torch's)."""

    def __init__(self, cfg):
        super().__init__()
        d, inner = cfg.hidden, cfg.heads * cfg.head_dim
        self.adaln_proj = nn.Module()
        self.adaln_proj.linear = nn.Linear(cfg.t_dim, 18 * d)
        self.norm1 = nn.Module()
        self.norm1.weight = nn.Parameter(torch.ones(d))
        self.norm2 = nn.Module()
        self.norm2.weight = nn.Parameter(torch.ones(d))
        self.attn = nn.Module()
        self.attn.qkv_proj = nn.Linear(d, 3 * inner, bias=False)
        self.attn.out_proj = nn.Linear(inner, d, bias=False)
        self.attn.q_norm = nn.Module()
        self.attn.q_norm.weight = nn.Parameter(torch.ones(cfg.head_dim))
        self.attn.k_norm = nn.Module()
        self.attn.k_norm.weight = nn.Parameter(torch.ones(cfg.head_dim))
        self.mlp = nn.Module()
        self.mlp.fc1 = nn.Linear(d, 2 * cfg.ffn, bias=False)
        self.mlp.fc2 = nn.Linear(cfg.ffn, d, bias=False)


class H3Video(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg.hidden
        self.video_patch_proj = nn.Linear(cfg.channels * 4, d)
        self.time_embedder = nn.Module()
        self.time_embedder.proj_in = nn.Linear(cfg.freq_dim, cfg.time_hidden)
        self.time_embedder.proj_out = nn.Linear(cfg.time_hidden, cfg.t_dim)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.layers)])
        self.final_layer = nn.Module()
        self.final_layer.adaln_proj = nn.Module()
        self.final_layer.adaln_proj.linear = nn.Linear(cfg.t_dim, 2 * d)
        self.final_layer.norm = nn.Module()
        self.final_layer.norm.weight = nn.Parameter(torch.ones(d))
        self.final_layer.video_out = nn.Linear(d, cfg.channels * 4)
        self.rope = nn.Module()
        self.rope.register_buffer('inv_freq', 10000.0 ** (-torch.arange(cfg.rope_len, dtype=torch.float32) / cfg.rope_len))

    def init_weights(self, generator):
        """DiT-style: small normal linears, adaLN and the output head zero, so every block starts as identity."""
        for name, p in self.named_parameters():
            if name.endswith('norm.weight') or name.endswith('norm1.weight') or name.endswith('norm2.weight') or 'q_norm' in name or 'k_norm' in name:
                nn.init.ones_(p)
            elif name.endswith('.bias'):
                nn.init.zeros_(p)
            elif 'adaln_proj' in name or 'video_out' in name:
                nn.init.zeros_(p)
            else:
                with torch.no_grad():
                    p.copy_(torch.randn(p.shape, generator=generator) * (1.0 / math.sqrt(p.shape[1])))

    def forward(self, latent, sigma):
        """latent [B, C, T, H, W], sigma [B] -> velocity [B, C, T, H, W], through H3Torch over these parameters."""
        weights = dict(self.named_parameters())
        weights.update(self.named_buffers())
        h3 = H3Torch.from_weights(weights, 'f64' if self.video_patch_proj.weight.dtype == torch.float64 else 'f32')
        h3.eps, h3.qk_eps, h3.final_eps = self.cfg.eps, self.cfg.qk_eps, self.cfg.final_eps
        return h3.velocity(latent, sigma)


def fp32_island(name):
    """Tensors ComfyUI keeps in fp32: patch embedding, time embedder, output head, the RoPE buffer."""
    return name.startswith(ISLANDS) or name == 'rope.inv_freq'


def flow_sigmas(steps, shift):
    """ninodes' flowSigmas: s_i = 1 - i/N, sigma = shift*s / (1 + (shift - 1)*s), in float64."""
    out = []
    for i in range(steps + 1):
        s = 1 - i / steps
        out.append(shift * s / (1 + (shift - 1) * s))
    return out


@torch.no_grad()
def sample(model, noise, steps, shift, dtype=torch.float32):
    """Flow-matching Euler as ninodes' runSampler: x += (sigma_{i+1} - sigma_i) * v, in `dtype`."""
    sig = flow_sigmas(steps, shift)
    x = noise.to(dtype).clone()
    for i in range(steps):
        s = torch.full((x.shape[0],), sig[i], dtype=torch.float64).to(torch.float32).to(dtype)
        v = model(x, s)
        x = x + torch.tensor(sig[i + 1] - sig[i], dtype=torch.float64).to(torch.float32).to(dtype) * v
    return x
