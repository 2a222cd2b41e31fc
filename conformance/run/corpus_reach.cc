#include "conformance/run/corpus_reach.h"

#include <algorithm>

#include "conformance/generate/generators.h"
#include "conformance/program/coverage_cells.h"
#include "conformance/program/features.h"
#include "conformance/program/program_cost.h"
#include "conformance/run/default_run.h"

namespace lockstep {

void Reach::add(const Program& program) {
  const std::set<std::string> f = program_features(program);
  features.insert(f.begin(), f.end());
  const std::set<std::string> c = coverage_cells(program);
  cells.insert(c.begin(), c.end());
}

void Reach::add(const Reach& other) {
  features.insert(other.features.begin(), other.features.end());
  cells.insert(other.cells.begin(), other.cells.end());
}

Reach reach_of(const Program& program) {
  Reach r;
  r.add(program);
  return r;
}

std::vector<std::string> not_reached(const Reach& wanted, const Reach& have) {
  std::vector<std::string> out;
  for (const std::string& f : wanted.features)
    if (!have.features.count(f)) out.push_back("feature " + f);
  for (const std::string& c : wanted.cells)
    if (!have.cells.count(c)) out.push_back("cell " + c);
  return out;
}

bool fits_a_fixture(const Program& program) {
  const ProgramLimits limits;
  const ProgramCost cost = program_cost(program, limits);
  return cost.observed_values < limits.max_observed_values / 64 && cost.arithmetic < limits.max_arithmetic / 64;
}

DefaultRunReach default_run_reach(int64_t count, bool fixture_sized_only) {
  DefaultRunReach out;
  RandomPrograms programs(kDefaultRunSeed, default_run_gen_options());
  out.by_index.reserve(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (int64_t i = 0; i < count; ++i) {
    const Program p = programs.at(static_cast<uint64_t>(i)).value();
    out.by_index.push_back(fixture_sized_only && !fits_a_fixture(p) ? Reach{} : reach_of(p));
    out.total.add(out.by_index.back());
  }
  return out;
}

std::vector<int64_t> pick_to_close_the_gap(const DefaultRunReach& reach, const Reach& have) {
  Reach now = have;
  std::vector<int64_t> picked;
  auto gain = [&](const Reach& r) {
    size_t n = 0;
    for (const std::string& f : r.features) n += !now.features.count(f);
    for (const std::string& c : r.cells) n += !now.cells.count(c);
    return n;
  };
  for (;;) {
    size_t best_gain = 0;
    int64_t best = -1;
    for (size_t i = 0; i < reach.by_index.size(); ++i)
      if (const size_t g = gain(reach.by_index[i]); g > best_gain) best_gain = g, best = static_cast<int64_t>(i);
    if (best < 0) return picked;
    picked.push_back(best);
    now.add(reach.by_index[static_cast<size_t>(best)]);
  }
}

}  // namespace lockstep
