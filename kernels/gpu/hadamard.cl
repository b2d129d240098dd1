// The Walsh-Hadamard rotation of q8 KV rows (src/backends/cpu/ops.h): when
// head_dim is a power of two, each head's values x are stored as y = H x,
// H[i][j] = (-1)^popcount(i & j) / sqrt(head_dim), which spreads a few large
// channels over the whole row. H is orthonormal and symmetric, so attention
// rotates the query instead of every cached row (q . k = Hq . Hk) and
// rotates its output back once (sum w Hv = H sum w v).

// Rotated heads are held in private arrays of this many floats.
#define MAX_ROTATED_HEAD 256u

INLINE bool kv_rotated(uint kv_type, uint head_dim) {
  return kv_type == KV_Q8 && head_dim > 1u && (head_dim & (head_dim - 1u)) == 0u;
}

// x = H x in place, with the CPU's butterflies and order of operations
// (kernels/cpu/attention-inl.h), so both round alike.
INLINE void hadamard(PRIVATE float* x, uint n) {
  for (uint len = 1u; len < n; len *= 2u) {
    for (uint i = 0u; i < n; i += 2u * len) {
      for (uint j = i; j < i + len; ++j) {
        const float a = x[j];
        const float b = x[j + len];
        x[j] = a + b;
        x[j + len] = a - b;
      }
    }
  }
  const float norm = 1.0f / sqrt((float)n);
  for (uint i = 0u; i < n; ++i) x[i] *= norm;
}
