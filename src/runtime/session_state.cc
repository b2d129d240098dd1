// Session::Save and Session::Load: the session state file of
// docs/memory.md. Every field is little-endian; the reader checks each one
// before using it and the whole file's CRC32C before changing anything.
// Session::MoveTo hands the same serialized KV rows from one backend to
// another without a file.
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/session.h"
#include "tokenizer/tokenizer.h"
#include "util/crc32c.h"
#include "util/file_io.h"
#include "util/mapped_file.h"

namespace pocket {

namespace {

constexpr char kMagic[8] = {'P', 'O', 'C', 'K', 'E', 'T', 'K', 'V'};
// Version 2 adds the library version and the chat transcript after the KV
// rows.
constexpr uint32_t kVersion = 2;
// A state from another library version may lay out its cache differently.
constexpr std::string_view kLibraryVersion = POCKET_VERSION_STRING;
// Generate keeps at most one token pending; a few more are allowed for
// callers that stop elsewhere.
constexpr uint64_t kMaxPending = 16;

// What identifies the model file a state belongs to: the CRC32Cs of the
// sections that define the computation, from the file's section table, and
// the data size.
struct Identity {
  uint32_t config = 0, graph = 0, tensors = 0, data = 0;
  uint64_t data_size = 0;
  bool operator==(const Identity& o) const {
    return config == o.config && graph == o.graph && tensors == o.tensors && data == o.data &&
           data_size == o.data_size;
  }
};

Identity ModelIdentity(const PocketFile& file) {
  Identity id;
  for (const SectionEntry& s : file.sections()) {
    switch (static_cast<SectionKind>(s.kind)) {
      case SectionKind::kConfig:
        id.config = s.crc32c;
        break;
      case SectionKind::kGraph:
        id.graph = s.crc32c;
        break;
      case SectionKind::kTensors:
        id.tensors = s.crc32c;
        break;
      case SectionKind::kData:
        id.data = s.crc32c;
        break;
      default:
        break;
    }
  }
  id.data_size = file.data_size();
  return id;
}

template <typename T>
void Put(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// A string as its length (of type Length) and its bytes.
template <typename Length>
void PutString(std::string* out, std::string_view text) {
  Put(out, static_cast<Length>(text.size()));
  out->append(text);
}

// Reads fields in order from untrusted bytes; Take fails past the end.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  bool Take(T* value) {
    if (bytes_.size() - at_ < sizeof(T)) return false;
    std::memcpy(value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  // A string written by PutString<Length>, if the bytes hold all of it.
  template <typename Length>
  bool TakeString(std::string* text) {
    Length n = 0;
    if (!Take(&n) || left() < n) return false;
    text->assign(bytes_.data() + at_, static_cast<size_t>(n));
    at_ += static_cast<size_t>(n);
    return true;
  }
  const uint8_t* Here() const { return reinterpret_cast<const uint8_t*>(bytes_.data()) + at_; }
  size_t left() const { return bytes_.size() - at_; }
  void Skip(size_t n) { at_ += n; }

 private:
  std::string_view bytes_;
  size_t at_ = 0;
};

std::string Header(const Model& model, KvType type) {
  std::string out(kMagic, sizeof(kMagic));
  Put(&out, kVersion);
  Put(&out, static_cast<uint32_t>(type));
  const Identity id = ModelIdentity(model.file());
  Put(&out, id.config);
  Put(&out, id.graph);
  Put(&out, id.tensors);
  Put(&out, id.data);
  Put(&out, id.data_size);
  const Plan& plan = model.plan();
  Put(&out, static_cast<uint32_t>(plan.kv_row.size()));
  for (size_t l = 0; l < plan.kv_row.size(); ++l) {
    Put(&out, static_cast<uint32_t>(plan.kv_row[l]));
    Put(&out, static_cast<uint32_t>(plan.kv_head_dim[l]));
  }
  return out;
}

// The part after the KV rows: who wrote the state, and the chat transcript
// that the cached tokens spell, so a loaded chat continues without
// computing them again.
std::string Trailer(const Session::Continuation& chat) {
  std::string out;
  PutString<uint32_t>(&out, kLibraryVersion);
  Put(&out, static_cast<uint8_t>(chat.in_chat));
  PutString<uint64_t>(&out, chat.chat_text);
  Put(&out, static_cast<uint32_t>(chat.messages.size()));
  for (const ChatMessage& m : chat.messages) {
    PutString<uint32_t>(&out, m.role);
    PutString<uint64_t>(&out, m.content);
  }
  return out;
}

// The transcript's text is at most what the cached tokens spell: a token is
// at most this many bytes (a bound, not a vocabulary's real longest).
constexpr uint64_t kMaxTokenBytes = 1024;

uint64_t MaxTrailerBytes(uint64_t context) {
  // The transcript text, and the messages' contents spelling at most as much.
  return 64 + kLibraryVersion.size() + 2 * (context + kMaxPending) * kMaxTokenBytes;
}

// The largest state a session of `model` can save: the whole context in
// f32, the widest KV type. Load refuses larger files before reading them.
uint64_t MaxStateBytes(const Model& model) {
  const Plan& plan = model.plan();
  uint64_t row_bytes = 0;
  for (size_t l = 0; l < plan.kv_row.size(); ++l) {
    row_bytes += 2 * KvRowBytes(KvType::kF32, plan.kv_row[l], plan.kv_head_dim[l]);
  }
  const uint64_t context = static_cast<uint64_t>(model.config().context);
  return Header(model, KvType::kF32).size() + 2 * sizeof(uint64_t) +
         (context + kMaxPending) * sizeof(int32_t) + context * row_bytes +
         MaxTrailerBytes(context) + sizeof(uint32_t);
}

}  // namespace

Status Session::CheckStateFilesSupported() const {
  if (model_->backend().capabilities().state_rows) return Status::Ok();
  return Errorf(StatusCode::kUnsupported,
                "backend '%s' cannot save or load session states (it cannot export its KV "
                "rows); use backend=cpu to save or load a session",
                model_->backend().name());
}

Status Session::MoveTo(const Model* target) {
  if (target == nullptr) {
    return Status(StatusCode::kInvalidArgument, "moving a session: no target model given");
  }
  if (target == model_) return Status::Ok();
  if (Header(*target, options_.kv_type) != Header(*model_, options_.kv_type)) {
    return Errorf(StatusCode::kInvalidArgument,
                  "a session can move only to the same model file loaded again (with another "
                  "backend); this model's config, graph, tensor or data checksums or KV layout "
                  "differ from the session's");
  }
  for (const Model* m : {model_, target}) {
    if (!m->backend().capabilities().state_rows) {
      return Errorf(StatusCode::kUnsupported,
                    "a session cannot move from backend '%s' to '%s': backend '%s' cannot export "
                    "and import KV rows",
                    model_->backend().name(), target->backend().name(), m->backend().name());
    }
  }
  POCKET_ASSIGN_OR_RETURN(std::unique_ptr<Session> moved, Create(target, options_));
  const size_t n = tokens_.size();
  const size_t limit = moved->TokenLimit(LogitsMode::kLast, 1);
  if (n > limit) {
    return Errorf(StatusCode::kBudgetExceeded,
                  "the session holds %zu tokens but on backend '%s' its memory budget of %s "
                  "allows %zu; raise the budget (budget_bytes)",
                  n, target->backend().name(), BudgetText(options_.budget_bytes).c_str(), limit);
  }
  // ImportRows takes every row at once, and a GPU's rows come to the host
  // anyway: one copy, allocated without throwing.
  const size_t bytes = n * KvStateRowBytes(model_->plan(), options_.kv_type);
  std::unique_ptr<uint8_t[]> rows(new (std::nothrow) uint8_t[std::max<size_t>(bytes, 1)]);
  if (rows == nullptr) {
    return Errorf(StatusCode::kBudgetExceeded,
                  "moving a session: no memory for the %zu-byte copy of its KV rows", bytes);
  }
  size_t filled = 0;
  POCKET_RETURN_IF_ERROR(backend_->ExportRows(n, [&](const uint8_t* data, size_t size) {
    const size_t take = std::min(size, bytes - filled);
    std::memcpy(rows.get() + filled, data, take);
    filled += take;
  }));
  if (filled != bytes) {
    return Errorf(StatusCode::kInternal, "backend '%s' exported %zu bytes of KV rows, not %zu",
                  model_->backend().name(), filled, bytes);
  }
  POCKET_RETURN_IF_ERROR(moved->backend_->Reserve(n));
  POCKET_RETURN_IF_ERROR(moved->backend_->ImportRows(n, rows.get()));
  model_ = target;
  backend_ = std::move(moved->backend_);
  return Status::Ok();
}

Status Session::Save(const std::string& path) const {
  POCKET_RETURN_IF_ERROR(CheckStateFilesSupported());
  std::string head = Header(*model_, options_.kv_type);
  const std::vector<int32_t>& pending = continuation_.pending;
  Put(&head, static_cast<uint64_t>(tokens_.size()));
  Put(&head, static_cast<uint64_t>(pending.size()));
  for (int32_t t : tokens_) Put(&head, t);
  for (int32_t t : pending) Put(&head, t);
  // The KV rows go to the file as they are read from the cache: a copy of
  // the whole state could be larger than the memory left.
  AtomicFileWriter file;
  POCKET_RETURN_IF_ERROR(file.Open(path, "session state file"));
  uint32_t crc = 0;
  const auto write = [&](const void* data, size_t size) {
    crc = Crc32c(crc, data, size);
    file.Write(data, size);
  };
  write(head.data(), head.size());
  POCKET_RETURN_IF_ERROR(backend_->ExportRows(tokens_.size(), write));
  const std::string trailer = Trailer(continuation_);
  write(trailer.data(), trailer.size());
  file.Write(&crc, sizeof(crc));
  return file.Commit();
}

Status Session::Load(const std::string& path) {
  POCKET_RETURN_IF_ERROR(CheckStateFilesSupported());
  // Mapped rather than read: a state holds a whole KV cache, and where the
  // address space cannot take it, the mapping fails with a status while a
  // heap copy would throw out of the library.
  POCKET_ASSIGN_OR_RETURN(
      std::unique_ptr<MappedFile> file,
      MappedFile::Open(path, "session state file saved with this model", MaxStateBytes(*model_)));
  const std::string_view bytes(reinterpret_cast<const char*>(file->data()), file->size());
  auto corrupt = [&](const char* what) {
    return Errorf(StatusCode::kCorruptFile, "%s: not a valid Pocket session state: %s",
                  path.c_str(), what);
  };
  const std::string expected = Header(*model_, options_.kv_type);
  if (bytes.size() < expected.size() + 2 * sizeof(uint64_t) + sizeof(uint32_t) ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return corrupt("the file is too short or does not start with POCKETKV");
  }
  uint32_t crc = 0;
  std::memcpy(&crc, bytes.data() + bytes.size() - sizeof(crc), sizeof(crc));
  if (Crc32c(0, bytes.data(), bytes.size() - sizeof(crc)) != crc) {
    return corrupt("its CRC32C does not match (truncated or damaged file)");
  }
  Reader r(bytes);
  r.Skip(sizeof(kMagic));
  uint32_t version = 0, type = 0;
  r.Take(&version);
  r.Take(&type);
  if (version != kVersion) {
    return Errorf(StatusCode::kUnsupported,
                  "%s: session state version %u, written by another Pocket version; this build "
                  "(Pocket %s) reads version %u: run the conversation again to make a new state",
                  path.c_str(), version, std::string(kLibraryVersion).c_str(), kVersion);
  }
  if (type > static_cast<uint32_t>(KvType::kBf16)) {
    return Errorf(StatusCode::kCorruptFile,
                  "%s: not a valid Pocket session state: its KV type code is %u, but version %u "
                  "states hold 0 (f32), 1 (f16), 2 (q8) or 3 (bf16); the file is damaged or was "
                  "not written by Pocket: save the session again",
                  path.c_str(), type, kVersion);
  }
  const char* stored = KvTypeName(static_cast<KvType>(type));
  if (type != static_cast<uint32_t>(options_.kv_type)) {
    return Errorf(StatusCode::kInvalidArgument,
                  "%s: the state holds a %s KV cache but this session uses %s; create the session "
                  "with the same KV type (kv_type=%s)",
                  path.c_str(), stored, KvTypeName(options_.kv_type), stored);
  }
  if (bytes.compare(0, expected.size(), expected) != 0) {
    return Errorf(StatusCode::kInvalidArgument,
                  "%s: the state was saved with a different model file (its config, graph, "
                  "tensor or data checksums or KV layout differ from this model's); load it "
                  "with the model that saved it",
                  path.c_str());
  }
  r.Skip(expected.size() - sizeof(kMagic) - 2 * sizeof(uint32_t));
  uint64_t n_tokens = 0, n_pending = 0;
  r.Take(&n_tokens);
  r.Take(&n_pending);
  const size_t limit = TokenLimit(LogitsMode::kLast, 1);
  if (n_tokens > context() || n_pending > kMaxPending) {
    return corrupt("it holds more tokens than the model's context");
  }
  if (n_tokens > limit) {
    return Errorf(StatusCode::kBudgetExceeded,
                  "%s: the state holds %llu tokens but this session's budget of %s allows "
                  "%zu; raise the budget (budget_bytes)",
                  path.c_str(), static_cast<unsigned long long>(n_tokens),
                  BudgetText(options_.budget_bytes).c_str(), limit);
  }
  const size_t ids = static_cast<size_t>(n_tokens + n_pending);
  const size_t kv_bytes =
      static_cast<size_t>(n_tokens) * KvStateRowBytes(model_->plan(), options_.kv_type);
  if (r.left() < ids * sizeof(int32_t) + kv_bytes + sizeof(crc)) {
    return corrupt("it is shorter than the token count it declares implies");
  }
  std::vector<int32_t> all(ids);
  for (int32_t& t : all) {
    r.Take(&t);
    if (t < 0 || t >= model_->config().vocab)
      return corrupt("a token id is outside the vocabulary");
  }
  const uint8_t* kv_rows = r.Here();
  POCKET_RETURN_IF_ERROR(backend_->ValidateRows(n_tokens, kv_rows, kv_bytes));
  r.Skip(kv_bytes);
  Reader trailer(bytes.substr(bytes.size() - r.left(), r.left() - sizeof(crc)));
  std::string writer;
  if (!trailer.TakeString<uint32_t>(&writer)) return corrupt("its trailer is cut short");
  if (writer != kLibraryVersion) {
    return Errorf(StatusCode::kUnsupported,
                  "%s: the state was saved by Pocket %s; this is Pocket %s, whose KV cache may "
                  "differ: run the conversation again to make a new state",
                  path.c_str(), writer.c_str(), std::string(kLibraryVersion).c_str());
  }
  Continuation chat;
  uint8_t in_chat = 0;
  uint32_t n_messages = 0;
  if (!trailer.Take(&in_chat) || in_chat > 1 || !trailer.TakeString<uint64_t>(&chat.chat_text) ||
      !trailer.Take(&n_messages)) {
    return corrupt("its chat transcript is damaged");
  }
  chat.in_chat = in_chat == 1;
  for (uint32_t i = 0; i < n_messages; ++i) {
    ChatMessage m;
    if (!trailer.TakeString<uint32_t>(&m.role) || !trailer.TakeString<uint64_t>(&m.content)) {
      return corrupt("its chat transcript is damaged");
    }
    chat.messages.push_back(std::move(m));
  }
  if (trailer.left() != 0) return corrupt("it has bytes after its chat transcript");
  if (FindInvalidUtf8(chat.chat_text) >= 0) return corrupt("its chat text is not UTF-8");
  for (const ChatMessage& m : chat.messages) {
    if (FindInvalidUtf8(m.role) >= 0 || FindInvalidUtf8(m.content) >= 0) {
      return corrupt("a chat message is not UTF-8");
    }
  }

  Reset();
  POCKET_RETURN_IF_ERROR(backend_->Reserve(n_tokens));
  POCKET_RETURN_IF_ERROR(backend_->ImportRows(n_tokens, kv_rows));
  tokens_.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n_tokens));
  continuation_ = std::move(chat);
  continuation_.pending.assign(all.begin() + static_cast<std::ptrdiff_t>(n_tokens), all.end());
  return Status::Ok();
}

}  // namespace pocket
