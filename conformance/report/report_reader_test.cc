// Tests of reading a run report back (report_reader.h) and merging shards (report_shards.h): every kind of case
// and coverage field written, read and written again gives the same Markdown, JSON and JUnit bytes; a report
// split into shards the way `lockstep run --shard` splits a run merges into the bytes of the whole; bad files and
// incomplete or mixed sets of shards are errors naming the file and the field.
#include "conformance/report/report_reader.h"

#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "conformance/program/coverage_cells.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/optional_fields.h"
#include "conformance/program/program_json.h"
#include "conformance/report/report_shards.h"
#include "conformance/program/file_system.h"
#include "conformance/program/data_dir.h"

namespace lockstep {
namespace {

using json = nlohmann::ordered_json;

Program small_program(double first_value) {
  Program p;
  p.params.push_back({"w", DType::Float32, {2}, {first_value, 2}});
  p.loss = sum(mul(param("w"), param("w")));
  OptimizerSpec o;
  o.kind = OptimizerKind::SGD;
  o.defaults.lr = 0.1;
  p.optimizer = o;
  p.actions = {Action::forward(), Action::backward(), Action::step()};
  return p;
}

Difference numeric(const std::string& path, double actual) {
  Difference d;
  d.kind = DifferenceKind::Numeric;
  d.path = path;
  d.quantity = Quantity::Param;
  d.expected = 0.5;
  d.actual = actual;
  d.expected_text = "0.5";
  d.actual_text = std::to_string(actual);
  d.absolute_error = std::abs(actual - 0.5);
  d.relative_error = std::numeric_limits<double>::infinity();
  d.ulp_error = 1e30;
  d.scale = 0.5;
  d.allowed_ulps = 4;
  d.bound = "4 ulp of 0.5 (float32)";
  return d;
}

// Every kind of case the runs report, one per index: passed (with free-running growth), failed and shrunk (NaN,
// a structure difference, an omitted summary, stderr), known by a mask (passed, with its program and reproduce
// line), skipped, an unexpected pass, a setup failure, an engine failure.
CaseReport case_of_kind(int kind, const std::string& id) {
  LockstepResult r;
  r.actions_run = 3;
  std::optional<Program> program;
  std::string reproduce = "lockstep run --index 7";
  CaseReport c;
  switch (kind % 7) {
    case 0: {
      GrowthRow init;
      init.action = "init";
      GrowthRow step;
      step.action_index = 2;
      step.action = "step";
      step.max_ulp_error[Quantity::Param] = 0.5;
      step.max_ulp_error[Quantity::Grad] = 0;
      r.growth = {init, step};
      r.mode = RunMode::FreeRunning;
      break;
    }
    case 1: {
      r.passed = false;
      r.failed_action = 2;
      r.failed_action_name = "step";
      r.differences.push_back(numeric("w → value[0]", std::numeric_limits<double>::quiet_NaN()));
      Difference s;
      s.path = "w → grad";
      s.expected_text = "defined";
      s.actual_text = "undefined";
      s.bound = "exact";
      r.differences.push_back(s);
      Difference omitted = numeric("w → value[...]", 0);
      omitted.omitted = 12;  // a summary entry: no numbers (comparator.h)
      omitted.expected = omitted.actual = omitted.absolute_error = omitted.relative_error = omitted.ulp_error =
          omitted.scale = omitted.allowed_ulps = std::numeric_limits<double>::quiet_NaN();
      r.differences.push_back(omitted);
      r.driver_stderr = "warning: \xff not UTF-8, and a cut arrow: \xe2\x86";
      r.stop_reason = "a later structural difference";
      r.claim_failures = {{"action 1 /params/w/grad: expected [2.0], found [4.0] (first difference at /0)",
                           "SEMANTICS §3.2: backward accumulates into .grad", {"SEM-3.2", "SEM-3.4"}},
                          {"action 2 /params/w/value: expected [0.5], found [0.25]", "SEMANTICS §3.2: backward accumulates into .grad",
                           {"SEM-3.2", "SEM-3.4"}}};
      program = small_program(1);
      c = make_case_report(id, r, program, reproduce);
      c.original_program = small_program(-1.5);
      c.shrink_steps = 17;
      c.areas = {"sgd", "grad accumulation"};
      return c;
    }
    case 2: {
      MaskedDifference m;
      m.action_index = 2;
      m.action = "step";
      m.difference = numeric("w → value[1]", 0.50001);
      m.reason = "tfjs rounds differently";
      MaskedDifference at_setup = m;
      at_setup.action_index.reset();
      at_setup.action = "init";
      r.masked = {m, at_setup};
      program = small_program(3);
      c = make_case_report(id, r, program, reproduce);
      EXPECT_EQ(c.status, CaseStatus::Known);
      return c;
    }
    case 3:
      r.skipped = "float64";
      program = small_program(4);
      break;
    case 4: {
      Expectations e;
      Expectation whole;
      whole.id = id;
      whole.reason = "a bug";
      e.entries.push_back(whole);
      program = small_program(5);
      c = make_case_report(id, r, program, reproduce, &e);  // an unexpected pass: failed
      EXPECT_EQ(c.status, CaseStatus::Failed);
      return c;
    }
    case 5:
      r.passed = false;
      r.failed_at_setup = true;
      r.failed_action_name = "init";
      r.differences.push_back(numeric("w → value[0]", 2));
      program = small_program(6);
      break;
    case 6:
      r.passed = false;
      r.engine_failure = "engine under test (impl) threw from synchronise() after action 3 (step): boom";
      program = small_program(7);
      break;
  }
  c = make_case_report(id, r, program, reproduce);
  if (c.status == CaseStatus::Passed) c.program.reset();
  return c;
}

CoverageReport sample_coverage() {
  CoverageReport c;
  c.implementation = json{{"name", "impl"}, {"supports", {{"dtypes", {"float32"}}}}};
  c.profile = "pytorch-1.13";
  c.left_out = {{{"float64", "adamw"}, "the implementation does not support them"}};
  c.exercised = {{"sgd", 3}, {"float32", 5}};
  c.not_exercised = {"adam", "rmsprop"};
  c.rules = {{"zero-grad-default", "default", "zero_grad() sets to none", 2},
             {"py-group-options-inherit", "avoid", "groups inherit", 1}};
  c.warnings = {"unknown feature 'xyz' in the hello"};
  c.tested = 5;
  c.skipped = 1;
  c.out_of_scope = 1;
  c.left_out_cases = {{"sem6-adam-defaults", "adam is out of scope", {"adam"}}};
  const CoverageTable& t = coverage_tables().front();
  for (size_t row = 0; row < t.rows.size(); ++row)
    for (size_t col = 0; col < t.columns.size(); ++col)
      if (t.applies[row][col] && (row + col) % 3 == 0) c.cells[coverage_cell_key(t.name, t.rows[row], t.columns[col])] = 1 + row;
  c.optional_fields[optional_fields().front().name] = OptionalFieldCount{4, 1, 0};
  return c;
}

RunReport sample_report(int64_t count) {
  RunReport r;
  r.oracle_engine = "libtorch-1.13.1";
  r.under_test_engine = "node driver.js";
  r.seed = 18446744073709551615ull;
  r.count = count;
  r.max_size = 30;
  r.mode = RunMode::FreeRunning;
  r.cases.push_back(case_of_kind(1, "sem5-named-failure"));
  r.cases.push_back(case_of_kind(2, "tut001-named-known"));
  for (int64_t i = 0; i < count; ++i) r.cases.push_back(case_of_kind(static_cast<int>(i), "random-" + std::to_string(i)));
  r.coverage = sample_coverage();
  r.unused_expectations = {"id x: first", "id y: second"};
  return r;
}

// The first line where two texts differ ("" when equal): reports are long.
std::string first_difference(const std::string& a, const std::string& b) {
  if (a == b) return "";
  std::istringstream x(a), y(b);
  std::string l, m;
  for (int line = 1;; ++line) {
    const bool more_x = static_cast<bool>(std::getline(x, l)), more_y = static_cast<bool>(std::getline(y, m));
    if (!more_x && !more_y) return "equal lines, different bytes";
    if (l != m || more_x != more_y) return "line " + std::to_string(line) + ":\n  " + l + "\n  " + m;
  }
}

void expect_same_bytes(const RunReport& a, const RunReport& b) {
  EXPECT_EQ(first_difference(report_json_text(a), report_json_text(b)), "") << "JSON";
  EXPECT_EQ(first_difference(report_markdown(a), report_markdown(b)), "") << "Markdown";
  EXPECT_EQ(first_difference(report_junit(a), report_junit(b)), "") << "JUnit";
}

TEST(ReportReader, EveryKindOfCaseReadsBackToTheSameBytes) {
  const RunReport original = sample_report(14);
  const RunReport read = report_from_json(parse_json_text(report_json_text(original), 512), "r.json");
  expect_same_bytes(original, read);
  ASSERT_EQ(read.cases.size(), original.cases.size());
  EXPECT_EQ(read.seed, original.seed);
  EXPECT_EQ(read.cases[0].shrink_steps, std::optional<size_t>(17));
  ASSERT_TRUE(read.cases[1].program.has_value());  // a known case that passed keeps its program
  EXPECT_EQ(program_to_json(*read.cases[1].program), program_to_json(*original.cases[1].program));
  EXPECT_EQ(read.cases[1].reproduce_command, "lockstep run --index 7");
}

TEST(ReportReader, AShardReportReadsBack) {
  RunReport r = sample_report(3);
  r.shard = ReportShard{1, 4, 2, "lockstep run --seed 3"};
  const RunReport read = report_from_json(parse_json_text(report_json_text(r), 512), "r.json");
  ASSERT_TRUE(read.shard.has_value());
  EXPECT_EQ(read.shard->index, 1);
  EXPECT_EQ(read.shard->total, 4);
  EXPECT_EQ(read.shard->named_cases, 2);
  expect_same_bytes(r, read);
}

// The error of reading `doc`: "r.json: POINTER: ..." (InputError).
std::string error_of(const json& doc) {
  try {
    report_from_json(doc, "r.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Reports written by a real `lockstep run` / `replay` (testdata/make_reports.sh: in-process, a failing driver,
// a shard, a free-running variant, a replay): each reads back to its own bytes, and merged alone (into its own
// shard, or as a whole run) gives them again. A change to the writers that the reader does not follow fails here;
// after a deliberate format change, run make_reports.sh again.
TEST(ReportReader, SampleReportsOfRealRunsReadBackToTheirBytes) {
  const std::string dir = source_dir() + "/conformance/report/testdata";
  int seen = 0;
  for (const std::string& path : files::list_files(dir, {".json"})) {
    ++seen;
    const std::string text = read_text_file(path);
    RunReport r = read_report_file(path);
    EXPECT_EQ(report_json_text(r), text) << path;
    std::optional<ShardSpec> into;
    if (r.shard) into = ShardSpec{r.shard->index, r.shard->total};
    std::vector<std::pair<std::string, RunReport>> one;
    one.emplace_back(path, std::move(r));
    EXPECT_EQ(report_json_text(merge_shard_reports(std::move(one), into)), text) << path;
  }
  EXPECT_EQ(seen, 5) << "the five samples of make_reports.sh";
}

TEST(ReportReader, BadReportsNameTheFileAndTheField) {
  const json good = report_json(sample_report(3));
  json unknown = good;
  unknown["cases"][2]["colour"] = "red";
  EXPECT_NE(error_of(unknown).find("r.json: /cases/2/colour: unknown field 'colour'"), std::string::npos)
      << error_of(unknown);
  json format = good;
  format["format"] = "replay-report/9";
  EXPECT_NE(error_of(format).find("r.json: /format:"), std::string::npos);
  json status = good;
  status["cases"][0]["status"] = "flaky";
  EXPECT_NE(error_of(status).find("/cases/0/status"), std::string::npos);
  json negative = good;
  negative["coverage"]["exercised"]["sgd"] = -1;
  EXPECT_NE(error_of(negative).find("/coverage/exercised/sgd"), std::string::npos);
  json program = good;
  program["cases"][0]["failure"]["program"]["actions"][0]["action"] = "jump";
  EXPECT_NE(error_of(program).find("/cases/0/failure/program/actions/0"), std::string::npos) << error_of(program);
  json shard = good;
  shard["shard"] = {{"index", 4}, {"total", 4}, {"named_cases", 0}};
  EXPECT_NE(error_of(shard).find("/shard"), std::string::npos);
  json missing = good;
  missing.erase("cases");
  EXPECT_NE(error_of(missing).find("cases"), std::string::npos);
  EXPECT_EQ(error_of(good), "");
}

TEST(ReportReader, AFileThatIsNotAReportIsAnError) {
  const std::string file = files::process_temp_dir() + "/not-a-report.json";
  std::ofstream(file) << "{\"format\": \"lockstep-report/1\", ";
  try {
    read_report_file(file);
    FAIL() << "a truncated file was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), file);
  }
}

// The shards of `whole` as `lockstep run --shard i/n` writes them: the named cases in shard 0, random program k in
// shard k % n.
std::vector<std::pair<std::string, RunReport>> split(const RunReport& whole, int64_t named, int64_t total) {
  std::vector<std::pair<std::string, RunReport>> shards;
  for (int64_t s = 0; s < total; ++s) {
    RunReport r = whole;
    r.cases.clear();
    if (s == 0) r.cases.assign(whole.cases.begin(), whole.cases.begin() + named);
    for (int64_t k = s; k < whole.count; k += total) r.cases.push_back(whole.cases[static_cast<size_t>(named + k)]);
    r.shard = ReportShard{s, total, s == 0 ? named : 0, "lockstep run --seed 3"};
    // Coverage: each shard counts its own cases; what one shard did not use, another may have.
    CoverageReport& c = *r.coverage;
    c.tested = s == 0 ? whole.coverage->tested : 1;
    if (s > 0) c.exercised = {{"sgd", 1}};
    c.rules[0].uses = s;
    if (s > 0) {
      c.rules[1].uses = 0;
      c.out_of_scope = 0;
      c.skipped = 0;
      c.cells = {{whole.coverage->cells.begin()->first, 1}};
      c.optional_fields = {{optional_fields().back().name, OptionalFieldCount{0, 0, 2}}};
      c.left_out_cases.clear();
      c.not_exercised = {"adam", "rmsprop", "adagrad"};
      r.unused_expectations = {"id y: second"};
    }
    shards.emplace_back("shard-" + std::to_string(s) + ".json",
                        report_from_json(parse_json_text(report_json_text(r), 512), "shard"));
  }
  return shards;
}

TEST(ReportShards, ShardsMergeIntoTheWholeRun) {
  RunReport whole = sample_report(11);
  for (int64_t total : {1, 2, 3, 5, 11, 12}) {
    std::vector<std::pair<std::string, RunReport>> shards = split(whole, 2, total);
    // The sums the split made: tested 5 + 1 per further shard, and so on.
    RunReport expected = whole;
    expected.coverage->tested += total - 1;
    expected.coverage->exercised["sgd"] += total - 1;
    expected.coverage->rules[0].uses = total * (total - 1) / 2;
    expected.coverage->cells.begin()->second += total - 1;
    if (total > 1) expected.coverage->optional_fields[optional_fields().back().name].not_expected = 2 * (total - 1);
    if (total > 1) expected.unused_expectations = {"id y: second"};
    std::reverse(shards.begin(), shards.end());  // any order
    expect_same_bytes(merge_shard_reports(shards, std::nullopt), expected);
  }
}

TEST(ReportShards, WorkersOfAShardMergeIntoThatShard) {
  // --jobs 2 inside shard 1 of 3: workers are shards 1 and 4 of 6.
  RunReport whole = sample_report(13);
  std::vector<std::pair<std::string, RunReport>> six = split(whole, 2, 6), three = split(whole, 2, 3);
  const RunReport merged = merge_shard_reports({six[1], six[4]}, ShardSpec{1, 3});
  ASSERT_TRUE(merged.shard.has_value());
  EXPECT_EQ(merged.shard->index, 1);
  EXPECT_EQ(merged.shard->total, 3);
  ASSERT_EQ(merged.cases.size(), three[1].second.cases.size());
  for (size_t i = 0; i < merged.cases.size(); ++i) EXPECT_EQ(merged.cases[i].id, three[1].second.cases[i].id);
  const RunReport merged0 = merge_shard_reports({six[0], six[3]}, ShardSpec{0, 3});
  EXPECT_EQ(merged0.shard->named_cases, 2);
  EXPECT_EQ(merged0.cases[0].id, "sem5-named-failure");
}

std::string merge_error(const std::vector<std::pair<std::string, RunReport>>& shards) {
  try {
    merge_shard_reports(shards, std::nullopt);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ReportShards, IncompleteOrMixedSetsAreErrors) {
  const RunReport whole = sample_report(7);
  std::vector<std::pair<std::string, RunReport>> shards = split(whole, 2, 3);
  EXPECT_EQ(merge_error(shards), "");
  EXPECT_NE(merge_error({shards[0], shards[2]}).find("shard 1 of 3 is missing"), std::string::npos);
  EXPECT_NE(merge_error({shards[0], shards[1], shards[1], shards[2]}).find("shard-1.json: /shard/index: shard 1 is also"),
            std::string::npos);
  auto other_seed = shards;
  other_seed[2].second.seed = 2;
  EXPECT_NE(merge_error(other_seed).find("shard-2.json: /seed: the seed differs"), std::string::npos);
  auto other_split = shards;
  other_split[1].second.shard->total = 4;
  EXPECT_NE(merge_error(other_split).find("shard-1.json: /shard/total"), std::string::npos);
  auto short_shard = shards;
  short_shard[1].second.cases.pop_back();
  EXPECT_NE(merge_error(short_shard).find("shard-1.json: /cases: 1 random programs, but shard 1 of 3 of a run of 7 has 2"),
            std::string::npos) << merge_error(short_shard);
  auto unsharded = shards;
  unsharded[0].second.shard.reset();
  EXPECT_NE(merge_error(unsharded).find("shard-0.json: not the report of a shard"), std::string::npos);
  auto other_engine = shards;
  other_engine[1].second.under_test_engine = "impl";
  EXPECT_NE(merge_error(other_engine).find("/under_test"), std::string::npos);
  auto other_run = shards;
  other_run[1].second.shard->run = "lockstep run --special-values";
  EXPECT_NE(merge_error(other_run).find("shard-1.json: /shard/run: the run's settings differ"), std::string::npos);
  auto other_scope = shards;
  other_scope[2].second.coverage->left_out.clear();
  EXPECT_NE(merge_error(other_scope).find("/coverage/left_out"), std::string::npos);
}

TEST(ReportShards, OneWholeRunMergesIntoItself) {
  const RunReport whole = sample_report(4);
  expect_same_bytes(merge_shard_reports({{"whole.json", whole}}, std::nullopt), whole);
  EXPECT_NE(merge_error({{"a.json", whole}, {"b.json", whole}}).find("not the report of a shard"), std::string::npos);
}

TEST(ReportShards, ShardSpecsAndTheGoogleTestVariables) {
  EXPECT_EQ(parse_shard_spec("0/1").total, 1);
  EXPECT_EQ(parse_shard_spec("3/4").index, 3);
  for (const char* bad : {"4/4", "1/0", "-1/2", "a/2", "1", "1/2/3", "", "/", "1/ 2", "99999999999999999999/2"})
    EXPECT_THROW(parse_shard_spec(bad), std::invalid_argument) << bad;
  EXPECT_EQ(programs_in_shard({0, 3}, 7), 3);
  EXPECT_EQ(programs_in_shard({2, 3}, 7), 2);
  EXPECT_EQ(programs_in_shard({5, 6}, 3), 0);
  EXPECT_TRUE(in_shard({1, 3}, 7));

  // This binary may itself run sharded (the sanitize preset): the variables are put back at the end.
  struct Restore {
    std::vector<std::pair<std::string, std::optional<std::string>>> saved;
    Restore() {
      for (const char* name : {"GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX", "GTEST_SHARD_STATUS_FILE"}) {
        const char* v = std::getenv(name);
        saved.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
      }
    }
    ~Restore() {
      for (const auto& [name, v] : saved) v ? (void)setenv(name.c_str(), v->c_str(), 1) : (void)unsetenv(name.c_str());
    }
  } restore;
  const std::string status = files::process_temp_dir() + "/shard-status";
  files::remove_file(status);
  unsetenv("GTEST_TOTAL_SHARDS");
  EXPECT_FALSE(shard_from_environment().has_value());
  setenv("GTEST_TOTAL_SHARDS", "3", 1);
  setenv("GTEST_SHARD_INDEX", "2", 1);
  setenv("GTEST_SHARD_STATUS_FILE", status.c_str(), 1);
  const std::optional<ShardSpec> s = shard_from_environment();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->total, 3);
  EXPECT_TRUE(files::exists(status));  // the protocol: the runner touches the status file
  setenv("GTEST_SHARD_INDEX", "3", 1);
  EXPECT_THROW(shard_from_environment(), std::invalid_argument);
  unsetenv("GTEST_SHARD_INDEX");
  EXPECT_THROW(shard_from_environment(), std::invalid_argument);
}

}  // namespace
}  // namespace lockstep
