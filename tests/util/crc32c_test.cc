#include "util/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace pocket {
namespace {

TEST(Crc32c, StandardVectors) {
  EXPECT_EQ(Crc32c(0, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c(0, "", 0), 0u);
  // RFC 3720 (iSCSI) appendix B.4.
  std::vector<uint8_t> b(32, 0);
  EXPECT_EQ(Crc32c(0, b.data(), b.size()), 0x8A9136AAu);
  std::fill(b.begin(), b.end(), 0xFF);
  EXPECT_EQ(Crc32c(0, b.data(), b.size()), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) b[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Crc32c(0, b.data(), b.size()), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) b[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(Crc32c(0, b.data(), b.size()), 0x113FDB5Cu);
  EXPECT_EQ(Crc32cPortable(0, "123456789", 9), 0xE3069283u);
}

TEST(Crc32c, IncrementalEqualsWhole) {
  const char* text = "The quick brown fox jumps over the lazy dog";
  const size_t n = std::strlen(text);
  const uint32_t whole = Crc32c(0, text, n);
  for (size_t split = 0; split <= n; ++split) {
    EXPECT_EQ(Crc32c(Crc32c(0, text, split), text + split, n - split), whole);
  }
}

TEST(Crc32c, HardwareAndPortableAgreeOnEveryLengthAndAlignment) {
#if defined(__x86_64__)
  // Every x86-64 machine these tests run on has SSE4.2.
  EXPECT_TRUE(Crc32cHardwareAvailable());
#endif
  std::mt19937 rng(42);
  std::vector<uint8_t> buf(1100);
  for (uint8_t& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t align = 0; align < 8; ++align) {
    for (size_t len = 0; len < 1024; len += (len < 80 ? 1 : 37)) {
      const uint32_t seed = static_cast<uint32_t>(rng());
      const uint32_t want = Crc32cPortable(seed, buf.data() + align, len);
      EXPECT_EQ(Crc32c(seed, buf.data() + align, len), want) << align << " " << len;
      if (Crc32cHardwareAvailable()) {
        EXPECT_EQ(Crc32cHardware(seed, buf.data() + align, len), want) << align << " " << len;
      }
    }
  }
}

}  // namespace
}  // namespace pocket
