// Included right after <hwy/highway.h>, in each target's pass, by the files
// whose AVX3_DL kernels use AVX512-VNNI's vpdpbusd (linear_int8.cc,
// attention.cc): Highway 1.0.3's AVX3_DL target string names AVX-VNNI (the
// VEX form, a different extension) but not AVX512-VNNI, so for that target
// every function from here on is compiled with both. HWY_TARGET_STR is
// redefined rather than a second target attribute pushed around Highway's:
// Clang applies only the innermost one, so functions inside the kernels'
// HWY_BEFORE_NAMESPACE blocks would lose either VNNI or Highway's features,
// and could then not inline the others (a Clang build of attention.cc
// failed so). Nothing below re-includes hwy/ops/set_macros-inl.h within a
// pass, which would undo it. No include guard: each pass needs it.

#if HWY_TARGET == HWY_AVX3_DL
#undef HWY_TARGET_STR
#define HWY_TARGET_STR                                            \
  HWY_TARGET_STR_AVX3                                             \
  ",vpclmulqdq,avx512vbmi,avx512vbmi2,vaes,avxvnni,avx512bitalg," \
  "avx512vpopcntdq,avx512vnni"
#endif
