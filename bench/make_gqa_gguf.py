#!/usr/bin/env python3
"""Writes a random-weight GGUF model of a real dense model's shape, for timing
a GPU engine (llama.cpp's llama-server) against the simulator's spec of that
model: llama architecture with grouped-query attention, F16 weights.

  make_gqa_gguf.py GGUF_PY_DIR OUT.gguf [preset]

preset qwen3-8b (default): Qwen3-8B's shapes (huggingface.co/Qwen/Qwen3-8B
config.json: hidden 4096, 36 layers, 32 query / 8 KV heads of 128,
intermediate 12288, vocabulary 151936, untied embeddings), without the
per-head q/k RMS norms (4096 + 1024 weights a layer; no effect on timing).
The weights are one random block repeated (values do not matter for timing;
drawing 8 billion normals would take minutes). Outputs are random tokens:
use ignore_eos / max_tokens.
"""
import sys
import types

import numpy as np

PRESETS = {"qwen3-8b": dict(n_embd=4096, n_layer=36, n_head=32, n_head_kv=8, head_dim=128, n_ff=12288,
                            n_vocab=151936, n_ctx=40960),
           # a few MB, to check the script and a server's load without a GPU
           "tiny": dict(n_embd=256, n_layer=2, n_head=4, n_head_kv=2, head_dim=64, n_ff=512, n_vocab=1000,
                        n_ctx=4096)}

gguf_dir, out = sys.argv[1], sys.argv[2]
p = PRESETS[sys.argv[3] if len(sys.argv) > 3 else "qwen3-8b"]
sys.modules["sentencepiece"] = types.SimpleNamespace(SentencePieceProcessor=None)
sys.path.insert(0, gguf_dir)
import gguf  # noqa: E402

w = gguf.GGUFWriter(out, "llama")
w.add_name("random-gqa-" + (sys.argv[3] if len(sys.argv) > 3 else "qwen3-8b"))
w.add_context_length(p["n_ctx"])
w.add_embedding_length(p["n_embd"])
w.add_block_count(p["n_layer"])
w.add_feed_forward_length(p["n_ff"])
w.add_head_count(p["n_head"])
w.add_head_count_kv(p["n_head_kv"])
w.add_rope_dimension_count(p["head_dim"])
w.add_rope_freq_base(1e6)
w.add_layer_norm_rms_eps(1e-6)
w.add_file_type(1)  # mostly F16

tokens = [b"<unk>", b"<s>", b"</s>"] + [f"<0x{i:02X}>".encode() for i in range(256)]
types_ = [2, 3, 3] + [6] * 256
i = 0
while len(tokens) < p["n_vocab"]:
    tokens.append(("\u2581w%d" % i).encode())
    types_.append(1)
    i += 1
w.add_tokenizer_model("llama")
w.add_token_list(tokens)
w.add_token_scores([-float(k) for k in range(len(tokens))])
w.add_token_types(types_)
w.add_bos_token_id(1)
w.add_eos_token_id(2)
w.add_unk_token_id(0)

base = (np.random.default_rng(0).standard_normal(1 << 24) * 0.02).astype(np.float16)


def t(name, rows, cols):
    w.add_tensor(name, np.resize(base, (rows, cols)))


def ones(name, n):
    w.add_tensor(name, np.ones(n, dtype=np.float32))


E, H, KV, D, F = p["n_embd"], p["n_head"], p["n_head_kv"], p["head_dim"], p["n_ff"]
t("token_embd.weight", p["n_vocab"], E)
for layer in range(p["n_layer"]):
    b = f"blk.{layer}."
    ones(b + "attn_norm.weight", E)
    t(b + "attn_q.weight", H * D, E)
    t(b + "attn_k.weight", KV * D, E)
    t(b + "attn_v.weight", KV * D, E)
    t(b + "attn_output.weight", E, H * D)
    ones(b + "ffn_norm.weight", E)
    t(b + "ffn_gate.weight", F, E)
    t(b + "ffn_up.weight", F, E)
    t(b + "ffn_down.weight", E, F)
ones("output_norm.weight", E)
t("output.weight", p["n_vocab"], E)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print("wrote", out)
