// The binary encoding of the `tensors` section (docs/format.md, "Tensor
// directory"), shared by the writer and the reader so both sides agree on
// every byte. All integers are little-endian and unaligned:
//
//   u32 count
//   count x { u16 name_len, name bytes, u8 dtype, u8 layout, u8 ndim,
//             u8 reserved (0), u32 group, u64 dims[ndim], u64 offset,
//             u64 nbytes }
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "format/pocket_file.h"
#include "util/status.h"

namespace pocket {

// Checks one tensor's own fields: a non-empty name of at most
// kMaxTensorNameLength bytes, a known dtype and layout, 1..kMaxTensorDims
// non-zero dims whose product fits in 64 bits, a group valid for the dtype
// and nbytes == TensorByteSize(...). The error names the tensor.
Status ValidateTensorInfo(const TensorInfo& info);

// Serializes the directory; the infos must already be valid.
std::string EncodeTensorDirectory(const std::vector<TensorInfo>& infos);

// Parses and validates a directory read from a file whose `tensors` section
// starts at file offset `section_offset` and whose data section has
// `data_size` bytes: every entry passes ValidateTensorInfo, starts on a
// kTensorAlignment boundary, lies inside the data section, and overlaps no
// other tensor; names are unique and no bytes trail the last entry. Errors
// name the entry, the tensor and the file offset.
StatusOr<std::vector<TensorInfo>> DecodeTensorDirectory(const uint8_t* bytes, size_t size,
                                                        uint64_t section_offset,
                                                        uint64_t data_size);

}  // namespace pocket
