// SHA-256 against the FIPS 180-4 example vectors.
#include "util/sha256.h"

#include <string>

#include <gtest/gtest.h>

namespace pocket {
namespace {

TEST(Sha256, EmptyString) {
  EXPECT_EQ(Sha256Hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, Abc) {
  EXPECT_EQ(Sha256Hex("abc", 3),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, TwoBlockMessageFedInPieces) {
  const std::string msg = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  Sha256 h;
  for (char c : msg) h.Update(&c, 1);
  EXPECT_EQ(h.HexDigest(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, FileMatchesTheTestDataManifest) {
  // tests/data/SHA256SUMS lists this digest for the bundled checkpoint.
  uint64_t bytes = 0;
  auto digest = Sha256File(std::string(POCKET_TEST_DATA) + "/stories260K/stories260K.bin", &bytes);
  ASSERT_TRUE(digest.ok()) << digest.status().ToString();
  EXPECT_EQ(*digest, "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696");
  EXPECT_EQ(bytes, 1056540u);
}

TEST(Sha256, MissingFileIsNotFound) {
  auto digest = Sha256File("/nonexistent/file", nullptr);
  ASSERT_FALSE(digest.ok());
  EXPECT_EQ(digest.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace pocket
