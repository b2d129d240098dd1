#include "tokenizer/hf_import.h"

#include <algorithm>
#include <unordered_map>

#include "tokenizer/added_tokens.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/regex_split.h"
#include "util/json_util.h"

namespace pocket::tok {
namespace {

constexpr const char* kWhere = "tokenizer.json";
constexpr int64_t kMaxVocab = 1 << 24;
constexpr std::string_view kMetaspace = "\xE2\x96\x81";

std::string TypeOf(const Json& j) {
  std::string type;
  if (j.is_object()) (void)GetOptString(j, "type", &type, kWhere);
  return type;
}

// A normalizer / pre-tokenizer / decoder as a flat list (Sequence unrolled).
std::vector<const Json*> Flatten(const Json* j, const char* list_key) {
  std::vector<const Json*> out;
  if (j == nullptr || j->is_null()) return out;
  if (TypeOf(*j) == "Sequence") {
    const Json* items = FindMember(*j, list_key);
    if (items != nullptr && items->is_array()) {
      for (const Json& item : *items) out.push_back(&item);
    }
    return out;
  }
  out.push_back(j);
  return out;
}

// The settings that normalizer, pre-tokenizer and decoder contribute.
struct Pipeline {
  bool byte_level = false;
  bool spm = false;
  uint32_t flags = 0;
  uint8_t prepend = kPrependNever;
  std::string regex;
};

Status ReadNormalizers(const Json& root, Pipeline* p) {
  bool prepend = false, replace = false;
  for (const Json* n : Flatten(FindMember(root, "normalizer"), "normalizers")) {
    const std::string type = TypeOf(*n);
    if (type == "NFC") {
      p->flags |= kFlagNfc;
    } else if (type == "Prepend") {
      std::string s;
      POCKET_RETURN_IF_ERROR(GetString(*n, "prepend", &s, "Prepend normalizer"));
      if (s != kMetaspace) {
        return Status(StatusCode::kUnsupported,
                      "Prepend normalizer with a string other than \"▁\"");
      }
      prepend = true;
    } else if (type == "Replace") {
      const Json* pattern = FindMember(*n, "pattern");
      std::string from, to;
      if (pattern != nullptr && pattern->is_object()) {
        (void)GetOptString(*pattern, "String", &from, "Replace normalizer");
      }
      POCKET_RETURN_IF_ERROR(GetString(*n, "content", &to, "Replace normalizer"));
      if (from != " " || to != kMetaspace) {
        return Status(StatusCode::kUnsupported,
                      "Replace normalizer other than \" \" -> \"▁\" is not supported");
      }
      replace = true;
    } else {
      return Errorf(StatusCode::kUnsupported,
                    "tokenizer.json normalizer '%s' is not supported (Pocket handles NFC, "
                    "Prepend(\"▁\") and Replace(\" \", \"▁\"))",
                    type.c_str());
    }
  }
  if (prepend || replace) {
    if (!replace) {
      return Status(StatusCode::kUnsupported, "Prepend(\"▁\") without Replace(\" \", \"▁\")");
    }
    p->spm = true;
    p->prepend = prepend ? kPrependAlways : kPrependNever;
  }
  return Status::Ok();
}

Status ReadMetaspace(const Json& m, Pipeline* p) {
  std::string replacement = std::string(kMetaspace), scheme;
  bool add_prefix_space = true, split = true;
  POCKET_RETURN_IF_ERROR(GetOptString(m, "replacement", &replacement, "Metaspace"));
  POCKET_RETURN_IF_ERROR(GetOptBool(m, "add_prefix_space", &add_prefix_space, "Metaspace"));
  POCKET_RETURN_IF_ERROR(GetOptString(m, "prepend_scheme", &scheme, "Metaspace"));
  POCKET_RETURN_IF_ERROR(GetOptBool(m, "split", &split, "Metaspace"));
  if (replacement != kMetaspace) {
    return Status(StatusCode::kUnsupported, "Metaspace with a replacement other than \"▁\"");
  }
  p->spm = true;
  p->flags |= kFlagPrependIfMissing | (split ? uint32_t{kFlagMetaspaceSplit} : 0u);
  if (scheme.empty()) scheme = add_prefix_space ? "always" : "never";
  if (scheme == "always") {
    p->prepend = kPrependAlways;
  } else if (scheme == "first") {
    p->prepend = kPrependFirst;
  } else if (scheme == "never") {
    p->prepend = kPrependNever;
  } else {
    return Errorf(StatusCode::kUnsupported, "Metaspace prepend_scheme '%s'", scheme.c_str());
  }
  return Status::Ok();
}

Status ReadPreTokenizers(const Json& root, Pipeline* p) {
  for (const Json* t : Flatten(FindMember(root, "pre_tokenizer"), "pretokenizers")) {
    const std::string type = TypeOf(*t);
    if (type == "ByteLevel") {
      bool use_regex = true, add_prefix_space = false;
      POCKET_RETURN_IF_ERROR(GetOptBool(*t, "use_regex", &use_regex, "ByteLevel"));
      POCKET_RETURN_IF_ERROR(GetOptBool(*t, "add_prefix_space", &add_prefix_space, "ByteLevel"));
      p->byte_level = true;
      if (add_prefix_space) p->flags |= kFlagAddPrefixSpace;
      if (use_regex) {
        if (!p->regex.empty()) {
          return Status(StatusCode::kUnsupported, "more than one pre-tokenizer regex");
        }
        p->regex = kGpt2SplitPattern;
      }
    } else if (type == "Split") {
      const Json* pattern = FindMember(*t, "pattern");
      std::string regex, literal, behavior;
      bool invert = false;
      if (pattern == nullptr || !pattern->is_object()) {
        return Status(StatusCode::kInvalidArgument, "Split pre-tokenizer without a pattern");
      }
      POCKET_RETURN_IF_ERROR(GetOptString(*pattern, "Regex", &regex, "Split pattern"));
      POCKET_RETURN_IF_ERROR(GetOptString(*pattern, "String", &literal, "Split pattern"));
      POCKET_RETURN_IF_ERROR(GetOptString(*t, "behavior", &behavior, "Split"));
      POCKET_RETURN_IF_ERROR(GetOptBool(*t, "invert", &invert, "Split"));
      if (behavior != "Isolated" || invert) {
        return Errorf(StatusCode::kUnsupported,
                      "Split pre-tokenizer behavior '%s'%s is not supported (only Isolated)",
                      behavior.c_str(), invert ? " inverted" : "");
      }
      if (regex.empty() && !literal.empty()) {
        if (literal.find("\\E") != std::string::npos) {
          return Status(StatusCode::kUnsupported, "Split string pattern containing \\E");
        }
        regex = "\\Q" + literal + "\\E";
      }
      if (regex.empty() || !p->regex.empty()) {
        return Status(StatusCode::kUnsupported, "Pocket needs exactly one Split pattern");
      }
      p->regex = regex;
    } else if (type == "Metaspace") {
      POCKET_RETURN_IF_ERROR(ReadMetaspace(*t, p));
    } else {
      return Errorf(StatusCode::kUnsupported, "tokenizer.json pre-tokenizer '%s' is not supported",
                    type.c_str());
    }
  }
  return Status::Ok();
}

void ReadDecoders(const Json& root, Pipeline* p) {
  for (const Json* d : Flatten(FindMember(root, "decoder"), "decoders")) {
    const std::string type = TypeOf(*d);
    if (type == "ByteLevel") p->byte_level = true;
    if (type == "Strip") {
      int64_t start = 0;
      std::string content;
      (void)GetOptInt(*d, "start", &start, "Strip decoder");
      (void)GetOptString(*d, "content", &content, "Strip decoder");
      if (start > 0 && content == " ") p->flags |= kFlagStripLeadingSpace;
    }
    if (type == "Metaspace") {
      Pipeline m;
      if (ReadMetaspace(*d, &m).ok() && m.prepend != kPrependNever) {
        p->flags |= kFlagStripLeadingSpace;
      }
    }
  }
}

// The content named by a tokenizer_config.json entry such as "eos_token",
// which is either a string or {"content": ...}.
std::string ConfigTokenName(const Json& config, const char* key) {
  const Json* v = config.is_object() ? FindMember(config, key) : nullptr;
  std::string name;
  if (v == nullptr) return name;
  if (v->is_string()) return v->get_ref<const std::string&>();
  if (v->is_object()) (void)GetOptString(*v, "content", &name, key);
  return name;
}

class Importer {
 public:
  Status Run(std::string_view json_text, std::string_view config_text, BpeData* out);

 private:
  Status ReadModel(const Json& model);
  Status ReadAddedTokens(const Json& root, const Json& config);
  Status ReadMerges(const Json& model);
  int32_t FindToken(const std::string& content) const;
  void ResolveSpecialIds(const Json& model, const Json& config);

  Pipeline p_;
  std::unordered_map<std::string, int32_t> vocab_;  // as written in the file
  std::vector<std::string> tokens_;                 // by id, stored form
  std::vector<uint8_t> attrs_;
  std::vector<int32_t> merges_;
  int32_t bos_ = -1, eos_ = -1, unk_ = -1;
  // The tables above are indexed by id, so ids stay below the number of
  // entries the file lists (vocab plus added_tokens): a file cannot size
  // them beyond what it holds.
  int64_t id_limit_ = 0;
};

int32_t Importer::FindToken(const std::string& content) const {
  for (size_t i = 0; i < attrs_.size(); ++i) {
    if ((attrs_[i] & kAttrAdded) && tokens_[i] == content) return static_cast<int32_t>(i);
  }
  auto it = vocab_.find(content);
  return it == vocab_.end() ? -1 : it->second;
}

Status Importer::ReadModel(const Json& model) {
  std::string type;
  POCKET_RETURN_IF_ERROR(GetString(model, "type", &type, "tokenizer.json model"));
  if (type != "BPE") {
    return Errorf(StatusCode::kUnsupported,
                  "tokenizer.json model type '%s' is not supported (Pocket reads BPE "
                  "tokenizer.json files and SentencePiece .model files)",
                  type.c_str());
  }
  std::string prefix, suffix;
  POCKET_RETURN_IF_ERROR(GetOptString(model, "continuing_subword_prefix", &prefix, "model"));
  POCKET_RETURN_IF_ERROR(GetOptString(model, "end_of_word_suffix", &suffix, "model"));
  if (!prefix.empty() || !suffix.empty()) {
    return Status(StatusCode::kUnsupported,
                  "BPE with continuing_subword_prefix / end_of_word_suffix is not supported");
  }
  bool byte_fallback = false, fuse_unk = false, ignore_merges = false;
  POCKET_RETURN_IF_ERROR(GetOptBool(model, "byte_fallback", &byte_fallback, "model"));
  POCKET_RETURN_IF_ERROR(GetOptBool(model, "fuse_unk", &fuse_unk, "model"));
  POCKET_RETURN_IF_ERROR(GetOptBool(model, "ignore_merges", &ignore_merges, "model"));
  if (byte_fallback) p_.flags |= kFlagByteFallback;
  if (fuse_unk) p_.flags |= kFlagFuseUnk;
  if (ignore_merges) p_.flags |= kFlagIgnoreMerges;
  const Json* vocab = FindMember(model, "vocab");
  if (vocab == nullptr || !vocab->is_object()) {
    return Status(StatusCode::kInvalidArgument, "tokenizer.json model has no vocab object");
  }
  vocab_.reserve(vocab->size());
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() >= id_limit_) {
      return Errorf(StatusCode::kInvalidArgument,
                    "tokenizer.json vocab entry '%s' has a bad id (ids run from 0 to %lld, one "
                    "per vocab and added_tokens entry)",
                    it.key().c_str(), static_cast<long long>(id_limit_ - 1));
    }
    const int32_t id = static_cast<int32_t>(it.value().get<int64_t>());
    vocab_[it.key()] = id;
    if (static_cast<size_t>(id) >= tokens_.size()) {
      tokens_.resize(id + 1);
      attrs_.resize(id + 1, 0);
    }
    std::string bytes;
    if (p_.byte_level && FromByteLevel(it.key(), &bytes)) {
      tokens_[id] = bytes;
    } else {
      tokens_[id] = it.key();
    }
  }
  return Status::Ok();
}

Status Importer::ReadAddedTokens(const Json& root, const Json& config) {
  const Json* added = FindMember(root, "added_tokens");
  if (added == nullptr || added->is_null()) return Status::Ok();
  if (!added->is_array()) {
    return Status(StatusCode::kInvalidArgument, "tokenizer.json added_tokens is not an array");
  }
  const Json* decoder_cfg =
      config.is_object() ? FindMember(config, "added_tokens_decoder") : nullptr;
  for (const Json& a : *added) {
    int64_t id;
    std::string content;
    bool special = false, lstrip = false, rstrip = false, normalized = false, single = false;
    POCKET_RETURN_IF_ERROR(GetInt(a, "id", &id, "added_tokens entry"));
    POCKET_RETURN_IF_ERROR(GetString(a, "content", &content, "added_tokens entry"));
    POCKET_RETURN_IF_ERROR(GetOptBool(a, "special", &special, "added_tokens entry"));
    POCKET_RETURN_IF_ERROR(GetOptBool(a, "lstrip", &lstrip, "added_tokens entry"));
    POCKET_RETURN_IF_ERROR(GetOptBool(a, "rstrip", &rstrip, "added_tokens entry"));
    POCKET_RETURN_IF_ERROR(GetOptBool(a, "normalized", &normalized, "added_tokens entry"));
    POCKET_RETURN_IF_ERROR(GetOptBool(a, "single_word", &single, "added_tokens entry"));
    if (id < 0 || id >= id_limit_ || content.empty()) {
      return Errorf(StatusCode::kInvalidArgument,
                    "added token '%s' has a bad id or is empty (ids run from 0 to %lld, one per "
                    "vocab and added_tokens entry)",
                    content.c_str(), static_cast<long long>(id_limit_ - 1));
    }
    // tokenizer_config.json has the last word on which tokens are special.
    const Json* cfg = decoder_cfg != nullptr && decoder_cfg->is_object()
                          ? FindMember(*decoder_cfg, std::to_string(id).c_str())
                          : nullptr;
    if (cfg != nullptr && cfg->is_object()) {
      POCKET_RETURN_IF_ERROR(GetOptBool(*cfg, "special", &special, "added_tokens_decoder"));
    }
    if (static_cast<size_t>(id) >= tokens_.size()) {
      tokens_.resize(id + 1);
      attrs_.resize(id + 1, 0);
    }
    tokens_[id] = content;
    uint8_t attr = kAttrAdded;
    if (special) attr |= kAttrSpecial;
    if (lstrip) attr |= kAttrLstrip;
    if (rstrip) attr |= kAttrRstrip;
    if (normalized) attr |= kAttrNormalized;
    if (single) attr |= kAttrSingleWord;
    attrs_[id] = attr;
  }
  return Status::Ok();
}

Status Importer::ReadMerges(const Json& model) {
  const Json* merges = FindMember(model, "merges");
  if (merges == nullptr || !merges->is_array()) {
    return Status(StatusCode::kInvalidArgument, "tokenizer.json model has no merges array");
  }
  merges_.reserve(merges->size() * 3);
  size_t rank = 0;
  for (const Json& m : *merges) {
    std::string a, b;
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
        return Errorf(StatusCode::kInvalidArgument, "merge #%zu '%s' is not two tokens", rank,
                      s.c_str());
      }
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get_ref<const std::string&>();
      b = m[1].get_ref<const std::string&>();
    } else {
      return Errorf(StatusCode::kInvalidArgument, "merge #%zu is neither \"a b\" nor [a, b]", rank);
    }
    auto ia = vocab_.find(a), ib = vocab_.find(b), ic = vocab_.find(a + b);
    if (ia == vocab_.end() || ib == vocab_.end() || ic == vocab_.end()) {
      return Errorf(StatusCode::kInvalidArgument,
                    "merge #%zu '%s %s': a part or the merged token is not in the vocab", rank,
                    a.c_str(), b.c_str());
    }
    merges_.insert(merges_.end(), {ia->second, ib->second, ic->second});
    ++rank;
  }
  return Status::Ok();
}

void Importer::ResolveSpecialIds(const Json& model, const Json& config) {
  std::string unk;
  (void)GetOptString(model, "unk_token", &unk, "model");
  if (!unk.empty()) unk_ = FindToken(unk);
  if (config.is_object()) {
    const std::string bos = ConfigTokenName(config, "bos_token");
    const std::string eos = ConfigTokenName(config, "eos_token");
    if (!bos.empty()) bos_ = FindToken(bos);
    if (!eos.empty()) eos_ = FindToken(eos);
    return;
  }
  // Without tokenizer_config.json: the conventional names of each family.
  auto special = [&](const char* name) {
    const int32_t id = FindToken(name);
    return id >= 0 && (attrs_[id] & kAttrSpecial) ? id : -1;
  };
  if (p_.byte_level) {
    eos_ = special("<|endoftext|>");
  } else {
    bos_ = special("<s>");
    eos_ = special("</s>");
  }
}

Status Importer::Run(std::string_view json_text, std::string_view config_text, BpeData* out) {
  POCKET_ASSIGN_OR_RETURN(Json root, ParseJson(json_text, "tokenizer.json"));
  Json config;
  if (!config_text.empty()) {
    POCKET_ASSIGN_OR_RETURN(config, ParseJson(config_text, "tokenizer_config.json"));
  }
  if (!root.is_object()) {
    return Status(StatusCode::kInvalidArgument, "tokenizer.json is not a JSON object");
  }
  const Json* model = FindMember(root, "model");
  if (model == nullptr || !model->is_object()) {
    return Status(StatusCode::kInvalidArgument, "tokenizer.json has no model object");
  }
  POCKET_RETURN_IF_ERROR(ReadNormalizers(root, &p_));
  POCKET_RETURN_IF_ERROR(ReadPreTokenizers(root, &p_));
  ReadDecoders(root, &p_);
  if (p_.byte_level == p_.spm) {
    return Status(StatusCode::kUnsupported,
                  p_.byte_level ? "tokenizer.json mixes ByteLevel and Metaspace processing"
                                : "tokenizer.json is neither byte-level BPE (ByteLevel "
                                  "pre-tokenizer/decoder) nor SentencePiece-style BPE "
                                  "(Metaspace or Prepend/Replace \"▁\")");
  }
  if (p_.spm && !p_.regex.empty()) {
    return Status(StatusCode::kUnsupported, "SentencePiece-style BPE with a Split pre-tokenizer");
  }
  const Json* vocab = FindMember(*model, "vocab");
  const Json* added = FindMember(root, "added_tokens");
  id_limit_ = std::min<int64_t>(
      kMaxVocab, static_cast<int64_t>((vocab != nullptr ? vocab->size() : 0) +
                                      (added != nullptr && added->is_array() ? added->size() : 0)));
  POCKET_RETURN_IF_ERROR(ReadModel(*model));
  POCKET_RETURN_IF_ERROR(ReadAddedTokens(root, config));
  POCKET_RETURN_IF_ERROR(ReadMerges(*model));
  ResolveSpecialIds(*model, config);

  BpeData& d = *out;
  d = BpeData();
  d.kind = p_.byte_level ? TokenizerKind::kByteLevelBpe : TokenizerKind::kSpmBpe;
  d.flags = p_.flags;
  d.prepend = p_.prepend;
  d.regex = p_.regex;
  d.bos = bos_;
  d.eos = eos_;
  d.unk = unk_;
  for (size_t i = 0; i < tokens_.size(); ++i) d.AddToken(tokens_[i], attrs_[i]);
  d.merges = std::move(merges_);
  return Status::Ok();
}

}  // namespace

Status ImportHfJson(std::string_view tokenizer_json, std::string_view config_json, BpeData* out) {
  Importer importer;
  return importer.Run(tokenizer_json, config_json, out);
}

}  // namespace pocket::tok
