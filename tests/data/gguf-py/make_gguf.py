#!/usr/bin/env python3
"""GGUF files written by the `gguf` PyPI package (llama.cpp's gguf-py), not
by Pocket's or the tests' own GGUF writers.

Usage (offline; gguf 0.19.0, sentencepiece 0.2.x, tokenizers 0.23.3 and
numpy were used):
  python3 make_gguf.py

Writes, next to this script:

* stories260K-q8_0.gguf: tests/data/stories260K-hf as llama.cpp's
  convert_hf_to_gguf.py writes a LlamaForCausalLM checkpoint with
  `--outtype q8_0`: the `llama` hyperparameters, the SentencePiece vocabulary
  of tokenizer.model (pieces, scores, token types from sentencepiece, as
  `_set_vocab_sentencepiece` reads them; tokenizer.ggml.pre "default"), the
  special ids and add_bos/add_eos from gguf.SpecialVocab, q/k rows permuted
  into interleaved pairs, 2-D tensors quantized to Q8_0 by gguf-py's own
  quantizer (F16 where the columns are not a multiple of 32, as the
  converter falls back), 1-D tensors F32.

* bpe-default-q8_0.gguf: a one-layer llama with random weights (seed 0)
  and a 512-token byte-level BPE trained here with Hugging Face
  `tokenizers` on tests/reference/held_story.txt, whose pre-tokenizer is
  llama.cpp's "default" (its four regexes as a Sequence of Splits). Its
  tokenizer metadata is what the converter's `_set_vocab_gpt2` writes
  (tokens by id, control types for special added tokens, merges and
  special ids from gguf.SpecialVocab) with tokenizer.ggml.pre "default".
  bpe-default-golden.jsonl holds the trained tokenizer's ids for TEXTS.

tests/convert/gguf_pypi_test.cc loads both and checks the config and the
tokenizers; tests/reference/gguf_reference.py checks their logits.
"""

import json
import os
import shutil
import sys
import tempfile

import gguf
import numpy as np
from sentencepiece import SentencePieceProcessor
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(DATA, "..", "reference"))
import hf_reference as ref  # noqa: E402  (its safetensors reader)

Q8_0, F16, F32 = (gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.F16,
                  gguf.GGMLQuantizationType.F32)

# llama.cpp's LLAMA_VOCAB_PRE_TYPE_DEFAULT regex list.
GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
DEFAULT = [r"[\p{P}$+<=>^~|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"]

TEXTS = [
    "Once upon a time, there was a little girl named Lily.",
    "She had 3 cats and 1234 dogs; it's true!",
    "$5+$10=$15 <ok> a|b ^_^ ~end~",
    "  two  spaces\tand\nnewlines\n",
    "café naïve Größe Привет 日本 😀",
]

HF_TO_GGUF = {"model.embed_tokens": "token_embd", "model.norm": "output_norm",
              "lm_head": "output", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
              "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
              "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
              "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}


def gguf_name(hf):
    stem, kind = hf.rsplit(".", 1)
    if stem.startswith("model.layers."):
        _, _, layer, rest = stem.split(".", 3)
        return f"blk.{layer}.{HF_TO_GGUF[rest]}.{kind}"
    return f"{HF_TO_GGUF[stem]}.{kind}"


def permute(w, heads):
    # convert_hf_to_gguf.py's LlamaModel.permute
    return (w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def add_tensors(w, cfg, weights):
    heads, kv = cfg["num_attention_heads"], cfg.get("num_key_value_heads")
    for hf in sorted(weights):
        data = np.asarray(weights[hf], dtype=np.float32)
        if hf.endswith("q_proj.weight"):
            data = permute(data, heads)
        elif hf.endswith("k_proj.weight"):
            data = permute(data, kv or heads)
        qtype = Q8_0 if data.ndim == 2 else F32
        try:
            raw = gguf.quants.quantize(data, qtype)
        except gguf.QuantError:
            qtype = F16
            raw = gguf.quants.quantize(data, qtype)
        w.add_tensor(gguf_name(hf), raw, raw_dtype=qtype)


def add_llama_params(w, cfg):
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_vocab_size(cfg["vocab_size"])
    w.add_rope_dimension_count(cfg["hidden_size"] // cfg["num_attention_heads"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)


def write(w, path):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{path}: {os.path.getsize(path)} bytes")


def stories(out):
    src = os.path.join(DATA, "stories260K-hf")
    cfg = json.load(open(os.path.join(src, "config.json")))
    weights = ref.read_safetensors(os.path.join(src, "model.safetensors"))
    w = gguf.GGUFWriter(out, "llama")
    w.add_name("stories260K")
    add_llama_params(w, cfg)
    sp = SentencePieceProcessor(model_file=os.path.join(src, "tokenizer.model"))
    tokens, scores, types = [], [], []
    for i in range(sp.vocab_size()):
        tokens.append(sp.id_to_piece(i).encode("utf-8"))
        scores.append(sp.get_score(i))
        t = gguf.TokenType.NORMAL
        if sp.is_unknown(i):
            t = gguf.TokenType.UNKNOWN
        elif sp.is_control(i):
            t = gguf.TokenType.CONTROL
        elif sp.is_unused(i):
            t = gguf.TokenType.UNUSED
        elif sp.is_byte(i):
            t = gguf.TokenType.BYTE
        types.append(t)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    gguf.SpecialVocab(src, n_vocab=len(tokens)).add_to_gguf(w)
    add_tensors(w, cfg, weights)
    write(w, out)


def bpe_default(out, golden):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(p), "isolated") for p in DEFAULT]
        + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    story = open(os.path.join(DATA, "..", "reference", "held_story.txt")).read()
    tok.train_from_iterator(story.splitlines(), trainer)
    vocab = tok.get_vocab()
    assert len(vocab) == 512, len(vocab)
    cfg = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
           "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
           "vocab_size": 512, "max_position_embeddings": 256, "rms_norm_eps": 1e-5,
           "rope_theta": 10000.0, "tie_word_embeddings": True, "bos_token_id": 0,
           "eos_token_id": 0}
    with tempfile.TemporaryDirectory() as d:
        tok.save(os.path.join(d, "tokenizer.json"))
        json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
        json.dump({"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                   "add_bos_token": False}, open(os.path.join(d, "tokenizer_config.json"), "w"))
        w = gguf.GGUFWriter(out, "llama")
        w.add_name("bpe-default")
        add_llama_params(w, cfg)
        by_id = {i: t for t, i in vocab.items()}
        added = {a.content: a for a in tok.get_added_tokens_decoder().values()}
        tokens, types = [], []
        for i in range(len(by_id)):
            tokens.append(by_id[i])
            a = added.get(by_id[i])
            types.append(gguf.TokenType.NORMAL if a is None else
                         gguf.TokenType.CONTROL if a.special else gguf.TokenType.USER_DEFINED)
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_types(types)
        gguf.SpecialVocab(d, load_merges=True, n_vocab=len(tokens)).add_to_gguf(w)
        rng = np.random.default_rng(0)
        h, f, hd = cfg["hidden_size"], cfg["intermediate_size"], h_d(cfg)
        shapes = {"model.embed_tokens.weight": (512, h), "model.norm.weight": (h,),
                  "model.layers.0.input_layernorm.weight": (h,),
                  "model.layers.0.post_attention_layernorm.weight": (h,),
                  "model.layers.0.self_attn.q_proj.weight": (4 * hd, h),
                  "model.layers.0.self_attn.k_proj.weight": (2 * hd, h),
                  "model.layers.0.self_attn.v_proj.weight": (2 * hd, h),
                  "model.layers.0.self_attn.o_proj.weight": (h, 4 * hd),
                  "model.layers.0.mlp.gate_proj.weight": (f, h),
                  "model.layers.0.mlp.up_proj.weight": (f, h),
                  "model.layers.0.mlp.down_proj.weight": (h, f)}
        weights = {n: (1.0 + 0.1 * rng.standard_normal(s) if len(s) == 1 else
                       0.1 * rng.standard_normal(s)).astype(np.float32)
                   for n, s in shapes.items()}
        add_tensors(w, cfg, weights)
        write(w, out)
    with open(golden, "w") as g:
        for text in TEXTS:
            ids = tok.encode(text, add_special_tokens=False).ids
            g.write(json.dumps({"text": text, "ids": ids}, ensure_ascii=False) + "\n")


def h_d(cfg):
    return cfg["hidden_size"] // cfg["num_attention_heads"]


def main():
    stories(os.path.join(HERE, "stories260K-q8_0.gguf"))
    bpe_default(os.path.join(HERE, "bpe-default-q8_0.gguf"),
                os.path.join(HERE, "bpe-default-golden.jsonl"))


if __name__ == "__main__":
    main()
