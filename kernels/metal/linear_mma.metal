// linear_mma: the prefill linear on Metal with SIMD-group matrices, a
// Metal-only twin of linear.cl with the same arguments and results. A
// threadgroup computes an 8-token by (8 * MMA_SIMDS)-row tile of out: for
// each block of 8 columns its threads stage the tokens' x values and the
// weights, dequantized once per tile, in threadgroup memory; each
// SIMD-group multiplies its 8x8 pair with simdgroup_multiply_accumulate.
// Needs cols % 8 == 0 and SIMD-groups of 32 (every Apple GPU); Apple7
// GPUs (A14, M1) and later have the SIMD-group matrix functions.
#define MMA_SIMDS (POCKET_WG / 32u)

kernel void linear_mma(device const float* x [[buffer(0)]], device const uchar* w [[buffer(1)]],
                       device const float* bias [[buffer(2)]], device float* out [[buffer(3)]],
                       constant uint& x_off [[buffer(4)]], constant uint& out_off [[buffer(5)]],
                       constant uint& n [[buffer(6)]], constant uint& rows [[buffer(7)]],
                       constant uint& cols [[buffer(8)]], constant uint& dtype [[buffer(9)]],
                       constant uint& group [[buffer(10)]], constant uint& has_bias [[buffer(11)]],
                       uint2 group_pos [[threadgroup_position_in_grid]],
                       uint lid [[thread_index_in_threadgroup]],
                       uint simd [[simdgroup_index_in_threadgroup]]) {
  LOCAL_ARRAY(float, xs, 64);              // [token][column] of the block
  LOCAL_ARRAY(float, ws, MMA_SIMDS * 64);  // per SIMD-group: [column][row]
  LOCAL_ARRAY(float, os, MMA_SIMDS * 64);  // per SIMD-group: [token][row]
  const uint t0 = group_pos.y * 8u;
  const uint r0 = group_pos.x * MMA_SIMDS * 8u;  // the group's first row
  simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k0 = 0u; k0 < cols; k0 += 8u) {
    for (uint i = lid; i < 64u; i += POCKET_WG) {
      const uint t = t0 + i / 8u;
      xs[i] = t < n ? x[x_off + t * cols + k0 + i % 8u] : 0.0f;
    }
    for (uint i = lid; i < MMA_SIMDS * 64u; i += POCKET_WG) {
      const uint r = r0 + (i / 64u) * 8u + i % 8u;
      const uint k = k0 + i % 64u / 8u;
      ws[i] = r < rows ? weight_at(w, dtype, rows, cols, group, r, k) : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_float8x8 a;
    simdgroup_float8x8 b;
    simdgroup_load(a, xs, 8);
    simdgroup_load(b, ws + simd * 64u, 8);
    simdgroup_multiply_accumulate(acc, a, b, acc);
    threadgroup_barrier(mem_flags::mem_threadgroup);  // the tiles are refilled next
  }
  simdgroup_store(acc, os + simd * 64u, 8);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint i = lid; i < MMA_SIMDS * 64u; i += POCKET_WG) {
    const uint t = t0 + i % 64u / 8u;
    const uint r = r0 + (i / 64u) * 8u + i % 8u;
    if (t < n && r < rows) out[out_off + t * rows + r] = os[i] + (has_bias != 0u ? bias[r] : 0.0f);
  }
}
