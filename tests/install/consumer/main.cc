// A program outside the Pocket tree: found through find_package(pocket)
// from an installed copy, built at -O0 so every inline wrapper function is
// a real symbol (a clash with the library's internal names would show).
// Prints the greedy continuation of "Once upon a time" (20 tokens).
#include <cstdio>

#include <pocket/pocket.hpp>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  pocket::Model model;
  pocket::Status s = pocket::Model::Load(argv[1], {}, &model);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  pocket::Session session;
  if (!model.NewSession({}, &session).ok()) return 1;
  pocket::Sampling sampling;
  sampling.max_new_tokens = 20;
  pocket::Generation gen;
  s = session.Generate("Once upon a time", sampling, nullptr, &gen);
  std::printf("%s\n", gen.text.c_str());
  return s.ok() ? 0 : 1;
}
