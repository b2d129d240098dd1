// Work-group reductions for the kernels that reduce a row (norms, linear,
// attention). With subgroups each SIMD group reduces in registers first;
// without them (OpenCL C 1.2 baseline, e.g. PoCL) a tree in local memory.
// Every thread of the group must call them, and all get the result.

// The calling thread's place in its work-group.
typedef struct {
  uint lid;   // index in the work-group
  uint lane;  // index in its subgroup
  uint sg;    // its subgroup's index
  uint n_sg;  // subgroups in the work-group
} Thread;

INLINE Thread make_thread(uint lid, uint lane, uint sg, uint n_sg) {
  Thread t;
  t.lid = lid;
  t.lane = lane;
  t.sg = sg;
  t.n_sg = n_sg;
  return t;
}

#define THIS_THREAD() make_thread(LOCAL_ID(0), SUBGROUP_LANE(), SUBGROUP_INDEX(), NUM_SUBGROUPS())

// scratch holds POCKET_WG floats.
INLINE float group_sum(float v, LOCAL float* scratch, Thread t) {
#if POCKET_HAS_SUBGROUPS
  const float partial = SUBGROUP_SUM(v);
  if (t.lane == 0u) scratch[t.sg] = partial;
  BARRIER_LOCAL();
  float total = 0.0f;
  for (uint i = 0u; i < t.n_sg; ++i) total += scratch[i];
#else
  scratch[t.lid] = v;
  BARRIER_LOCAL();
  for (uint stride = POCKET_WG / 2u; stride > 0u; stride >>= 1) {
    if (t.lid < stride) scratch[t.lid] += scratch[t.lid + stride];
    BARRIER_LOCAL();
  }
  const float total = scratch[0];
#endif
  BARRIER_LOCAL();  // scratch is free for the next reduction
  return total;
}

INLINE float group_max(float v, LOCAL float* scratch, Thread t) {
#if POCKET_HAS_SUBGROUPS
  const float partial = SUBGROUP_MAX(v);
  if (t.lane == 0u) scratch[t.sg] = partial;
  BARRIER_LOCAL();
  float result = scratch[0];
  for (uint i = 1u; i < t.n_sg; ++i) result = max(result, scratch[i]);
#else
  scratch[t.lid] = v;
  BARRIER_LOCAL();
  for (uint stride = POCKET_WG / 2u; stride > 0u; stride >>= 1) {
    if (t.lid < stride) scratch[t.lid] = max(scratch[t.lid], scratch[t.lid + stride]);
    BARRIER_LOCAL();
  }
  const float result = scratch[0];
#endif
  BARRIER_LOCAL();
  return result;
}
