// Holds back streamed text while it could still become one of the stop
// strings, and cuts the text at the first stop string found.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pocket {

class StopStringFilter {
 public:
  explicit StopStringFilter(std::vector<std::string> stops);

  // Adds `piece` and returns the text that is now safe to emit. After a
  // stop string appears, returns the text before it and matched() is true.
  std::string Push(std::string_view piece);
  // The held-back text, once no more text will come (no match possible).
  std::string Finish();
  bool matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool matched_ = false;
};

}  // namespace pocket
