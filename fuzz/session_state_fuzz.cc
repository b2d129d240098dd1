// libFuzzer target for the session state loader (Session::Load,
// docs/memory.md): any bytes given as a state file must either load or be
// refused with a Status that leaves the session exactly as it was.
//
// The model is stories260K (converted from $POCKET_TEST_DATA at start), the
// session an f16 KV cache holding a few tokens. Each input is tried twice:
// as given, and with the model's own header (magic, version, KV type, model
// identity and layers) in place of its first bytes and the trailing CRC32C
// recomputed, so mutations reach the checks of the counts, token ids and KV
// rows behind them. After a refusal the session must save to the bytes it
// saved before; after a load it must save to the bytes it loaded.
//
// Seeds: runtime_tests writes a saved stories260K session to
// <build>/fuzz_corpus/session_state.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "runtime/model.h"
#include "runtime/session.h"
#include "stories_model.h"
#include "util/crc32c.h"

namespace {

// Magic, version, KV type, four CRC32Cs and the data size, then a layer
// count and two u32 per layer.
constexpr size_t kLayerCountAt = 40;

std::string ReadAll(const std::string& path) {
  std::string out;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) __builtin_trap();
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, got);
  std::fclose(f);
  return out;
}

void WriteAll(const std::string& path, const std::string& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    __builtin_trap();
  }
  std::fclose(f);
}

struct Fixture {
  std::unique_ptr<pocket::Model> model;
  std::unique_ptr<pocket::Session> session;
  std::string input_path = pocket::fuzz::TempPath("input.state");
  std::string check_path = pocket::fuzz::TempPath("check.state");
  std::string saved_path = pocket::fuzz::TempPath("saved.state");
  std::string saved;  // the session's state before every input
  size_t header = 0;  // bytes of the state's header for this model

  Fixture() {
    pocket::ModelOptions model_options;
    model_options.threads = 1;
    auto m = pocket::Model::Load(pocket::fuzz::StoriesModelPath(), model_options);
    if (!m.ok()) __builtin_trap();
    model = std::move(m).value();
    pocket::SessionOptions options;
    options.kv_type = pocket::cpu::KvType::kF16;
    session = std::make_unique<pocket::Session>(model.get(), options);
    std::vector<float> logits;
    if (!session->Eval({1, 403, 407, 261, 378}, pocket::LogitsMode::kLast, &logits).ok()) {
      __builtin_trap();
    }
    if (!session->Save(saved_path).ok()) __builtin_trap();
    saved = ReadAll(saved_path);
    uint32_t layers = 0;
    std::memcpy(&layers, saved.data() + kLayerCountAt, sizeof(layers));
    header = kLayerCountAt + sizeof(layers) + 2 * sizeof(uint32_t) * layers;
  }

  ~Fixture() {
    for (const std::string& p : {input_path, check_path, saved_path}) std::remove(p.c_str());
  }

  std::string SavedNow() {
    if (!session->Save(check_path).ok()) __builtin_trap();
    return ReadAll(check_path);
  }

  void Try(const std::string& bytes) {
    WriteAll(input_path, bytes);
    if (!session->Load(input_path).ok()) {
      if (SavedNow() != saved) __builtin_trap();  // a refusal changed the session
      return;
    }
    if (SavedNow() != bytes) __builtin_trap();  // the loaded state does not round-trip
    if (!session->Load(saved_path).ok()) __builtin_trap();
  }

  // The model's header, then the input's bytes after its own header (less
  // the 4 CRC bytes at its end), then a CRC32C of it all.
  std::string Fixed(const std::string& input) const {
    std::string out = saved.substr(0, header);
    if (input.size() > header + sizeof(uint32_t)) {
      out.append(input, header, input.size() - header - sizeof(uint32_t));
    }
    const uint32_t crc = pocket::Crc32c(0, out.data(), out.size());
    out.append(reinterpret_cast<const char*>(&crc), sizeof(crc));
    return out;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fixture = new Fixture();  // kept for the process's life
  const std::string input(reinterpret_cast<const char*>(data), size);
  fixture->Try(input);
  fixture->Try(fixture->Fixed(input));
  return 0;
}
