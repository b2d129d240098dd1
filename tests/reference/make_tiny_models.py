#!/usr/bin/python3
"""Writes tiny random decoders in exact Hugging Face layout.

Each model directory holds config.json, model.safetensors (HF tensor names)
and a tokenizer that `pocket convert DIR` accepts:
  * llama: tokenizer.model + tokenizer_config.json copied from
    tests/data/stories260K-hf (sentencepiece, vocab 512);
  * qwen2 / qwen3: tokenizer.json trimmed from tests/data/qwen3-tokenizer to
    the model vocab (byte-level BPE, added tokens renumbered right after the
    kept vocab) and a tokenizer_config.json with the matching ids.

Usage: /usr/bin/python3 make_tiny_models.py OUT_DIR [NAME ...]
(NAME from MODELS below; default: all of them).
"""

import copy
import json
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "data"))
sys.path.insert(0, HERE)
from hf_reference import write_safetensors  # noqa: E402

# hidden 64 with 4 heads; ffn 192 so every matrix's input dim divides by the
# q4 group sizes under test (32 and 64). Qwen3 uses head_dim 32 != 64 / 4.
_BASE = dict(hidden=64, ffn=192, heads=4, kv_heads=2, head_dim=16, vocab=512,
             eps=1e-6, max_pos=2048)
MODELS = {
    "llama":        dict(_BASE, arch="llama", layers=3, theta=10000.0, tied=False, seed=11),
    "llama-tied":   dict(_BASE, arch="llama", layers=2, theta=10000.0, tied=True, seed=12),
    "qwen2":        dict(_BASE, arch="qwen2", layers=3, theta=1e6, tied=True, seed=21),
    "qwen2-untied": dict(_BASE, arch="qwen2", layers=2, theta=1e6, tied=False, seed=22),
    "qwen3":        dict(_BASE, arch="qwen3", layers=3, head_dim=32, theta=1e6, tied=True, seed=31),
    "qwen3-untied": dict(_BASE, arch="qwen3", layers=2, head_dim=32, theta=1e6, tied=False,
                         seed=32),
}

_ARCH_NAMES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
               "qwen3": "Qwen3ForCausalLM"}


def make_weights(spec):
    """HF-named float32 weights: N(0, 0.05) matrices, 1 + N(0, 0.05) norms."""
    rng = np.random.default_rng(spec["seed"])
    d, f, v = spec["hidden"], spec["ffn"], spec["vocab"]
    H, KV, hd = spec["heads"], spec["kv_heads"], spec["head_dim"]

    def mat(rows, cols, std=0.05):
        return (rng.standard_normal((rows, cols)) * std).astype(np.float32)

    def norm(n):
        return (1.0 + 0.05 * rng.standard_normal(n)).astype(np.float32)

    def bias(n):
        return (0.1 * rng.standard_normal(n)).astype(np.float32)

    # The embedding is larger (std 0.5) so that a tied lm_head still gives
    # logits spread over several units, not a nearly flat distribution.
    w = {"model.embed_tokens.weight": mat(v, d, 0.5)}
    for i in range(spec["layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm(d)
        w[p + "post_attention_layernorm.weight"] = norm(d)
        w[p + "self_attn.q_proj.weight"] = mat(H * hd, d)
        w[p + "self_attn.k_proj.weight"] = mat(KV * hd, d)
        w[p + "self_attn.v_proj.weight"] = mat(KV * hd, d)
        w[p + "self_attn.o_proj.weight"] = mat(d, H * hd)
        if spec["arch"] == "qwen2":
            w[p + "self_attn.q_proj.bias"] = bias(H * hd)
            w[p + "self_attn.k_proj.bias"] = bias(KV * hd)
            w[p + "self_attn.v_proj.bias"] = bias(KV * hd)
        if spec["arch"] == "qwen3":
            w[p + "self_attn.q_norm.weight"] = norm(hd)
            w[p + "self_attn.k_norm.weight"] = norm(hd)
        w[p + "mlp.gate_proj.weight"] = mat(f, d)
        w[p + "mlp.up_proj.weight"] = mat(f, d)
        w[p + "mlp.down_proj.weight"] = mat(d, f)
    w["model.norm.weight"] = norm(d)
    if not spec["tied"]:
        w["lm_head.weight"] = mat(v, d, 0.5)
    return w


def make_config(spec, bos_id, eos_id):
    cfg = {
        "architectures": [_ARCH_NAMES[spec["arch"]]],
        "model_type": spec["arch"],
        "hidden_size": spec["hidden"],
        "intermediate_size": spec["ffn"],
        "num_hidden_layers": spec["layers"],
        "num_attention_heads": spec["heads"],
        "num_key_value_heads": spec["kv_heads"],
        "head_dim": spec["head_dim"],
        "hidden_act": "silu",
        "rms_norm_eps": spec["eps"],
        "rope_theta": spec["theta"],
        "rope_scaling": None,
        "max_position_embeddings": spec["max_pos"],
        "vocab_size": spec["vocab"],
        "tie_word_embeddings": spec["tied"],
        "bos_token_id": bos_id,
        "eos_token_id": eos_id,
        "torch_dtype": "float32",
        "attention_bias": spec["arch"] == "qwen2",
        "initializer_range": 0.02,
        "use_cache": True,
    }
    if spec["arch"] == "llama":
        cfg["mlp_bias"] = False
        cfg["pretraining_tp"] = 1
    else:
        cfg["use_sliding_window"] = False
        cfg["sliding_window"] = None
        cfg["max_window_layers"] = spec["layers"]
    return cfg


def trim_bpe_tokenizer(vocab_size, src_dir=None):
    """Trims the Qwen3 tokenizer to `vocab_size` ids.

    Keeps every added token (renumbered to follow the kept vocab), the model
    vocab entries with id < vocab_size - n_added, and the merges whose two
    parts and merged result are all kept. Everything else in tokenizer.json
    (normalizer, pre_tokenizer, decoder, post_processor, model options) is
    left as it is. Returns (tokenizer_json, tokenizer_config_json, id_map)
    where id_map maps old added-token ids to new ones.
    """
    src_dir = src_dir or os.path.join(DATA, "qwen3-tokenizer")
    with open(os.path.join(src_dir, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    with open(os.path.join(src_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        tcfg = json.load(f)
    added = sorted(tok["added_tokens"], key=lambda a: a["id"])
    n_keep = vocab_size - len(added)
    if n_keep < 256:
        raise ValueError("vocab too small to keep the 256 byte tokens")
    vocab = {s: i for s, i in tok["model"]["vocab"].items() if i < n_keep}
    if sorted(vocab.values()) != list(range(n_keep)):
        raise ValueError("source vocab ids are not dense")
    merges = []
    for m in tok["model"]["merges"]:
        a, b = m if isinstance(m, list) else m.split(" ", 1)
        if a in vocab and b in vocab and (a + b) in vocab:
            merges.append(m)
    id_map = {}
    new_added = []
    for k, a in enumerate(added):
        na = dict(a)
        na["id"] = n_keep + k
        id_map[a["id"]] = na["id"]
        new_added.append(na)
    out = copy.deepcopy({k: v for k, v in tok.items() if k != "model"})
    out["added_tokens"] = new_added
    model = {k: v for k, v in tok["model"].items() if k not in ("vocab", "merges")}
    model["vocab"] = vocab
    model["merges"] = merges
    out["model"] = model
    # Keep the key order of the source file.
    ordered = {k: out[k] for k in tok.keys()}
    new_cfg = dict(tcfg)
    dec = {}
    for old, entry in tcfg.get("added_tokens_decoder", {}).items():
        old_id = int(old)
        if old_id not in id_map:
            raise ValueError(f"added_tokens_decoder id {old_id} is not an added token")
        dec[str(id_map[old_id])] = entry
    new_cfg["added_tokens_decoder"] = dec
    return ordered, new_cfg, id_map


def write_model(out_dir, name, spec=None):
    spec = spec or MODELS[name]
    os.makedirs(out_dir, exist_ok=True)
    if spec["arch"] == "llama":
        src = os.path.join(DATA, "stories260K-hf")
        if spec["vocab"] != 512:
            raise ValueError("the llama tokenizer (tok512) has vocab 512")
        shutil.copyfile(os.path.join(src, "tokenizer.model"),
                        os.path.join(out_dir, "tokenizer.model"))
        shutil.copyfile(os.path.join(src, "tokenizer_config.json"),
                        os.path.join(out_dir, "tokenizer_config.json"))
        bos, eos = 1, 2
    else:
        tok, tcfg, id_map = trim_bpe_tokenizer(spec["vocab"])
        by_content = {a["content"]: a["id"] for a in tok["added_tokens"]}
        bos = by_content["<|endoftext|>"]
        eos = by_content["<|im_end|>"] if spec["arch"] == "qwen3" else by_content["<|endoftext|>"]
        with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tok, f, ensure_ascii=False, indent=2)
        with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(tcfg, f, ensure_ascii=False, indent=2)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(make_config(spec, bos, eos), f, indent=2)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), make_weights(spec),
                      metadata={"format": "pt"})
    return out_dir


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    names = argv[2:] or list(MODELS)
    for name in names:
        if name not in MODELS:
            print(f"unknown model {name!r}; known: {', '.join(MODELS)}", file=sys.stderr)
            return 2
        print(write_model(os.path.join(argv[1], name), name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
