// Option groups that several subcommands of the command line share (cli.cc), so that a flag means one thing and reads
// one way wherever it appears: the implementation under test, the scope of what it is given, the reports' folder,
// worker processes, the random programs' stream.
//
// Example (a subcommand's registration, tools/command_run.cc):
//   CLI::App* run = app.add_subcommand("run", "...");
//   add_implementation_options(run, ImplementationOptions{&args.engine, &args.timeout_ms, &args.mutant, &args.variant},
//                              "Implementation under test: ...");
//   add_scope_options(run, args.features, args.exclude_features, args.profile, ScopeOf::GeneratedPrograms);
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace lockstep::tools {

// --engine (help given by the subcommand), --timeout-ms, and where impl can be changed, --mutant and --variant.
struct ImplementationOptions {
  std::string* engine = nullptr;
  int64_t* timeout_ms = nullptr;
  std::string* mutant = nullptr;   // null: the subcommand has no --mutant
  std::string* variant = nullptr;  // null: no --variant
};
void add_implementation_options(CLI::App* command, const ImplementationOptions& o, const std::string& engine_help,
                                const std::string& timeout_help = "Driver commands: per-program timeout");

// --features, --exclude-features, --profile (feature_scope.h, api_profile.h): what random programs are generated, or
// which fixtures are replayed.
enum class ScopeOf { GeneratedPrograms, Fixtures };
void add_scope_options(CLI::App* command, std::string& features, std::string& exclude_features, std::string& profile,
                       ScopeOf of);

// --report-dir: the last one given counts (a reproduce line appends its own).
void add_report_dir_option(CLI::App* command, std::string& dir, const std::string& help);

// --jobs, -j: worker processes, 1 to 1024.
void add_jobs_option(CLI::App* command, int64_t& jobs, const std::string& help);

// --seed and --max-size of the random programs.
void add_program_stream_options(CLI::App* command, uint64_t& seed, int& max_size);

}  // namespace lockstep::tools
