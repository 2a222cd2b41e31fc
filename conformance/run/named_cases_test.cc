// Every named case (SEMANTICS §10) runs on the oracle and on impl with the same checks.
#include <gtest/gtest.h>

#include "conformance/run/interpreter.h"
#include "conformance/run/named_case.h"
#include "impl/engine_adapter.h"
#include "oracle/torch_engine.h"

namespace lockstep {
namespace {

std::vector<std::string> case_ids() {
  std::vector<std::string> ids;
  for (const NamedCase& c : load_cases(default_cases_dir())) ids.push_back(c.id);
  return ids;
}

NamedCase find_case(const std::string& id) {
  for (NamedCase& c : load_cases(default_cases_dir()))
    if (c.id == id) return std::move(c);
  throw std::runtime_error("no case " + id);
}

std::string test_name(const testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& ch : n)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

void expect_case_holds(const NamedCase& c, Engine& engine) {
  ASSERT_FALSE(c.checks.empty()) << c.id << " has no checks";
  Trace trace = run_program(c.program, engine);
  for (const std::string& failure : check_case(c, trace)) ADD_FAILURE() << c.id << " on " << engine.name()
                                                                           << ": " << failure;
}

class NamedCaseTest : public testing::TestWithParam<std::string> {};

TEST_P(NamedCaseTest, HoldsOnOracle) {
  NamedCase c = find_case(GetParam());
  auto engine = make_torch_engine();
  expect_case_holds(c, *engine);
}

TEST_P(NamedCaseTest, HoldsOnImpl) {
  NamedCase c = find_case(GetParam());
  auto engine = make_impl_engine();
  expect_case_holds(c, *engine);
}

INSTANTIATE_TEST_SUITE_P(SEM10, NamedCaseTest, testing::ValuesIn(case_ids()), test_name);

// The checks themselves can fail: a case whose expected number is changed reports the difference.
TEST(NamedCaseChecks, ReportAWrongExpectation) {
  NamedCase c = find_case("tut003-repeated-backward-accumulates");
  auto engine = make_torch_engine();
  Trace trace = run_program(c.program, *engine);
  ASSERT_TRUE(check_case(c, trace).empty());
  c.checks[0].equals = nlohmann::ordered_json::array({2, 4, 7});
  auto failures = check_case(c, trace);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("/params/x/grad/values"), std::string::npos) << failures[0];
}

TEST(NamedCaseChecks, ToleranceIsRelative) {
  NamedCase c = find_case("tut003-hand-worked-with-zeroing");
  auto engine = make_torch_engine();
  Trace trace = run_program(c.program, *engine);
  CaseCheck& last = c.checks.back();  // theta == 8 after the third step
  last.equals = nlohmann::ordered_json::array({8.0 * (1 + 1e-9)});
  EXPECT_EQ(check_case(c, trace).size(), 1u);
  last.tolerance = 1e-8;
  EXPECT_TRUE(check_case(c, trace).empty());
}

}  // namespace
}  // namespace lockstep
