// linear_rows: the decode GEMV on Metal, a Metal-only twin of linear.cl with
// the same arguments and results. Each SIMD-group computes one output row
// (threadgroup g, SIMD-group s: row g * simdgroups + s) for tokens
// [t0, t0 + LINEAR_TOKENS), t0 = LINEAR_TOKENS * the group's y position: its
// lanes stride over cols, so each weight is read once per LINEAR_TOKENS
// tokens, and simd_sum adds the lanes' partial dot products in registers.
// No threadgroup memory and no barrier, where linear.cl needs both to
// combine its SIMD-groups.
kernel void linear_rows(device const float* x [[buffer(0)]], device const uchar* w [[buffer(1)]],
                        device const float* bias [[buffer(2)]], device float* out [[buffer(3)]],
                        constant uint& x_off [[buffer(4)]], constant uint& out_off [[buffer(5)]],
                        constant uint& n [[buffer(6)]], constant uint& rows [[buffer(7)]],
                        constant uint& cols [[buffer(8)]], constant uint& dtype [[buffer(9)]],
                        constant uint& group [[buffer(10)]], constant uint& has_bias [[buffer(11)]],
                        uint2 group_pos [[threadgroup_position_in_grid]],
                        uint lane [[thread_index_in_simdgroup]],
                        uint simd [[simdgroup_index_in_threadgroup]],
                        uint simds [[simdgroups_per_threadgroup]],
                        uint simd_width [[threads_per_simdgroup]]) {
  const uint r = group_pos.x * simds + simd;
  if (r >= rows) return;  // the whole SIMD-group
  const uint t0 = group_pos.y * LINEAR_TOKENS;
  const uint count = min(LINEAR_TOKENS, n - t0);
  device const float* xb = x + x_off + t0 * cols;
  float acc[LINEAR_TOKENS];
  for (uint t = 0u; t < LINEAR_TOKENS; ++t) acc[t] = 0.0f;
  for (uint j = lane; j < cols; j += simd_width) {
    const float wj = weight_at(w, dtype, rows, cols, group, r, j);
    for (uint t = 0u; t < count; ++t) acc[t] += wj * xb[t * cols + j];
  }
  const float b = has_bias != 0u ? bias[r] : 0.0f;
  for (uint t = 0u; t < count; ++t) {
    const float dot = simd_sum(acc[t]);
    if (lane == 0u) out[out_off + (t0 + t) * rows + r] = dot + b;
  }
}
