// embed: out[t] = table[ids[t]], dequantized (kernels/cpu: embed via
// dequant-inl.h). One thread per output value.
KERNEL void embed(ARG_BUF(const uchar, table, 0), ARG_BUF(const int, ids, 1),
                  ARG_BUF(float, out, 2), ARG_VAL(uint, out_off, 3), ARG_VAL(uint, n, 4),
                  ARG_VAL(uint, rows, 5), ARG_VAL(uint, cols, 6), ARG_VAL(uint, dtype, 7),
                  ARG_VAL(uint, group, 8) ARG_THREAD_POSITIONS) {
  const uint i = GLOBAL_ID(0);
  if (i >= n * cols) return;
  const uint t = i / cols;
  out[out_off + i] = weight_at(table, dtype, rows, cols, group, (uint)ids[t], i % cols);
}
