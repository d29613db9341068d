"""A float64 re-implementation of MiniMax-H3's audio VAE decoder and its fixtures.

As stable-diffusion.cpp's src/model/vae/minimax_h3_audio_vae.hpp and ltx_audio_vae.hpp compute it
(facts only): each of the two streams of the latent [1, 32, 2, T] separately:
  z * latents_std + latents_mean -> dec_in_proj (1x1 conv) -> BigVGAN:
  conv_pre (k 7) -> 7 x [ConvTranspose1d (rates 5 5 2 2 2 2 2, kernels 9 9 4 4 4 4 4, padding (k - r) / 2)
  -> mean of 3 AMP blocks (kernels 3 7 11, dilations 1 3 5)] -> anti-aliased SnakeBeta -> conv_post (k 7,
  no bias) -> clamp [-1, 1]: 800 samples per latent frame, stereo 32 kHz.
  AMP block: 3 x { x += conv2(act2(conv1(act1(x)))) }, conv1 dilated (padding (k d - d) / 2), conv2 padding k / 2.
  Anti-aliased SnakeBeta (alias-free activation): replicate-pad 5, 2 * conv_transpose1d(filter, stride 2),
  crop 15 each side; x + sin(x e^alpha)^2 / (e^beta + 1e-9); replicate-pad (5, 6), conv1d(filter, stride 2).

Writes fixtures/h3-vae/audio-decoder.safetensors (a tiny model: conv_pre 128 channels; conv weights
F16, the rest F32) and audio-decoder-expect.safetensors (`latent` [1, 32, 2, 3] F32, `waveform` [2, 2400] F64).
Run from the repository root: python3 tools/h3-vae-ref/audio_decoder.py
"""
import math
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

RATES = [5, 5, 2, 2, 2, 2, 2]
KERNELS = [9, 9, 4, 4, 4, 4, 4]
RES_KERNELS = [3, 7, 11]
DILATIONS = [1, 3, 5]


def kaiser_sinc(cutoff, half_width, k=12):
    """BigVGAN's low-pass filter (kernel 12, even)."""
    delta_f = 4 * half_width
    a = 2.285 * (k // 2 - 1) * math.pi * delta_f + 7.95
    beta = 0.1102 * (a - 8.7) if a > 50 else 0.5842 * (a - 21) ** 0.4 + 0.07886 * (a - 21) if a >= 21 else 0.0
    window = torch.kaiser_window(k, beta=beta, periodic=False, dtype=torch.float64)
    time = torch.arange(-k // 2, k // 2, dtype=torch.float64) + 0.5
    f = 2 * cutoff * window * torch.sinc(2 * cutoff * time)
    return (f / f.sum()).reshape(1, 1, k)


def act(W, p, x):
    c = x.shape[0]
    up, down = W[p + "upsample.filter"].reshape(1, 1, -1), W[p + "downsample.lowpass.filter"].reshape(1, 1, -1)
    h = F.pad(x[None], (5, 5), mode="replicate")
    h = 2 * F.conv_transpose1d(h, up.expand(c, 1, -1), stride=2, groups=c)
    h = h[..., 15:-15]
    alpha, beta = W[p + "act.alpha"].reshape(-1, 1).exp(), W[p + "act.beta"].reshape(-1, 1).exp()
    h = h + torch.sin(h * alpha) ** 2 / (beta + 1e-9)
    h = F.pad(h, (5, 6), mode="replicate")
    return F.conv1d(h, down.expand(c, 1, -1), stride=2, groups=c)[0]


def conv(W, p, x, padding, dilation=1, bias=True):
    return F.conv1d(x[None], W[p + "weight"], W[p + "bias"] if bias else None, padding=padding, dilation=dilation)[0]


def decode_stream(W, z):
    x = conv(W, "dec_in_proj.", z, 0)
    x = conv(W, "decoder.conv_pre.", x, 3)
    for i, (r, k) in enumerate(zip(RATES, KERNELS)):
        x = F.conv_transpose1d(x[None], W[f"decoder.ups.{i}.0.weight"], W[f"decoder.ups.{i}.0.bias"], stride=r, padding=(k - r) // 2)[0]
        total = 0
        for j, rk in enumerate(RES_KERNELS):
            p = f"decoder.resblocks.{3 * i + j}."
            h = x
            for m, d in enumerate(DILATIONS):
                t = act(W, f"{p}activations.{2 * m}.", h)
                t = conv(W, f"{p}convs1.{m}.", t, (rk * d - d) // 2, d)
                t = act(W, f"{p}activations.{2 * m + 1}.", t)
                t = conv(W, f"{p}convs2.{m}.", t, rk // 2)
                h = h + t
            total = total + h
        x = total / 3
    x = act(W, "decoder.activation_post.", x)
    return conv(W, "decoder.conv_post.", x, 3, bias=False).clamp(-1, 1)[0]


def decode(W, latent):
    z = latent[0] * W["latents_std"][:, None, None] + W["latents_mean"][:, None, None]
    return torch.stack([decode_stream(W, z[:, s]) for s in range(2)])


def tiny_weights(dec_in=64, channels=128, seed=145):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s, sc=1.0: torch.randn(*s, generator=g, dtype=torch.float64) * sc
    W = {"latents_mean": r(32, sc=0.5), "latents_std": 1 + r(32, sc=0.1).abs(),
         "dec_in_proj.weight": r(dec_in, 32, 1, sc=1 / math.sqrt(32)), "dec_in_proj.bias": r(dec_in, sc=0.05),
         "decoder.conv_pre.weight": r(channels, dec_in, 7, sc=1 / math.sqrt(7 * dec_in)), "decoder.conv_pre.bias": r(channels, sc=0.05)}

    def activation(p, c):
        W[p + "act.alpha"] = r(c, sc=0.2)
        W[p + "act.beta"] = r(c, sc=0.2)
        W[p + "upsample.filter"] = kaiser_sinc(0.25, 0.3)
        W[p + "downsample.lowpass.filter"] = kaiser_sinc(0.25, 0.3)

    c = channels
    for i, (rate, k) in enumerate(zip(RATES, KERNELS)):
        n = c // 2
        W[f"decoder.ups.{i}.0.weight"] = r(c, n, k, sc=1 / math.sqrt(c * k / rate))
        W[f"decoder.ups.{i}.0.bias"] = r(n, sc=0.05)
        for j, rk in enumerate(RES_KERNELS):
            p = f"decoder.resblocks.{3 * i + j}."
            for m in range(3):
                W[f"{p}convs1.{m}.weight"] = r(n, n, rk, sc=0.5 / math.sqrt(n * rk))
                W[f"{p}convs1.{m}.bias"] = r(n, sc=0.05)
                W[f"{p}convs2.{m}.weight"] = r(n, n, rk, sc=0.5 / math.sqrt(n * rk))
                W[f"{p}convs2.{m}.bias"] = r(n, sc=0.05)
            for m in range(6):
                activation(f"{p}activations.{m}.", n)
        c = n
    activation("decoder.activation_post.", c)
    W["decoder.conv_post.weight"] = r(1, c, 7, sc=0.3 / math.sqrt(7 * c))
    stored = {k: (v.half() if k.endswith(".weight") and v.dim() == 3 and "filter" not in k else v.float()) for k, v in W.items()}
    return stored, {k: v.double() for k, v in stored.items()}


if __name__ == "__main__":
    out = "fixtures/h3-vae"
    os.makedirs(out, exist_ok=True)
    stored, W = tiny_weights()
    meta = {"producer": f"torch {torch.__version__}", "seed": "145", "reference": "tools/h3-vae-ref/audio_decoder.py"}
    save_file({k: v.contiguous() for k, v in stored.items()}, os.path.join(out, "audio-decoder.safetensors"), metadata=meta)
    latent = torch.randn(1, 32, 2, 3, generator=torch.Generator().manual_seed(9), dtype=torch.float32)
    wave = decode(W, latent.double())
    print(tuple(wave.shape), float(wave.abs().max()), float((wave.abs() >= 1).double().mean()))
    save_file({"latent": latent, "waveform": wave.contiguous()}, os.path.join(out, "audio-decoder-expect.safetensors"), metadata=meta)
