"""The MiniMax-H3 video-only forward exactly as ninodes runs it (packages/models/src/h3-*.ts), in PyTorch.

Written from the same definitions as ninodes' float64 test oracle (ComfyUI's comfy/ldm/minimax/model.py
facts): ComfyUI key names, 1x2x2 patches, sinusoidal time features of t = 1 - sigma, adaLN row 0 of
the three modality rows, RMSNorm, per-head q/k RMSNorm, split-half RoPE on the first 6*L dims of each
head, SwiGLU MLP, and the negated final projection. Works in any float dtype (float64 for fixtures).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


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


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, inner = cfg.hidden, cfg.heads * cfg.head_dim
        self.cfg = cfg
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

    def forward(self, x, t_emb, cos, sin):
        cfg = self.cfg
        b, s, d = x.shape
        h, hd = cfg.heads, cfg.head_dim
        inner = h * hd
        # [B, 18d]: three modality rows of six chunks; the video row is the first
        mod = self.adaln_proj.linear(F.silu(t_emb))[:, : 6 * d].unsqueeze(1)
        shift_a, scale_a, gate_a, shift_m, scale_m, gate_m = mod.chunk(6, dim=-1)
        h1 = rms_norm(x, self.norm1.weight, cfg.eps) * (1 + scale_a) + shift_a
        qkv = self.attn.qkv_proj(h1)
        q = qkv[..., :inner].reshape(b, s, h, hd)
        k = qkv[..., inner: 2 * inner].reshape(b, s, h, hd)
        v = qkv[..., 2 * inner:].reshape(b, s, h, hd)
        q = rope_split_half(rms_norm(q, self.attn.q_norm.weight, cfg.qk_eps), cos, sin)
        k = rope_split_half(rms_norm(k, self.attn.k_norm.weight, cfg.qk_eps), cos, sin)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, H, S, hd]
        att = torch.softmax((q @ k.transpose(-1, -2)) / math.sqrt(hd), dim=-1) @ v
        att = att.transpose(1, 2).reshape(b, s, inner)
        x = x + self.attn.out_proj(att) * gate_a
        h2 = rms_norm(x, self.norm2.weight, cfg.eps) * (1 + scale_m) + shift_m
        gate, up = self.mlp.fc1(h2).chunk(2, dim=-1)
        return x + self.mlp.fc2(F.silu(gate) * up) * gate_m


def rope_split_half(x, cos, sin):
    """x [B, S, H, hd]; cos/sin [S, rot/2]: pair (i, i + rot/2) of the first rot dims turns by angle i."""
    half = cos.shape[-1]
    c = cos[None, :, None, :]
    s = sin[None, :, None, :]
    x1 = x[..., :half]
    x2 = x[..., half: 2 * half]
    return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c, x[..., 2 * half:]], dim=-1)


def video_positions(frames, height, width):
    """(t, h, w) per 1x2x2 patch, frame-major, on H3's area-normalized grid (video-grid.ts)."""
    hn, wn = height // 2, width // 2
    side = math.sqrt(height * width)
    axis = lambda dim, n, i: 32 * ((1 - dim / side) / 2 + (dim / side) * i / n)
    out = []
    t = 0.0
    for f in range(frames):
        for i in range(hn):
            for j in range(wn):
                out.append((t, axis(height, hn, i), axis(width, wn, j)))
        t += (5 / 3) * (1 if f % 5 == 0 else 4)
    return torch.tensor(out, dtype=torch.float64)


def rope_angles(frames, height, width, inv_freq):
    """[S, 3L] pair angles, rounded as ninodes and ComfyUI do: positions and products in fp32."""
    pos = video_positions(frames, height, width).to(torch.float32)
    inv = inv_freq.to(torch.float32)
    return torch.cat([pos[:, a: a + 1] * inv[None, :] for a in range(3)], dim=-1)


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
        self._angles = {}

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

    def time_features(self, sigma):
        """sigma [B] -> [B, freqDim]: cos then sin of t * exp(-ln(1e4) j / half), t = 1 - max(sigma, 1e-6)."""
        half = self.cfg.freq_dim // 2
        dtype = sigma.dtype
        t = 1 - sigma.clamp(min=1e-6)
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half).to(dtype)
        args = t[:, None] * freqs[None, :]
        return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)

    def angles(self, frames, height, width, dtype):
        key = (frames, height, width, dtype)
        if key not in self._angles:
            a = rope_angles(frames, height, width, self.rope.inv_freq).to(dtype)
            self._angles[key] = (torch.cos(a), torch.sin(a))
        return self._angles[key]

    def forward(self, latent, sigma):
        """latent [B, C, T, H, W] (H, W even), sigma [B] -> velocity [B, C, T, H, W]."""
        cfg = self.cfg
        b, c, t, hh, ww = latent.shape
        hn, wn = hh // 2, ww // 2
        # 1x2x2 patches in frame, row, column order; a row's columns are channel-major, then dy, then dx
        rows = latent.reshape(b, c, t, hn, 2, wn, 2).permute(0, 2, 3, 5, 1, 4, 6).reshape(b, t * hn * wn, c * 4)
        x = self.video_patch_proj(rows)
        t_emb = self.time_embedder.proj_out(F.silu(self.time_embedder.proj_in(self.time_features(sigma))))
        cos, sin = self.angles(t, hh, ww, latent.dtype)
        for block in self.blocks:
            x = block(x, t_emb, cos, sin)
        shift, scale = self.final_layer.adaln_proj.linear(F.silu(t_emb)).unsqueeze(1).chunk(2, dim=-1)
        head = self.final_layer.video_out(rms_norm(x, self.final_layer.norm.weight, cfg.final_eps) * (1 + scale) + shift)
        out = head.reshape(b, t, hn, wn, c, 2, 2).permute(0, 4, 1, 2, 5, 3, 6).reshape(b, c, t, hh, ww)
        return -out


def fp32_island(name):
    """Tensors ComfyUI keeps in fp32: patch embedding, time embedder, output head, the RoPE buffer."""
    return name.startswith('video_patch_proj.') or name.startswith('time_embedder.') or name.startswith('final_layer.video_out.') or name == 'rope.inv_freq'


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
