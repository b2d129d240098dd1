// docs/cli.md lists exactly the flags each command declares: its own table
// and the shared groups its "Shared flags:" line names, against the flags
// `pocket <command> --help` prints from the command's flag tables.
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/run_cli.h"

namespace pocket {
namespace {

using Flags = std::set<std::string>;

const char* const kCommands[] = {"run",   "chat",    "logits", "perplexity", "bench",     "convert",
                                 "synth", "inspect", "verify", "tokenize",   "detokenize"};

// "-m, --model FILE" -> {"-m", "--model"}.
void AddNames(const std::string& synopsis, Flags* out) {
  std::istringstream words(synopsis);
  std::string word;
  bool expect_name = true;
  while (words >> word) {
    const bool more = !word.empty() && word.back() == ',';
    if (more) word.pop_back();
    if (expect_name && word.size() > 1 && word[0] == '-') out->insert(word);
    expect_name = more;
  }
}

// The flags of --help's lines "  -x, --name VALUE   help" (-h, --help
// left out: every command has it).
Flags HelpFlags(const std::string& command) {
  const testing::CliOutput o = testing::RunCli(command + " --help");
  EXPECT_EQ(o.exit_code, 0) << command;
  Flags flags;
  std::istringstream lines(o.out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("  -", 0) != 0) continue;
    const size_t gap = line.find("  ", 2);
    AddNames(line.substr(2, gap == std::string::npos ? std::string::npos : gap - 2), &flags);
  }
  return flags;
}

// docs/cli.md by "## " section: the flags of its table rows (every
// backquoted span of a row's first cell that starts with '-') and its
// "Shared flags:" groups.
struct Section {
  Flags flags;
  std::vector<std::string> shared;
};

std::map<std::string, Section> DocSections() {
  std::ifstream in(std::string(POCKET_TEST_DATA) + "/../../docs/cli.md");
  EXPECT_TRUE(in.good());
  std::map<std::string, Section> sections;
  Section* current = nullptr;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      current = &sections[line.substr(3)];
    } else if (current != nullptr && line.rfind("| `-", 0) == 0) {
      const std::string cell = line.substr(2, line.find(" |", 2) - 2);
      for (size_t open = cell.find('`'); open != std::string::npos;
           open = cell.find('`', cell.find('`', open + 1) + 1)) {
        const size_t close = cell.find('`', open + 1);
        AddNames(cell.substr(open + 1, close - open - 1), &current->flags);
        if (close == std::string::npos) break;
      }
    } else if (current != nullptr && line.rfind("Shared flags: ", 0) == 0) {
      std::istringstream groups(line.substr(14));
      std::string group;
      while (std::getline(groups, group, ',')) {
        while (!group.empty() && (group[0] == ' ')) group.erase(0, 1);
        if (!group.empty() && group.back() == '.') group.pop_back();
        if (group != "none") current->shared.push_back(group);
      }
    }
  }
  return sections;
}

TEST(CliDocs, ListExactlyTheFlagsEachCommandDeclares) {
  const std::map<std::string, Section> docs = DocSections();
  for (const char* command : kCommands) {
    const auto section = docs.find(std::string("`pocket ") + command + "`");
    ASSERT_NE(section, docs.end()) << "docs/cli.md has no section for " << command;
    Flags documented = section->second.flags;
    for (std::string group : section->second.shared) {
      group[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(group[0])));
      const auto shared = docs.find(group + " flags");
      ASSERT_NE(shared, docs.end()) << "docs/cli.md has no section '" << group << " flags'";
      documented.insert(shared->second.flags.begin(), shared->second.flags.end());
    }
    Flags declared = HelpFlags(command);
    declared.erase("-h");
    declared.erase("--help");
    EXPECT_EQ(documented, declared) << "pocket " << command;
  }
}

// The parsing above finds what it should: a command whose help lists no
// flags would make the comparison empty on both sides.
TEST(CliDocs, HelpListsTheModelFlags) {
  const Flags run = HelpFlags("run");
  for (const char* flag : {"-m", "--model", "-t", "--kv", "--budget", "--kv-policy", "--stop"}) {
    EXPECT_EQ(run.count(flag), 1u) << flag;
  }
}

}  // namespace
}  // namespace pocket
