// conformance/run/default_run.h: the random programs of `lockstep run` at its defaults, the run whose search power
// docs/search-power.md measures and whose reach the golden corpus must match (corpus_reach.h). One place for the
// defaults, so the command line, the mutants' kill search and the corpus check cannot drift apart.
//
// Example:
//   RandomPrograms programs(kDefaultRunSeed, default_run_gen_options());
//   for (int64_t i = 0; i < kDefaultRunCount; ++i) { const Program& p = programs.at(i).value(); ... }
#pragma once

#include <cstdint>


namespace lockstep {

struct GenOptions;  // conformance/generate/generators.h

inline constexpr uint64_t kDefaultRunSeed = 1;
inline constexpr int64_t kDefaultRunCount = 10000;        // random programs after the named cases
inline constexpr int kDefaultRunMaxSize = 30;
inline constexpr int kDefaultRunSpecialValuesEvery = 4;   // NaN and +-Inf in program i when i % 4 == 3

// The generator options of the default run (no scope: an implementation that supports everything).
GenOptions default_run_gen_options();

}  // namespace lockstep
