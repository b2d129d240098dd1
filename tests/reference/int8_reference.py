#!/usr/bin/python3
"""NumPy reference of Pocket's default arithmetic for q4/q8 models.

The default configuration (`--quant-math int8`) is not the f32 function of
the dequantized weights: each Linear quantizes its input to int8 per weight
group, the KV cache rounds k and v to its element type, and attention may
multiply in bf16 or int8. This module computes that documented arithmetic
(docs/kernels.md "Numerics", src/backends/cpu/ops.h's KV layouts) from the
bytes of a `.pocket` file, written from the documents, not from the C++:

  * weights: the stored codes, f16 scales and (q4) f16 mins, read by
    pocket_reader (planar and rows16 layouts, q8 g32, q4 g32/64/128);
    f32/f16/bf16 matrices as stored;
  * Linear over q4/q8 (int8 activations): per token and weight group of the
    f32 input x, d = max|x| / 127 and codes q = round_half_even(x * (127 /
    max|x|)) in f32, the group sum S = sum x; a row's group contributes
    s * d * sum_j c_j q_j (+ m * S for q4), the integer sum exact; Linears
    over f32/f16/bf16 weights multiply in f32 (here float64);
  * KV cache: k (after RoPE) and v rounded per element to f16 or bf16
    (nearest even), or q8 per (token, kv head): y = H x when head_dim is a
    power of two (orthonormal Walsh-Hadamard, H[i][j] = (-1)^popcount(i & j)
    / sqrt(head_dim)), else y = x; scale = f16(max|y| / 127), code =
    clamp(round(y / scale), -127, 127);
  * attention, as the engine reports it (`pocket bench --json`'s
    attention_math): f32 over the cached values; bf16: q, K and V rounded to
    bf16, scores exact, softmax weights rounded to bf16 before they multiply
    V while the normaliser sums the unrounded weights; int8 (q8 cache): the
    query in the stored basis (H q) rounded to int8 codes with step
    max|q| / 127, scores against code * scale, the output rotated back.

Everything else (embedding, RMSNorm, RoPE, SwiGLU, residuals, softmax) is the
Hugging Face definition of hf_reference.py in float64. Values the engine
holds in f32 (activations entering a quantizer, cached k and v) are rounded
to float32 before the rounding step, so the reference takes the same
rounding decisions except where the engine's own f32 error moves a value
across a rounding boundary (docs/testing.md bounds that).
"""

import numpy as np

import hf_reference as ref
import pocket_reader as pr

F32 = np.float32


def round_bf16(x):
    """float32 values rounded to the nearest bf16 (ties to even)."""
    return ref._bf16_to_f32(ref._f32_to_bf16(np.asarray(x, F32)))


def hadamard(n):
    i = np.arange(n)
    bits = np.bitwise_and.outer(i, i)
    parity = np.zeros_like(bits)
    while bits.any():
        parity ^= bits & 1
        bits >>= 1
    return np.where(parity == 1, -1.0, 1.0) / np.sqrt(n)


def is_pow2(n):
    return n > 1 and (n & (n - 1)) == 0


# Relative size of the window around a rounding boundary inside which the
# engine's f32 value and the reference's may round to different sides
# (docs/testing.md: the engine's activations differ from the float64
# reference by about 1e-7 to 1e-6 relative).
NEAR_TIE = 3e-5


def _narrow_bits(x, kind):
    """Nearest-even f16 or bf16 of float32 x, as (uint16 bits, float64 value)."""
    if kind == "f16":
        b = np.asarray(x, F32).astype(np.float16)
        return b.view(np.uint16), b.astype(np.float64)
    b = ref._f32_to_bf16(np.asarray(x, F32))
    return b, ref._bf16_to_f32(b).astype(np.float64)


def _from_bits(bits, kind):
    if kind == "f16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    return ref._bf16_to_f32(bits.astype(np.uint16)).astype(np.float64)


class Rounding:
    """Every rounding the documented arithmetic makes goes through here.

    A value within NEAR_TIE (relative) of a rounding boundary is a near tie:
    the engine, whose f32 value differs from the reference's in the last
    bits, may round it the other way, and both are the documented
    arithmetic. Each near tie is recorded as (site, flat index, position);
    `toggles` names near ties to round the other way. Sites count the
    rounding calls of a forward pass in order, so they name the same step
    in every pass."""

    def __init__(self, toggles=(), replay=None):
        self.toggles = set(toggles)
        self.site = 0
        self.near = []
        # Every site's rounded values, in order; `replay` (such a list from
        # another pass) makes every rounding return those values, so a pass
        # with perturbed inputs takes the same decisions (conditioning()).
        self.results = []
        self.replay = replay

    def _done(self, r):
        if self.replay is not None:
            r = self.replay[self.site - 1]
        self.results.append(r)
        return r

    def _record(self, near, pos_axis, shape, closeness):
        """closeness: distance to the boundary over the window (0: on it)."""
        self.site += 1
        idx = np.flatnonzero(near)
        for i in idx:
            pos = np.unravel_index(i, shape)[pos_axis] if pos_axis is not None else -1
            self.near.append((self.site, int(i), int(pos), float(closeness.flat[i])))
        return [i for (s, i) in self.toggles if s == self.site]

    def rint(self, t, pos_axis):
        """round_half_even(t) of float32 t (NearestInt, nearbyint), t being
        codes of a row scaled to at most 127: the window is NEAR_TIE of 127,
        since the engine's error in an element is relative to the row's
        largest, not to the element."""
        t = np.asarray(t, np.float64)
        r = np.rint(t)
        fl = np.floor(t)
        gap = np.abs(t - fl - 0.5) / (NEAR_TIE * 127)
        near = gap <= 1
        for i in self._record(near, pos_axis, t.shape, gap):
            r.flat[i] = 2 * fl.flat[i] + 1 - r.flat[i]
        return self._done(r)

    def narrow(self, x, kind, pos_axis, exact=False):
        """x (float32 values) rounded to f16 or bf16, nearest even. exact: x
        holds values the engine has exactly too (an f16 cache's), so no
        near ties."""
        x = np.asarray(x, F32)
        bits, r = _narrow_bits(x, kind)
        x64 = x.astype(np.float64)
        # The neighbour on x's side of r: one bit pattern up in magnitude
        # where |x| > |r|, down where |x| < |r|.
        step = np.where(np.abs(x64) > np.abs(r), 1, -1).astype(np.int32)
        other = _from_bits((bits.astype(np.int32) + step) & 0xFFFF, kind)
        mid = (r + other) / 2
        # The window scales with the row's largest value, as the engine's
        # error in an element does.
        row = np.abs(x64).max(axis=-1, keepdims=True) if x64.ndim else np.abs(x64)
        with np.errstate(divide="ignore", invalid="ignore"):
            gap = np.abs(x64 - mid) / (NEAR_TIE * row)
        near = (gap <= 1) & (x64 != r) & np.isfinite(other)
        if exact:
            near[...] = False
        for i in self._record(near, pos_axis, x.shape, gap):
            r.flat[i] = other.flat[i]
        return self._done(r)


class StoredMatrix:
    """One matrix of the file as stored: q8/q4 codes, scales and mins (planar
    order whatever the layout), or the f32 value of an f32/f16/bf16 matrix.

    `mutate` (a callable taking and returning this object) lets the mutation
    checks of docs/testing.md change what the reference reads."""

    def __init__(self, pf, name):
        t = pf.tensors[name]
        self.name, self.dtype, self.rows, self.cols = name, t.dtype, t.rows, t.cols
        raw = pf.raw(name)
        if t.dtype == "q8":
            g = pr.Q8_GROUP
            ng = self.cols // g
            n = self.rows * self.cols
            self.group = g
            self.codes = np.frombuffer(raw[:n], np.int8).astype(np.float64).reshape(
                self.rows, ng, g)
            self.scales = np.frombuffer(raw[n:], "<f2").astype(np.float64).reshape(self.rows, ng)
            self.mins = None
        elif t.dtype == "q4":
            g = t.group
            ng = self.cols // g
            nc = self.rows * self.cols // 2
            self.group = g
            b = np.frombuffer(raw[:nc], np.uint8).reshape(self.rows, ng, g // 2)
            # Byte j of a group holds weight j (low nibble) and j + g/2 (high).
            self.codes = np.concatenate([b & 0x0F, b >> 4], axis=-1).astype(np.float64)
            sm = np.frombuffer(raw[nc:], "<f2").astype(np.float64)
            self.scales = sm[:self.rows * ng].reshape(self.rows, ng)
            self.mins = sm[self.rows * ng:].reshape(self.rows, ng)
        else:
            self.group = 0
            self.dense = pr.dequantize(raw, t.dtype, self.rows, self.cols, 0).reshape(
                self.rows, self.cols).astype(np.float64)

    @property
    def quantized(self):
        return self.dtype in ("q8", "q4")

    def dequantized(self):
        """Float64 weights: an embedding row is the f32 value s * c (+ m)."""
        if not self.quantized:
            return self.dense
        w = self.codes * self.scales[..., None]
        if self.mins is not None:
            w = w + self.mins[..., None]
        return w.astype(F32).astype(np.float64).reshape(self.rows, self.cols)


def quantize_activations(x, group, rnd):
    """x: float32 [n, cols] -> (codes float64 [n, ng, G], d float64 [n, ng],
    S float64 [n, ng]) as docs/kernels.md specifies, in f32 where the engine
    computes in f32."""
    n, cols = x.shape
    xg = np.asarray(x, F32).reshape(n, cols // group, group)
    amax = np.abs(xg).max(axis=-1)
    d = (amax / F32(127)).astype(F32)
    with np.errstate(divide="ignore"):
        inv = np.where(amax > 0, F32(127) / amax, F32(0)).astype(F32)
    q = rnd.rint((xg * inv[..., None]).astype(F32), 0)
    s = xg.astype(np.float64).sum(axis=-1)
    return q.astype(np.float64), d.astype(np.float64), s


def linear(x, m, rnd, bias=None, acts=None):
    """x: float64 [n, cols] (the engine's f32 values) -> float64 [n, rows].
    `acts` (a dict per input) shares one quantization of x among the
    Linears of that input, as the engine quantizes it once for q, k and v
    (and for gate and up)."""
    x32 = np.asarray(x, F32)
    if m.quantized:
        if acts is None:
            acts = {}
        if m.group not in acts:
            acts[m.group] = quantize_activations(x32, m.group, rnd)
        q, d, s = acts[m.group]
        dots = np.einsum("ngk,rgk->nrg", q, m.codes)       # exact: integers < 2^31
        y = np.einsum("nrg,rg,ng->nr", dots, m.scales, d)
        if m.mins is not None:
            y = y + s @ m.mins.T
    else:
        y = x32.astype(np.float64) @ m.dense.T
    if bias is not None:
        y = y + bias
    return y


class KvCache:
    """Rounds k or v [kv_heads, n, hd] (float32 values) as the cache stores
    them; `stored` is in the stored basis (q8 rotated rows: H x), `values`
    in the model's."""

    def __init__(self, x, kind, rnd):
        x = np.asarray(x, F32)
        hd = x.shape[-1]
        self.rotated = kind == "q8" and is_pow2(hd)
        self.H = hadamard(hd) if self.rotated else None
        if kind == "f32":
            self.stored = x.astype(np.float64)
        elif kind in ("f16", "bf16"):
            self.stored = rnd.narrow(x, kind, 1)
        elif kind == "q8":
            y = (x.astype(np.float64) @ self.H.T).astype(F32) if self.rotated else x
            amax = np.abs(y).max(axis=-1, keepdims=True)
            scale = rnd.narrow((amax / F32(127)).astype(F32), "f16", 1).astype(F32)
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(scale > 0, (y / scale).astype(F32), F32(0))
            codes = np.clip(rnd.rint(t, 1), -127, 127)
            self.codes, self.scales = codes, scale.astype(np.float64)
            self.stored = codes * self.scales
        else:
            raise ValueError(f"unknown KV type {kind}")

    @property
    def values(self):
        return self.stored @ self.H if self.rotated else self.stored


KLOG2E = F32(1.44269504)
SCORE_BLOCK = 64    # positions per softmax block (kScoreBlock; pages hold 64)
MAX_SLACK = 8.0     # the running max moves when a block passes it by more


def _fma32(a, b, c):
    """f32 a * b + c with one rounding (the product is exact in float64)."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64)
            + np.asarray(c, np.float64)).astype(F32)


def exp2_coarse(t):
    """docs/kernels.md's Exp2Coarse: 2^floor(t) added into the exponent bits
    of a degree-3 polynomial for 2^frac(t), in f32 (t clamped at -125)."""
    t = np.maximum(np.asarray(t, F32), F32(-125))
    whole = np.floor(t)
    f = (t - whole).astype(F32)
    p = _fma32(F32(0.078024521), f, F32(0.22606716))
    p = _fma32(p, f, F32(0.69583354))
    p = _fma32(p, f, F32(0.99992522))
    return (p.view(np.int32) + (whole.astype(np.int32) << 23)).view(F32)


def softmax_av(s, V, lens, scale, math, rnd, int16_weights=False, v_scales=None):
    """The engine's softmax and weighted sum over blocks of SCORE_BLOCK
    positions. s: raw scores q . k [H, n, L] (before the 1/sqrt(hd) scale);
    V: [H, L, hd] values (int8 math: the codes, with v_scales [H, L]); row i
    of every head attends positions [0, lens[i]). A row's running max starts
    at its first block's largest scaled score and moves only when a block
    passes it by more than MAX_SLACK; weights are exp(score * scale - max):
    Exp2Coarse with bf16 or int8 products, exp with f32 ones. bf16 rounds
    the weights before they multiply V; int8 multiplies them by V's scales
    and, where the target sums int16 pairs, rounds them to int16 steps of
    the block's largest. The normaliser sums the unrounded weights."""
    H, n, L = s.shape
    hd = V.shape[-1]
    coarse = math in ("bf16", "int8")
    sc = F32(scale)
    m = np.full((H, n), -np.inf)
    total = np.zeros((H, n))
    out = np.zeros((H, n, hd))
    s32 = np.asarray(s, F32)
    for p0 in range(0, L, SCORE_BLOCK):
        p1 = min(L, p0 + SCORE_BLOCK)
        blk = s32[:, :, p0:p1]
        valid = np.arange(p0, p1)[None, None, :] < np.asarray(lens)[None, :, None]
        live = valid.any(axis=-1)                       # rows that reach this block
        vmax = np.where(valid, blk, -np.inf).max(axis=-1)
        scaled = (vmax.astype(F32) * sc).astype(np.float64)
        rises = live & (scaled > (m + MAX_SLACK).astype(F32))
        new_m = np.where(rises, np.maximum(m, scaled), m)
        corr = np.where(rises, np.exp(np.where(np.isfinite(m), m - new_m, -np.inf)), 1.0)
        total *= corr
        out *= corr[..., None]
        m = new_m.astype(F32).astype(np.float64)
        if coarse:
            x = _fma32(blk, F32(sc * KLOG2E), -(m.astype(F32) * KLOG2E).astype(F32)[..., None])
            w = exp2_coarse(x).astype(np.float64)
        else:
            w = np.exp(blk.astype(np.float64) * float(sc) - m[..., None])
        w = np.where(valid, w, 0.0)
        total += w.sum(axis=-1)
        if math == "bf16":
            w = rnd.narrow(w, "bf16", 1)
        if v_scales is not None:
            w = (w.astype(F32) * v_scales[:, None, p0:p1].astype(F32)).astype(np.float64)
            if int16_weights:
                wmax = w.max(axis=-1, keepdims=True).astype(F32)
                with np.errstate(divide="ignore", invalid="ignore"):
                    inv = np.where(wmax > 0, F32(32767) / wmax, F32(0)).astype(F32)
                    codes = rnd.rint((w.astype(F32) * inv).astype(F32), 1)
                w = codes * (wmax / F32(32767)).astype(F32).astype(np.float64)
        out += np.einsum("hnp,hpc->hnc", w, V[:, p0:p1])
    return out / total[..., None]


def attention(q, k, v, kv_type, math, kv_group, rnd, int16_weights=False):
    """q: [H, n, hd], k and v: [KV, n, hd] (float64 holding the engine's f32
    values), causal over positions 0..n-1 -> [H, n, hd]."""
    hd = q.shape[-1]
    n = q.shape[1]
    kc, vc = KvCache(k, kv_type, rnd), KvCache(v, kv_type, rnd)
    q32 = np.asarray(q, F32)
    rotate_out = None
    v_scales = None
    if math == "int8" or (math == "bf16" and kv_type == "q8"):
        # The query meets the stored values (code * scale) in their basis.
        qs = (q32.astype(np.float64) @ kc.H.T).astype(F32) if kc.rotated else q32
        if math == "int8":
            mx = np.abs(qs).max(axis=-1, keepdims=True)
            step = (mx / F32(127)).astype(F32)
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(mx > 0, (qs * (F32(127) / mx)).astype(F32), F32(0))
            qq = np.clip(rnd.rint(t, 1), -127, 127) * step.astype(np.float64)
            # Scores from K's stored values; the weights carry V's scales
            # and multiply its codes.
            V = ref.repeat_kv(vc.codes, kv_group)
            v_scales = ref.repeat_kv(vc.scales[..., 0], kv_group)
        else:
            qq = rnd.narrow(qs, "bf16", 1)
            V = ref.repeat_kv(vc.stored, kv_group)
        K = kc.stored
        rotate_out = kc.H if kc.rotated else None
    elif math == "bf16":
        qq = rnd.narrow(q32, "bf16", 1)
        # An f16 or bf16 cache's values are exact in the engine too.
        K = rnd.narrow(kc.values, "bf16", 1, exact=kv_type != "f32")
        V = ref.repeat_kv(rnd.narrow(vc.values, "bf16", 1, exact=kv_type != "f32"), kv_group)
    elif math == "f32":
        qq, K = q32.astype(np.float64), kc.values
        V = ref.repeat_kv(vc.values, kv_group)
    else:
        raise ValueError(f"unknown attention math {math}")
    K = ref.repeat_kv(K, kv_group)
    s = qq @ K.transpose(0, 2, 1)
    out = softmax_av(s, V, np.arange(1, n + 1), F32(1) / np.sqrt(F32(hd)), math, rnd,
                     int16_weights and math == "int8", v_scales)
    if rotate_out is not None:
        out = out @ rotate_out   # H is symmetric: x = H y
    return out


def rope(x, positions, theta, style):
    """x: [heads, n, hd]. docs/kernels.md's rope, in f32 as the engine
    computes it: freq_i = 1 / powf(theta, 2i / hd), angle = (float)pos *
    freq_i, cosf and sinf, and the rotation by separate f32 multiplies and
    adds. neox pairs (i, i + hd/2), interleaved pairs (2i, 2i + 1)."""
    hd = x.shape[-1]
    i2 = (np.arange(0, hd, 2) / np.float32(hd)).astype(F32)
    freq = (F32(1) / np.power(F32(theta), i2, dtype=np.float64).astype(F32)).astype(F32)
    ang = (np.asarray(positions, F32)[:, None] * freq[None, :]).astype(F32)
    c = np.cos(ang.astype(np.float64)).astype(F32)
    s_ = np.sin(ang.astype(np.float64)).astype(F32)
    x32 = np.asarray(x, F32)
    if style == "neox":
        a, b = x32[..., :hd // 2], x32[..., hd // 2:]
    else:
        a, b = x32[..., 0::2], x32[..., 1::2]
    ra = ((a * c).astype(F32) - (b * s_).astype(F32)).astype(F32)
    rb = ((a * s_).astype(F32) + (b * c).astype(F32)).astype(F32)
    out = np.empty_like(x32)
    if style == "neox":
        out[..., :hd // 2], out[..., hd // 2:] = ra, rb
    else:
        out[..., 0::2], out[..., 1::2] = ra, rb
    return out.astype(np.float64)


class DefaultPathReference:
    """Float64 decoder (Llama / Qwen2 / Qwen3 as hf_reference defines them)
    over the weights stored in a .pocket file, with the arithmetic above.

    cfg: hf_reference.HFConfig of the source model; pf: PocketFile. The
    channel order of q and k is the file's (its graph's rope style), so q8
    rows are quantized in the order the engine caches them."""

    def __init__(self, cfg, pf, mutate=None):
        self.cfg = cfg
        self.style = pf.config.get("rope_style", "neox")
        self.m = {}
        for name in pf.tensors:
            m = StoredMatrix(pf, name)
            self.m[name] = mutate(m) if mutate else m
        self.tied = "output.weight" not in self.m

    def vec(self, name):
        return self.m[name].dequantized().reshape(-1)

    def logits(self, ids, kv_type="f32", attention_math="f32", rnd=None, int16_weights=False):
        """Teacher-forced logits [n, vocab]; `rnd` (a Rounding) collects the
        near ties and says which to round the other way."""
        rnd = rnd if rnd is not None else Rounding()
        c = self.cfg
        ids = np.asarray(ids, np.int64)
        n = len(ids)
        H, KV, hd = c.heads, c.kv_heads, c.head_dim
        x = self.m["token_embd.weight"].dequantized()[ids]
        pos = np.arange(n)
        for layer in range(c.layers):
            p = f"blk.{layer}."

            def lin(h, what, acts=None, p=p):
                bias = p + what + ".bias"
                return linear(h, self.m[p + what + ".weight"], rnd,
                              self.vec(bias) if bias in self.m else None, acts)
            h = ref.rms_norm(x, self.vec(p + "attn_norm.weight"), c.eps)
            acts = {}
            q = lin(h, "attn_q", acts).reshape(n, H, hd).transpose(1, 0, 2)
            k = lin(h, "attn_k", acts).reshape(n, KV, hd).transpose(1, 0, 2)
            v = lin(h, "attn_v", acts).reshape(n, KV, hd).transpose(1, 0, 2)
            if c.qk_norm:
                q = ref.rms_norm(q, self.vec(p + "attn_q_norm.weight"), c.eps)
                k = ref.rms_norm(k, self.vec(p + "attn_k_norm.weight"), c.eps)
            q = rope(q, pos, c.theta, self.style)
            k = rope(k, pos, c.theta, self.style)
            a = attention(q, k, v, kv_type, attention_math, H // KV, rnd, int16_weights)
            x = x + lin(a.transpose(1, 0, 2).reshape(n, H * hd), "attn_output")
            h = ref.rms_norm(x, self.vec(p + "ffn_norm.weight"), c.eps)
            acts = {}
            g = lin(h, "ffn_gate", acts)
            u = lin(h, "ffn_up", acts)
            x = x + lin(ref.silu(g) * u, "ffn_down")
        h = ref.rms_norm(x, self.vec("output_norm.weight"), c.eps)
        return linear(h, self.m["token_embd.weight" if self.tied else "output.weight"], rnd)


def log_softmax(logits):
    z = logits - logits.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def kl_divergence(p_logits, q_logits):
    """KL(p || q) per row, from logits (natural log)."""
    lp, lq = log_softmax(p_logits), log_softmax(q_logits)
    return (np.exp(lp) * (lp - lq)).sum(axis=-1)


def mean_nll(logits, ids):
    """Mean negative log-likelihood of ids[1:] given logits[:-1]."""
    lp = log_softmax(logits[:-1])
    return float(-lp[np.arange(len(ids) - 1), np.asarray(ids[1:])].mean())


def explain(forward, got, tol, max_toggles=12, max_passes=400, per_position=60,
            max_left_off=None):
    """Compares engine logits `got` [n, vocab] with forward(Rounding) within
    `tol` per element, letting near ties round the other way where that is
    what the engine did.

    Effects are causal (a rounding at position p moves positions >= p only),
    so the search goes position by position: at the first position still
    off by more than tol, it tries the near ties at that position (then at
    earlier ones), closest first, each rounded the other way, and keeps the
    one that brings that position closest, if that is within tol, without
    moving an earlier one past tol. A position no single tie brings within
    tol is left off and the
    search goes on after it, until more than max_left_off positions are
    left off. Returns (max |diff| per position, toggles kept, positions left
    off, near ties seen, forward passes)."""
    toggles = set()
    rnd = Rounding()
    d = np.abs(got - forward(rnd)).max(axis=1)
    passes = 1
    left_off = set()
    while len(toggles) < max_toggles and passes < max_passes:
        bad = [int(p) for p in np.flatnonzero(d > tol) if int(p) not in left_off]
        if not bad:
            break
        p = bad[0]
        fine_before = [q for q in range(p) if q not in left_off]
        near = [(s, i, pos, gap) for (s, i, pos, gap) in rnd.near
                if pos <= p and (s, i) not in toggles]
        # Position p first, then earlier ones; the closest ties first.
        near.sort(key=lambda z: (-z[2], z[3]))
        best = None
        for s, i, pos, _gap in near[:per_position]:
            if passes >= max_passes or (best is not None and best[0][p] <= tol and pos < p):
                break   # earlier positions only until one fixes position p
            trial = Rounding(toggles | {(s, i)})
            d2 = np.abs(got - forward(trial)).max(axis=1)
            passes += 1
            if fine_before and d2[fine_before].max() > tol:
                continue
            if d2[p] < d[p] and (best is None or d2[p] < best[0][p]):
                best = (d2, (s, i), trial)
        if best is None or best[0][p] > tol:
            # A tie that only narrows the gap is no explanation.
            left_off.add(p)
            if max_left_off is not None and len(left_off) > max_left_off:
                break
            continue
        d, key, rnd = best
        toggles.add(key)
    return d, toggles, sorted(left_off), len(rnd.near), passes
