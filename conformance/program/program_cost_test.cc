// Tests of the run-cost limits (program_cost.h): bounds that hold on real traces, checked before running, and a
// rejection that names the action where a limit is passed.
#include "conformance/program/program_cost.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "conformance/program/json_reader.h"
#include "conformance/program/trace_json.h"
#include "conformance/run/fixture.h"
#include "conformance/run/named_case.h"

namespace lockstep {
namespace {

// What parse_json_text counts against kMaxJsonValues: every value, arrays and objects included.
int64_t json_values(const nlohmann::ordered_json& j) {
  int64_t n = 1;
  if (j.is_structured())
    for (const auto& e : j) n += json_values(e);
  return n;
}

int64_t observed_values(const Trace& t) {
  int64_t n = json_values(record_to_json(t.init));
  for (const Record& r : t.records) n += json_values(record_to_json(r));
  return n;
}

Action hold(const std::string& param, const std::string& handle) {
  Action a;
  a.kind = ActionKind::HoldGrad;
  a.param = param;
  a.handle = handle;
  return a;
}

// Expects validate() to reject `p` at exactly `path` with `fragment` in the message.
void expect_rejected_at(const Program& p, const std::string& path, const std::string& fragment) {
  try {
    validate(p);
    FAIL() << "accepted; expected a ProgramError at " << path;
  } catch (const ProgramError& e) {
    EXPECT_EQ(e.path(), path) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// The bound is an upper bound of what real traces observe: every recorded trace of the corpus (every optimizer,
// handles, groups, create_graph) within it, counted as the JSON values a driver's answer would carry.
TEST(ProgramCost, BoundsEveryTraceOfTheCorpus) {
  const std::vector<Fixture> corpus = load_fixtures(default_fixtures_dir());
  ASSERT_GT(corpus.size(), 100u);
  for (const Fixture& f : corpus) {
    const ProgramCost c = program_cost(f.program);
    EXPECT_LE(observed_values(f.expected), c.observed_values) << f.id;
    EXPECT_GT(c.arithmetic, 0) << f.id;
  }
}

// What the project ships is far inside the limits (a user's programs of the same kind never meet them).
TEST(ProgramCost, ShippedProgramsAreFarInsideTheLimits) {
  const ProgramLimits limits;
  for (const Fixture& f : load_fixtures(default_fixtures_dir())) {
    const ProgramCost c = program_cost(f.program);
    EXPECT_LT(c.observed_values, limits.max_observed_values / 64) << f.id;
    EXPECT_LT(c.arithmetic, limits.max_arithmetic / 64) << f.id;
  }
  for (const NamedCase& nc : load_cases(default_cases_dir())) {
    const ProgramCost c = program_cost(nc.program);
    EXPECT_LT(c.observed_values, limits.max_observed_values / 64) << nc.id;
    EXPECT_LT(c.arithmetic, limits.max_arithmetic / 64) << nc.id;
  }
}

// Issue 14: 10,000 hold_grad actions on one 0-d parameter (580 KB of JSON, within every other limit) observed every
// held handle again in every later record and exhausted 4 GB. Now rejected before running, at the first action
// past the limit; one action fewer is accepted.
TEST(ProgramCost, HeldHandlesAreRejectedAtTheActionThatPassesTheLimit) {
  Program p;
  p.params.push_back({"x", DType::Float32, {}, {1}});
  for (int i = 0; i < 10000; ++i) p.actions.push_back(hold("x", "h" + std::to_string(i)));
  size_t at = 0;
  try {
    validate(p);
    FAIL() << "accepted";
  } catch (const ProgramError& e) {
    const std::string prefix = "/actions/";
    ASSERT_EQ(e.path().rfind(prefix, 0), 0u) << e.what();
    at = std::stoul(e.path().substr(prefix.size()));
    EXPECT_NE(std::string(e.what()).find("4,194,304 values"), std::string::npos) << e.what();
  }
  ASSERT_GT(at, 100u);
  EXPECT_EQ(actions_within_cost(p), at);  // what the generator keeps of a program that grew past a limit
  p.actions.resize(at);
  EXPECT_EQ(actions_within_cost(p), at);
  EXPECT_NO_THROW(validate(p));
  EXPECT_LE(program_cost(p).observed_values, ProgramLimits{}.max_observed_values);
  p.actions.push_back(hold("x", "one-more"));
  expect_rejected_at(p, "/actions/" + std::to_string(at), "values by this action");
}

// A taken-again handle is observed once: replacing it does not add to the trace. `once` observes k + 1 handles
// after its k-th action, `again` one: each extra handle in a record is its tensor (100 values + 16), its name (1) and its entry (2).
TEST(ProgramCost, AHandleTakenAgainIsObservedOnce) {
  Program once, again;
  once.params.push_back({"x", DType::Float64, {100}, std::vector<double>(100, 1)});
  again.params = once.params;
  for (int i = 0; i < 50; ++i) {
    once.actions.push_back(hold("x", "h" + std::to_string(i)));
    again.actions.push_back(hold("x", "h"));
  }
  EXPECT_EQ(program_cost(once).observed_values - program_cost(again).observed_values, (49 * 50 / 2) * (116 + 1 + 2));
}

// The arithmetic limit: a (1024, 256) @ (256, 1024) matmul is 2^28 multiply-adds, each forward counted for both
// engines and the comparator; the first forward passes it (while its trace is well within its own limit).
TEST(ProgramCost, ArithmeticLimitNamesTheForward) {
  Program p;
  p.params.push_back({"a", DType::Float32, {1024, 256}, std::vector<double>(1024 * 256, 0.5)});
  p.params.push_back({"b", DType::Float32, {256, 1024}, std::vector<double>(1024 * 256, 0.5)});
  p.loss = sum(binary(Op::Matmul, param("a"), param("b")));
  Action forward;
  forward.kind = ActionKind::Forward;
  p.actions = {forward};
  expect_rejected_at(p, "/actions/0", "element operations by this action");
  // A 64 x 64 matmul repeated is fine.
  p.params = {{"w", DType::Float32, {64, 64}, std::vector<double>(64 * 64, 0.5)}};
  p.loss = sum(binary(Op::Matmul, param("w"), param("w")));
  p.actions.assign(50, forward);
  EXPECT_NO_THROW(validate(p));
}

// A parameter may be listed many times (SEMANTICS §7.4: stepped once per listing): the listings are bounded, and
// stepped ones are counted as often as listed.
TEST(ProgramCost, GroupListingsAreBoundedAndCountedAsListed) {
  Program p;
  p.params.push_back({"w", DType::Float32, {4096}, std::vector<double>(4096, 0.5)});
  OptimizerSpec sgd;
  sgd.defaults.lr = 0.1;
  sgd.groups.push_back({std::vector<std::string>(2000, "w"), std::nullopt});
  p.optimizer = sgd;
  expect_rejected_at(p, "/optimizer", "1024 parameters listed in param groups");
  p.optimizer->groups[0].params.resize(1000);
  Action step;
  step.kind = ActionKind::Step;
  p.actions = {step};
  const int64_t listed_1000 = program_cost(p).arithmetic;
  p.optimizer->groups[0].params.resize(1);
  EXPECT_GT(listed_1000, 500 * program_cost(p).arithmetic);
  // add_param_group counts too, at the action that passes the limit.
  p.optimizer->groups[0].params.assign(1000, "w");
  Action add;
  add.kind = ActionKind::AddParamGroup;
  add.new_group.params.assign(30, "w");
  p.actions = {add};
  expect_rejected_at(p, "/actions/0", "parameters listed in param groups");
}

// Expressions are bounded in nodes (a million 0-d nodes cost little arithmetic each but a lot of graph).
TEST(ProgramCost, ExpressionNodesAreBounded) {
  Program p;
  p.params.push_back({"s", DType::Float32, {}, {1}});
  ExprPtr e = param("s");
  for (int i = 0; i < 5000; ++i) e = add(e, param("s"));  // depth 5000 too: the node count is checked first
  p.loss = sum(e);
  ProgramLimits limits;
  limits.max_expr_depth = 100000;
  try {
    check_program_cost(p, limits);
    FAIL() << "accepted";
  } catch (const ProgramError& err) {
    EXPECT_EQ(err.path(), "/loss");
    EXPECT_NE(std::string(err.what()).find("4096 nodes"), std::string::npos) << err.what();
  }
}

// A parameter of 2^20 elements may be declared (max_elements_per_tensor), but every record observes it with its
// grad: its init record fits (2 x 2^20 values and change), the first action's record passes the trace limit.
// A quarter of it runs for six actions.
TEST(ProgramCost, LargeParameterIsRejectedAtTheRecordThatPassesTheLimit) {
  Program p;
  p.params.push_back({"w", DType::Float32, {1 << 20}, std::vector<double>(1 << 20, 0.5)});
  p.loss = sum(param("w"));
  Action forward, backward;
  forward.kind = ActionKind::Forward;
  backward.kind = ActionKind::Backward;
  p.actions = {forward, backward};
  expect_rejected_at(p, "/actions/0", "4,194,304 values by this action");
  p.params[0] = {"w", DType::Float32, {1 << 18}, std::vector<double>(1 << 18, 0.5)};
  p.actions = {forward, backward, forward, backward, forward, backward};
  EXPECT_NO_THROW(validate(p));
}

TEST(ProgramCost, NamesLongerThanTheLimitAreRejected) {
  Program p;
  p.params.push_back({std::string(257, 'w'), DType::Float32, {}, {1}});
  expect_rejected_at(p, "/params/0/name", "257 bytes exceeds the limit of 256");
  p.params[0].name = std::string(256, 'w');
  p.actions.push_back(hold(p.params[0].name, std::string(300, 'h')));
  expect_rejected_at(p, "/actions/0/handle", "300 bytes");
}

// Every JSON reader: values and object keys are counted as they are parsed, and the one past a limit is named.
TEST(JsonLimits, ValuesAndKeysAreBoundedWhileParsing) {
  EXPECT_NO_THROW(parse_json_text("[1, 2, 3]", 16, 4));
  try {
    parse_json_text("{\"a\": [1, 2, [3, 4]]}", 16, 5);
    FAIL();
  } catch (const JsonError& e) {
    EXPECT_EQ(e.pointer(), "/a/2/0") << e.what();
    EXPECT_NE(std::string(e.what()).find("more than 5 JSON values"), std::string::npos) << e.what();
  }
  std::string wide = "{";
  for (int64_t i = 0; i <= kMaxJsonObjectKeys; ++i) wide += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":0";
  wide += "}";
  try {
    parse_json_text(wide, 16);
    FAIL();
  } catch (const JsonError& e) {
    EXPECT_EQ(e.pointer(), "/k" + std::to_string(kMaxJsonObjectKeys)) << e.what();
  }
}

}  // namespace
}  // namespace lockstep
