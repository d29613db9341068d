"""A float64 re-implementation of MiniMax-H3's video VAE decoder and its fixtures.

The decoder, as stable-diffusion.cpp's src/model/vae/minimax_h3_vae.hpp computes it (facts only):
  latent (diffusion space, 24 channels) * latents_std + latents_mean -> post_quant_conv (1x1x1)
  -> tokens in (t, h, w) order -> x_embedder -> + 4 register tokens + 1 zero token
  -> blocks: x += attn(rms_norm1(x)) * scale1; x += ff(rms_norm2(x)) * scale2
     attn: to_qkv per head [q | k | v] of head_dim 64, q and k RMS-normalized (no weight, eps 1e-5),
           split-half RoPE over the first 48 dims: axes (t, h, w) 16 dims each, base 100,
           positions (2 (i + 0.5) / n - 1) * 2 pi, zero for the 5 extra tokens; full attention
     ff: w1 -> [gate | up] -> w2(silu(gate) * up)
  -> LayerNorm (affine, eps 1e-5) -> proj_out -> first N tokens -> unpatchify (c, pt, ph, pw), patches 4x16x16
  -> pixels * pixel_std + pixel_mean, clamped to [0, 1].
  A video latent (T > 1) is decoded in chunks of 7 latent frames, 5 apart; each chunk's frames
  [3, 20) are kept, the 5 after 23 blended linearly into the next chunk's first 5; the result cut
  to ((T - 2) // 5) * 17 + 5 frames. One latent frame decodes alone and keeps its last frame.

Writes fixtures/h3-vae/video-decoder.safetensors (the tiny model: linears F16, the rest F32) and
video-decoder-expect.safetensors (latents `latent.t1`, `latent.t2`, `latent.t12` [1, 24, T, 2, 3]
F32 and `pixels.*` [3, F, 32, 48] F64). Run from the repository root: python3 tools/h3-vae-ref/video_decoder.py
"""
import math
import os

import torch
from safetensors.torch import save_file

LATENTS_MEAN = [0.858090341091156, -0.960659146308899, 1.066164016723633, -0.509032547473907, -0.272758185863495, -1.367541432380676, -0.255325496196747, -0.269075542688370, -0.537684082984924, -0.046409729868174, 0.665737032890320, 0.196901276707649, -0.546060800552368, -0.403534203767776, -0.236830249428749, 0.259284526109695, -0.301339447498322, 0.211341992020607, -1.120684862136841, 0.358193337917328, -0.042251437902451, 0.260482996702194, 0.228640928864479, 0.705603182315826]
LATENTS_STD = [1.222377419471741, 1.276726365089417, 1.683177471160889, 1.754945516586304, 1.563621640205383, 2.194143533706665, 0.965313792228699, 1.056988596916199, 0.841948926448822, 0.772995293140411, 1.895593762397766, 0.946841835975647, 0.799680948257446, 0.449889004230499, 0.719739973545075, 0.693629324436188, 2.961095094680786, 2.769419908523560, 3.049618482589722, 2.108805418014527, 3.276226282119751, 3.162735700607300, 2.281681299209595, 2.612784385681153]
PIXEL_MEAN = [0.485, 0.456, 0.406]
PIXEL_STD = [0.229, 0.224, 0.225]
HEAD_DIM, PT, PH, PW = 64, 4, 16, 16


def f32(x):
    return float(torch.tensor(x, dtype=torch.float32))


def rope_angles(t, h, w):
    """[N + 5, 24] angles: 8 per axis, omega_k = 1 / 100^(2k/16), computed in float32 as sd.cpp does."""
    omega = torch.tensor([1.0 / f32(100.0 ** f32(2 * k / 16)) for k in range(8)], dtype=torch.float32)
    two_pi = f32(6.28318530717958647692)

    rows = []
    for it in range(t):
        for ih in range(h):
            for iw in range(w):
                p = [torch.tensor(f32(2.0 * f32(f32(it + 0.5) / t) - 1.0), dtype=torch.float32) * two_pi,
                     torch.tensor(f32(2.0 * f32(f32(ih + 0.5) / h) - 1.0), dtype=torch.float32) * two_pi,
                     torch.tensor(f32(2.0 * f32(f32(iw + 0.5) / w) - 1.0), dtype=torch.float32) * two_pi]
                rows.append(torch.cat([pa * omega for pa in p]))
    rows += [torch.zeros(24, dtype=torch.float32)] * 5
    return torch.stack(rows).double()


def rms(x, eps, weight=None):
    y = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps)
    return y if weight is None else y * weight


def rope(x, angles):
    # x [S, H, D]; pairs (i, i + 24) for i < 24 rotate by angles[:, i]
    cos, sin = angles.cos()[:, None, :], angles.sin()[:, None, :]
    a, b, rest = x[..., :24], x[..., 24:48], x[..., 48:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos, rest], -1)


def decode_chunk(W, z):
    """z [24, T, H, W] (VAE space, after post_quant_conv) -> pixels [3, 4T, 16H, 16W]."""
    c, t, h, w = z.shape
    dim = W["decoder.x_embedder.weight"].shape[0]
    heads = dim // HEAD_DIM
    x = z.permute(1, 2, 3, 0).reshape(t * h * w, c) @ W["decoder.x_embedder.weight"].T + W["decoder.x_embedder.bias"]
    n = x.shape[0]
    x = torch.cat([x, W["decoder.register_tokens"], torch.zeros(1, dim, dtype=x.dtype)])
    angles = rope_angles(t, h, w)
    layers = len({k.split(".")[2] for k in W if k.startswith("decoder.transformer_blocks.")})
    for i in range(layers):
        p = f"decoder.transformer_blocks.{i}."
        hN = rms(x, 1e-5, W[p + "norm1.weight"])
        qkv = (hN @ W[p + "attn.to_qkv.weight"].T + W[p + "attn.to_qkv.bias"]).reshape(-1, heads, 3 * HEAD_DIM)
        q, k, v = qkv[..., :HEAD_DIM], qkv[..., HEAD_DIM:2 * HEAD_DIM], qkv[..., 2 * HEAD_DIM:]
        q, k = rope(rms(q, 1e-5), angles), rope(rms(k, 1e-5), angles)
        s = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(HEAD_DIM)
        a = torch.einsum("hqk,khd->qhd", s.softmax(-1), v).reshape(-1, dim)
        x = x + (a @ W[p + "attn.to_out.weight"].T + W[p + "attn.to_out.bias"]) * W[p + "scale1"]
        hN = rms(x, 1e-5, W[p + "norm2.weight"])
        g, u = (hN @ W[p + "ff.w1.weight"].T + W[p + "ff.w1.bias"]).chunk(2, -1)
        x = x + ((torch.nn.functional.silu(g) * u) @ W[p + "ff.w2.weight"].T + W[p + "ff.w2.bias"]) * W[p + "scale2"]
    x = torch.nn.functional.layer_norm(x, (dim,), W["decoder.norm_out.weight"], W["decoder.norm_out.bias"], 1e-5)
    y = (x @ W["decoder.proj_out.weight"].T + W["decoder.proj_out.bias"])[:n]
    y = y.reshape(t, h, w, 3, PT, PH, PW).permute(3, 0, 4, 1, 5, 2, 6).reshape(3, t * PT, h * PH, w * PW)
    mean = torch.tensor(PIXEL_MEAN, dtype=y.dtype)[:, None, None, None]
    std = torch.tensor(PIXEL_STD, dtype=y.dtype)[:, None, None, None]
    return (y * std + mean).clamp(0, 1)


def decode(W, latent):
    """latent [1, 24, T, H, W] in diffusion space -> pixels [3, F, 16H, 16W] in [0, 1]."""
    z = latent[0] * torch.tensor(LATENTS_STD, dtype=latent.dtype)[:, None, None, None] + torch.tensor(LATENTS_MEAN, dtype=latent.dtype)[:, None, None, None]
    z = torch.einsum("oc,cthw->othw", W["post_quant_conv.weight"][:, :, 0, 0, 0], z) + W["post_quant_conv.bias"][:, None, None, None]
    t = z.shape[1]
    if t == 1:
        return decode_chunk(W, z)[:, -1:]
    pseudo = t + 3
    pad = (5 - pseudo % 5) % 5
    chunks = (pseudo + pad) // 5 - 1
    if chunks < 1:
        pad, chunks = pad + 5, chunks + 1
    z = torch.cat([z] + [z[:, -1:]] * pad, 1)
    out, overlap = [], None
    for i in range(chunks):
        d = decode_chunk(W, z[:, 5 * i:min(5 * i + 7, z.shape[1])])
        first = d[:, min(3, min(20, d.shape[1])):min(20, d.shape[1])].clone()
        if overlap is not None:
            e = min(5, overlap.shape[1], first.shape[1])
            wb = torch.arange(e, dtype=torch.float32).double() / e
            first[:, :e] = overlap[:, overlap.shape[1] - e:] * (1 - wb)[None, :, None, None] + first[:, :e] * wb[None, :, None, None]
            overlap = None
        out.append(first)
        if d.shape[1] > 23:
            overlap = d[:, 23:]
        if i == chunks - 1 and overlap is not None:
            out.append(overlap)
    pixels = torch.cat(out, 1)
    return pixels[:, :max(1, ((t - 2) // 5) * 17 + 5)]


def tiny_weights(dim=128, layers=2, inner=256, seed=145):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s, sc=1.0: torch.randn(*s, generator=g, dtype=torch.float64) * sc
    W = {
        "post_quant_conv.weight": r(24, 24, 1, 1, 1, sc=0.2), "post_quant_conv.bias": r(24, sc=0.1),
        "decoder.x_embedder.weight": r(dim, 24, sc=0.2), "decoder.x_embedder.bias": r(dim, sc=0.1),
        "decoder.register_tokens": r(4, dim), "decoder.mask_token": r(dim),
        "decoder.norm_out.weight": 1 + r(dim, sc=0.1), "decoder.norm_out.bias": r(dim, sc=0.1),
        "decoder.proj_out.weight": r(3 * PT * PH * PW, dim, sc=0.1), "decoder.proj_out.bias": r(3 * PT * PH * PW, sc=0.1),
    }
    for i in range(layers):
        p = f"decoder.transformer_blocks.{i}."
        W.update({
            p + "norm1.weight": 1 + r(dim, sc=0.1), p + "norm2.weight": 1 + r(dim, sc=0.1),
            p + "scale1": r(dim, sc=0.5), p + "scale2": r(dim, sc=0.5),
            p + "attn.to_qkv.weight": r(3 * dim, dim, sc=0.15), p + "attn.to_qkv.bias": r(3 * dim, sc=0.1),
            p + "attn.to_out.weight": r(dim, dim, sc=0.1), p + "attn.to_out.bias": r(dim, sc=0.1),
            p + "ff.w1.weight": r(2 * inner, dim, sc=0.1), p + "ff.w1.bias": r(2 * inner, sc=0.1),
            p + "ff.w2.weight": r(dim, inner, sc=0.1), p + "ff.w2.bias": r(dim, sc=0.1),
        })
    # Stored as the real file: linear weights in F16, everything else F32; the reference uses the stored values.
    stored = {k: (v.half() if v.dim() == 2 and k.endswith(".weight") else v.float()) for k, v in W.items()}
    return stored, {k: v.double() for k, v in stored.items()}


if __name__ == "__main__":
    out = "fixtures/h3-vae"
    os.makedirs(out, exist_ok=True)
    stored, W = tiny_weights()
    meta = {"producer": f"torch {torch.__version__}", "seed": "145", "reference": "tools/h3-vae-ref/video_decoder.py"}
    save_file({k: v.contiguous() for k, v in stored.items()}, os.path.join(out, "video-decoder.safetensors"), metadata=meta)
    g = torch.Generator().manual_seed(7)
    expect = {}
    for t in (1, 2, 12):
        latent = torch.randn(1, 24, t, 2, 3, generator=g, dtype=torch.float32)
        expect[f"latent.t{t}"] = latent
        expect[f"pixels.t{t}"] = decode(W, latent.double()).contiguous()
        print(t, tuple(expect[f"pixels.t{t}"].shape))
    save_file(expect, os.path.join(out, "video-decoder-expect.safetensors"), metadata=meta)
