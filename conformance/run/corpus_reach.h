// conformance/run/corpus_reach.h: what programs reach -- the features of SEMANTICS §13 (features.h) and the
// coverage cells (coverage_cells.h) -- and what the default run (default_run.h) reaches that the golden corpus
// does not. A replay-only user has only the corpus: every feature and cell the default run reaches must be
// reached by some fixture too, or replay proves less than a live run. `lockstep fixtures generate` adds the
// default run's programs that close the gap (corpus_builder.h, folder default_run/); corpus_reach_test checks
// the shipped corpus.
//
// Example:
//   Reach corpus;
//   for (const Fixture& f : load_fixtures(default_fixtures_dir())) corpus.add(f.program);
//   for (const std::string& gap : not_reached(default_run_reach(kDefaultRunCount).total, corpus)) std::cout << gap;
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "conformance/program/program.h"

namespace lockstep {

struct Reach {
  std::set<std::string> features;  // "op:mul", "sgd", "special_values", ...
  std::set<std::string> cells;     // "ops|relu float32|zero", "situations|float64|retain_graph", ...

  void add(const Program& program);
  void add(const Reach& other);
  bool empty() const { return features.empty() && cells.empty(); }
};

Reach reach_of(const Program& program);

// "feature NAME" and "cell TABLE|ROW|COLUMN" for each of `wanted`'s features and cells that `have` lacks: the
// features first, then the cells, each in sorted order.
std::vector<std::string> not_reached(const Reach& wanted, const Reach& have);

// Whether `program` is small enough to ship as a fixture: far inside the run limits, under 1/64 of them
// (ProgramCost.ShippedProgramsAreFarInsideTheLimits checks the shipped corpus).
bool fits_a_fixture(const Program& program);

// The default run's random programs (the first `count`), each with what it reaches, and their union. With
// `fixture_sized_only`, a program that does not fit a fixture reaches nothing (the candidates of a corpus).
struct DefaultRunReach {
  std::vector<Reach> by_index;  // program i's reach
  Reach total;
};
DefaultRunReach default_run_reach(int64_t count, bool fixture_sized_only = false);

// Indices of programs of `reach.by_index` that, added to `have`, reach everything `reach.total` does: greedy,
// most new features and cells first (ties: the lower index), so few programs are picked.
std::vector<int64_t> pick_to_close_the_gap(const DefaultRunReach& reach, const Reach& have);

}  // namespace lockstep
