// Tests of named cases' version conditions (named_case.h, SEM-12): a check with "when": {"pytorch": ...} is
// applied only for such versions, a condition that cannot be read is a read error naming its pointer, and
// the shipped sem12 case tells impl's 1.x zero_grad default from its 2.x one.
#include "conformance/run/named_case.h"

#include <cstdio>
#include <fstream>
#include <typeinfo>

#include <gtest/gtest.h>

#include "conformance/program/file_system.h"
#include "conformance/program/program_json.h"
#include "conformance/run/interpreter.h"
#include "impl/engine_adapter.h"

namespace lockstep {
namespace {

using json = nlohmann::ordered_json;

// x = [1, 2, 3], loss (x*x).sum(): after the backward (action 1) x's grad is [2, 4, 6].
json case_with_checks(const json& checks) {
  json c = json::parse(R"({"id": "t-when", "description": "d", "semantics": ["SEM-12.1"], "tags": ["float64"],
    "program": {"params": [{"name": "x", "dtype": "float64", "shape": [3], "values": [1, 2, 3]}],
                "loss": {"op": "sum", "args": [{"op": "mul", "args": [{"op": "param", "name": "x"},
                                                                       {"op": "param", "name": "x"}]}]},
                "actions": [{"action": "forward"}, {"action": "backward"}]}})");
  c["checks"] = checks;
  return c;
}

std::string write_case(const std::string& name, const json& doc) {
  const std::string path = files::process_temp_dir() + "/" + name;
  std::ofstream out(path);
  out << doc.dump(2);
  return path;
}

NamedCase read_case(const json& doc) {
  const std::string path = write_case("named_case_test.json", doc);
  NamedCase c = read_case_file(path);
  std::remove(path.c_str());
  return c;
}

// case_from_text() is read_case_file() without the file: the same case, and errors naming the given name.
TEST(NamedCaseText, ReadsTheSameCaseAsTheFileAndNamesTheGivenFile) {
  const json doc = case_with_checks(json::parse(R"([{"after": 1, "pointer": "/params/x/grad/values", "equals": [2, 4, 6]}])"));
  const NamedCase from_file = read_case(doc);
  const NamedCase from_text = case_from_text(doc.dump(), "stdin");
  EXPECT_EQ(from_text.file, "stdin");
  EXPECT_EQ(from_text.id, from_file.id);
  EXPECT_EQ(from_text.program_json, from_file.program_json);
  EXPECT_EQ(from_text.checks.size(), from_file.checks.size());
  try {
    case_from_text(R"({"id": "Bad Id"})", "stdin");
    FAIL() << "an invalid id was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "stdin");
    EXPECT_EQ(e.pointer(), "/id");
  }
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + "\n";
  return s;
}

TEST(NamedCaseWhen, ConditionalChecksApplyOnlyForTheirVersions) {
  const NamedCase c = read_case(case_with_checks(json::parse(R"([
    {"after": 1, "pointer": "/params/x/grad/values", "equals": [2, 4, 6]},
    {"after": 1, "pointer": "/params/x/grad/values", "equals": [0, 0, 0], "when": {"pytorch": ">=2.0"}},
    {"after": 1, "pointer": "/params/x/grad/values", "equals": [9, 9, 9], "when": {"pytorch": "<2.0"}}])")));
  ASSERT_EQ(c.checks.size(), 3u);
  EXPECT_EQ(c.checks[0].when_pytorch, "");
  EXPECT_EQ(c.checks[1].when_pytorch, ">=2.0");
  EXPECT_EQ(c.checks[2].when_pytorch, "<2.0");
  auto engine = make_impl_engine();
  const Trace trace = run_program(c.program, *engine);

  // No version: the conditional checks are not checked, the unconditional one holds.
  EXPECT_TRUE(check_case(c, trace).empty()) << joined(check_case(c, trace));
  EXPECT_TRUE(check_case(c, trace, "unknown").empty());
  for (const char* v : {"2.0", "2.1.0+cu118", "10.0"}) {
    const std::vector<std::string> f = check_case(c, trace, v);
    ASSERT_EQ(f.size(), 1u) << v << ":\n" << joined(f);
    EXPECT_NE(f[0].find("expected [0,0,0]"), std::string::npos) << f[0];  // the >=2.0 check, not the <2.0 one
  }
  for (const char* v : {"1.13", "libtorch-1.13.0", "1.9.1"}) {
    const std::vector<std::string> f = check_case(c, trace, v);
    ASSERT_EQ(f.size(), 1u) << v << ":\n" << joined(f);
    EXPECT_NE(f[0].find("expected [9,9,9]"), std::string::npos) << f[0];
  }
}

TEST(NamedCaseWhen, BadConditionsAreReadErrorsNamingThePointer) {
  struct Bad {
    json when;
    const char* pointer;
  } bad[] = {
      {json::parse(R"({"pytorch": "2.0"})"), "/checks/1/when/pytorch"},
      {json::parse(R"({"pytorch": "=2.0"})"), "/checks/1/when/pytorch"},
      {json::parse(R"({"pytorch": ">=two"})"), "/checks/1/when/pytorch"},
      {json::parse(R"({"pytorch": 2.0})"), "/checks/1/when/pytorch"},
      {json::parse(R"({})"), "/checks/1/when"},
      {json::parse(R"({"pytorch": ">=2.0", "cuda": ">=11"})"), "/checks/1/when/cuda"},
      {json::parse(R"(">=2.0")"), "/checks/1/when"},
  };
  for (const Bad& b : bad) {
    json checks = json::parse(R"([{"after": 1, "pointer": "/params/x/grad/values", "equals": [2, 4, 6]},
                                  {"after": 1, "pointer": "/params/x/grad/values", "equals": [2, 4, 6]}])");
    checks[1]["when"] = b.when;
    const std::string path = write_case("named_case_test_bad.json", case_with_checks(checks));
    try {
      read_case_file(path);
      ADD_FAILURE() << "no error for \"when\": " << b.when.dump();
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_EQ(e.pointer(), b.pointer) << b.when.dump() << ": " << e.what();
    }
    std::remove(path.c_str());
  }
}

// Issue 14: a check pointer with an array index no record can have ("/records/99999999999999999999") ended
// the run with an uncaught json out_of_range exception; it is a read error naming the file and the check.
TEST(NamedCasePointers, ImpossibleArrayIndicesAreReadErrorsNamingTheCheck) {
  for (const char* bad : {"/params/x/grad/values/99999999999999999999", "/params/x/grad/values/18446744073709551616",
                          "/params/x/grad/values/12345678"}) {
    json checks = json::array({{{"after", 1}, {"pointer", "/params/x/grad/values"}, {"equals", {2, 4, 6}}},
                               {{"after", 1}, {"pointer", bad}, {"equals", 2}}});
    const std::string path = write_case("named_case_test_index.json", case_with_checks(checks));
    try {
      read_case_file(path);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_EQ(e.pointer(), "/checks/1/pointer") << e.what();
    }
    std::remove(path.c_str());
  }
  // A large but possible index is read, and at check time it is simply absent.
  json checks = json::array({{{"after", 1}, {"pointer", "/params/x/grad/values/1048575"}, {"equals", 2}}});
  NamedCase c = read_case(case_with_checks(checks));
  auto engine = make_impl_engine();
  const Trace trace = run_program(c.program, *engine);
  const std::vector<std::string> failures = check_case(c, trace, "1.13.1");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("missing"), std::string::npos) << failures[0];
}

// An empty condition is as unreadable as any other: a read error naming its pointer, like "2.0" above.
TEST(NamedCaseWhen, EmptyConditionIsAReadError) {
  json checks = json::parse(
      R"([{"after": 1, "pointer": "/params/x/grad/values", "equals": [2, 4, 6], "when": {"pytorch": ""}}])");
  const std::string path = write_case("named_case_test_empty.json", case_with_checks(checks));
  try {
    read_case_file(path);
    ADD_FAILURE() << "no error for an empty condition";
  } catch (const InputError& e) {
    EXPECT_EQ(e.pointer(), "/checks/0/when/pytorch") << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "an empty condition escapes as " << typeid(e).name() << " (" << e.what()
                  << "), not InputError";
  }
  std::remove(path.c_str());
}

NamedCase sem12() {
  for (NamedCase& c : load_cases(default_cases_dir()))
    if (c.id == "sem12-zero-grad-default-by-version") return std::move(c);
  throw std::runtime_error("no case sem12-zero-grad-default-by-version");
}

TEST(NamedCaseWhen, Sem12TellsTheZeroGradDefaultByVersion) {
  const NamedCase c = sem12();
  int below = 0, at_least = 0;
  for (const CaseCheck& check : c.checks) {
    below += check.when_pytorch == "<2.0";
    at_least += check.when_pytorch == ">=2.0";
  }
  EXPECT_GT(below, 0);
  EXPECT_GT(at_least, 0);

  auto zeroes = make_impl_engine(false);     // 1.x: zero_grad() zeroes in place
  auto nones = make_impl_engine(true);        // >= 2.0: zero_grad() sets to none
  const Trace t1 = run_program(c.program, *zeroes);
  const Trace t2 = run_program(c.program, *nones);
  EXPECT_TRUE(check_case(c, t1, "1.13").empty()) << joined(check_case(c, t1, "1.13"));
  EXPECT_TRUE(check_case(c, t1, "libtorch-1.13.1").empty());
  EXPECT_TRUE(check_case(c, t2, "2.0").empty()) << joined(check_case(c, t2, "2.0"));
  EXPECT_TRUE(check_case(c, t2, "2.1.0").empty());
  // A 1.x default claiming 2.x fails, and the other way round.
  const std::vector<std::string> wrong = check_case(c, t1, "2.1");
  EXPECT_FALSE(wrong.empty());
  EXPECT_NE(joined(wrong).find("action 3"), std::string::npos) << joined(wrong);
  EXPECT_FALSE(check_case(c, t2, "1.13").empty());
  // Without a version only the unconditional checks apply, and they hold on both.
  EXPECT_TRUE(check_case(c, t1).empty());
  EXPECT_TRUE(check_case(c, t2).empty());
}

}  // namespace
}  // namespace lockstep
