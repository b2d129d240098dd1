// rope: rotary embedding in place on x[n, n_heads * head_dim] (the twin of
// kernels/cpu/rope-inl.h). The host passes each token's cos/sin of every
// frequency (tables [n, head_dim / 2]) computed with the CPU's formula, so
// the angles are bit-identical to the CPU backend whatever the device's
// pow/sin/cos precision. One thread per rotated pair.
#define ROPE_NEOX 0u

// The rotated pair (v0, v1) by the angle with cosine c and sine s, rounded
// as the CPU's tables and products round it (kv_shift.cl rotates with them
// too).
INLINE float rope_first(float v0, float v1, float c, float s) { return v0 * c - v1 * s; }
INLINE float rope_second(float v0, float v1, float c, float s) { return v0 * s + v1 * c; }

KERNEL void rope(ARG_BUF(float, x, 0), ARG_BUF(const float, cos_t, 1),
                 ARG_BUF(const float, sin_t, 2), ARG_VAL(uint, x_off, 3), ARG_VAL(uint, n, 4),
                 ARG_VAL(uint, n_heads, 5), ARG_VAL(uint, head_dim, 6),
                 ARG_VAL(uint, style, 7) ARG_THREAD_POSITIONS) {
  const uint half_dim = head_dim / 2u;
  const uint gid = GLOBAL_ID(0);
  if (gid >= n * n_heads * half_dim) return;
  const uint i = gid % half_dim;
  const uint head = gid / half_dim;  // token * n_heads + h
  const uint t = head / n_heads;
  GLOBAL float* hx = x + x_off + head * head_dim;
  const uint a = style == ROPE_NEOX ? i : 2u * i;
  const uint b = style == ROPE_NEOX ? i + half_dim : 2u * i + 1u;
  const float c = cos_t[t * half_dim + i];
  const float s = sin_t[t * half_dim + i];
  const float v0 = hx[a];
  const float v1 = hx[b];
  hx[a] = rope_first(v0, v1, c, s);
  hx[b] = rope_second(v0, v1, c, s);
}
