// attention: causal GQA over the KV cache (the twin of
// kernels/cpu/attention-inl.h). Work-group i * n_heads + h computes query
// head h of token i (at position n_past + i) over cache positions
// [0, n_past + i]. It follows the scalar reference step by step: scores
// into `scores` (a [n * n_heads, n_past + n] scratch in global memory, since
// a row can outgrow local memory), the group's max, exp and their sum, then
// each thread accumulates its output dims over positions in order. Rotated
// q8 caches (hadamard.cl) take the rotated query, and the output is rotated
// back by one thread.
KERNEL void attention(ARG_BUF(const float, q, 0), ARG_BUF(const uchar, k_cache, 1),
                      ARG_BUF(const uchar, v_cache, 2), ARG_BUF(float, scores, 3),
                      ARG_BUF(float, out, 4), ARG_VAL(uint, q_off, 5), ARG_VAL(uint, out_off, 6),
                      ARG_VAL(uint, n, 7), ARG_VAL(uint, n_past, 8), ARG_VAL(uint, n_heads, 9),
                      ARG_VAL(uint, n_kv_heads, 10), ARG_VAL(uint, head_dim, 11),
                      ARG_VAL(uint, kv_type, 12), ARG_VAL(uint, scales_off, 13),
                      ARG_VAL(float, scale, 14) ARG_THREAD_POSITIONS) {
  LOCAL_ARRAY(float, scratch, POCKET_WG);
  LOCAL_ARRAY(float, rotated_out, MAX_ROTATED_HEAD);
  const Thread th = THIS_THREAD();
  const uint qh = GROUP_ID(0);  // i * n_heads + h
  const uint i = qh / n_heads;
  const uint h = qh % n_heads;
  const uint len = n_past + i + 1u;
  const uint row = n_kv_heads * head_dim;
  const uint kv_off = (h / (n_heads / n_kv_heads)) * head_dim;
  GLOBAL const float* qv = q + q_off + qh * head_dim;
  GLOBAL float* sc = scores + qh * (n_past + n);
  const bool rotated = kv_rotated(kv_type, head_dim);
  float q_rot[MAX_ROTATED_HEAD];
  if (rotated) {
    for (uint j = 0u; j < head_dim; ++j) q_rot[j] = qv[j];
    hadamard(q_rot, head_dim);
  }

  float local_max = -INFINITY;
  for (uint p = th.lid; p < len; p += POCKET_WG) {
    float dot = 0.0f;
    for (uint j = 0u; j < head_dim; ++j) {
      dot += (rotated ? q_rot[j] : qv[j]) *
             kv_at(k_cache, kv_type, p * row + kv_off + j, scales_off, head_dim);
    }
    sc[p] = dot * scale;
    local_max = max(local_max, sc[p]);
  }
  const float max_score = group_max(local_max, scratch, th);
  float local_sum = 0.0f;
  for (uint p = th.lid; p < len; p += POCKET_WG) {
    const float e = exp(sc[p] - max_score);
    sc[p] = e;
    local_sum += e;
  }
  const float sum = group_sum(local_sum, scratch, th);
  BARRIER_GLOBAL();  // every thread reads every score below

  for (uint j = th.lid; j < head_dim; j += POCKET_WG) {
    float acc = 0.0f;
    for (uint p = 0u; p < len; ++p) {
      acc += (sc[p] / sum) * kv_at(v_cache, kv_type, p * row + kv_off + j, scales_off, head_dim);
    }
    if (rotated) {
      rotated_out[j] = acc;
    } else {
      out[out_off + qh * head_dim + j] = acc;
    }
  }
  if (rotated) {  // the same for the whole group
    BARRIER_LOCAL();
    if (th.lid == 0u) {
      float o[MAX_ROTATED_HEAD];
      for (uint j = 0u; j < head_dim; ++j) o[j] = rotated_out[j];
      hadamard(o, head_dim);
      for (uint j = 0u; j < head_dim; ++j) out[out_off + qh * head_dim + j] = o[j];
    }
  }
}
