// Tests of golden fixtures (fixture.h) and their replay (replay.h): tags, the strict reader, the shipped corpus,
// the record-by-record comparison without re-synchronisation, expected failures and tolerance overrides.
#include "conformance/run/fixture.h"

#include <cmath>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "conformance/run/interpreter.h"
#include "conformance/program/program_json.h"
#include "conformance/run/replay.h"
#include "conformance/program/trace_json.h"
#include "impl/engine_adapter.h"
#include "conformance/program/file_system.h"
#include "conformance/program/data_dir.h"

namespace lockstep {
namespace {

using json = nlohmann::ordered_json;

// An expectations entry as a file's shortest entry gives it: case ids, fields (none: the whole case), reason, category.
Expectation entry(std::string id, std::vector<std::string> fields, std::string reason, std::string category) {
  Expectation e;
  e.id = std::move(id);
  e.fields = std::move(fields);
  e.reason = std::move(reason);
  e.category = std::move(category);
  return e;
}

Action act(ActionKind k) {
  Action a;
  a.kind = k;
  return a;
}

bool has(const std::vector<std::string>& tags, const std::string& t) {
  return std::find(tags.begin(), tags.end(), t) != tags.end();
}

Program sgd_program() {
  Program p;
  p.params.push_back({"w", DType::Float32, {2}, {0.5, -1.5}});
  p.params.push_back({"b", DType::Float32, {}, {2}});
  p.params.push_back({"c", DType::Float64, {1}, {4}});  // in no loss and no group
  p.loss = add(sum(mul(param("w"), param("w"))), mul_scalar(param("b"), 3));
  OptimizerSpec o;
  o.kind = OptimizerKind::SGD;
  o.defaults.lr = 0.25;
  o.defaults.momentum = 0.9;
  o.defaults.nesterov = true;
  o.groups = {{{"w", "b"}, std::nullopt}};
  p.optimizer = o;
  p.actions = {act(ActionKind::Forward), act(ActionKind::Backward), act(ActionKind::Step),
               act(ActionKind::Forward), act(ActionKind::Backward), act(ActionKind::Step)};
  validate(p);
  return p;
}

Fixture fixture_of(const Program& p, const std::string& id = "unit-fixture") {
  Fixture f;
  f.id = id;
  f.description = "a test fixture";
  f.semantics = {"SEM-5.3"};
  f.program = p;
  f.program_json = program_to_json(p);
  auto engine = make_impl_engine();
  f.expected = run_program(p, *engine);
  f.tags = feature_tags(p, &f.expected);
  f.provenance.oracle_version = "1.13.0";
  f.provenance.generator = "named_case";
  return f;
}

// --- Feature tags (SEM sections in the tag table) ------------------------------------------------------------

TEST(FeatureTags, FromTheProgram) {
  std::vector<std::string> t = feature_tags(sgd_program());
  for (const char* want : {"float32", "float64", "scalar_param", "sgd", "momentum", "nesterov", "weight_tying",
                           "accumulation", "op:mul", "op:sum", "op:add", "op:mul_scalar"})
    EXPECT_TRUE(has(t, want)) << want;
  for (const char* not_want : {"adam", "set_to_none", "errors", "dampening", "gradient_fed", "no_optimizer"})
    EXPECT_FALSE(has(t, not_want)) << not_want;
}

TEST(FeatureTags, AccumulationIsPerParameter) {
  // forward(w) backward, forward(b) backward: two backwards, but each grad is written once.
  Program p;
  p.params.push_back({"w", DType::Float64, {2}, {1, 2}});
  p.params.push_back({"b", DType::Float64, {2}, {1, 2}});
  for (const char* n : {"w", "b"}) {
    Action f = act(ActionKind::Forward);
    f.loss = param(n);
    Action b = act(ActionKind::Backward);
    b.gradient = std::vector<double>{1, 1};
    p.actions.push_back(f);
    p.actions.push_back(b);
  }
  validate(p);
  std::vector<std::string> t = feature_tags(p);
  EXPECT_FALSE(has(t, "accumulation"));
  EXPECT_TRUE(has(t, "gradient_fed"));
  EXPECT_TRUE(has(t, "explicit_gradient"));
  EXPECT_TRUE(has(t, "no_optimizer"));
  p.actions.push_back(p.actions[0]);
  p.actions.push_back(p.actions[1]);
  EXPECT_TRUE(has(feature_tags(p), "accumulation"));
}

TEST(FeatureTags, FromTheTraceErrorsAndSkippedParameters) {
  Program p = sgd_program();
  Action none = act(ActionKind::SetGradNone);
  none.param = "b";
  p.actions.insert(p.actions.begin() + 2, none);  // b has no grad at the first step (SEM-4.3)
  Action extra = act(ActionKind::Backward);        // the graph was freed (SEM-2.5)
  p.actions.push_back(extra);
  validate(p);
  auto engine = make_impl_engine();
  Trace t = run_program(p, *engine);
  std::vector<std::string> tags = feature_tags(p, &t);
  EXPECT_TRUE(has(tags, "grad_none_skip"));
  EXPECT_TRUE(has(tags, "errors"));
  EXPECT_TRUE(has(tags, "set_to_none"));
}

TEST(FeatureTags, EveryTagHasAMeaningAndIsUnique) {
  std::set<std::string> seen;
  for (const FeatureTagInfo& t : all_feature_tags()) {
    EXPECT_TRUE(seen.insert(t.tag).second) << t.tag;
    EXPECT_GT(std::string(t.meaning).size(), 5u) << t.tag;
  }
}

// --- JSON -------------------------------------------------------------------------------------------------

TEST(FixtureJson, RoundTripsAndFormatsDeterministically) {
  Fixture f = fixture_of(sgd_program());
  f.provenance.generator = "random";
  f.provenance.seed = 7;
  f.provenance.index = 3;
  f.provenance.special_values = true;
  const std::string text = format_fixture_json(fixture_to_json(f));
  EXPECT_EQ(text, format_fixture_json(fixture_to_json(f)));
  EXPECT_EQ(text.back(), '\n');
  Fixture back = fixture_from_json(json::parse(text), "mem.json");
  EXPECT_EQ(back.id, f.id);
  EXPECT_EQ(back.tags, f.tags);
  EXPECT_EQ(back.semantics, f.semantics);
  EXPECT_EQ(back.provenance.seed, 7u);
  EXPECT_EQ(back.provenance.index, 3u);
  EXPECT_TRUE(back.provenance.special_values);
  EXPECT_EQ(trace_to_json(back.expected), trace_to_json(f.expected));
  EXPECT_EQ(program_to_json(back.program), f.program_json);
  // Arrays of numbers stay on one line.
  EXPECT_NE(text.find("\"values\": [0.5, -1.5]"), std::string::npos);
}

TEST(FixtureJson, StrictReaderNamesThePointer) {
  json good = fixture_to_json(fixture_of(sgd_program()));
  struct Case {
    std::function<void(json&)> mutate;
    const char* pointer;
  } cases[] = {
      {[](json& j) { j["id"] = "Bad Id"; }, "/id"},
      {[](json& j) { j["extra"] = 1; }, "/extra"},
      {[](json& j) { j["semantics"] = json::array({"section 3"}); }, "/semantics/0"},
      {[](json& j) { j["tags"] = json::array({"Has Space"}); }, "/tags/0"},
      {[](json& j) { j["program"]["actions"][0]["action"] = "fly"; }, "/program/actions/0/action"},
      {[](json& j) { j["expected"]["records"].erase(j["expected"]["records"].size() - 1); }, "/expected/records"},
      {[](json& j) { j["expected"]["records"][1]["action"] = "step"; }, "/expected/records/1/action"},
      {[](json& j) { j["expected"]["init"]["params"]["w"]["values"] = "x"; }, "/expected/init/params/w/values"},
      {[](json& j) { j["provenance"]["schema_version"] = 2; }, "/provenance/schema_version"},
      // Not narrowed to int before the comparison (it was read as version 1).
      {[](json& j) { j["provenance"]["schema_version"] = 4294967297LL; }, "/provenance/schema_version"},
      {[](json& j) { j["provenance"]["generator"] = "random"; }, "/provenance"},
  };
  for (const Case& c : cases) {
    json j = good;
    c.mutate(j);
    try {
      fixture_from_json(j, "f.json");
      ADD_FAILURE() << "accepted a fixture broken at " << c.pointer;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "f.json");
      EXPECT_EQ(e.pointer(), c.pointer) << e.what();
    }
  }
}

TEST(FixtureJson, ContentIdsAreStableAndDistinct) {
  json a = program_to_json(sgd_program());
  EXPECT_EQ(content_id("rnd", a), content_id("rnd", a));
  EXPECT_EQ(content_id("rnd", a).size(), 4u + 12u);
  Program q = sgd_program();
  q.params[0].values[0] = 0.25;
  EXPECT_NE(content_id("rnd", a), content_id("rnd", program_to_json(q)));
}

// --- The shipped corpus ------------------------------------------------------------------------------------

TEST(Corpus, LoadsWithUniqueIdsTagsThatFitAndEveryTagCovered) {
  std::vector<Fixture> all = load_fixtures(default_fixtures_dir());
  ASSERT_GE(all.size(), 50u);
  EXPECT_LE(all.size(), 600u);  // small enough to replay in CI on every driver (527 today: 336 op edge points, 48 from the default run)
  std::set<std::string> ids, covered;
  size_t gradient_fed = 0;
  for (const Fixture& f : all) {
    EXPECT_TRUE(ids.insert(f.id).second) << f.id;
    for (const std::string& t : feature_tags(f.program, &f.expected))
      EXPECT_TRUE(has(f.tags, t)) << f.id << " lacks computed tag " << t;
    covered.insert(f.tags.begin(), f.tags.end());
    EXPECT_FALSE(f.semantics.empty()) << f.id;
    if (f.provenance.generator == "gradient_fed") {
      ++gradient_fed;
      EXPECT_TRUE(has(f.tags, "gradient_fed")) << f.id;
    }
  }
  for (const FeatureTagInfo& t : all_feature_tags()) EXPECT_TRUE(covered.count(t.tag)) << t.tag;
  EXPECT_GE(gradient_fed, 10u);
}

// SEMANTICS 12.5: a recording that holds only for some versions says so; it reads back, and applies to those alone.
TEST(Fixture, VersionConditionRoundTripsAndSelects) {
  Fixture f = fixture_of(sgd_program(), "by-version");
  EXPECT_TRUE(fixture_applies(f, "1.13.0")) << "no condition: every version";
  f.when_pytorch = ">=2.0";
  const json j = fixture_to_json(f);
  ASSERT_TRUE(j.contains("when"));
  EXPECT_EQ(j["when"]["pytorch"], ">=2.0");
  const Fixture back = fixture_from_json(json::parse(format_fixture_json(j)), "by-version.json");
  EXPECT_EQ(back.when_pytorch, ">=2.0");
  EXPECT_TRUE(fixture_applies(back, "libtorch-2.6.0"));
  EXPECT_TRUE(fixture_applies(back, "2.11.0+cu128"));
  EXPECT_FALSE(fixture_applies(back, "libtorch-1.13.0"));
  EXPECT_FALSE(fixture_applies(back, "")) << "an unknown version gets no conditioned recording";
}

// Where versions differ the corpus holds a recording of each generation, and each says which (SEMANTICS 12.5).
TEST(Corpus, VersionDependentCasesAreRecordedPerGeneration) {
  std::set<std::string> below, at_least;
  for (const Fixture& f : load_fixtures(default_fixtures_dir())) {
    if (f.when_pytorch == "<2.0") below.insert(f.id);
    if (f.when_pytorch == ">=2.0") at_least.insert(f.id);
    if (!f.when_pytorch.empty()) {
      EXPECT_TRUE(fixture_applies(f, f.expected.engine)) << f.id << " does not hold for its own recorder";
    }
  }
  EXPECT_TRUE(below.count("sem12-embedding-saves-its-weight-by-version"));
  EXPECT_TRUE(at_least.count("sem12-embedding-saves-its-weight-by-version-torch2"));
  for (const std::string& id : at_least)
    EXPECT_TRUE(below.count(id.substr(0, id.size() - std::string("-torch2").size()))) << id << " has no 1.x recording";
}

TEST(Corpus, BrokenFixturesAreRejectedWithFileAndPointer) {
  const std::string dir = source_dir() + "/fixtures/testdata/invalid";
  int n = 0;
  for (const std::string& file : files::list_files(dir, {})) {
    ++n;
    try {
      read_fixture_file(file);
      ADD_FAILURE() << "accepted " << file;
    } catch (const InputError& err) {
      EXPECT_EQ(err.file(), file);
      EXPECT_NE(std::string(err.what()).find(file + ": "), std::string::npos) << err.what();
    }
  }
  EXPECT_GE(n, 5);
}

TEST(Corpus, DuplicateIdsAreAnError) {
  const std::string dir = files::temp_directory() + "/lockstep-fixture-dup";
  files::remove_all(dir);
  files::create_directories(dir + "/a");
  const std::string text = format_fixture_json(fixture_to_json(fixture_of(sgd_program(), "same-id")));
  std::ofstream(dir + "/a/one.json") << text;
  std::ofstream(dir + "/two.json") << text;
  try {
    load_fixtures(dir);
    ADD_FAILURE() << "duplicate ids accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("also used by"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_fixtures((dir + "/missing")), InputError);
  files::remove_all(dir);
}

TEST(Corpus, ImplReplaysTheWholeCorpusInProcess) {
  ReplayConfig config;
  for (const Fixture& f : load_fixtures(default_fixtures_dir())) {
    // impl follows the version that recorded the corpus (SEM-12.6), whatever LibTorch this lockstep links.
    ReplayCaseResult r =
        replay_in_process(f, [&f] { return make_impl_engine_following(impl_version_of(f.expected.engine)); }, config);
    EXPECT_EQ(r.status, ReplayStatus::Passed) << f.id << ": " << r.summary();
  }
}

// --- Comparison without re-synchronisation ----------------------------------------------------------------

TEST(Replay, IdenticalTracePassesAndAPerturbedOneFailsAtThatRecord) {
  Fixture f = fixture_of(sgd_program());
  EXPECT_EQ(compare_fixture_trace(f, f.expected, Tolerance{}).status, ReplayStatus::Passed);

  Trace bad = f.expected;
  bad.records[2].state.params[0].value.data[1] += 0.5;  // w after the first step
  ReplayCaseResult r = compare_fixture_trace(f, bad, Tolerance{});
  ASSERT_EQ(r.status, ReplayStatus::Failed);
  EXPECT_EQ(r.failure_category, "mismatch");
  EXPECT_EQ(r.failed_action, 2u);
  EXPECT_EQ(r.failed_action_name, "step");
  ASSERT_FALSE(r.differences.empty());
  EXPECT_NE(r.differences[0].path.find("w"), std::string::npos) << r.differences[0].path;
  EXPECT_NE(r.summary().find("action 2 (step)"), std::string::npos) << r.summary();
}

TEST(Replay, OneUlpPassesStructureNeverDoes) {
  Fixture f = fixture_of(sgd_program());
  Trace near = f.expected;
  double& v = near.records[2].state.params[0].value.data[0];
  v = std::nextafter(static_cast<float>(v), 10.0f);
  EXPECT_EQ(compare_fixture_trace(f, near, Tolerance{}).status, ReplayStatus::Passed);

  Trace structural = f.expected;
  structural.records[1].state.params[0].grad.same_as_previous = !structural.records[1].state.params[0].grad.same_as_previous;
  ReplayCaseResult r = compare_fixture_trace(f, structural, Tolerance{});
  EXPECT_EQ(r.status, ReplayStatus::Failed);
  EXPECT_EQ(r.failed_action, 1u);
}

TEST(Replay, ADifferenceAcceptedWhereItWasMadeIsNotReportedAgainLater) {
  // Without re-synchronisation a rounding difference made by a step stays in the state; the next action
  // (forward) does not touch the parameter, so it is not judged again against the value alone.
  Fixture f = fixture_of(sgd_program());
  Trace t = f.expected;
  auto bump = [](double& x) { x = std::nextafter(static_cast<float>(x), 10.0f); };
  bump(t.records[2].state.params[0].value.data[0]);  // after the step: within tolerance
  bump(t.records[3].state.params[0].value.data[0]);  // the same value carried into the forward's record
  EXPECT_EQ(compare_fixture_trace(f, t, Tolerance{}).status, ReplayStatus::Passed)
      << compare_fixture_trace(f, t, Tolerance{}).summary();
  // But a value that changes by itself at a record that should not touch it is a failure.
  Trace moved = f.expected;
  moved.records[3].state.params[0].value.data[0] += 0.125;
  EXPECT_EQ(compare_fixture_trace(f, moved, Tolerance{}).status, ReplayStatus::Failed);
}

TEST(Replay, TooFewOrTooManyRecords) {
  Fixture f = fixture_of(sgd_program());
  Trace shorter = f.expected;
  shorter.records.pop_back();
  ReplayCaseResult r = compare_fixture_trace(f, shorter, Tolerance{});
  EXPECT_EQ(r.status, ReplayStatus::Failed);
  EXPECT_EQ(r.failure_category, "trace_shape");
  Trace longer = f.expected;
  longer.records.push_back(longer.records.back());
  EXPECT_EQ(compare_fixture_trace(f, longer, Tolerance{}).failure_category, "trace_shape");
}

// --- Expected failures and tolerance overrides ----------------------------------------------------------------

TEST(ReplayExpectations, FailureBecomesExpectedAndPassBecomesUnexpected) {
  Fixture f = fixture_of(sgd_program(), "case-a");
  Trace bad = f.expected;
  bad.records[2].state.params[0].value.data[1] += 0.5;
  ReplayConfig config;
  config.expectations.entries = {entry("case-*", {}, "known", "implementation_bug")};
  ReplayCaseResult r = compare_fixture_trace(f, bad, Tolerance{});
  apply_expectations(r, config);
  EXPECT_EQ(r.status, ReplayStatus::ExpectedFailure);
  EXPECT_EQ(r.expected_category, "implementation_bug");

  ReplayCaseResult pass = compare_fixture_trace(f, f.expected, Tolerance{});
  apply_expectations(pass, config);
  EXPECT_EQ(pass.status, ReplayStatus::UnexpectedPass);
  ReplaySummary s = summarise({r, pass}, config);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.unexpected_passes, 1);
  ReplayConfig stale;
  stale.expectations.entries = {entry("nothing-*", {}, "r", "precision")};
  EXPECT_EQ(summarise({pass}, stale).stale_expectations.size(), 1u);
}

// Masks, not stops: a masked difference is accepted and the comparison goes on, so a later real bug is found.
TEST(ReplayExpectations, MaskedDifferencesDoNotEndTheComparison) {
  Fixture f = fixture_of(sgd_program(), "case-a");
  Expectations e;
  e.entries = {entry("case-*", {"w → grad.requires_grad", "group * → momentum"}, "a known API difference", "api_difference")};
  const FieldMask mask = e.mask_for(f.id);
  // Only the masked field differs (from the first backward on): known (masked), not failed.
  Trace masked_only = f.expected;
  for (Record& rec : masked_only.records)
    if (rec.state.params[0].grad.defined) rec.state.params[0].grad.requires_grad = !rec.state.params[0].grad.requires_grad;
  ReplayCaseResult r = compare_fixture_trace(f, masked_only, Tolerance{}, mask);
  EXPECT_EQ(r.status, ReplayStatus::Passed) << r.summary();
  ASSERT_FALSE(r.masked.empty());
  EXPECT_EQ(r.masked.front().reason, "a known API difference");
  EXPECT_EQ(r.masked.front().difference.path, "w → grad.requires_grad");
  ReplayConfig config;
  config.expectations = e;
  apply_expectations(r, config);
  EXPECT_EQ(r.status, ReplayStatus::ExpectedFailure);
  // The masked field differs in every record after the first backward, and the last step's value is wrong:
  // failed, there.
  Trace later_bug = masked_only;
  const size_t last = later_bug.records.size() - 1;
  later_bug.records[last].state.params[0].value.data[0] += 0.25;
  ReplayCaseResult r2 = compare_fixture_trace(f, later_bug, Tolerance{}, mask);
  EXPECT_EQ(r2.status, ReplayStatus::Failed);
  ASSERT_TRUE(r2.failed_action);
  EXPECT_EQ(*r2.failed_action, last);
  ASSERT_FALSE(r2.differences.empty());
  EXPECT_EQ(r2.differences.front().path, "w → value[0]");
  // Without the mask the same trace fails at the first backward.
  ReplayCaseResult r3 = compare_fixture_trace(f, later_bug, Tolerance{});
  ASSERT_TRUE(r3.failed_action);
  EXPECT_EQ(*r3.failed_action, 1u);
}

TEST(ToleranceOverrides, ReadAndApplyInOrder) {
  auto o = tolerance_overrides_from_json(json::parse(R"({"tolerance_overrides": [
      {"id": "*", "k": {"grad": 8}, "reason": "summation order"},
      {"id": "rnd-*", "k": {"grad": 16, "exp_avg_sq": 32}, "reason": "more"}]})"), "t.json");
  ReplayConfig c;
  c.tolerance_overrides = o;
  EXPECT_EQ(c.tolerance_for("tut001").k(Quantity::Grad), 8);
  EXPECT_EQ(c.tolerance_for("rnd-1").k(Quantity::Grad), 16);
  EXPECT_EQ(c.tolerance_for("rnd-1").k(Quantity::state("exp_avg_sq")), 32);
  EXPECT_EQ(c.tolerance_for("rnd-1").k(Quantity::Param), Tolerance{}.k(Quantity::Param));
  for (const char* bad : {R"({"tolerance_overrides": [{"id": "*", "k": {"speed": 2}, "reason": "r"}]})",
                          R"({"tolerance_overrides": [{"id": "*", "k": {"grad": -1}, "reason": "r"}]})",
                          R"({"tolerance_overrides": [{"id": "*", "k": {}, "reason": "r"}]})"}) {
    EXPECT_THROW(tolerance_overrides_from_json(json::parse(bad), "t.json"), InputError) << bad;
  }
}

TEST(Replay, DriverFailuresAreCasesNotCrashes) {
  Fixture f = fixture_of(sgd_program());
  ReplayConfig config;
  DriverOptions o;
  o.timeout = std::chrono::milliseconds(300);
  // It answers the start-up hello (PROTOCOL.md 2a), then hangs on the program.
  ExternalDriver hang(R"(read l; echo '{"hello": {"name": "hang", "version": "0", "protocol": 1}}'; sleep 30)", o);
  ReplayCaseResult r = replay_on_driver(f, hang, config);
  EXPECT_EQ(r.status, ReplayStatus::Failed);
  EXPECT_EQ(r.failure_category, "timeout");
  ExternalDriver skip(R"(while read l; do echo '{"id": "unit-fixture", "unsupported": "nesterov"}'; done)", o);
  ReplayCaseResult s = replay_on_driver(f, skip, config);
  EXPECT_EQ(s.status, ReplayStatus::Skipped);
  EXPECT_EQ(s.skipped_feature, "nesterov");
}

}  // namespace
}  // namespace lockstep
