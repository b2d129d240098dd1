// JSON Schema (draft 2020-12 keywords, and draft-07's "definitions")
// compiled to a grammar whose strings are JSON texts that the schema
// accepts. docs/structured-output.md lists the subset; a keyword outside it
// is an InvalidArgument error naming the keyword and where it is, never
// ignored. Between tokens the output may have nothing, one space, or a line
// break and up to kMaxIndent spaces or tabs; object members come in the
// order of their names (the JSON parser keeps no member order).
#pragma once

#include <memory>
#include <string_view>

#include "grammar/grammar.h"
#include "util/json_util.h"
#include "util/status.h"

namespace pocket {
namespace grammar {

constexpr int kMaxIndent = 20;

StatusOr<std::shared_ptr<const Grammar>> CompileJsonSchema(std::string_view schema_json);
StatusOr<std::shared_ptr<const Grammar>> CompileJsonSchemaValue(const Json& schema);

class SchemaCompiler;

// JSON Schemas as parts of a larger grammar (tool calls: a schema per
// tool). Each schema's $refs resolve inside that schema; rules common to
// JSON (strings, numbers, whitespace) are shared.
class JsonSchemaRules {
 public:
  explicit JsonSchemaRules(GrammarBuilder* builder);
  ~JsonSchemaRules();
  // An expression of the builder matching the JSON texts `schema` accepts.
  StatusOr<GrammarBuilder::Expr> Compile(const Json& schema);
  // What may come between JSON tokens (see above).
  GrammarBuilder::Expr Ws();

 private:
  std::unique_ptr<SchemaCompiler> compiler_;
};

// Any JSON value (what `{}` compiles to).
std::shared_ptr<const Grammar> JsonGrammar();

}  // namespace grammar
}  // namespace pocket
