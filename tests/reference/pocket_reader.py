#!/usr/bin/python3
"""Minimal, independent reader of .pocket files and the quantization formulas.

Written from the format description (src/format/pocket_file.h,
src/format/tensor_directory.h, src/format/dtype.h, src/quant/quantize.h;
docs/format.md is the full spec), not from the C++ reader:

  header (64 bytes): magic "POCKET\\x1a\\0", u16 major, u16 minor, u32 flags,
      u64 file_size, u64 table_offset, u32 section_count, u32 table_crc32c,
      20 reserved bytes, u32 header_crc32c
  section table: section_count x {u32 kind, u32 flags, u64 offset, u64 size,
      u32 crc32c, u32 reserved}; kinds 1 config, 2 tokenizer, 3 graph,
      4 tensors, 5 data
  tensors section: u32 count, then per tensor {u16 name_len, name, u8 dtype,
      u8 layout, u8 ndim, u8 reserved, u32 group, u64 dims[ndim], u64 offset,
      u64 nbytes}; offset is relative to the data section.

Dtypes: 0 f32, 1 f16, 2 bf16, 3 q8, 4 q4 (planar layouts in dtype.h).
Layouts: 0 row-major (planar), 1 rows16 (q4 or q8 in 16-row records, dtype.h).
"""

import json
import struct

import numpy as np

MAGIC = b"POCKET\x1a\x00"
KIND_CONFIG, KIND_TOKENIZER, KIND_GRAPH, KIND_TENSORS, KIND_DATA = 1, 2, 3, 4, 5
DTYPE_NAMES = {0: "f32", 1: "f16", 2: "bf16", 3: "q8", 4: "q4"}
LAYOUT_ROW_MAJOR, LAYOUT_ROWS16 = 0, 1
Q8_GROUP = 32


class PocketFormatError(ValueError):
    pass


class TensorEntry:
    def __init__(self, name, dtype, layout, group, shape, offset, nbytes):
        self.name, self.dtype, self.layout, self.group = name, dtype, layout, group
        self.shape, self.offset, self.nbytes = shape, offset, nbytes

    @property
    def cols(self):
        return self.shape[-1]

    @property
    def rows(self):
        r = 1
        for s in self.shape[:-1]:
            r *= s
        return r


class PocketFile:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.blob = f.read()
        b = self.blob
        if len(b) < 64 or b[:8] != MAGIC:
            raise PocketFormatError(f"{path}: not a .pocket file (bad magic)")
        (self.major, self.minor, _flags, file_size, table_offset, count,
         _tcrc) = struct.unpack_from("<HHIQQII", b, 8)
        if file_size != len(b):
            raise PocketFormatError(f"{path}: header says {file_size} bytes, file has {len(b)}")
        if table_offset + 32 * count > len(b):
            raise PocketFormatError(f"{path}: section table out of bounds")
        self.sections = {}
        for i in range(count):
            kind, _fl, off, size, _crc, _res = struct.unpack_from(
                "<IIQQII", b, table_offset + 32 * i)
            if off + size > len(b):
                raise PocketFormatError(f"{path}: section {kind} out of bounds")
            self.sections[kind] = (off, size)
        for kind in (KIND_CONFIG, KIND_GRAPH, KIND_TENSORS, KIND_DATA):
            if kind not in self.sections:
                raise PocketFormatError(f"{path}: missing section kind {kind}")
        self.config = json.loads(self._section(KIND_CONFIG).decode("utf-8"))
        self.graph = json.loads(self._section(KIND_GRAPH).decode("utf-8"))
        self.data_offset, self.data_size = self.sections[KIND_DATA]
        self.tensors = self._parse_directory(self._section(KIND_TENSORS))

    def _section(self, kind):
        off, size = self.sections[kind]
        return self.blob[off:off + size]

    def _parse_directory(self, d):
        (n,) = struct.unpack_from("<I", d, 0)
        pos = 4
        out = {}
        for _ in range(n):
            (name_len,) = struct.unpack_from("<H", d, pos)
            pos += 2
            name = d[pos:pos + name_len].decode("utf-8")
            pos += name_len
            dtype, layout, ndim, _r, group = struct.unpack_from("<BBBBI", d, pos)
            pos += 8
            shape = list(struct.unpack_from(f"<{ndim}Q", d, pos))
            pos += 8 * ndim
            offset, nbytes = struct.unpack_from("<QQ", d, pos)
            pos += 16
            if dtype not in DTYPE_NAMES:
                raise PocketFormatError(f"tensor {name}: unknown dtype {dtype}")
            if offset + nbytes > self.data_size:
                raise PocketFormatError(f"tensor {name}: bytes out of the data section")
            out[name] = TensorEntry(name, DTYPE_NAMES[dtype], layout, group, shape,
                                    offset, nbytes)
        if pos != len(d):
            raise PocketFormatError(f"tensor directory: {len(d) - pos} trailing bytes")
        return out

    def raw(self, name):
        """A tensor's bytes in the planar layout (rows16 q4 and q8 are unpacked)."""
        t = self.tensors[name]
        start = self.data_offset + t.offset
        raw = self.blob[start:start + t.nbytes]
        if t.layout == LAYOUT_ROWS16:
            if t.dtype not in ("q4", "q8") or t.rows % 16:
                raise PocketFormatError(
                    f"tensor {name}: rows16 needs q4 or q8 with rows % 16 == 0")
            if t.dtype == "q8":
                return q8_rows16_to_planar(raw, t.rows, t.cols)
            return rows16_to_planar(raw, t.rows, t.cols, t.group)
        if t.layout != LAYOUT_ROW_MAJOR:
            raise PocketFormatError(f"tensor {name}: unknown layout {t.layout}")
        return raw

    def tensor(self, name):
        """Dequantized float32 array of a stored tensor, in its stored shape."""
        t = self.tensors[name]
        return dequantize(self.raw(name), t.dtype, t.rows, t.cols, t.group).reshape(t.shape)


def rows16_to_planar(raw, rows, cols, g):
    """The planar bytes of a rows16 q4 tensor (dtype.h): per 16-row block and
    group a record of g/8 chunks of 64 code bytes (byte 4i+j of chunk c: row
    i's weight 8c+j in the low nibble, 8c+4+j in the high one), then 16 f16
    scales and 16 f16 mins."""
    if g not in (32, 64, 128) or cols % g:
        raise PocketFormatError(f"q4 rows16: bad group {g} for cols {cols}")
    nb, ng = rows // 16, cols // g
    rec = 8 * g + 64
    a = np.frombuffer(_exact(raw, nb * ng * rec, "q4 rows16"), np.uint8).reshape(nb, ng, rec)
    chunks = a[:, :, :8 * g].reshape(nb, ng, g // 8, 16, 4)       # [b, g, c, i, j]
    q = np.concatenate([chunks & 0x0F, chunks >> 4], axis=-1)    # [b, g, c, i, 8]
    q = q.transpose(0, 3, 1, 2, 4).reshape(rows, ng, g)          # [row, g, k]
    planar_codes = (q[:, :, :g // 2] | (q[:, :, g // 2:] << 4)).astype(np.uint8)
    meta = a[:, :, 8 * g:].reshape(nb, ng, 2, 32)                 # scales, mins
    def halves(k):
        return meta[:, :, k, :].reshape(nb, ng, 16, 2).transpose(0, 2, 1, 3).reshape(-1)
    return planar_codes.tobytes() + halves(0).tobytes() + halves(1).tobytes()


def q8_rows16_to_planar(raw, rows, cols):
    """The planar bytes of a rows16 q8 tensor (dtype.h): per 16-row block and
    group of 32 a 544-byte record of 8 chunks of 64 code bytes (byte 4i+j of
    chunk c: the int8 code of row i's weight 4c+j), then 16 f16 scales."""
    if cols % Q8_GROUP:
        raise PocketFormatError(f"q8 rows16: cols {cols} not a multiple of {Q8_GROUP}")
    nb, ng = rows // 16, cols // Q8_GROUP
    rec = 16 * Q8_GROUP + 32
    a = np.frombuffer(_exact(raw, nb * ng * rec, "q8 rows16"), np.uint8).reshape(nb, ng, rec)
    chunks = a[:, :, :16 * Q8_GROUP].reshape(nb, ng, 8, 16, 4)      # [b, g, c, i, j]
    codes = chunks.transpose(0, 3, 1, 2, 4).reshape(rows, cols)     # [b, i, g, c, j]
    scales = a[:, :, 16 * Q8_GROUP:].reshape(nb, ng, 16, 2).transpose(0, 2, 1, 3)
    return codes.tobytes() + scales.tobytes()


# ---------------------------------------------------------------------------
# planar layouts (dtype.h)

def dequantize(raw, dtype, rows, cols, group):
    n = rows * cols
    if dtype == "f32":
        return np.frombuffer(_exact(raw, n * 4, "f32"), "<f4").astype(np.float32)
    if dtype == "f16":
        return np.frombuffer(_exact(raw, n * 2, "f16"), "<f2").astype(np.float32)
    if dtype == "bf16":
        u = np.frombuffer(_exact(raw, n * 2, "bf16"), "<u2").astype(np.uint32)
        return (u << 16).view(np.float32)
    if dtype == "q8":
        g = Q8_GROUP
        if cols % g:
            raise PocketFormatError(f"q8: cols {cols} not a multiple of {g}")
        ng = cols // g
        raw = _exact(raw, n + rows * ng * 2, "q8")
        q = np.frombuffer(raw[:n], np.int8).astype(np.float32).reshape(rows, ng, g)
        s = np.frombuffer(raw[n:], "<f2").astype(np.float32).reshape(rows, ng, 1)
        return (s * q).reshape(rows, cols)
    if dtype == "q4":
        g = group
        if g not in (32, 64, 128) or cols % g:
            raise PocketFormatError(f"q4: bad group {g} for cols {cols}")
        ng = cols // g
        nc = n // 2
        raw = _exact(raw, nc + 2 * rows * ng * 2, "q4")
        b = np.frombuffer(raw[:nc], np.uint8).reshape(rows, ng, g // 2)
        q = np.concatenate([b & 0x0F, b >> 4], axis=-1).astype(np.float32)  # [rows, ng, g]
        s = np.frombuffer(raw[nc:nc + rows * ng * 2], "<f2").astype(np.float32)
        m = np.frombuffer(raw[nc + rows * ng * 2:], "<f2").astype(np.float32)
        return (s.reshape(rows, ng, 1) * q + m.reshape(rows, ng, 1)).reshape(rows, cols)
    raise PocketFormatError(f"unknown dtype {dtype}")


def _exact(raw, want, what):
    if len(raw) != want:
        raise PocketFormatError(f"{what}: {len(raw)} bytes, expected {want}")
    return raw


# ---------------------------------------------------------------------------
# the documented quantizers (quantize.h), for checking stored bytes

def quantize_q8(w):
    """Returns (codes int8 [rows, cols], scales f16 [rows, cols/32],
    codes_alt) where codes_alt uses the unrounded f32 scale, so a checker can
    accept either reading of the formula."""
    w = np.asarray(w, np.float32)
    rows, cols = w.shape
    g = w.reshape(rows, cols // Q8_GROUP, Q8_GROUP)
    absmax = np.abs(g).max(axis=-1, keepdims=True)
    scale32 = (absmax / np.float32(127)).astype(np.float32)
    scale16 = scale32.astype(np.float16)

    def codes(scale):
        s = scale.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.where(s > 0, g.astype(np.float64) / s, 0.0)
        return x
    return codes(scale16), scale16.reshape(rows, -1), codes(scale32)


def quantize_q4(w, group):
    """Returns (x = (w - min16) / scale16 as float64 [rows, ng, G], scales f16,
    mins f16): the codes are clamp(round(x), 0, 15)."""
    w = np.asarray(w, np.float32)
    rows, cols = w.shape
    g = w.reshape(rows, cols // group, group)
    mn = g.min(axis=-1, keepdims=True)
    mx = g.max(axis=-1, keepdims=True)
    scale16 = ((mx - mn) / np.float32(15)).astype(np.float32).astype(np.float16)
    min16 = mn.astype(np.float16)
    s = scale16.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(s > 0, (g.astype(np.float64) - min16.astype(np.float64)) / s, 0.0)
    return x, scale16.reshape(rows, -1), min16.reshape(rows, -1)


def _codes_match(stored, x, lo, hi, slack=1e-3):
    """Every stored code is a (tie-tolerant) rounding of x clamped to [lo, hi]."""
    xc = np.clip(x, lo, hi)
    return np.abs(stored.astype(np.float64) - xc) <= 0.5 + slack


def check_quantized_bytes(raw, dtype, w, group):
    """Compares stored q8/q4 bytes with the documented formula applied to the
    original f32 weights `w` [rows, cols]. Returns a list of problems."""
    w = np.asarray(w, np.float32)
    rows, cols = w.shape
    n = rows * cols
    problems = []
    if dtype == "q8":
        x16, scale16, x32 = quantize_q8(w)
        ng = cols // Q8_GROUP
        codes = np.frombuffer(raw[:n], np.int8).reshape(rows, ng, Q8_GROUP)
        scales = np.frombuffer(raw[n:], "<f2").reshape(rows, ng)
        if not np.array_equal(scales.view("<u2"), scale16.astype("<f2").view("<u2")):
            bad = int(np.sum(scales.view("<u2") != scale16.astype("<f2").view("<u2")))
            problems.append(f"{bad} q8 scales differ from f16(absmax/127)")
        ok = _codes_match(codes, x16, -127, 127) | _codes_match(codes, x32, -127, 127)
        if not ok.all():
            problems.append(f"{int((~ok).sum())} q8 codes differ from round(w/scale)")
    elif dtype == "q4":
        x, scale16, min16 = quantize_q4(w, group)
        ng = cols // group
        nc = n // 2
        b = np.frombuffer(raw[:nc], np.uint8).reshape(rows, ng, group // 2)
        codes = np.concatenate([b & 0x0F, b >> 4], axis=-1)
        scales = np.frombuffer(raw[nc:nc + rows * ng * 2], "<u2").reshape(rows, ng)
        mins = np.frombuffer(raw[nc + rows * ng * 2:], "<u2").reshape(rows, ng)
        if not np.array_equal(scales, scale16.astype("<f2").view("<u2")):
            bad = int(np.sum(scales != scale16.astype("<f2").view("<u2")))
            problems.append(f"{bad} q4 scales differ from f16((max-min)/15)")
        if not np.array_equal(mins, min16.astype("<f2").view("<u2")):
            bad = int(np.sum(mins != min16.astype("<f2").view("<u2")))
            problems.append(f"{bad} q4 mins differ from f16(min)")
        ok = _codes_match(codes, x, 0, 15)
        if not ok.all():
            problems.append(f"{int((~ok).sum())} q4 codes differ from round((w-min)/scale)")
    return problems


def python_quantize_dequantize(w, dtype, group):
    """Round-trips f32 weights [rows, cols] through a dtype in Python (used to
    size the quantized-vs-f32 sanity bounds without the engine)."""
    w = np.asarray(w, np.float32)
    if dtype == "f32":
        return w.copy()
    if dtype == "f16":
        return w.astype(np.float16).astype(np.float32)
    if dtype == "bf16":
        u = w.view(np.uint32).astype(np.uint64)
        r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32) << 16
        return r.view(np.float32)
    if dtype == "q8":
        x16, scale16, _ = quantize_q8(w)
        q = np.clip(np.rint(x16), -127, 127)
        return (q * scale16.astype(np.float64)[..., None]).reshape(w.shape).astype(np.float32)
    if dtype == "q4":
        x, scale16, min16 = quantize_q4(w, group)
        q = np.clip(np.rint(x), 0, 15)
        deq = q * scale16.astype(np.float64)[..., None] + min16.astype(np.float64)[..., None]
        return deq.reshape(w.shape).astype(np.float32)
    raise ValueError(dtype)
