#include "tokenizer/regex_split.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace pocket::tok {

const char kGpt2SplitPattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

namespace {

pcre2_code* Code(void* p) { return static_cast<pcre2_code*>(p); }

std::string Pcre2Message(int error) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(error, buf, sizeof(buf)) < 0) return "unknown PCRE2 error";
  return reinterpret_cast<const char*>(buf);
}

// Byte length of the UTF-8 character starting with `lead`.
size_t CharLen(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

}  // namespace

StatusOr<std::unique_ptr<RegexSplitter>> RegexSplitter::Create(
    const std::vector<std::string>& patterns) {
  std::unique_ptr<RegexSplitter> s(new RegexSplitter());
  for (size_t i = 0; i < patterns.size(); ++i) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(patterns[i].data()), patterns[i].size(),
                      PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (code == nullptr) {
      return Errorf(StatusCode::kInvalidArgument,
                    "pre-tokenizer regex %zu does not compile at offset %zu: %s", i,
                    static_cast<size_t>(offset), Pcre2Message(error).c_str());
    }
    // JIT is an optimisation only: when unavailable, matching is interpreted.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    s->codes_.push_back(code);
  }
  return s;
}

RegexSplitter::~RegexSplitter() {
  for (void* c : codes_) pcre2_code_free(Code(c));
}

Status RegexSplitter::Split(std::string_view text, std::vector<std::string_view>* words) const {
  words->assign(1, text);
  std::vector<std::string_view> pieces;
  for (size_t i = 0; i < codes_.size(); ++i) {
    pieces.clear();
    for (std::string_view w : *words) POCKET_RETURN_IF_ERROR(SplitOne(i, w, &pieces));
    words->swap(pieces);
  }
  return Status::Ok();
}

Status RegexSplitter::SplitOne(size_t pattern, std::string_view text,
                               std::vector<std::string_view>* words) const {
  pcre2_code* code = Code(codes_[pattern]);
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  if (md == nullptr) return Status(StatusCode::kInternal, "out of memory for regex match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t gap_begin = 0, pos = 0;
  Status status;
  while (pos < text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      status = Errorf(StatusCode::kInternal, "pre-tokenizer regex %zu failed at byte %zu: %s",
                      pattern, pos, Pcre2Message(rc).c_str());
      break;
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t b = ov[0], e = ov[1];
    if (e == b) {
      // An empty match splits nothing; step over one character.
      pos = b + CharLen(static_cast<unsigned char>(text[b < text.size() ? b : 0]));
      continue;
    }
    if (b > gap_begin) words->push_back(text.substr(gap_begin, b - gap_begin));
    words->push_back(text.substr(b, e - b));
    gap_begin = pos = e;
  }
  if (status.ok() && text.size() > gap_begin) words->push_back(text.substr(gap_begin));
  pcre2_match_data_free(md);
  return status;
}

}  // namespace pocket::tok
