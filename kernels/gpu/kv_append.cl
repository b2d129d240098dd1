// kv_append: writes k[n, row] and v[n, row] into the layer's cache at
// positions [n_past, n_past + n), converting to the cache's type (f16 rounds
// to nearest even, as the CPU backend does). One thread per value. The
// cache is contiguous: position p's row starts at element p * row. q8
// caches use kv_append_q8.
KERNEL void kv_append(ARG_BUF(const float, k, 0), ARG_BUF(const float, v, 1),
                      ARG_BUF(uchar, k_cache, 2), ARG_BUF(uchar, v_cache, 3),
                      ARG_VAL(uint, k_off, 4), ARG_VAL(uint, v_off, 5), ARG_VAL(uint, n_past, 6),
                      ARG_VAL(uint, n, 7), ARG_VAL(uint, row, 8),
                      ARG_VAL(uint, kv_type, 9) ARG_THREAD_POSITIONS) {
  const uint i = GLOBAL_ID(0);
  if (i >= n * row) return;
  const uint dst = n_past * row + i;
  if (kv_type == KV_F32) {
    ((GLOBAL float*)k_cache)[dst] = k[k_off + i];
    ((GLOBAL float*)v_cache)[dst] = v[v_off + i];
  } else {
    STORE_F16(k_cache, dst, k[k_off + i]);
    STORE_F16(v_cache, dst, v[v_off + i]);
  }
}

// q8 rows, per head (as the CPU backend stores them): y = the values x
// (Hadamard-rotated in place when head_dim is a power of two, hadamard.cl),
// scale = f16(max|y| / 127), code = round-to-even(y / scale) clamped to
// +-127.
INLINE void quantize_private(PRIVATE float* x, GLOBAL uchar* codes, uint dst,
                             GLOBAL uchar* scales, uint scale_i, uint head_dim) {
  if (kv_rotated(KV_Q8, head_dim)) hadamard(x, head_dim);
  float amax = 0.0f;
  for (uint j = 0u; j < head_dim; ++j) amax = max(amax, fabs(x[j]));
  STORE_F16(scales, scale_i, amax / 127.0f);
  const float scale = LOAD_F16(scales, scale_i);  // the rounded scale, as stored
  for (uint j = 0u; j < head_dim; ++j) {
    const float code = scale > 0.0f ? clamp(rint(x[j] / scale), -127.0f, 127.0f) : 0.0f;
    ((GLOBAL char*)codes)[dst + j] = (char)code;
  }
}

INLINE void quantize_head(GLOBAL const float* values, GLOBAL uchar* codes, uint dst,
                          GLOBAL uchar* scales, uint scale_i, uint head_dim) {
  float x[MAX_ROTATED_HEAD];
  for (uint j = 0u; j < head_dim; ++j) x[j] = values[j];
  quantize_private(x, codes, dst, scales, scale_i, head_dim);
}

// One thread per (token, kv head). The buffers hold the int8 codes of every
// position, then from byte scales_off one f16 scale per (position, head).
KERNEL void kv_append_q8(ARG_BUF(const float, k, 0), ARG_BUF(const float, v, 1),
                         ARG_BUF(uchar, k_cache, 2), ARG_BUF(uchar, v_cache, 3),
                         ARG_VAL(uint, k_off, 4), ARG_VAL(uint, v_off, 5), ARG_VAL(uint, n_past, 6),
                         ARG_VAL(uint, n, 7), ARG_VAL(uint, row, 8), ARG_VAL(uint, head_dim, 9),
                         ARG_VAL(uint, scales_off, 10) ARG_THREAD_POSITIONS) {
  const uint heads = row / head_dim;
  const uint i = GLOBAL_ID(0);  // token * heads + head
  if (i >= n * heads) return;
  const uint scale_i = n_past * heads + i;
  const uint dst = scale_i * head_dim;
  quantize_head(k + k_off + i * head_dim, k_cache, dst, k_cache + scales_off, scale_i, head_dim);
  quantize_head(v + v_off + i * head_dim, v_cache, dst, v_cache + scales_off, scale_i, head_dim);
}
