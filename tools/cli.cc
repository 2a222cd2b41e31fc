// The command line (run_main.h): `lockstep --help` lists the subcommands; each has its own --help. tools/main.cc is
// `lockstep` itself; a C++ framework's own runner calls run_main() with its engines.
#include "tools/run_main.h"

#include <signal.h>

#include <csignal>
#include <new>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "conformance/program/cleanup_guard.h"
#include "conformance/program/data_dir.h"

#include "tools/command_mutants.h"
#include "tools/commands.h"
#include "tools/commands_fixtures.h"
#include "conformance/program/did_you_mean.h"
#include "tools/engines.h"
#include "tools/workers.h"

namespace lockstep {

namespace {

// After a failed parse: "did you mean ...?" for the first word that names no subcommand or flag of the command
// line given (`lockstep rnu` -> run, `lockstep run --cout 5` -> --count), or "" when nothing is near.
std::string did_you_mean_hint(const CLI::App& app, int argc, char** argv) {
  const CLI::App* command = &app;
  int i = 1;
  for (; i < argc && argv[i][0] != '-'; ++i) {  // the subcommands named, outermost first
    std::vector<std::string> names;
    for (const CLI::App* sub : command->get_subcommands([](const CLI::App*) { return true; }))
      names.push_back(sub->get_name());
    if (names.empty()) break;  // a positional argument of a command without subcommands
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : command->get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == argv[i]) next = sub;
    if (!next) {
      const std::string near = nearest_name(argv[i], names);
      return fmt::format("'{}' is no subcommand{}{} (subcommands: {})", argv[i],
                         command == &app ? "" : " of '" + command->get_name() + "'",
                         near.empty() ? "" : ": did you mean '" + near + "'?", fmt::join(names, ", "));
    }
    command = next;
  }
  std::vector<std::string> flags;
  for (const CLI::Option* o : command->get_options())
    for (const std::string& n : o->get_lnames()) flags.push_back("--" + n);
  for (; i < argc; ++i) {
    const std::string word(argv[i]);
    if (word.rfind("--", 0) != 0 || word == "--") continue;
    const std::string flag = word.substr(0, word.find('='));
    if (std::find(flags.begin(), flags.end(), flag) != flags.end()) continue;
    const std::string near = nearest_name(flag, flags);
    if (!near.empty()) return fmt::format("'{}' is no flag of '{}': did you mean '{}'?", flag, command->get_name(), near);
  }
  return "";
}

}  // namespace

int run_main_with_data(int argc, char** argv, const std::vector<EngineRegistration>& engines, const char* data) {
  using namespace lockstep::tools;
  // A --jobs worker knows it is one before anything starts a thread or a child (workers.h).
  claim_worker_role();
  // Then the process that cleans up after this one however it ends (drivers, temporaries; cleanup_guard.h).
  cleanup_guard::start();
  // LibTorch 2.x catches SIGHUP when it is loaded (and counts it): a run must end on SIGHUP, SIGINT and SIGTERM as
  // their default actions do (issue 29). A signal inherited as ignored (nohup) stays ignored.
  for (int s : {SIGHUP, SIGINT, SIGTERM}) {
    struct sigaction current {};
    if (::sigaction(s, nullptr, &current) == 0 && !(current.sa_flags & SA_SIGINFO) &&
        current.sa_handler == SIG_IGN)
      continue;
    if (current.sa_handler != SIG_DFL || (current.sa_flags & SA_SIGINFO)) std::signal(s, SIG_DFL);
  }
  if (data) set_data_dir(data);
  try {
    register_engines(engines);
  } catch (const std::exception& e) {
    std::cerr << "lockstep: " << e.what() << "\n";
    return kExitInputError;
  }
  CLI::App app{"lockstep: holds implementations of training-step semantics (grad accumulation, zero_grad, "
               "SGD, Adam, AdamW, RMSprop, Adagrad, L-BFGS) against LibTorch, action by action.\n"
               "Exit codes: 0 success, 1 discrepancies found, 2 usage or input error."};
  app.require_subcommand(1);

  RunArgs run_args;
  CLI::App* run = add_run_command(app, run_args);
  MergeArgs merge_args;
  CLI::App* merge = add_merge_command(app, merge_args);
  TraceArgs trace_args;
  CLI::App* trace = add_trace_command(app, trace_args);
  ReplayArgs replay_args;
  CLI::App* replay = add_replay_command(app, replay_args);
  FixturesGenerateArgs generate_args;
  CLI::App* generate = nullptr;
  add_fixtures_command(app, generate_args, generate);
  MutantsArgs mutants_args;
  CLI::App* mutants = add_mutants_command(app, mutants_args);
  MatrixArgs matrix_args;
  CLI::App* matrix = add_matrix_command(app, matrix_args);
  FeaturesArgs features_args;
  CLI::App* features = add_features_command(app, features_args);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A mistyped subcommand or flag: said with the nearest name instead of CLI11's "A subcommand is required".
    const std::string hint = e.get_exit_code() == 0 ? "" : did_you_mean_hint(app, argc, argv);
    if (!hint.empty()) {
      std::cerr << "lockstep: " << hint << "\nRun with --help for more information.\n";
      return kExitInputError;
    }
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitInputError;
  }

  try {
    if (*run) return command_run(run_args);
    if (*trace) return command_trace(trace_args);
    if (*mutants) return command_mutants(mutants_args);
    if (*replay) return command_replay(replay_args);
    if (*matrix) return command_matrix(matrix_args);
    if (*merge) return command_merge(merge_args);
    if (*generate) return command_fixtures_generate(generate_args);
    if (*features) return command_features(features_args);
  } catch (const std::bad_alloc&) {
    // The program limits keep every accepted input within bounded memory (docs/programs-and-limits.md "Limits"); this is a machine
    // with less than that, or a bug: said as such, never an abort.
    std::cerr << "lockstep: out of memory: this machine could not hold what the run needed (docs/programs-and-limits.md \"Limits\" "
                 "gives the memory the limits allow)\n";
    return kExitInputError;
  } catch (const std::exception& e) {
    std::cerr << "lockstep: " << e.what() << "\n";
    return kExitInputError;
  }
  return kExitInputError;
}

}  // namespace lockstep
