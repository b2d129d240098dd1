// swiglu and add over `count` values (the twins of
// kernels/cpu/elementwise-inl.h). out may be the first input.
KERNEL void swiglu(ARG_BUF(const float, g, 0), ARG_BUF(const float, u, 1), ARG_BUF(float, out, 2),
                   ARG_VAL(uint, g_off, 3), ARG_VAL(uint, u_off, 4), ARG_VAL(uint, out_off, 5),
                   ARG_VAL(uint, count, 6) ARG_THREAD_POSITIONS) {
  const uint i = GLOBAL_ID(0);
  if (i >= count) return;
  const float gv = g[g_off + i];
  out[out_off + i] = gv / (1.0f + exp(-gv)) * u[u_off + i];
}

KERNEL void add(ARG_BUF(const float, a, 0), ARG_BUF(const float, b, 1), ARG_BUF(float, out, 2),
                ARG_VAL(uint, a_off, 3), ARG_VAL(uint, b_off, 4), ARG_VAL(uint, out_off, 5),
                ARG_VAL(uint, count, 6) ARG_THREAD_POSITIONS) {
  const uint i = GLOBAL_ID(0);
  if (i >= count) return;
  out[out_off + i] = a[a_off + i] + b[b_off + i];
}
