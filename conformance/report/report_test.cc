// Tests of the run reports: Markdown holds the field paths, JSON parses, JUnit XML parses with a real XML
// parser (expat), identical input gives byte-identical output, known discrepancies are shown, not dropped.
#include "conformance/report/report.h"

#include <expat.h>

#include <cmath>
#include <limits>
#include <map>

#include <gtest/gtest.h>

#include "conformance/program/program_json.h"

namespace lockstep {
namespace {

Program small_program() {
  Program p;
  p.params.push_back({"w", DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6}});
  p.loss = sum(mul(param("w"), param("w")));
  OptimizerSpec o;
  o.kind = OptimizerKind::Adam;
  o.defaults.lr = 0.01;
  p.optimizer = o;
  p.actions = {Action::forward(), Action::backward(), Action::step()};
  return p;
}

Difference numeric_difference() {
  Difference d;
  d.kind = DifferenceKind::Numeric;
  d.path = "w → exp_avg_sq[1,2]";
  d.quantity = Quantity::state("exp_avg_sq");
  d.expected = 0.5;
  d.actual = 0.50000006;
  d.expected_text = "0.5";
  d.actual_text = "0.50000006";
  d.absolute_error = 6e-8;
  d.relative_error = 1.2e-7;
  d.ulp_error = 8;
  d.scale = 0.5;
  d.allowed_ulps = 4;
  d.bound = "4 ulp of 0.5 (float32)";
  return d;
}

RunReport sample_report() {
  RunReport report;
  report.oracle_engine = "libtorch-1.13.1";
  report.under_test_engine = "impl";
  report.seed = 42;
  report.count = 3;
  report.max_size = 20;
  report.mode = RunMode::Lockstep;

  CaseReport passed;
  passed.id = "random-0";
  passed.duration_seconds = 0.25;
  report.cases.push_back(passed);

  LockstepResult failed;
  failed.oracle_engine = report.oracle_engine;
  failed.under_test_engine = report.under_test_engine;
  failed.passed = false;
  failed.failed_action = 2;
  failed.failed_action_name = "step";
  failed.actions_run = 3;
  failed.differences.push_back(numeric_difference());
  Difference nan_difference = numeric_difference();
  nan_difference.path = "w → exp_avg[0,0]";
  nan_difference.actual = std::numeric_limits<double>::quiet_NaN();
  nan_difference.actual_text = "NaN";
  nan_difference.bound = "NaN must match NaN";
  failed.differences.push_back(nan_difference);
  report.cases.push_back(make_case_report("random-1", failed, small_program(),
                                          "lockstep run --seed 42 --case random-1", nullptr));
  report.cases.back().duration_seconds = 1.5;

  LockstepResult known;  // passed, with a difference an expectation masked (expectations.h)
  known.oracle_engine = report.oracle_engine;
  known.under_test_engine = report.under_test_engine;
  Difference s;
  s.kind = DifferenceKind::Structure;
  s.path = "w → grad.defined";
  s.expected_text = "false";
  s.actual_text = "true";
  s.bound = "exact";
  known.masked.push_back(MaskedDifference{1, "backward", s, "the tutorial is wrong (SEM-10)"});
  report.cases.push_back(make_case_report("tutorial-003", known, small_program(), "lockstep run --case tutorial-003",
                                          nullptr));
  return report;
}

TEST(Report, CaseStatusFromExpectations) {
  RunReport r = sample_report();
  EXPECT_EQ(r.cases[0].status, CaseStatus::Passed);
  EXPECT_EQ(r.cases[1].status, CaseStatus::Failed);
  EXPECT_EQ(r.cases[2].status, CaseStatus::Known);
  EXPECT_NE(r.cases[2].known_reason.find("the tutorial is wrong (SEM-10)"), std::string::npos);
  // A whole-case expectation: a failure is known, a pass is an unexpected pass (a failure).
  Expectations whole;
  Expectation fails_on_purpose;
  fails_on_purpose.id = "random-*";
  fails_on_purpose.reason = "fails on purpose";
  fails_on_purpose.category = "implementation_bug";
  whole.entries.push_back(fails_on_purpose);
  EXPECT_EQ(make_case_report("random-1", r.cases[1].result, std::nullopt, "", &whole).status, CaseStatus::Known);
  CaseReport unexpected = make_case_report("random-0", LockstepResult{}, std::nullopt, "", &whole);
  EXPECT_EQ(unexpected.status, CaseStatus::Failed);
  EXPECT_NE(unexpected.result.engine_failure.find("remove or narrow the entry"), std::string::npos);
  ReportSummary s = summarise(r);
  EXPECT_EQ(s.total, 3u);
  EXPECT_EQ(s.passed, 1u);
  EXPECT_EQ(s.failed, 1u);
  EXPECT_EQ(s.known, 1u);
}

TEST(Report, MarkdownShowsFailuresPathsProgramAndKnownSection) {
  const std::string md = report_markdown(sample_report());
  EXPECT_NE(md.find("## lockstep: impl vs libtorch-1.13.1"), std::string::npos);
  EXPECT_NE(md.find("**1 case failed.**"), std::string::npos);
  EXPECT_NE(md.find("| Seed | 42 |"), std::string::npos);
  EXPECT_NE(md.find("| Known discrepancies | 1 |"), std::string::npos);
  EXPECT_NE(md.find("#### `random-1` — action 2 (step): `w → exp_avg_sq[1,2]`"), std::string::npos) << md;
  EXPECT_NE(md.find("| `w → exp_avg_sq[1,2]` | 0.5 | 0.50000006 | 6e-08 | 1.2e-07 | 8 | 4 ulp of 0.5 (float32) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("<details><summary>Program (JSON)</summary>"), std::string::npos);
  EXPECT_NE(md.find("\"mul\""), std::string::npos);  // the program's JSON
  EXPECT_NE(md.find("lockstep run --seed 42 --case random-1"), std::string::npos);
  const size_t known = md.find("### Known discrepancies");
  ASSERT_NE(known, std::string::npos);
  EXPECT_GT(md.find("the tutorial is wrong (SEM-10)"), known);
  EXPECT_GT(md.find("`w → grad.defined`"), known);
  EXPECT_EQ(md.find("random-0"), std::string::npos);  // passing cases are only counted
  EXPECT_EQ(md.find("1.5"), std::string::npos);       // no durations by default
}

TEST(Report, JsonParsesAndHoldsEverything) {
  const std::string text = report_json_text(sample_report());
  nlohmann::json j = nlohmann::json::parse(text);  // throws if invalid
  EXPECT_EQ(j["format"], "lockstep-report/1");
  EXPECT_EQ(j["seed"], 42);
  EXPECT_EQ(j["mode"], "lockstep");
  EXPECT_EQ(j["summary"]["failed"], 1);
  EXPECT_EQ(j["summary"]["known"], 1);
  ASSERT_EQ(j["cases"].size(), 3u);
  EXPECT_EQ(j["cases"][0]["status"], "passed");
  EXPECT_FALSE(j["cases"][0].contains("duration_seconds"));
  const auto& failure = j["cases"][1]["failure"];
  EXPECT_EQ(failure["action_index"], 2);
  EXPECT_EQ(failure["action"], "step");
  EXPECT_EQ(failure["differences"][0]["path"], "w → exp_avg_sq[1,2]");
  EXPECT_EQ(failure["differences"][0]["ulp_error"], 8);
  EXPECT_EQ(failure["differences"][0]["quantity"], "exp_avg_sq");
  EXPECT_EQ(failure["differences"][1]["actual"], "NaN");  // not a JSON number: written as a string
  EXPECT_EQ(failure["reproduce"], "lockstep run --seed 42 --case random-1");
  EXPECT_EQ(failure["program"].dump(), nlohmann::json::parse(program_to_json(small_program()).dump()).dump());
  EXPECT_EQ(j["cases"][2]["status"], "known");
  EXPECT_EQ(j["cases"][2]["known_reason"], "1 masked difference (the tutorial is wrong (SEM-10))");
  ASSERT_EQ(j["cases"][2]["masked"].size(), 1u);
  EXPECT_EQ(j["cases"][2]["masked"][0]["path"], "w → grad.defined");
  EXPECT_EQ(j["cases"][2]["masked"][0]["action_index"], 1);
  EXPECT_EQ(j["cases"][2]["masked"][0]["reason"], "the tutorial is wrong (SEM-10)");
  EXPECT_EQ(text.back(), '\n');
}

// A minimal DOM from expat, enough to check the JUnit structure.
struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::string text;
  std::vector<XmlElement> children;
};

struct XmlBuilder {
  XmlElement root;
  std::vector<XmlElement*> stack;
};

void XMLCALL on_start(void* data, const XML_Char* name, const XML_Char** attributes) {
  auto* b = static_cast<XmlBuilder*>(data);
  XmlElement e;
  e.name = name;
  for (int i = 0; attributes[i]; i += 2) e.attributes[attributes[i]] = attributes[i + 1];
  if (b->stack.empty()) {
    b->root = e;
    b->stack.push_back(&b->root);
  } else {
    b->stack.back()->children.push_back(e);
    b->stack.push_back(&b->stack.back()->children.back());
  }
}

void XMLCALL on_end(void* data, const XML_Char*) { static_cast<XmlBuilder*>(data)->stack.pop_back(); }

void XMLCALL on_text(void* data, const XML_Char* s, int len) {
  auto* b = static_cast<XmlBuilder*>(data);
  if (!b->stack.empty()) b->stack.back()->text.append(s, static_cast<size_t>(len));
}

// Parses `xml` strictly; fails the test with expat's message on malformed XML.
XmlElement parse_xml(const std::string& xml) {
  XML_Parser parser = XML_ParserCreate("UTF-8");
  XmlBuilder builder;
  XML_SetUserData(parser, &builder);
  XML_SetElementHandler(parser, on_start, on_end);
  XML_SetCharacterDataHandler(parser, on_text);
  const XML_Status status = XML_Parse(parser, xml.data(), static_cast<int>(xml.size()), 1);
  EXPECT_EQ(status, XML_STATUS_OK) << XML_ErrorString(XML_GetErrorCode(parser)) << " at line "
                                   << XML_GetCurrentLineNumber(parser) << "\n"
                                   << xml;
  XML_ParserFree(parser);
  return builder.root;
}

TEST(Report, JUnitIsWellFormedXmlWithFailuresAndSkips) {
  XmlElement root = parse_xml(report_junit(sample_report()));
  EXPECT_EQ(root.name, "testsuites");
  EXPECT_EQ(root.attributes["tests"], "3");
  EXPECT_EQ(root.attributes["failures"], "1");
  EXPECT_EQ(root.attributes["skipped"], "1");
  ASSERT_EQ(root.children.size(), 1u);
  const XmlElement& suite = root.children[0];
  EXPECT_EQ(suite.name, "testsuite");
  EXPECT_EQ(suite.attributes.at("tests"), "3");
  std::vector<const XmlElement*> cases;
  for (const XmlElement& c : suite.children)
    if (c.name == "testcase") cases.push_back(&c);
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0]->attributes.at("name"), "random-0");
  EXPECT_TRUE(cases[0]->children.empty());
  EXPECT_EQ(cases[0]->attributes.count("time"), 0u);
  ASSERT_EQ(cases[1]->children.size(), 1u);
  const XmlElement& failure = cases[1]->children[0];
  EXPECT_EQ(failure.name, "failure");
  EXPECT_EQ(failure.attributes.at("type"), "numeric");
  EXPECT_NE(failure.attributes.at("message").find("w → exp_avg_sq[1,2]"), std::string::npos);
  EXPECT_NE(failure.text.find("lockstep run --seed 42 --case random-1"), std::string::npos);
  EXPECT_NE(failure.text.find("\"params\""), std::string::npos);  // the program
  ASSERT_EQ(cases[2]->children.size(), 1u);
  EXPECT_EQ(cases[2]->children[0].name, "skipped");
  EXPECT_EQ(cases[2]->children[0].attributes.at("message"), "known discrepancy: 1 masked difference (the tutorial is wrong (SEM-10))");
}

TEST(Report, JUnitEscapesHostileText) {
  RunReport r = sample_report();
  const std::string hostile = "a<b>&\"c\"'d'\x01\ne]]>\xff\xc3\xa9";
  r.cases[1].id = hostile;
  r.cases[1].reproduce_command = hostile;
  r.cases[1].result.differences[0].path = hostile;
  r.under_test_engine = hostile;
  XmlElement root = parse_xml(report_junit(r));
  const XmlElement& suite = root.children.at(0);
  const XmlElement* failed = nullptr;
  for (const XmlElement& c : suite.children)
    if (c.name == "testcase" && !c.children.empty() && c.children[0].name == "failure") failed = &c;
  ASSERT_NE(failed, nullptr);
  // Control byte and invalid UTF-8 became U+FFFD; everything else survived, including the newline.
  EXPECT_EQ(failed->attributes.at("name"), "a<b>&\"c\"'d'\xEF\xBF\xBD\ne]]>\xEF\xBF\xBD\xc3\xa9");
  EXPECT_NE(failed->children[0].text.find("a<b>&\"c\"'d'"), std::string::npos);
  EXPECT_EQ(xml_escape("<&>\"'"), "&lt;&amp;&gt;&quot;&apos;");
}

// A driver's bytes (its stderr, its messages) reach the Markdown report sanitised: invalid UTF-8 and terminal
// control bytes become U+FFFD, newlines, tabs and valid UTF-8 stay (issue 14: they were written unescaped).
TEST(Report, MarkdownSanitisesDriverBytes) {
  RunReport r = sample_report();
  r.cases[1].result.driver_stderr = "ok\x1b[2Jcleared\xff\xfe tab\there \xc3\xa9\n";
  r.cases[1].result.engine_failure = "bad \xc0\xaf overlong";
  const std::string md = report_markdown(r);
  EXPECT_EQ(md.find('\x1b'), std::string::npos);
  EXPECT_EQ(md.find('\xff'), std::string::npos);
  EXPECT_EQ(md.find("\xc0\xaf"), std::string::npos);
  EXPECT_NE(md.find("ok\xEF\xBF\xBD[2Jcleared\xEF\xBF\xBD\xEF\xBF\xBD tab\there \xc3\xa9"), std::string::npos) << md;
  EXPECT_EQ(printable_utf8("a\rb\x7f"), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
}

TEST(Report, IdenticalInputGivesByteIdenticalOutputWithoutDurations) {
  RunReport a = sample_report();
  RunReport b = sample_report();
  for (CaseReport& c : b.cases) c.duration_seconds = 99.0;  // different timings
  EXPECT_EQ(report_markdown(a), report_markdown(b));
  EXPECT_EQ(report_json_text(a), report_json_text(b));
  EXPECT_EQ(report_junit(a), report_junit(b));
  EXPECT_EQ(report_junit(a), report_junit(sample_report()));
  ReportOptions with_durations;
  with_durations.include_durations = true;
  EXPECT_NE(report_junit(a, with_durations).find("time=\"1.500\""), std::string::npos);
  EXPECT_NE(report_json_text(a, with_durations).find("\"duration_seconds\": 1.5"), std::string::npos);
  EXPECT_NE(report_junit(a, with_durations), report_junit(b, with_durations));
}

TEST(Report, FreeRunningGrowthIsShown) {
  RunReport r = sample_report();
  r.mode = RunMode::FreeRunning;
  for (CaseReport& c : r.cases) {
    c.result.mode = RunMode::FreeRunning;
    for (size_t i = 0; i < 3; ++i) {
      GrowthRow row;
      row.action_index = i;
      row.action = "step";
      row.max_ulp_error[Quantity::Param] = static_cast<double>(i + 1);
      c.result.growth.push_back(row);
    }
  }
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("Free-running drift"), std::string::npos);
  EXPECT_NE(md.find("| # | Action | param |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 | step | 3 |"), std::string::npos);
  EXPECT_NE(md.find("### Drift of passing cases"), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(report_json_text(r));
  EXPECT_EQ(j["cases"][0]["growth"][2]["max_ulp_error"]["param"], 3);
  EXPECT_FALSE(j["cases"][0]["growth"][2]["max_ulp_error"].contains("grad"));
}

TEST(Report, ReadableJsonKeepsFlatArraysOnOneLine) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(R"({"a": [1, 2.5, "NaN"], "b": {"c": [{"d": []}]}, "e": {}})");
  EXPECT_EQ(readable_json(j),
            "{\n  \"a\": [1, 2.5, \"NaN\"],\n  \"b\": {\n    \"c\": [\n      {\n        \"d\": []\n      }\n    ]\n  },\n"
            "  \"e\": {}\n}");
  EXPECT_EQ(nlohmann::ordered_json::parse(readable_json(j)), j);
  EXPECT_NE(report_markdown(sample_report()).find("\"shape\": [2, 3]"), std::string::npos);
}

TEST(Report, EngineFailureIsReported) {
  RunReport r = sample_report();
  LockstepResult failed;
  failed.passed = false;
  failed.failed_at_setup = true;
  failed.failed_action_name = "init";
  failed.engine_failure = "engine under test (impl) threw from synchronise() after setup: nope";
  r.cases.push_back(make_case_report("random-9", failed, std::nullopt, "", nullptr));
  XmlElement root = parse_xml(report_junit(r));
  const XmlElement& last = root.children.at(0).children.back();
  ASSERT_EQ(last.children.size(), 1u);
  EXPECT_EQ(last.children[0].attributes.at("type"), "engine");
  EXPECT_NE(last.children[0].attributes.at("message").find("synchronise"), std::string::npos);
  EXPECT_NE(report_markdown(r).find("threw from synchronise() after setup: nope"), std::string::npos);
}

// A named case's broken claims have their own place in every report, with the claim and its SEMANTICS sections,
// apart from engine failures; the JUnit type says so too.
TEST(Report, ClaimFailuresAreReportedWithTheirClaim) {
  RunReport r = sample_report();
  LockstepResult failed;
  failed.passed = false;
  failed.claim_failures = {{"action 2 /params/w/state/momentum_buffer: expected [2.0], found [0.0]",
                            "SEMANTICS §5.3: step() updates the state whatever the lr", {"SEM-5.3", "SEM-6.3"}}};
  r.cases.push_back(make_case_report("sem5-lr-zero", failed, std::nullopt, "lockstep run --case sem5-lr-zero", nullptr));
  const nlohmann::ordered_json j = report_json(r);
  const nlohmann::ordered_json& f = j.at("cases").back().at("failure");
  EXPECT_FALSE(f.contains("engine_failure"));
  ASSERT_EQ(f.at("claim_failures").size(), 1u);
  EXPECT_EQ(f.at("claim_failures")[0].at("semantics"), nlohmann::ordered_json::array({"SEM-5.3", "SEM-6.3"}));
  EXPECT_EQ(f.at("claim_failures")[0].at("claim"), "SEMANTICS §5.3: step() updates the state whatever the lr");
  EXPECT_EQ(f.at("summary"), "claim: action 2 /params/w/state/momentum_buffer: expected [2.0], found [0.0]");
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("Claim broken (SEM-5.3, SEM-6.3): SEMANTICS §5.3: step() updates the state whatever the lr"),
            std::string::npos);
  EXPECT_NE(md.find("action 2 /params/w/state/momentum_buffer: expected [2.0], found [0.0]\n"), std::string::npos);
  XmlElement root = parse_xml(report_junit(r));
  const XmlElement& last = root.children.at(0).children.back();
  ASSERT_EQ(last.children.size(), 1u);
  EXPECT_EQ(last.children[0].attributes.at("type"), "claim");
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// The coverage section (capabilities.h, api_profile.h): what was tested, left out and why, and the rules used,
// in both writers, and profile-masked differences leave a pass a pass.
TEST(Report, CoverageSaysWhatWasLeftOutAndWhichRulesWereUsed) {
  RunReport r = sample_report();
  CoverageReport c;
  c.implementation = {{"name", "float32-sgd-adam"}, {"version", "1"}, {"supports", {{"dtypes", {"float32"}}}}};
  c.profile = "pytorch-python";
  c.left_out.push_back({{"float64"}, "float32-sgd-adam does not declare dtype float64"});
  c.left_out_cases.push_back({"tut000-adam-defaults", "float32-sgd-adam does not declare dtype float64", {"adam"}});
  c.exercised = {{"float32", 12}, {"sgd", 5}};
  c.not_exercised = {"op:embedding"};
  c.rules.push_back({"py-sgd-state-without-momentum", "expect", "SEM-11.1 Python keeps a state entry", 7});
  c.tested = 12;
  c.out_of_scope = 1;
  r.coverage = c;
  r.unused_expectations = {"id rnd-*: stale entry (x.json)"};

  const nlohmann::ordered_json j = report_json(r);
  ASSERT_TRUE(j.contains("coverage"));
  EXPECT_EQ(j["coverage"]["profile"], "pytorch-python");
  EXPECT_EQ(j["coverage"]["left_out"][0]["features"][0], "float64");
  EXPECT_EQ(j["coverage"]["left_out_cases"][0]["id"], "tut000-adam-defaults");
  EXPECT_EQ(j["coverage"]["exercised"]["sgd"], 5);
  EXPECT_EQ(j["coverage"]["rules"][0]["uses"], 7);
  EXPECT_EQ(j["coverage"]["not_exercised"][0], "op:embedding");
  EXPECT_EQ(j["unused_expectations"][0], "id rnd-*: stale entry (x.json)");

  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("### Coverage"), std::string::npos);
  EXPECT_NE(md.find("does not declare dtype float64"), std::string::npos);
  EXPECT_NE(md.find("`py-sgd-state-without-momentum` | expect | 7"), std::string::npos) << md;
  EXPECT_NE(md.find("In scope but not exercised"), std::string::npos);
  EXPECT_NE(md.find("tut000-adam-defaults"), std::string::npos);
  EXPECT_NE(md.find("### Unused expectations"), std::string::npos);
  EXPECT_EQ(report_markdown(r), md);  // deterministic
}

// Optional trace fields (optional_fields.h): every one listed, with its counts, "untested" when nothing was
// compared and why.
TEST(Report, CoverageListsOptionalFieldsTestedOrUntested) {
  RunReport r = sample_report();
  CoverageReport c;
  c.tested = 3;
  r.coverage = c;
  nlohmann::ordered_json j = report_json(r);
  const nlohmann::ordered_json& none = j["coverage"]["optional_fields"]["param.same_as_previous"];
  EXPECT_EQ(none["status"], "untested");
  EXPECT_EQ(none["compared"], 0);
  EXPECT_FALSE(none.contains("why_untested"));

  r.coverage->optional_fields["param.same_as_previous"] = OptionalFieldCount{0, 40, 0};
  j = report_json(r);
  const nlohmann::ordered_json& unreported = j["coverage"]["optional_fields"]["param.same_as_previous"];
  EXPECT_EQ(unreported["status"], "untested");
  EXPECT_EQ(unreported["not_reported"], 40);
  EXPECT_NE(unreported["why_untested"].get<std::string>().find("does not report it"), std::string::npos);
  std::string md = report_markdown(r);
  EXPECT_NE(md.find("| `param.same_as_previous` (SEM-1.6) | **untested** | 0 | 40 | the implementation does not report it"),
            std::string::npos) << md;
  EXPECT_NE(report_junit(r).find("<property name=\"untested_field\" value=\"param.same_as_previous: the implementation"),
            std::string::npos) << report_junit(r);

  r.coverage->optional_fields["param.same_as_previous"] = OptionalFieldCount{30, 0, 10};
  j = report_json(r);
  EXPECT_EQ(j["coverage"]["optional_fields"]["param.same_as_previous"]["status"], "partly untested");
  EXPECT_NE(j["coverage"]["optional_fields"]["param.same_as_previous"]["why_untested"].get<std::string>().find(
                "expected traces do not record it"),
            std::string::npos);
  r.coverage->optional_fields["param.same_as_previous"] = OptionalFieldCount{30, 0, 0};
  md = report_markdown(r);
  EXPECT_NE(md.find("| `param.same_as_previous` (SEM-1.6) | tested | 30 | 0 |  |"), std::string::npos) << md;
}

TEST(Report, DifferencesAProfileAcceptedLeaveAPassAPass) {
  LockstepResult result;
  result.passed = true;
  MaskedDifference m;
  m.reason = "profile pytorch-python rule py-sgd-state-without-momentum: ...";
  m.by_profile = true;
  result.masked.push_back(m);
  EXPECT_EQ(make_case_report("random-1", result, std::nullopt, "").status, CaseStatus::Passed);
  result.masked.front().by_profile = false;  // the user's own mask: a known discrepancy
  EXPECT_EQ(make_case_report("random-1", result, std::nullopt, "").status, CaseStatus::Known);
}

}  // namespace
}  // namespace lockstep
