// Weight and KV element reads, in the byte layouts of src/format/dtype.h
// (the GPU twin of kernels/cpu/dequant-inl.h). Weights arrive as raw bytes
// plus their dtype so one kernel serves every weight type.

// Values of pocket::DType (src/format/dtype.h).
#define DTYPE_F32 0u
#define DTYPE_F16 1u
#define DTYPE_BF16 2u
#define DTYPE_Q8 3u
#define DTYPE_Q4 4u
#define Q8_GROUP 32u

// Values of pocket::cpu::KvType.
#define KV_F32 0u
#define KV_F16 1u
#define KV_Q8 2u

// Element (row, j) of a [rows, cols] weight tensor, dequantized.
INLINE float weight_at(GLOBAL const uchar* w, uint dtype, uint rows, uint cols, uint group,
                       uint row, uint j) {
  const uint i = row * cols + j;
  if (dtype == DTYPE_F32) return ((GLOBAL const float*)w)[i];
  if (dtype == DTYPE_F16) return LOAD_F16(w, i);
  if (dtype == DTYPE_BF16) return AS_FLOAT((uint)((GLOBAL const ushort*)w)[i] << 16);
  if (dtype == DTYPE_Q8) {
    const uint groups = cols / Q8_GROUP;
    const float scale = LOAD_F16(w + rows * cols, row * groups + j / Q8_GROUP);
    return scale * (float)((GLOBAL const char*)w)[i];
  }
  // q4: byte k of a group holds weight k (low nibble) and k + group/2 (high).
  const uint groups = cols / group;
  const uint g = j / group;
  const uint k = j % group;
  const uint half_group = group / 2u;
  const uint packed = w[row * (cols / 2u) + g * half_group + k % half_group];
  const uint q = k < half_group ? (packed & 15u) : (packed >> 4);
  GLOBAL const uchar* scales = w + rows * (cols / 2u);
  const float scale = LOAD_F16(scales, row * groups + g);
  const float min_value = LOAD_F16(scales + rows * groups * 2u, row * groups + g);
  return scale * (float)q + min_value;
}

// Element i of a KV cache buffer of type kv_type. q8 buffers hold int8
// codes, then from byte scales_off one f16 scale per head_dim codes.
INLINE float kv_at(GLOBAL const uchar* kv, uint kv_type, uint i, uint scales_off, uint head_dim) {
  if (kv_type == KV_F32) return ((GLOBAL const float*)kv)[i];
  if (kv_type == KV_F16) return LOAD_F16(kv, i);
  return LOAD_F16(kv + scales_off, i / head_dim) * (float)((GLOBAL const char*)kv)[i];
}
