// Helpers for the grammar tests: compile-or-fail, and whether a grammar
// matches a whole string or only a prefix of one.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "grammar/grammar.h"
#include "grammar/matcher.h"

namespace pocket::testing {

template <typename T>
T MustCompile(StatusOr<T> g) {
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (!g.ok()) std::abort();
  return std::move(g).value();
}

// The whole of `text` is a sentence of the grammar.
inline bool Matches(const std::shared_ptr<const grammar::Grammar>& g, const std::string& text) {
  grammar::Matcher m(g);
  return m.AcceptBytes(text) && m.IsComplete();
}

// `text` can still be extended to a sentence.
inline bool IsPrefix(const std::shared_ptr<const grammar::Grammar>& g, const std::string& text) {
  grammar::Matcher m(g);
  return m.AcceptBytes(text);
}

}  // namespace pocket::testing
