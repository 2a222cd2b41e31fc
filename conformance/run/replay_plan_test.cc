// Tests of the replay plan (replay_plan.h) on the shipped corpus: the selection, the fixtures of another PyTorch
// version, the scope, zero_grad() spelled out where the implementation's default is not the recorder's, and a
// planned fixture replayed on impl (passes) and on impl with the other default (passes only spelled out).
#include "conformance/run/replay_plan.h"

#include <gtest/gtest.h>

#include "conformance/run/zero_grad_default.h"
#include "impl/engine_adapter.h"

namespace lockstep {
namespace {

const std::vector<Fixture>& corpus() {
  static const std::vector<Fixture> fixtures = load_fixture_index(default_fixtures_dir());
  return fixtures;
}

RunScope empty_scope(const std::string& features = "") {
  Expectations none;
  Capabilities caps;
  caps.name = "test";
  return make_run_scope(caps, "", features, "", "", none);
}

std::string corpus_recorder() {
  for (const Fixture& f : corpus())
    if (f.when_pytorch.empty()) return f.expected.engine;
  return "";
}

TEST(ReplayPlan, TheRecorderNamesItsZeroGradDefault) {
  EXPECT_FALSE(recorder_zero_grad_none("libtorch-1.13.1"));
  EXPECT_TRUE(recorder_zero_grad_none("libtorch-2.6.0"));
  EXPECT_TRUE(recorder_zero_grad_none("2.0"));
  EXPECT_FALSE(recorder_zero_grad_none("not a version"));
}

TEST(ReplayPlan, SelectsByGlobAndTagsInCorpusOrder) {
  RunScope scope = empty_scope();
  const ReplayPlan plan = plan_replay(corpus(), {{"tut001-*"}, {}, {}}, scope, corpus_recorder(), false,
                                      recorder_zero_grad_none(corpus_recorder()));
  ASSERT_FALSE(plan.planned.empty());
  EXPECT_EQ(plan.matched, plan.planned.size() + plan.left_out.size());  // version and scope
  for (size_t i = 0; i < plan.planned.size(); ++i) {
    EXPECT_EQ(plan.planned[i].sent.id.rfind("tut001-", 0), 0u) << plan.planned[i].sent.id;
    EXPECT_FALSE(plan.planned[i].default_differs);
    if (i > 0) {
      EXPECT_LT(plan.planned[i - 1].original, plan.planned[i].original);  // corpus order
    }
  }
  RunScope scope2 = empty_scope();
  const ReplayPlan none = plan_replay(corpus(), {{"tut001-*"}, {"no-such-tag"}, {}}, scope2, corpus_recorder(), false, false);
  EXPECT_EQ(none.matched, 0u);
  EXPECT_TRUE(none.planned.empty());
}

TEST(ReplayPlan, AnotherVersionsRecordingsAreLeftOutWithTheVersion) {
  RunScope scope = empty_scope();
  const ReplayPlan plan = plan_replay(corpus(), {}, scope, corpus_recorder(), false,
                                      recorder_zero_grad_none(corpus_recorder()));
  ASSERT_GT(plan.other_versions, 0u);  // the corpus holds 2.x recordings of version-conditioned cases
  size_t named_version = 0;
  for (const auto& [id, why] : plan.left_out) named_version += why.rfind("recorded for PyTorch ", 0) == 0;
  EXPECT_EQ(named_version, plan.other_versions);
  // impl follows every recorder: nothing is another version's, nothing left out.
  RunScope scope2 = empty_scope();
  const ReplayPlan all = plan_replay(corpus(), {}, scope2, corpus_recorder(), true, false);
  EXPECT_EQ(all.planned.size(), corpus().size());
  EXPECT_EQ(all.other_versions, 0u);
}

TEST(ReplayPlan, OutOfScopeFixturesAreLeftOutInTheScope) {
  RunScope scope = empty_scope("adam");
  const ReplayPlan plan = plan_replay(corpus(), {}, scope, corpus_recorder(), false,
                                      recorder_zero_grad_none(corpus_recorder()));
  ASSERT_FALSE(plan.planned.empty());
  EXPECT_GT(scope.coverage.out_of_scope, 0);
  EXPECT_EQ(static_cast<size_t>(scope.coverage.out_of_scope) + plan.other_versions, plan.left_out.size());
  // --features narrows what a program may use: no optimizer, or Adam.
  for (const PlannedFixture& p : plan.planned)
    if (p.sent.program.optimizer) {
      EXPECT_EQ(p.sent.program.optimizer->kind, OptimizerKind::Adam) << p.sent.id;
    }
}

TEST(ReplayPlan, AnotherDefaultSpellsZeroGradOutAndReplaysAsTheRecorder) {
  const std::string recorder = corpus_recorder();
  const bool theirs = recorder_zero_grad_none(recorder);
  RunScope scope = empty_scope();
  // An implementation whose zero_grad() default is the other generation's.
  const ReplayPlan plan = plan_replay(corpus(), {}, scope, recorder, false, !theirs);
  size_t spelled = 0;
  for (const PlannedFixture& p : plan.planned) {
    if (!p.spelled_out) continue;
    ++spelled;
    EXPECT_TRUE(uses_zero_grad_default(p.original->program));
    EXPECT_FALSE(uses_zero_grad_default(p.sent.program));
  }
  ASSERT_GT(spelled, 0u);
  // Replayed on impl with the other default: the plan makes it pass (the engine and the program as the recorder's).
  auto other_default = [&](const std::string&) { return make_impl_engine(!theirs); };
  size_t unplanned_fails = 0;
  for (const PlannedFixture& p : plan.planned) {
    if (!p.spelled_out) continue;
    const ReplayCaseResult r = replay_planned(p, nullptr, other_default, ReplayConfig{});
    EXPECT_EQ(r.status, ReplayStatus::Passed) << p.sent.id << ": " << r.failure;
    EXPECT_FALSE(r.areas.empty());
    // Without the plan (the implementation's own default, the program as recorded): where zero_grad() met a grad,
    // the recording differs.
    PlannedFixture unplanned = p;
    unplanned.default_differs = false;
    unplanned.spelled_out = false;  // replay_planned() reads the file's program again
    unplanned_fails += replay_planned(unplanned, nullptr, other_default, ReplayConfig{}).status != ReplayStatus::Passed;
  }
  EXPECT_GT(unplanned_fails, 0u);
}

}  // namespace
}  // namespace lockstep
