// The subcommands of the `lockstep` command line. Each returns the process exit code:
// 0 success, 1 discrepancies (or failed checks) found, 2 usage or input error. Each also registers its flags
// (add_NAME_command, in its command_NAME.cc, with the option groups of cli_options.h); cli.cc parses and dispatches.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "conformance/run/default_run.h"

namespace CLI {
class App;
}

namespace lockstep::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitDiscrepancies = 1;
inline constexpr int kExitInputError = 2;

struct RunArgs {
  std::string engine = "impl";    // the implementation under test: impl, oracle (self-check) or a driver command
  std::string cases_dir;          // empty: the cases shipped with the source tree
  int64_t count = kDefaultRunCount;  // random programs after the named cases: at the default seed and size, they
                                     // kill every mutant of the catalogue (docs/search-power.md "The default run")
  uint64_t seed = kDefaultRunSeed;
  int max_size = kDefaultRunMaxSize;
  bool free_running = false;
  bool special_values = false;    // NaN and +-Inf in every random program
  int special_values_every = kDefaultRunSpecialValuesEvery;  // else in every n-th (program i with i % n == n - 1); 0: in none
  std::string report_dir = ".";
  std::string only_case;          // run just this named case (reproduce a failure)
  int64_t only_index = -1;        // run just this random program index (reproduce a failure)
  std::string mutant;             // impl only: run impl with this mutant selected (tools/mutants/mutants.h)
  std::string variant;            // impl only: a legitimate variant of impl (tools/variants/variants.h)
  std::string expectations_file;  // expectations.h; empty: conformance/compare/expectations.json (in-process engines)
  double shrink_seconds = 10;     // time budget to shrink one failing program
  std::string tolerance_file;            // tolerance overrides (the entries matching "*" apply)
  int64_t timeout_ms = 10000;            // drivers: per-program timeout
  std::string features;                  // --features: within each category named, only these (feature_scope.h)
  std::string exclude_features;          // --exclude-features: never these
  bool focus = false;                    // --focus: draw element-wise ops among the scoped ones (GenOptions::focus)
  std::string profile;                   // --profile NAME|FILE|none; empty: the one the driver's hello names
  int64_t jobs = 0;                      // worker processes; 0: the machine's cores (report_shards.h)
  std::string shard;                     // "i/n": only this slice (report_shards.h); empty: GTEST_* or the whole run
  std::string oracle;                    // --oracle CMD: a driver as the oracle (SEMANTICS 20.2); empty: LibTorch
  std::string oracle_expectations_file;  // --oracle-expectations: the oracle's known differences, turned around (20.4)
};
int command_run(const RunArgs& args);
CLI::App* add_run_command(CLI::App& app, RunArgs& args);

struct TraceArgs {
  std::string program_file;
  std::string engine = "oracle";  // an engine name, or a driver command line (fixtures/PROTOCOL.md)
  std::string mutant, variant;    // impl only (tools/mutants/, tools/variants/)
  int64_t timeout_ms = 10000;     // a driver command: the program's timeout
  bool table = false;
};
int command_trace(const TraceArgs& args);
CLI::App* add_trace_command(CLI::App& app, TraceArgs& args);

struct MatrixArgs {
  std::vector<std::string> reports;  // lockstep-report.json / replay-report.json files
  std::string out_dir = ".";
  size_t max_plots = 100;
  bool strict = false;               // exit 1 when a failure is not explained by an expectation
};
int command_matrix(const MatrixArgs& args);
CLI::App* add_matrix_command(CLI::App& app, MatrixArgs& args);

struct MergeArgs {
  std::vector<std::string> reports;  // the lockstep-report.json of every shard of one run
  std::string report_dir = ".";
};
// The reports of the shards of one run as the reports of the whole run (report_shards.h); exit 1 when it failed.
int command_merge(const MergeArgs& args);
CLI::App* add_merge_command(CLI::App& app, MergeArgs& args);

struct FeaturesArgs {
  bool json = false;             // a JSON array of {name, category, meaning}
  bool optional_fields = false;  // the optional trace fields instead (optional_fields.h)
};
int command_features(const FeaturesArgs& args);
CLI::App* add_features_command(CLI::App& app, FeaturesArgs& args);

}  // namespace lockstep::tools
