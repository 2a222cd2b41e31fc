// The fixture subcommands of `lockstep` (fixtures/README.md, fixtures/PROTOCOL.md):
//   lockstep replay --fixtures DIR --engine impl|oracle|'COMMAND'   check an engine against the golden corpus
//   lockstep fixtures generate [--out DIR]                          regenerate the corpus from the oracle
// and the external-driver half of `lockstep run --engine 'COMMAND'` (a driver run live against the oracle on
// the named cases and random programs).
// Each returns the process exit code (commands.h): 0 success, 1 failures found, 2 usage or input error.
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace lockstep::tools {

struct ReplayArgs {
  std::string fixtures_dir;              // empty: the shipped corpus (fixtures/corpus)
  std::string engine = "impl";           // "impl", "oracle", or a driver command line (PROTOCOL.md)
  std::string expected_failures_file;    // optional (replay.h format)
  std::string tolerance_file;            // optional tolerance overrides (replay.h format)
  std::string report_dir = ".";          // replay-report.{md,json,xml} go here, like run's
  int64_t timeout_ms = 10000;            // per program, external drivers
  std::string only;                      // comma-separated globs on fixture ids; empty: all
  std::string tags;                      // comma-separated: only fixtures carrying every one of these tags
  std::string exclude_tags;              // comma-separated: no fixture carrying any of these tags
  std::string features;                  // --features / --exclude-features / --profile: as for run
  std::string exclude_features;
  std::string profile;
  bool verbose = false;                  // a line per case, not only per failure
  int64_t jobs = 0;                      // worker processes; 0: the machine's cores, one per 200 fixtures at most
};
int command_replay(const ReplayArgs& args);
CLI::App* add_replay_command(CLI::App& app, ReplayArgs& args);

struct FixturesGenerateArgs {
  std::string out_dir;                   // empty: the source tree's fixtures/
  uint64_t seed = 20240501;              // the random corpus's seed
  int max_random = 120;                  // at most this many random fixtures
  uint64_t max_candidates = 20000;       // random programs looked at before giving up on a tag
  bool version_dependent_only = false;   // only the named cases whose checks depend on the version (SEM-12.5)
  std::string oracle;                    // --oracle CMD: record corpus/python-oracle with this driver (SEM-20.2)
};
int command_fixtures_generate(const FixturesGenerateArgs& args);
// `fixtures` and its subcommand `generate` (set in `generate`).
CLI::App* add_fixtures_command(CLI::App& app, FixturesGenerateArgs& args, CLI::App*& generate);

// `lockstep run --engine 'COMMAND'`: the named cases and `count` random programs (seed, max_size), each run on
// the oracle and sent to the driver; traces compared record by record (no re-synchronisation is possible over
// the protocol). Reports like `lockstep replay`.

}  // namespace lockstep::tools
