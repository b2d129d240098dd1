// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every
// .pocket section. Uses the SSE4.2 / ARMv8 CRC instructions when the CPU has
// them and a portable slicing-by-8 table otherwise; both give identical
// results.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pocket {

// Continues a CRC: Crc32c(Crc32c(0, a), b) == Crc32c(0, a ++ b).
// Crc32c(0, "123456789", 9) == 0xE3069283.
uint32_t Crc32c(uint32_t crc, const void* data, size_t size);

// The two implementations, exposed so tests can compare them. The hardware
// one must only be called when Crc32cHardwareAvailable() is true.
uint32_t Crc32cPortable(uint32_t crc, const void* data, size_t size);
uint32_t Crc32cHardware(uint32_t crc, const void* data, size_t size);
bool Crc32cHardwareAvailable();

}  // namespace pocket
