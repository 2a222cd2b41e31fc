// conformance_matrix.h: reports written by report.h's own writer, read back into the matrix; bad reports.
#include "conformance/report/conformance_matrix.h"

#include <fstream>
#include <limits>

#include <unistd.h>

#include <gtest/gtest.h>

#include "conformance/program/program_json.h"
#include "conformance/report/report.h"
#include "conformance/program/file_system.h"

namespace lockstep {
namespace {

// A file in a folder of this test process (ctest runs the tests of this file in parallel processes).
std::string write_temp(const std::string& name, const std::string& text) {
  const std::string dir =  // removed at exit
      files::process_temp_dir() + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  files::create_directories(dir);
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

Difference numeric(double ulps, double allowed) {
  Difference d;
  d.kind = DifferenceKind::Numeric;
  d.path = "w → exp_avg[0]";
  d.expected_text = "1";
  d.actual_text = "2";
  d.quantity = Quantity::state("exp_avg");
  d.expected = 1;
  d.actual = 2;
  d.absolute_error = 1;
  d.relative_error = 1;
  d.ulp_error = ulps;
  d.scale = 1;
  d.allowed_ulps = allowed;
  d.bound = "4 ulp of 1 (float32)";
  return d;
}

GrowthRow row(std::optional<size_t> index, const std::string& action, double param_ulps, double grad_ulps = -1) {
  GrowthRow r{index, action, {}};
  r.max_ulp_error[Quantity::Param] = param_ulps;
  if (grad_ulps >= 0) r.max_ulp_error[Quantity::Grad] = grad_ulps;
  return r;
}

// A driver's live run: a pass, an unexplained failure with growth rows (it ran on after failing), a known
// deviation, a skip; and a fixture its scope left out.
RunReport driver_run() {
  RunReport report;
  report.oracle_engine = "libtorch-1.13.1";
  report.under_test_engine = "driver";
  report.mode = RunMode::FreeRunning;
  CoverageReport coverage;
  coverage.implementation = {{"name", "tiny<js>"}, {"version", "0.1"}, {"protocol", 1},
                             {"emulated", {".grad slots", "no_grad"}}};
  coverage.left_out_cases.push_back({"tut000-adam-defaults", "no float64", {"adam"}});
  coverage.optional_fields["param.same_as_previous"] = OptionalFieldCount{0, 12, 0};  // a driver without it
  report.coverage = coverage;

  CaseReport pass;
  pass.id = "random-0";
  pass.areas = {"autograd", "sgd"};
  report.cases.push_back(pass);

  CaseReport fail;
  fail.id = "random-1";
  fail.status = CaseStatus::Failed;
  fail.areas = {"autograd", "adam"};
  fail.result.passed = false;
  fail.result.failed_action = 2;
  fail.result.failed_action_name = "step";
  fail.result.differences = {numeric(300, 4)};
  fail.result.growth = {row(std::nullopt, "init", 0), row(0, "forward", 0), row(1, "backward", 0, 1.5),
                        row(2, "step", 12), row(3, "step", std::numeric_limits<double>::infinity())};
  report.cases.push_back(fail);

  CaseReport known = fail;
  known.id = "sem6-pinned";
  known.status = CaseStatus::Known;
  known.known_reason = "expected failure (implementation_bug): global step count";
  known.areas.clear();
  known.result.growth.clear();  // an in-process lockstep failure has no growth rows: one point
  report.cases.push_back(known);

  CaseReport skipped;
  skipped.id = "random-2";
  skipped.status = CaseStatus::Known;
  skipped.areas = {"adamw"};
  skipped.result.skipped = "adamw";
  report.cases.push_back(skipped);
  return report;
}

TEST(ConformanceMatrix, CountsPerAreaFromTheReportWritersOwnJson) {
  const std::string path = write_temp("run.json", report_json_text(driver_run()));
  const ConformanceMatrix m = read_conformance_reports({path});
  ASSERT_EQ(m.implementations.size(), 1u);
  const MatrixImplementation& impl = m.implementations[0];
  EXPECT_EQ(impl.name, "tiny<js> 0.1");  // the hello's name and version
  EXPECT_EQ(impl.emulated, (std::vector<std::string>{".grad slots", "no_grad"}));
  EXPECT_EQ(impl.total.passed, 1);
  EXPECT_EQ(impl.total.failed, 2);
  EXPECT_EQ(impl.total.known, 1);
  EXPECT_EQ(impl.total.unsupported, 2);  // the skip and the left-out fixture
  EXPECT_EQ(impl.by_area.at("autograd").passed, 1);
  EXPECT_EQ(impl.by_area.at("autograd").failed, 1);  // the known case had no areas: total only
  EXPECT_EQ(impl.by_area.at("adam").failed, 1);
  EXPECT_EQ(impl.by_area.at("adam").unsupported, 1);
  EXPECT_EQ(impl.by_area.at("adamw").unsupported, 1);
  EXPECT_EQ(impl.by_area.count("groups"), 0u);
  EXPECT_EQ(impl.untested_fields, (std::vector<std::string>{"param.same_as_previous"}));
  EXPECT_NE(conformance_matrix_markdown(m).find("does not report (untested, PROTOCOL.md 4a): `param.same_as_previous`"),
            std::string::npos);
}

TEST(ConformanceMatrix, UlpSeriesStopsAtTheFailingActionAndTakesItsWorstDifference) {
  const ConformanceMatrix m = read_conformance_reports({write_temp("run.json", report_json_text(driver_run()))});
  const MatrixCase& fail = m.implementations[0].cases[1];
  ASSERT_EQ(fail.id, "random-1");
  ASSERT_EQ(fail.ulps.size(), 4u);  // init, 0, 1, 2: the run went on to 3, the plot does not
  EXPECT_EQ(fail.ulps[2].label, "1 backward");
  EXPECT_EQ(fail.ulps[2].ulps, 1.5);  // the largest of the record's quantities
  ASSERT_TRUE(fail.failing_point);
  EXPECT_EQ(*fail.failing_point, 3u);
  EXPECT_EQ(fail.ulps[3].ulps, 300);  // the failing difference, larger than the growth row's 12
  EXPECT_EQ(fail.allowed_ulps, 4);
  const MatrixCase& known = m.implementations[0].cases[2];
  EXPECT_TRUE(known.known);
  ASSERT_EQ(known.ulps.size(), 1u);
  EXPECT_EQ(known.ulps[0].label, "2 step");
}

TEST(ConformanceMatrix, ReportsOfOneImplementationAddUpAndWritersEscape) {
  const std::string a = write_temp("a.json", report_json_text(driver_run()));
  RunReport other = driver_run();
  other.coverage->implementation = nullptr;  // an in-process engine: named by under_test
  const std::string b = write_temp("b.json", report_json_text(other));
  RunReport third = driver_run();
  third.cases[0].status = CaseStatus::Failed;  // random-0 fails in this one: the worse outcome counts
  third.cases[0].result.passed = false;
  third.cases[0].result.failed_action = 0;
  third.cases[0].result.failed_action_name = "forward";
  third.cases[0].id = "random-0";
  const std::string c = write_temp("c.json", report_json_text(third));
  const ConformanceMatrix m = read_conformance_reports({a, a, b, c});
  ASSERT_EQ(m.implementations.size(), 2u);
  // One case per id: a, a and c are the same five cases (random-0 failing in c).
  EXPECT_EQ(m.implementations[0].cases.size(), 5u);
  EXPECT_EQ(m.implementations[0].total.passed, 0);
  EXPECT_EQ(m.implementations[0].total.failed, 3);
  EXPECT_EQ(m.implementations[0].total.known, 1);
  EXPECT_EQ(m.implementations[0].reports.size(), 3u);
  EXPECT_EQ(m.implementations[1].name, "driver");

  const std::string md = conformance_matrix_markdown(m);
  EXPECT_NE(md.find("| tiny<js> 0.1 | 0 / 3 (1 known) / 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `random-1` | autograd, adam | **no** |"), std::string::npos) << md;
  EXPECT_NE(md.find("Emulated by the adapter (these cases test the adapter, not the framework):\n\n- .grad slots\n"),
            std::string::npos) << md;
  const std::string html = conformance_matrix_html(m, 1);
  EXPECT_EQ(html.find("tiny<js>"), std::string::npos);  // escaped
  EXPECT_NE(html.find("tiny&lt;js&gt; 0.1"), std::string::npos);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<div class=\"case\">"), 2u);  // max_plots 1 per implementation
  EXPECT_EQ(count("<svg"), 1u);  // tiny's first failing case (random-0, failing in c) has no per-action errors
  EXPECT_NE(html.find("No per-action errors in the report"), std::string::npos);
  EXPECT_NE(html.find("more failing cases are not plotted"), std::string::npos);
  // Nothing loaded from outside: the only URL is the SVG namespace.
  for (const char* outside : {"src=", "href=", "https:", "@import", "url("}) EXPECT_EQ(html.find(outside), std::string::npos) << outside;
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
}

TEST(ConformanceMatrix, BadReportsNameTheFileAndPointer) {
  auto error_of = [](const std::string& text) {
    const std::string path = write_temp("bad.json", text);
    try {
      read_conformance_reports({path});
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path);
      return e.pointer() + ": " + e.message();
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("[1]").find("expected a lockstep report"), std::string::npos);
  EXPECT_NE(error_of("{\"format\": \"junit\"}").find("/format"), std::string::npos);
  EXPECT_NE(error_of("{\"format\": \"lockstep-report/1\", \"under_test\": \"x\", \"cases\": [{\"id\": 3}]}")
                .find("/cases/0/id"),
            std::string::npos);
  EXPECT_NE(error_of("{\"format\": \"lockstep-report/1\", \"under_test\": \"x\", \"cases\": "
                     "[{\"id\": \"a\", \"status\": \"passed\", \"areas\": [\"speed\"]}]}")
                .find("/cases/0/areas/0"),
            std::string::npos);
  EXPECT_NE(error_of("{\"format\": \"lockstep-report/1\", \"under_test\": \"x\", \"cases\": "
                     "[{\"id\": \"a\", \"status\": \"failed\"}]}")
                .find("/cases/0/failure: missing"),
            std::string::npos);
  EXPECT_EQ(error_of("{\"format\": ").find("no error"), std::string::npos);  // truncated JSON
  // Wrong types deep inside (json_reader.h's typed readers) still name the file (error_of checks it) and pointer.
  const std::string head = "{\"format\": \"lockstep-report/1\", \"under_test\": \"x\", \"cases\": ";
  EXPECT_NE(error_of(head + "[{\"id\": \"a\", \"status\": \"passed\", \"areas\": \"sgd\"}]}").find("/cases/0/areas"),
            std::string::npos);
  EXPECT_NE(error_of(head + "[7]}").find("/cases/0: expected a case"), std::string::npos);
  EXPECT_NE(error_of(head + "[], \"coverage\": {\"implementation\": {\"name\": \"n\", \"emulated\": 3}}}")
                .find("/coverage/implementation/emulated"),
            std::string::npos);
  EXPECT_NE(error_of(head + "[{\"id\": \"a\", \"status\": \"failed\", \"failure\": {\"summary\": \"s\", "
                     "\"differences\": [], \"action_index\": 1.5}}]}")
                .find("/cases/0/failure/action_index"),
            std::string::npos);
}

TEST(ConformanceMatrix, LongSummariesAreCutAtACharacterBoundaryInMarkdown) {
  RunReport r;
  r.under_test_engine = "x";
  CaseReport masked;  // passed with a masked difference only: a known deviation without a failure
  masked.id = "random-3";
  masked.status = CaseStatus::Known;
  masked.known_reason = std::string(236, 'a') + "→→→→→";  // the cut (237 bytes) falls inside the first arrow
  r.cases.push_back(masked);
  const ConformanceMatrix m = read_conformance_reports({write_temp("long.json", report_json_text(r))});
  ASSERT_EQ(m.implementations.size(), 1u);
  EXPECT_TRUE(m.implementations[0].cases[0].known);
  const std::string md = conformance_matrix_markdown(m);
  EXPECT_NE(md.find("| " + std::string(236, 'a') + "... |"), std::string::npos) << md;
}

}  // namespace
}  // namespace lockstep
