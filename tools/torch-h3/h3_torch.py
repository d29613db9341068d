"""MiniMax-H3 video forward in PyTorch eager, written once for the bench's whole-step peer.

Reads the same safetensors checkpoint ninodes reads (a synthetic `h3-*` preset or a real file's
video path), or takes weights in hand (tools/train-demo trains its module's parameters through this
forward), and computes the velocity for latents [B, C, T, H, W] at noise levels sigma, as
packages/models/src/h3-model.ts does: patchify (1x2x2, circular padding to even H/W), the sinusoidal
time embedding with fp32 rounding, area-normalized RoPE positions, DiT blocks (RMSNorm, modulate,
qkv, q/k RMSNorm, split-half RoPE on the first 6L dims, SDPA, gated residuals, SwiGLU MLP), the final
layer, and the negated unpatchify.

Modes:
  'f32'  every weight widened to float32 once at load; the whole forward in float32.
  'bf16' the block and final-adaLN linears keep bf16 weights (as stored); linears and attention run
         under torch.autocast('cpu', dtype=torch.bfloat16), so their inputs are rounded to bf16 and
         their outputs are bf16 (oneDNN accumulates in f32); the fp32 islands (patch embedding, time
         embedder, output head) run in float32 with autocast off, as ComfyUI keeps them; norms and the
         residual stream stay float32 (bf16 results promote when they meet it).
  'f64'  everything in float64: a reference for the error of the other two.

No dependency beyond torch: the safetensors header is parsed here.
"""
import json
import math
import struct

import torch
import torch.nn.functional as F


def unsupported():
    """Why this torch cannot run the forward here (a sentence), or None when it can."""
    if not hasattr(F, "rms_norm"):
        # Debian 12's python3-torch is 1.13.
        return f"torch {torch.__version__} has no torch.nn.functional.rms_norm, which this forward uses (torch 2.4 or later)"
    return None


_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16, "F64": torch.float64}

# Linears ComfyUI builds in float32 whatever the model dtype (kept fp32 in bf16 mode too).
ISLANDS = ("video_patch_proj", "time_embedder.proj_in", "time_embedder.proj_out", "final_layer.video_out")


def read_safetensors(path, wanted=None):
    """name -> tensor (stored dtype), for names passing `wanted` (all when None)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, e in header.items():
            if name == "__metadata__" or (wanted is not None and not wanted(name)):
                continue
            dt = _DTYPES.get(e["dtype"])
            if dt is None:
                raise ValueError(f"{name}: dtype {e['dtype']} is not supported by this tool")
            start, end = e["data_offsets"]
            f.seek(base + start)
            buf = bytearray(f.read(end - start))
            t = torch.frombuffer(buf, dtype=dt) if len(buf) else torch.empty(0, dtype=dt)
            out[name] = t.reshape(e["shape"])
        return out


class H3Torch:
    """The H3 video path over a checkpoint, in one mode ('f32', 'bf16' or 'f64')."""

    def __init__(self, path, mode="f32"):
        _check_mode(mode)
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            names = [k for k in json.loads(f.read(n)) if k != "__metadata__"]
        anchor = next((k for k in names if k.endswith("video_patch_proj.weight")), None)
        if anchor is None:
            raise ValueError(f"{path} has no video_patch_proj.weight: not an H3 checkpoint")
        self.prefix = anchor[: -len("video_patch_proj.weight")]
        raw = read_safetensors(path, lambda k: k.startswith(self.prefix))
        self._setup({k[len(self.prefix):]: v for k, v in raw.items()}, mode)

    @classmethod
    def from_weights(cls, weights, mode="f32"):
        """The forward over weights in hand (name -> tensor, ComfyUI names without a prefix). A weight
        already of the mode's dtype is used as it is, not copied: a module's parameters train through it."""
        _check_mode(mode)
        self = cls.__new__(cls)
        self.prefix = ""
        self._setup(weights, mode)
        return self

    def _setup(self, w, mode):
        self.mode = mode
        self.float = torch.float64 if mode == "f64" else torch.float32
        self.w = {}
        for k, v in w.items():
            keep_bf16 = mode == "bf16" and k.endswith(".weight") and v.dim() == 2 and not k.startswith(ISLANDS)
            self.w[k] = v.to(torch.bfloat16).contiguous() if keep_bf16 else v.to(self.float).contiguous()
        self.hidden = self.w["video_patch_proj.weight"].shape[0]
        self.channels = self.w["video_patch_proj.weight"].shape[1] // 4
        self.layers = sum(1 for k in self.w if k.endswith(".norm1.weight") and k.startswith("blocks."))
        self.head_dim = self.w["blocks.0.attn.q_norm.weight"].shape[0]
        self.heads = self.w["blocks.0.attn.qkv_proj.weight"].shape[0] // (3 * self.head_dim)
        # Heads this process computes: all of them here; a tensor-parallel rank's share in h3_tp_gloo.
        self.local_heads = self.heads
        self.freq_dim = self.w["time_embedder.proj_in.weight"].shape[1]
        self.rope_len = self.w["rope.inv_freq"].shape[0]
        # H3's defaults (h3-config.ts H3_DEFAULTS); a checkpoint's shapes do not carry them.
        self.eps = self.qk_eps = self.final_eps = 1e-5
        self._angles = None

    # ---- helpers ----------------------------------------------------------------------------

    def _linear(self, x, name, island=False):
        w = self.w[f"{name}.weight"]
        b = self.w.get(f"{name}.bias")
        if self.mode == "bf16" and island:
            with torch.autocast("cpu", enabled=False):
                return F.linear(x.to(self.float), w, b)
        return F.linear(x, w, b)

    def _rms(self, x, weight, eps):
        return F.rms_norm(x.to(self.float), (x.shape[-1],), weight, eps)

    def _time_features(self, sigma):
        # timestep-embedding.ts: t = 1 - max(fround(sigma), 1e-6) in double, then rounded to f32;
        # each frequency exp(fround(-ln(1e4)·j/half)) rounded to f32; arg = f32 product; cos/sin of it.
        # sigma: a number or one per latent of the batch; [B, freqDim].
        half = self.freq_dim // 2
        s = torch.as_tensor(sigma).detach().reshape(-1).to(torch.float32).to(torch.float64)
        tf = (1 - s.clamp(min=1e-6)).to(torch.float32)
        j = torch.arange(half, dtype=torch.float64)
        e = ((-math.log(10000) * j) / half).to(torch.float32).to(torch.float64)
        freq = torch.exp(e).to(torch.float32)
        arg = (tf[:, None] * freq[None, :]).to(torch.float64)
        feats = torch.cat([torch.cos(arg), torch.sin(arg)], dim=-1).to(torch.float32)
        return feats.to(self.float)

    def _positions(self, frames, height, width):
        # video-grid.ts h3VideoPositions: area-normalized h/w axes ×32, time stretched 1,4,4,4,4 ×5/3.
        sqrt_area = math.sqrt(height * width)

        def axis(dim):
            ratio = dim / sqrt_area
            n = dim // 2
            return [(i * (ratio / n) + (1 - ratio) / 2) * 32 for i in range(n)]

        hs, ws = axis(height), axis(width)
        rows, t = [], 0.0
        spans = (1, 4, 4, 4, 4)
        for f in range(frames):
            for h in hs:
                for w in ws:
                    rows.append((t, h, w))
            t += (5 / 3) * spans[f % 5]
        return torch.tensor(rows, dtype=torch.float64)

    def _rope_angles(self, frames, height, width):
        key = (frames, height, width)
        if self._angles is None or self._angles[0] != key:
            pos = self._positions(frames, height, width).to(torch.float32)
            inv = self.w["rope.inv_freq"].to(torch.float32)
            a = (pos[:, :, None] * inv[None, None, :]).reshape(pos.shape[0], -1)  # [S, 3L], f32 products
            self._angles = (key, a.to(self.float))
        return self._angles[1]

    def _rope(self, x, angles):
        # x [B, S, H, D]; split-half rotation of the first 6L dims: pair i = (i, i + 3L), angle angles[:, i].
        half = angles.shape[1]
        cos = torch.cos(angles)[:, None, :]
        sin = torch.sin(angles)[:, None, :]
        x1 = x[..., :half]
        x2 = x[..., half: 2 * half]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, x[..., 2 * half:]], dim=-1)

    # ---- forward ------------------------------------------------------------------------------

    def _row_linear(self, x, name):
        """A linear whose input is split by columns under tensor parallelism (out_proj, fc2): whole here."""
        return self._linear(x, name)

    def _block(self, i, x, t_emb, angles):
        # x [B, S, hidden]; t_emb [B, tDim] (or [1, tDim] for the whole batch)
        p = f"blocks.{i}"
        d, heads, hd = self.hidden, self.local_heads, self.head_dim
        b, s = x.shape[0], x.shape[1]
        inner = heads * hd
        mod = self._linear(F.silu(t_emb), f"{p}.adaln_proj.linear").to(self.float)[:, None]
        shift_a, scale_a, gate_a, shift_m, scale_m, gate_m = (mod[..., c * d:(c + 1) * d] for c in range(6))
        h1 = self._rms(x, self.w[f"{p}.norm1.weight"], self.eps) * (1 + scale_a) + shift_a
        qkv = self._linear(h1, f"{p}.attn.qkv_proj")
        q = self._rms(qkv[..., :inner].reshape(b, s, heads, hd), self.w[f"{p}.attn.q_norm.weight"], self.qk_eps)
        k = self._rms(qkv[..., inner:2 * inner].reshape(b, s, heads, hd), self.w[f"{p}.attn.k_norm.weight"], self.qk_eps)
        v = qkv[..., 2 * inner:].reshape(b, s, heads, hd)
        q = self._rope(q, angles).transpose(1, 2)
        k = self._rope(k, angles).transpose(1, 2)
        v = v.transpose(1, 2)
        att = F.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(hd))
        att = att.transpose(1, 2).reshape(b, s, inner)
        x = x + self._row_linear(att, f"{p}.attn.out_proj").to(self.float) * gate_a
        h2 = self._rms(x, self.w[f"{p}.norm2.weight"], self.eps) * (1 + scale_m) + shift_m
        f1 = self._linear(h2, f"{p}.mlp.fc1")
        ffn = f1.shape[-1] // 2
        act = F.silu(f1[..., :ffn]) * f1[..., ffn:]
        return x + self._row_linear(act, f"{p}.mlp.fc2").to(self.float) * gate_m

    def velocity(self, latent, sigma):
        """Velocity [B, C, T, H, W] for latents [B, C, T, H, W] at sigma (a number, or one per latent),
        with autograd: forward() is this without it (and under autocast in 'bf16' mode)."""
        b, c, frames, height, width = latent.shape
        x = latent.to(self.float)
        # circular padding to even H/W (ComfyUI pad_to_patch_size), then 1x2x2 patches, columns c·4 + dy·2 + dx
        if height % 2:
            x = torch.cat([x, x[:, :, :, :1]], dim=3)
        if width % 2:
            x = torch.cat([x, x[:, :, :, :, :1]], dim=4)
        hp, wp = x.shape[3], x.shape[4]
        hn, wn = hp // 2, wp // 2
        rows = x.reshape(b, c, frames, hn, 2, wn, 2).permute(0, 2, 3, 5, 1, 4, 6).reshape(b, frames * hn * wn, c * 4)
        t_emb = self._linear(F.silu(self._linear(self._time_features(sigma), "time_embedder.proj_in", True)), "time_embedder.proj_out", True)
        angles = self._rope_angles(frames, hp, wp)
        h = self._linear(rows, "video_patch_proj", True)
        for i in range(self.layers):
            h = self._block(i, h, t_emb, angles)
        d = self.hidden
        mod = self._linear(F.silu(t_emb), "final_layer.adaln_proj.linear").to(self.float)[:, None]
        shift, scale = mod[..., :d], mod[..., d:2 * d]
        normed = self._rms(h, self.w["final_layer.norm.weight"], self.final_eps) * (1 + scale) + shift
        head = self._linear(normed, "final_layer.video_out", True).to(self.float)
        out = head.reshape(b, frames, hn, wn, c, 2, 2).permute(0, 4, 1, 2, 5, 3, 6).reshape(b, c, frames, hp, wp)
        return -out[..., :height, :width]

    def forward(self, latent, sigma):
        """Velocity [B, C, T, H, W] (float32, or float64 in 'f64' mode) for latents at noise level sigma."""
        with torch.inference_mode():
            if self.mode == "bf16":
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return self.velocity(latent, sigma)
            return self.velocity(latent, sigma)


def _check_mode(mode):
    if mode not in ("f32", "bf16", "f64"):
        raise ValueError(f"mode must be f32, bf16 or f64, got {mode!r}")


def read_f32(path, shape):
    """A raw little-endian float32 file as a tensor of `shape` (how the bench hands over its latent)."""
    with open(path, "rb") as f:
        buf = bytearray(f.read())
    return torch.frombuffer(buf, dtype=torch.float32).reshape(shape)
