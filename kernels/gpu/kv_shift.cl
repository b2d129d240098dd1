// kv_shift: for a sliding window, moves a layer's K rows [src, src + n) to
// [dst, dst + n), dst < src, re-encoding each at its new position as the
// CPU's KvShift does: the row is decoded, rotated by the angle of dst - src
// (cos_t and sin_t hold one position's half_dim values, computed on the
// host as for rope, rope.cl), and stored again in the cache's type (f16
// rounds to nearest even). R(p) then R(dst - src) is R(p + dst - src). The
// host launches only ranges that do not overlap; V rows and K rows without
// rope move as stored, by device copies. One thread per rotated pair; q8
// caches use kv_shift_q8.
KERNEL void kv_shift(ARG_BUF(uchar, cache, 0), ARG_BUF(const float, cos_t, 1),
                     ARG_BUF(const float, sin_t, 2), ARG_VAL(uint, dst, 3), ARG_VAL(uint, src, 4),
                     ARG_VAL(uint, n, 5), ARG_VAL(uint, row, 6), ARG_VAL(uint, rope_dim, 7),
                     ARG_VAL(uint, style, 8), ARG_VAL(uint, kv_type, 9) ARG_THREAD_POSITIONS) {
  const uint half_dim = rope_dim / 2u;
  const uint pairs = row / 2u;
  const uint gid = GLOBAL_ID(0);
  if (gid >= n * pairs) return;
  const uint t = gid / pairs;
  const uint head = gid % pairs / half_dim;
  const uint i = gid % half_dim;
  const uint a = head * rope_dim + (style == ROPE_NEOX ? i : 2u * i);
  const uint b = head * rope_dim + (style == ROPE_NEOX ? i + half_dim : 2u * i + 1u);
  const uint from = (src + t) * row;
  const uint to = (dst + t) * row;
  const float v0 = kv_at(cache, kv_type, from + a, 0u, 1u);
  const float v1 = kv_at(cache, kv_type, from + b, 0u, 1u);
  const float c = cos_t[i];
  const float s = sin_t[i];
  if (kv_type == KV_F32) {
    ((GLOBAL float*)cache)[to + a] = rope_first(v0, v1, c, s);
    ((GLOBAL float*)cache)[to + b] = rope_second(v0, v1, c, s);
  } else {
    STORE_F16(cache, to + a, rope_first(v0, v1, c, s));
    STORE_F16(cache, to + b, rope_second(v0, v1, c, s));
  }
}

// One thread per (token, kv head): the head's codes times its scale,
// rotated back out of the Hadamard basis when the cache uses it, rotated
// by rope in every rope_dim slice, then quantized again (kv_append.cl).
KERNEL void kv_shift_q8(ARG_BUF(uchar, cache, 0), ARG_BUF(const float, cos_t, 1),
                        ARG_BUF(const float, sin_t, 2), ARG_VAL(uint, dst, 3),
                        ARG_VAL(uint, src, 4), ARG_VAL(uint, n, 5), ARG_VAL(uint, row, 6),
                        ARG_VAL(uint, head_dim, 7), ARG_VAL(uint, rope_dim, 8),
                        ARG_VAL(uint, style, 9), ARG_VAL(uint, scales_off, 10)
                            ARG_THREAD_POSITIONS) {
  const uint heads = row / head_dim;
  const uint gid = GLOBAL_ID(0);
  if (gid >= n * heads) return;
  const uint from = (src + gid / heads) * heads + gid % heads;  // (position, head)
  const uint to = (dst + gid / heads) * heads + gid % heads;
  float x[MAX_ROTATED_HEAD];
  for (uint j = 0u; j < head_dim; ++j) {
    x[j] = kv_at(cache, KV_Q8, from * head_dim + j, scales_off, head_dim);
  }
  if (kv_rotated(KV_Q8, head_dim)) hadamard(x, head_dim);
  const uint half_dim = rope_dim / 2u;
  for (uint r = 0u; r < head_dim; r += rope_dim) {
    for (uint i = 0u; i < half_dim; ++i) {
      const uint a = r + (style == ROPE_NEOX ? i : 2u * i);
      const uint b = r + (style == ROPE_NEOX ? i + half_dim : 2u * i + 1u);
      const float v0 = x[a];
      const float v1 = x[b];
      x[a] = rope_first(v0, v1, cos_t[i], sin_t[i]);
      x[b] = rope_second(v0, v1, cos_t[i], sin_t[i]);
    }
  }
  quantize_private(x, cache, to * head_dim, cache + scales_off, to, head_dim);
}
