// tools/command_mutants.h: `lockstep mutants`, the mutant catalogue's kill table (tools/mutants/mutants.h).
//
// Every mutant of impl is run through the suite: the named cases first (claim checks and lockstep against
// the oracle), then up to `count` seeded random programs (every fourth with NaN and +-Inf), until one kills
// it, i.e. fails on the mutant while the unmutated impl passes it, on each path: in-process (lockstep) and
// through impl's protocol driver with --mutant (free-running with the error budget, the path every external
// implementation takes). The killing program is shrunk, and the
// table says which case or program killed each mutant, how small the shrunk program is, how long the kill
// took, and whether the usual end-of-training check, allclose(rtol=1e-3, atol=5e-4) on the final
// parameters, would have caught the mutant on the same program (shrunk, and before shrinking).
//
// With `oracle` a driver is the oracle on both paths, as in `lockstep run --oracle CMD`: the named cases of
// conformance/cases-python-oracle run too and the random programs carry maximize. The mutants of what LibTorch's C++
// API lacks (MutantInfo::needs_driver_oracle) are run live only then; without it their rows say "not run".
//
// With `replay` it also replays the fixture corpus on each mutant in-process (no oracle): the first fixture
// that fails on the mutant and passes on clean impl kills it. Every op mutant (MutantInfo::is_op) must die
// there, since an implementation without LibTorch has only the corpus.
//
// Example:
//   MutantsArgs args;
//   args.count = 100;
//   int exit_code = command_mutants(args);   // 0 every mutant killed, 1 some survived, 2 usage error
//   args.oracle = "python3 tools/adapters/pytorch_driver.py";
//   args.only = "maximize_*";                 // the mutants of maximize, judged by PyTorch's Python API
#pragma once

#include <cstdint>
#include <string>

#include "conformance/run/default_run.h"

namespace CLI {
class App;
}

namespace lockstep::tools {

struct MutantsArgs {
  int64_t count = kDefaultRunCount;  // random programs per mutant, at most (the run stops at the first kill);
                                     // the default run's (default_run.h), so "killed" means "by the default run"
  uint64_t seed = kDefaultRunSeed;
  int max_size = kDefaultRunMaxSize;
  std::string report_dir = "."; // mutants-report.md and .json go here; empty: none
  bool list = false;            // print the catalogue and exit
  std::string only;             // run just this mutant, or those a glob matches ("maximize_*")
  std::string oracle;           // a driver command as the oracle (`lockstep run --oracle`); empty: LibTorch's C++
                                // API, against which the mutants of what it lacks (maximize) are not run live
  std::string oracle_expectations_file;  // with `oracle`: its known differences, turned around (SEMANTICS 20.4)
  double shrink_seconds = 5;    // budget to shrink one killing program
  std::string cases_dir;        // empty: the shipped named cases
  std::string paths = "both";   // in-process (lockstep), driver (impl's protocol driver, --mutant), or both
  std::string impl_driver;      // empty: lockstep-impl-driver beside the lockstep binary
  bool replay = true;           // also replay the fixture corpus on each mutant (every mutant must die there)
  std::string fixtures_dir;     // empty: the shipped corpus
  int64_t jobs = 0;             // worker processes (mutants split over them); 0: the machine's cores
};

int command_mutants(const MutantsArgs& args);
CLI::App* add_mutants_command(CLI::App& app, MutantsArgs& args);

}  // namespace lockstep::tools
