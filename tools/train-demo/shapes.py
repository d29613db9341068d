"""The drawings the demo model learns, the shape score, and ninodes' starting noise.

A drawing: one disk or square of one of four fixed colours on a dark or light background, hard edges
(every pixel is exactly one palette colour, so the data scores 1.0). RGB in [-1, 1] in channels 0..2 of
the 24-channel latent, the other channels zero.
"""

import math

import torch

# RGB in [0, 1]. Keep in sync with SHAPES_PALETTE in packages/models/src/shape-score.ts.
BACKGROUNDS = [(0.08, 0.08, 0.10), (0.92, 0.92, 0.88)]
FOREGROUNDS = [(0.90, 0.15, 0.15), (0.15, 0.75, 0.20), (0.20, 0.35, 0.95), (0.95, 0.80, 0.10)]
PALETTE = BACKGROUNDS + FOREGROUNDS

# Shape score: a sample passes when at least PASS_FRACTION of its pixels lie within RADIUS (Euclidean RGB
# in [0, 1]) of a palette colour.
RADIUS = 0.2
PASS_FRACTION = 0.9


def draw(batch, size, generator, channels=24):
    """[batch, channels, 1, size, size] drawings in [-1, 1] (channels 3.. zero)."""
    g = generator
    bg = torch.randint(0, len(BACKGROUNDS), (batch,), generator=g)
    fg = torch.randint(0, len(FOREGROUNDS), (batch,), generator=g)
    square = torch.randint(0, 2, (batch,), generator=g).bool()
    # radius / half side in pixels, centre such that the whole shape stays inside the frame
    r = size * (0.2 + 0.15 * torch.rand(batch, generator=g))
    cx = r + (size - 2 * r) * torch.rand(batch, generator=g)
    cy = r + (size - 2 * r) * torch.rand(batch, generator=g)
    coords = torch.arange(size, dtype=torch.float32) + 0.5
    dx = coords[None, None, :] - cx[:, None, None]
    dy = coords[None, :, None] - cy[:, None, None]
    r2 = r[:, None, None]
    disk = dx * dx + dy * dy <= r2 * r2
    box = (dx.abs() <= r2) & (dy.abs() <= r2)
    inside = torch.where(square[:, None, None], box, disk)
    bgc = torch.tensor(BACKGROUNDS)[bg]  # [B, 3]
    fgc = torch.tensor(FOREGROUNDS)[fg]
    rgb = torch.where(inside[:, None], fgc[:, :, None, None], bgc[:, :, None, None])  # [B, 3, H, W]
    out = torch.zeros(batch, channels, 1, size, size)
    out[:, :3, 0] = rgb * 2 - 1
    return out


def shape_score_per_sample(latents):
    """latents [N, C, T, H, W]: per sample, the fraction of pixels within RADIUS of a palette colour."""
    rgb = (latents[:, :3].to(torch.float64) + 1) / 2  # [N, 3, T, H, W]
    pal = torch.tensor(PALETTE, dtype=torch.float64)  # [P, 3]
    px = rgb.permute(0, 2, 3, 4, 1).reshape(rgb.shape[0], -1, 3)  # [N, pixels, 3]
    d = ((px[:, :, None, :] - pal[None, None, :, :]) ** 2).sum(-1).sqrt()  # [N, pixels, P]
    return (d.min(-1).values <= RADIUS).double().mean(-1)


def shape_score(latents):
    """The fraction of samples whose pixels are at least PASS_FRACTION palette colours."""
    return float((shape_score_per_sample(latents) >= PASS_FRACTION).double().mean())


# ---- ninodes' starting noise (packages/models/src/noise.ts), so PyTorch samples from the same noise ----

M32 = 0xFFFFFFFF


def _imul(a, b):
    return (a * b) & M32


def hash_seed(seed, key=''):
    h = (0x811C9DC5 ^ (seed & M32)) & M32
    h = _imul(h ^ (seed // 2 ** 32), 0x01000193)
    for ch in key:
        h = _imul(h ^ ord(ch), 0x01000193)
    h ^= h >> 16
    h = _imul(h, 0x85EBCA6B)
    h ^= h >> 13
    h = _imul(h, 0xC2B2AE35)
    return (h ^ (h >> 16)) & M32


class GaussianStream:
    """xoshiro128** seeded by splitmix32, Box-Muller pairs (cos first, then the spare sin)."""

    def __init__(self, seed):
        x = seed & M32
        state = []
        for _ in range(4):
            x = (x + 0x9E3779B9) & M32
            z = x
            z = _imul(z ^ (z >> 16), 0x85EBCA6B)
            z = _imul(z ^ (z >> 13), 0xC2B2AE35)
            state.append((z ^ (z >> 16)) & M32)
        state[3] |= 1
        self.s = state
        self.spare = None

    def uniform(self):
        s0, s1, s2, s3 = self.s
        m = _imul(s1, 5)
        result = _imul(((m << 7) | (m >> 25)) & M32, 9)
        t = (s1 << 9) & M32
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = ((s3 << 11) | (s3 >> 21)) & M32
        self.s = [s0, s1, s2, s3]
        return result / 2 ** 32

    def normal(self):
        if self.spare is not None:
            v, self.spare = self.spare, None
            return v
        u1 = 1 - self.uniform()
        u2 = self.uniform()
        r = math.sqrt(-2 * math.log(u1))
        self.spare = r * math.sin(2 * math.pi * u2)
        return r * math.cos(2 * math.pi * u2)


def ninodes_noise(seed, shape):
    """gaussianNoise(shape, seed) of @ninodes/models, as a float32 tensor."""
    g = GaussianStream(hash_seed(seed, 'latent-noise'))
    n = math.prod(shape)
    return torch.tensor([g.normal() for _ in range(n)], dtype=torch.float32).reshape(shape)
