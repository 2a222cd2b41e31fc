// The corpus covers what the generator covers: every feature (SEMANTICS §13) and coverage cell the default run
// reaches is reached by a fixture of the shipped corpus, so a replay-only user gets the same search power. The
// check can fail: the corpus without its default_run/ fixtures misses cells, and not_reached names them.
#include "conformance/run/corpus_reach.h"

#include <gtest/gtest.h>

#include "conformance/program/coverage_cells.h"
#include "conformance/run/default_run.h"
#include "conformance/run/fixture.h"

namespace lockstep {
namespace {

// The default run's reach, computed once for the tests of this file.
const DefaultRunReach& default_run() {
  static const DefaultRunReach reach = default_run_reach(kDefaultRunCount);
  return reach;
}

Reach corpus_reach(bool with_default_run_folder) {
  Reach r;
  for (const Fixture& f : load_fixtures(default_fixtures_dir()))
    if (with_default_run_folder || f.provenance.generator != "default_run") r.add(f.program);
  return r;
}

TEST(CorpusReach, TheShippedCorpusReachesEverythingTheDefaultRunReaches) {
  const DefaultRunReach& run = default_run();
  const std::vector<std::string> gaps = not_reached(run.total, corpus_reach(true));
  std::string list;
  for (const std::string& g : gaps) list += "\n  " + g;
  EXPECT_TRUE(gaps.empty()) << gaps.size() << " feature(s) or coverage cell(s) the default run reaches (seed "
                            << kDefaultRunSeed << ", " << kDefaultRunCount << " programs, max size "
                            << kDefaultRunMaxSize << ") but no fixture does; run `lockstep fixtures generate`:" << list;
  // Not vacuous: the default run reaches every cell of the coverage tables (tools/check_default_run.sh checks
  // the same on the run's own report) and most features.
  EXPECT_GT(run.total.features.size(), 60u);
  std::string empty;
  for (const CoverageTable& t : coverage_tables())
    for (size_t r = 0; r < t.rows.size(); ++r)
      for (size_t c = 0; c < t.columns.size(); ++c)
        if (t.applies[r][c] && !run.total.cells.count(coverage_cell_key(t.name, t.rows[r], t.columns[c])))
          empty += "\n  " + coverage_cell_key(t.name, t.rows[r], t.columns[c]);
  EXPECT_TRUE(empty.empty()) << "coverage cells the default run does not reach:" << empty;
}

TEST(CorpusReach, WithoutItsDefaultRunFixturesTheCorpusHasGaps) {
  const DefaultRunReach& run = default_run();
  EXPECT_FALSE(not_reached(run.total, corpus_reach(false)).empty());
}

TEST(CorpusReach, NotReachedNamesEachMissingFeatureAndCell) {
  Reach wanted, have;
  wanted.features = {"op:mul", "sgd"};
  wanted.cells = {"ops|relu float32|zero", "situations|float64|retain_graph"};
  have.features = {"sgd", "adam"};
  have.cells = {"situations|float64|retain_graph"};
  EXPECT_EQ(not_reached(wanted, have),
            (std::vector<std::string>{"feature op:mul", "cell ops|relu float32|zero"}));
  EXPECT_TRUE(not_reached(have, have).empty());
}

TEST(CorpusReach, PickingClosesTheGapWithTheProgramsThatAddTheMost) {
  DefaultRunReach run;
  run.by_index.resize(4);
  run.by_index[0].cells = {"a"};
  run.by_index[1].cells = {"a", "b", "c"};
  run.by_index[2].cells = {"c", "d"};
  run.by_index[3].features = {"x"};
  for (const Reach& r : run.by_index) run.total.add(r);
  Reach have;
  have.features = {"x"};
  // 1 adds three, then 2 adds d; 0 adds nothing new, 3 only what `have` has.
  EXPECT_EQ(pick_to_close_the_gap(run, have), (std::vector<int64_t>{1, 2}));
  Reach after = have;
  for (int64_t i : pick_to_close_the_gap(run, have)) after.add(run.by_index[static_cast<size_t>(i)]);
  EXPECT_TRUE(not_reached(run.total, after).empty());
}

}  // namespace
}  // namespace lockstep
