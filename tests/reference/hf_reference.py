#!/usr/bin/python3
"""Independent NumPy reference of the Hugging Face decoder definitions.

Covers LlamaForCausalLM, Qwen2ForCausalLM (q/k/v projection biases) and
Qwen3ForCausalLM (per-head RMSNorm on q and k before RoPE, head_dim set in the
config independently of hidden_size / num_attention_heads). All maths runs in
float64 so the reference's own rounding is far below every test tolerance.

Also holds a minimal safetensors reader/writer (8-byte little-endian header
length, JSON header, raw little-endian tensor bytes; F32/F16/BF16).

Command line (validation against the stored stories260K logits):
    /usr/bin/python3 hf_reference.py MODEL_DIR [LOGITS_JSON]
"""

import json
import os
import struct
import sys

import numpy as np

# ---------------------------------------------------------------------------
# safetensors

_ST_DTYPES = {"F32": 4, "F16": 2, "BF16": 2}


def _bf16_to_f32(raw_u16):
    return (raw_u16.astype(np.uint32) << 16).view(np.float32)


def _f32_to_bf16(x):
    """Round-to-nearest-even float32 -> bfloat16 bit patterns (uint16)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    out[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return out


def read_safetensors(path):
    """Returns {name: float32 ndarray} (F16/BF16 widened exactly)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: shorter than the 8-byte header length")
    (hlen,) = struct.unpack("<Q", blob[:8])
    if 8 + hlen > len(blob):
        raise ValueError(f"{path}: header length {hlen} runs past the file end")
    header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    base = 8 + hlen
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dtype = meta["dtype"]
        if dtype not in _ST_DTYPES:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {dtype}")
        shape = [int(s) for s in meta["shape"]]
        start, end = meta["data_offsets"]
        count = int(np.prod(shape)) if shape else 1
        if end - start != count * _ST_DTYPES[dtype] or base + end > len(blob):
            raise ValueError(f"{path}: tensor {name}: bad data_offsets {start},{end}")
        raw = blob[base + start:base + end]
        if dtype == "F32":
            arr = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        elif dtype == "F16":
            arr = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        else:
            arr = _bf16_to_f32(np.frombuffer(raw, dtype="<u2"))
        tensors[name] = arr.reshape(shape)
    return tensors


def write_safetensors(path, tensors, dtype="F32", metadata=None):
    """Writes {name: ndarray} in `dtype` (F32/F16/BF16), names sorted like HF."""
    if dtype not in _ST_DTYPES:
        raise ValueError(f"unsupported dtype {dtype}")
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    chunks = []
    offset = 0
    for name in sorted(tensors):
        x = np.asarray(tensors[name], dtype=np.float32)
        if dtype == "F32":
            raw = x.astype("<f4").tobytes()
        elif dtype == "F16":
            raw = x.astype("<f2").tobytes()
        else:
            raw = _f32_to_bf16(x).astype("<u2").tobytes()
        header[name] = {"dtype": dtype, "shape": list(x.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hbytes += b" " * ((8 - len(hbytes) % 8) % 8)  # keep data 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for c in chunks:
            f.write(c)


# ---------------------------------------------------------------------------
# model definition

class HFConfig:
    def __init__(self, cfg):
        archs = cfg.get("architectures") or []
        self.model_type = cfg.get("model_type", "")
        self.arch = archs[0] if archs else ""
        known = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
                 "qwen3": "Qwen3ForCausalLM"}
        if self.model_type not in known:
            raise ValueError(f"unsupported model_type {self.model_type!r}")
        self.hidden = int(cfg["hidden_size"])
        self.ffn = int(cfg["intermediate_size"])
        self.layers = int(cfg["num_hidden_layers"])
        self.heads = int(cfg["num_attention_heads"])
        self.kv_heads = int(cfg.get("num_key_value_heads") or self.heads)
        hd = cfg.get("head_dim")
        self.head_dim = int(hd) if hd else self.hidden // self.heads
        self.eps = float(cfg["rms_norm_eps"])
        self.theta = float(cfg.get("rope_theta", 10000.0))
        self.vocab = int(cfg["vocab_size"])
        self.tied = bool(cfg.get("tie_word_embeddings", False))
        scaling = cfg.get("rope_scaling")
        if scaling:
            raise ValueError("rope_scaling is not modelled by this reference")
        # Qwen2 always has q/k/v biases; Llama only with attention_bias.
        self.qkv_bias = self.model_type == "qwen2" or bool(cfg.get("attention_bias", False))
        self.o_bias = self.model_type == "llama" and bool(cfg.get("attention_bias", False))
        self.qk_norm = self.model_type == "qwen3"
        if self.heads % self.kv_heads:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")


def rms_norm(x, w, eps):
    """HF LlamaRMSNorm: x * rsqrt(mean(x^2) + eps) * w over the last axis."""
    var = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(var + eps) * w


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def rope_cos_sin(positions, head_dim, theta):
    inv_freq = 1.0 / (theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    freqs = np.outer(np.asarray(positions, dtype=np.float64), inv_freq)  # [n, hd/2]
    emb = np.concatenate([freqs, freqs], axis=-1)                        # [n, hd]
    return np.cos(emb), np.sin(emb)


def apply_rope(x, cos, sin):
    """x: [heads, n, hd]; cos/sin: [n, hd]."""
    return x * cos[None] + rotate_half(x) * sin[None]


def silu(x):
    return x / (1.0 + np.exp(-x))


def repeat_kv(x, n_rep):
    """[kv, n, hd] -> [kv*n_rep, n, hd], each kv head repeated n_rep times."""
    return np.repeat(x, n_rep, axis=0) if n_rep > 1 else x


class HFReference:
    """Float64 forward pass of the HF decoder from a {hf_name: array} dict."""

    def __init__(self, cfg, weights):
        self.cfg = cfg if isinstance(cfg, HFConfig) else HFConfig(cfg)
        self.w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
        c = self.cfg
        self._check("model.embed_tokens.weight", (c.vocab, c.hidden))
        if not c.tied:
            self._check("lm_head.weight", (c.vocab, c.hidden))

    def _check(self, name, shape):
        if name not in self.w:
            raise KeyError(f"missing tensor {name}")
        if tuple(self.w[name].shape) != tuple(shape):
            raise ValueError(f"{name}: shape {self.w[name].shape}, expected {shape}")

    def _linear(self, x, prefix, bias):
        y = x @ self.w[prefix + ".weight"].T
        if bias:
            y = y + self.w[prefix + ".bias"]
        return y

    def logits(self, input_ids, kv_dtype=None):
        """Teacher-forced logits [n, vocab] for ids at positions 0..n-1.

        kv_dtype (e.g. np.float16) rounds k (after RoPE) and v to that type,
        modelling an engine's reduced-precision KV cache; only used to
        diagnose a mismatch, never for the pass/fail reference."""
        c = self.cfg
        ids = np.asarray(input_ids, dtype=np.int64)
        n = len(ids)
        H, KV, hd = c.heads, c.kv_heads, c.head_dim
        x = self.w["model.embed_tokens.weight"][ids]  # [n, d]
        cos, sin = rope_cos_sin(np.arange(n), hd, c.theta)
        mask = np.triu(np.full((n, n), -np.inf), k=1)
        for layer in range(c.layers):
            p = f"model.layers.{layer}."
            h = rms_norm(x, self.w[p + "input_layernorm.weight"], c.eps)
            q = self._linear(h, p + "self_attn.q_proj", c.qkv_bias)
            k = self._linear(h, p + "self_attn.k_proj", c.qkv_bias)
            v = self._linear(h, p + "self_attn.v_proj", c.qkv_bias)
            q = q.reshape(n, H, hd).transpose(1, 0, 2)   # [H, n, hd]
            k = k.reshape(n, KV, hd).transpose(1, 0, 2)  # [KV, n, hd]
            v = v.reshape(n, KV, hd).transpose(1, 0, 2)
            if c.qk_norm:
                q = rms_norm(q, self.w[p + "self_attn.q_norm.weight"], c.eps)
                k = rms_norm(k, self.w[p + "self_attn.k_norm.weight"], c.eps)
            q = apply_rope(q, cos, sin)
            k = apply_rope(k, cos, sin)
            if kv_dtype is not None:
                k = k.astype(kv_dtype).astype(np.float64)
                v = v.astype(kv_dtype).astype(np.float64)
            k = repeat_kv(k, H // KV)
            v = repeat_kv(v, H // KV)
            scores = q @ k.transpose(0, 2, 1) / np.sqrt(hd) + mask[None]
            scores = scores - scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs = probs / probs.sum(axis=-1, keepdims=True)
            attn = (probs @ v).transpose(1, 0, 2).reshape(n, H * hd)
            x = x + self._linear(attn, p + "self_attn.o_proj", c.o_bias)
            h = rms_norm(x, self.w[p + "post_attention_layernorm.weight"], c.eps)
            g = h @ self.w[p + "mlp.gate_proj.weight"].T
            u = h @ self.w[p + "mlp.up_proj.weight"].T
            x = x + (silu(g) * u) @ self.w[p + "mlp.down_proj.weight"].T
        h = rms_norm(x, self.w["model.norm.weight"], c.eps)
        head = self.w["model.embed_tokens.weight"] if c.tied else self.w["lm_head.weight"]
        return h @ head.T


def load_hf_dir(model_dir):
    """Reads config.json and every *.safetensors file of a HF model directory."""
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    weights = {}
    files = sorted(fn for fn in os.listdir(model_dir) if fn.endswith(".safetensors"))
    if not files:
        raise FileNotFoundError(f"{model_dir}: no .safetensors file")
    for fn in files:
        weights.update(read_safetensors(os.path.join(model_dir, fn)))
    return cfg, weights


def reference_logits(model_dir, input_ids):
    cfg, weights = load_hf_dir(model_dir)
    return HFReference(cfg, weights).logits(input_ids)


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    model_dir = argv[1]
    golden = argv[2] if len(argv) > 2 else os.path.join(
        here, "..", "data", "stories260K", "logits-once-upon-a-time.json")
    with open(golden) as f:
        g = json.load(f)
    want = np.asarray(g["logits"], dtype=np.float64)
    got = reference_logits(model_dir, g["input_ids"])[:want.shape[0]]
    diff = float(np.max(np.abs(got - want)))
    ok = diff <= 1e-4
    print(f"{'PASS' if ok else 'FAIL'} reference vs {os.path.basename(golden)}: "
          f"{want.shape[0]} positions, max |diff| = {diff:.3e} (tol 1e-4)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
