// linear: out[n, rows] = x[n, cols] W^T (+ bias) for any weight dtype (the
// twin of kernels/cpu/matvec-inl.h). Work-group (r, b) computes output row
// r for tokens [b * LINEAR_TOKENS, ...): each weight is dequantized once and
// used for LINEAR_TOKENS tokens, so prefill reads the weights n/LINEAR_TOKENS
// times instead of n. Threads stride over cols (adjacent threads read
// adjacent weights), then the group sums the partial dot products.
#define LINEAR_TOKENS 4u

KERNEL void linear(ARG_BUF(const float, x, 0), ARG_BUF(const uchar, w, 1),
                   ARG_BUF(const float, bias, 2), ARG_BUF(float, out, 3), ARG_VAL(uint, x_off, 4),
                   ARG_VAL(uint, out_off, 5), ARG_VAL(uint, n, 6), ARG_VAL(uint, rows, 7),
                   ARG_VAL(uint, cols, 8), ARG_VAL(uint, dtype, 9), ARG_VAL(uint, group, 10),
                   ARG_VAL(uint, has_bias, 11) ARG_THREAD_POSITIONS) {
  LOCAL_ARRAY(float, scratch, POCKET_WG);
  const Thread th = THIS_THREAD();
  const uint r = GROUP_ID(0);
  const uint t0 = GROUP_ID(1) * LINEAR_TOKENS;
  const uint count = min(LINEAR_TOKENS, n - t0);
  GLOBAL const float* xb = x + x_off + t0 * cols;
  float acc[LINEAR_TOKENS];
  for (uint t = 0u; t < LINEAR_TOKENS; ++t) acc[t] = 0.0f;
  for (uint j = th.lid; j < cols; j += POCKET_WG) {
    const float wj = weight_at(w, dtype, rows, cols, group, r, j);
    for (uint t = 0u; t < count; ++t) acc[t] += wj * xb[t * cols + j];
  }
  const float b = has_bias != 0u ? bias[r] : 0.0f;
  for (uint t = 0u; t < count; ++t) {  // count is the same for the whole group
    const float dot = group_sum(acc[t], scratch, th);
    if (th.lid == 0u) out[out_off + (t0 + t) * rows + r] = dot + b;
  }
}
