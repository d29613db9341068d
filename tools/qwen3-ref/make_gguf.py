"""A tiny Qwen3 text encoder in GGUF as llama.cpp lays one out, and its reference hidden states.

Writes fixtures/qwen3/tiny-q8_0.gguf: llama.cpp's tensor names (token_embd, blk.N.attn_q / attn_k /
attn_v / attn_output / attn_q_norm / attn_k_norm / attn_norm / ffn_norm / ffn_gate / ffn_up /
ffn_down), `general.architecture` qwen3 with its RoPE base (1e6, Qwen3's, not H3's 5e6: the reader
must take it from the file) and RMS epsilon; the embedding and every linear in Q8_0 (gguf-py's
quantizer), norms F32. And fixtures/qwen3/expect-gguf.safetensors: `ids` and `hidden` [S, 64] F64,
transformers' Qwen3Model in float64 on gguf-py's dequantization of those tensors.
Run from the repository root: python3 tools/qwen3-ref/make_gguf.py
"""
import os

import gguf
import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from transformers import Qwen3Config, Qwen3Model

OUT = "fixtures/qwen3"
Q8 = gguf.GGMLQuantizationType.Q8_0
HF_TO_GGUF = {
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm", "input_layernorm": "attn_norm",
    "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
}


def gguf_name(hf):
    if hf == "embed_tokens.weight":
        return "token_embd.weight"
    _, i, rest = hf.split(".", 2)
    module, leaf = rest.rsplit(".", 1)
    return f"blk.{i}.{HF_TO_GGUF[module]}.{leaf}"


if __name__ == "__main__":
    torch.manual_seed(146)
    config = Qwen3Config(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6, rope_theta=1_000_000.0, attention_bias=False,
                         max_position_embeddings=256, tie_word_embeddings=False)
    config._attn_implementation = "eager"
    writer = gguf.GGUFWriter(os.path.join(OUT, "tiny-q8_0.gguf"), arch="qwen3")
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_string("ninodes.fixture", "tools/qwen3-ref/make_gguf.py")
    state = {}
    for name, p in Qwen3Model(config).state_dict().items():
        if name == "norm.weight":
            continue
        if name.endswith("norm.weight"):
            a = (1.0 + 0.2 * torch.randn(p.shape, dtype=torch.float64)).numpy().astype(np.float32)
            writer.add_tensor(gguf_name(name), a)
            state[name] = torch.from_numpy(a.astype(np.float64))
        else:
            a = (0.08 * torch.randn(p.shape, dtype=torch.float64)).numpy().astype(np.float32)
            q = gguf.quants.quantize(a, Q8)
            writer.add_tensor(gguf_name(name), q, raw_dtype=Q8)
            state[name] = torch.from_numpy(gguf.quants.dequantize(q, Q8).astype(np.float64).reshape(a.shape))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    model = Qwen3Model(config).double().eval()
    model.norm = torch.nn.Identity()
    missing = model.load_state_dict(state, strict=False)
    assert missing.missing_keys == [] and missing.unexpected_keys == [], missing
    ids = torch.tensor([[5, 127, 0, 64, 64, 31, 100, 7, 2]], dtype=torch.long)
    with torch.no_grad():
        hidden = model(input_ids=ids).last_hidden_state[0]
    save_file({"ids": ids[0].to(torch.int32), "hidden": hidden.contiguous()}, os.path.join(OUT, "expect-gguf.safetensors"),
              metadata={"producer": f"torch {torch.__version__}, transformers {transformers.__version__}, gguf-py quants"})
