// rms_norm and head_rms_norm: one work-group per row of d values,
// out = w * (x / sqrt(mean(x^2) + eps)) (the twin of kernels/cpu/norm-inl.h).
// head_rms_norm is this kernel over n * n_heads rows of head_dim. out may
// be x.
KERNEL void rms_norm(ARG_BUF(const float, x, 0), ARG_BUF(const float, w, 1), ARG_BUF(float, out, 2),
                     ARG_VAL(uint, x_off, 3), ARG_VAL(uint, out_off, 4), ARG_VAL(uint, d, 5),
                     ARG_VAL(float, eps, 6) ARG_THREAD_POSITIONS) {
  LOCAL_ARRAY(float, scratch, POCKET_WG);
  const Thread th = THIS_THREAD();
  const uint row = GROUP_ID(0);
  GLOBAL const float* xr = x + x_off + row * d;
  float ss = 0.0f;
  for (uint j = th.lid; j < d; j += POCKET_WG) ss += xr[j] * xr[j];
  ss = group_sum(ss, scratch, th);
  const float inv = 1.0f / sqrt(ss / (float)d + eps);
  // Every thread has read its x values above and writes only those.
  for (uint j = th.lid; j < d; j += POCKET_WG) out[out_off + row * d + j] = w[j] * (inv * xr[j]);
}
