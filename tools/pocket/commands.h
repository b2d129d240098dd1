// The `pocket` subcommands. Each lives in cmd_<name>.cc and returns the
// process exit status: 0 success, 1 runtime error (message on stderr),
// 2 usage error.
#pragma once

namespace pocket::cli {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// argv[0] is the subcommand name.
int CmdConvert(int argc, char** argv);
int CmdInspect(int argc, char** argv);
int CmdVerify(int argc, char** argv);
int CmdSynth(int argc, char** argv);
int CmdTokenize(int argc, char** argv);
int CmdDetokenize(int argc, char** argv);
int CmdRun(int argc, char** argv);
int CmdChat(int argc, char** argv);
int CmdLogits(int argc, char** argv);
int CmdPerplexity(int argc, char** argv);
int CmdBench(int argc, char** argv);

}  // namespace pocket::cli
