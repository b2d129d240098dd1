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
#include <vector>

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

// Files live only while Session::Save or Load needs them: libFuzzer ends
// without running destructors or atexit handlers.
struct Fixture {
  std::unique_ptr<pocket::Model> model;
  std::unique_ptr<pocket::Session> session;
  std::string path = pocket::fuzz::TempPath("session.state");
  std::string saved;  // the session's state before every input
  size_t header = 0;  // bytes of the state's header for this model

  Fixture() {
    const std::string model_path = pocket::fuzz::ConvertStoriesModel();
    pocket::ModelOptions model_options;
    model_options.threads = 1;
    auto m = pocket::Model::Load(model_path, model_options);
    std::remove(model_path.c_str());  // the model keeps its mapping
    if (!m.ok()) __builtin_trap();
    model = std::move(m).value();
    pocket::SessionOptions options;
    options.kv_type = pocket::KvType::kF16;
    session = std::make_unique<pocket::Session>(model.get(), options);
    std::vector<float> logits;
    if (!session->Eval({1, 403, 407, 261, 378}, pocket::LogitsMode::kLast, &logits).ok()) {
      __builtin_trap();
    }
    saved = SavedNow();
    uint32_t layers = 0;
    std::memcpy(&layers, saved.data() + kLayerCountAt, sizeof(layers));
    header = kLayerCountAt + sizeof(layers) + 2 * sizeof(uint32_t) * layers;
  }

  std::string SavedNow() {
    if (!session->Save(path).ok()) __builtin_trap();
    std::string bytes = ReadAll(path);
    std::remove(path.c_str());
    return bytes;
  }

  pocket::Status Load(const std::string& bytes) {
    WriteAll(path, bytes);
    pocket::Status s = session->Load(path);
    std::remove(path.c_str());
    return s;
  }

  void Try(const std::string& bytes) {
    if (!Load(bytes).ok()) {
      if (SavedNow() != saved) __builtin_trap();  // a refusal changed the session
      return;
    }
    if (SavedNow() != bytes) __builtin_trap();  // the loaded state does not round-trip
    if (!Load(saved).ok()) __builtin_trap();
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
