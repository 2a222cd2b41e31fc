// Tests of what the oracle cannot judge (run_scope.h, exclude_what_the_oracle_lacks; SEMANTICS 20.2, 20.4): LibTorch's
// C++ API leaves maximize out with its reason; a driver oracle's hello narrows the scope as an implementation's does,
// and its API profile applies turned around.
#include "conformance/run/run_scope.h"

#include <gtest/gtest.h>

#include "conformance/generate/generators.h"
#include "conformance/program/data_dir.h"
#include "conformance/program/features.h"

namespace lockstep {
namespace {

using json = nlohmann::ordered_json;

TEST(OracleScope, LibTorchsCppApiLeavesMaximizeOutSayingWhy) {
  RunScope s;
  Expectations expectations;
  exclude_what_the_oracle_lacks(s, nullptr, "", expectations);
  for (const char* optimizer : {"sgd", "adam", "adamw", "rmsprop", "adagrad"}) {
    const FeatureExclusion* x = s.scope->excluded({std::string(optimizer) + ".maximize"});
    ASSERT_NE(x, nullptr) << optimizer;
    EXPECT_NE(x->reason.find("LibTorch's C++ API, has no maximize"), std::string::npos) << x->reason;
  }
  EXPECT_EQ(s.scope->excluded({"sgd.momentum", "adam.amsgrad", "lbfgs.max_iter"}), nullptr);
  EXPECT_TRUE(expectations.entries.empty());
}

TEST(OracleScope, ADriverOraclesHelloNarrowsTheScope) {
  const Capabilities caps = capabilities_from_hello(json::parse(
      R"({"name": "py", "version": "1", "protocol": 8, "supports": {"optimizers": {"sgd": ["lr", "maximize"]}}})"));
  RunScope s;
  Expectations expectations;
  exclude_what_the_oracle_lacks(s, &caps, "", expectations);
  EXPECT_EQ(s.scope->excluded({"sgd", "sgd.maximize"}), nullptr);
  const FeatureExclusion* momentum = s.scope->excluded({"sgd.momentum"});
  ASSERT_NE(momentum, nullptr);
  EXPECT_NE(momentum->reason.find("the oracle (py)"), std::string::npos) << momentum->reason;
  EXPECT_NE(s.scope->excluded({"adam"}), nullptr);
}

// The oracle is the side whose API differs: Python's SGD has a state entry C++ lacks, so from the oracle's side the
// accepted difference is expected "true", actual "false".
TEST(OracleScope, TheOraclesProfileAppliesTurnedAround) {
  const Capabilities caps =
      capabilities_from_hello(json::parse(R"({"name": "py", "version": "1", "protocol": 8, "api_profile": "pytorch-python"})"));
  RunScope s;
  Expectations expectations;
  exclude_what_the_oracle_lacks(s, &caps, "", expectations);
  bool found = false;
  for (const Expectation& e : expectations.entries)
    if (e.source.find("py-sgd-state-without-momentum") != std::string::npos) {
      found = true;
      EXPECT_EQ(e.expected_value, "true");
      EXPECT_EQ(e.actual_value, "false");
    }
  EXPECT_TRUE(found);
  EXPECT_NE(s.scope->excluded({"group_options_partial"}), nullptr);  // an avoid rule: avoided either way
  EXPECT_NE(s.coverage.profile.find("the oracle's"), std::string::npos) << s.coverage.profile;
  RunScope none;
  Expectations untouched;
  exclude_what_the_oracle_lacks(none, &caps, "none", untouched);
  EXPECT_TRUE(untouched.entries.empty());
  EXPECT_EQ(none.scope->excluded({"group_options_partial"}), nullptr);
}

// make_scope_against_oracle, the one call of `lockstep run --oracle` and `lockstep mutants --oracle`: the oracle's
// hello narrows the scope, its expectations file applies turned around and decided at the oracle's version, the
// version rules see both versions, and a file that cannot be read is an error naming its flag.
TEST(OracleScope, AgainstADriverOracleOneCallAppliesTheOraclesHelloExpectationsAndVersion) {
  const Capabilities impl_caps;  // an in-process engine: everything
  const Capabilities oracle_caps = capabilities_from_hello(json::parse(
      R"({"name": "py", "version": "1", "protocol": 8, "pytorch_version": "2.6.0",
          "supports": {"ops": ["add", "embedding", "sum"], "optimizers": {"sgd": ["lr", "maximize"]}}})"));
  const std::string file = source_dir() + "/fixtures/expectations/pytorch-python.json";
  auto turned_lerp_entries = [](const Expectations& e) {
    int n = 0;
    for (const Expectation& x : e.entries)
      if (x.reason.find("lerp_(grad, 1 - beta1)") != std::string::npos) {
        ++n;
        EXPECT_NE(x.source.find("turned around"), std::string::npos) << x.source;
      }
    return n;
  };
  Expectations e;
  RunScope s = make_scope_against_oracle({impl_caps, "", "1.13.1", &oracle_caps, "python3 py.py", "", "", "", file}, e);
  EXPECT_EQ(turned_lerp_entries(e), 1);  // "when >= 2.0" holds for the oracle's 2.6
  EXPECT_NE(s.scope->excluded({"sgd.momentum"}), nullptr);
  EXPECT_EQ(s.scope->excluded({"sgd.maximize"}), nullptr);
  bool version_rule = false;  // 1.13 against 2.6: a retained embedding graph after a step is left out (SEM-12.5)
  for (const auto& [features, why] : s.coverage.left_out)
    version_rule = version_rule || (features == std::vector<std::string>{"op:embedding", "backward_after_step"});
  EXPECT_TRUE(version_rule);

  // An oracle of 1.13: the entry is not for it; one generation: no version rule.
  const Capabilities old_caps =
      capabilities_from_hello(json::parse(R"({"name": "py", "version": "1", "protocol": 8, "pytorch_version": "1.13.1"})"));
  Expectations e113;
  RunScope s113 = make_scope_against_oracle({impl_caps, "", "1.13.1", &old_caps, "python3 py.py", "", "", "", file}, e113);
  EXPECT_EQ(turned_lerp_entries(e113), 0);
  for (const auto& [features, why] : s113.coverage.left_out)
    EXPECT_NE(features, (std::vector<std::string>{"op:embedding", "backward_after_step"}));

  Expectations bad;
  try {
    make_scope_against_oracle({impl_caps, "", "1.13.1", &oracle_caps, "python3 py.py", "", "", "", "/nonexistent.json"},
                              bad);
    ADD_FAILURE() << "no error for a file that does not exist";
  } catch (const std::runtime_error& x) {
    EXPECT_EQ(std::string(x.what()).rfind("--oracle-expectations: /nonexistent.json", 0), 0u) << x.what();
  }
}

// SEMANTICS 20.4: the generator sets maximize only when asked (a driver oracle that has it), from its own stream: the
// programs without it are the programs of the same seed without the option.
TEST(OracleScope, MaximizeIsGeneratedOnlyWhenTheOracleHasIt) {
  GenOptions plain;
  GenOptions with = plain;
  with.maximize = true;
  RandomPrograms a(5, plain), b(5, with);
  int maximized = 0, with_optimizer = 0;
  for (uint64_t i = 0; i < 400; ++i) {
    const Program pa = a.at(i).value(), pb = b.at(i).value();
    for (const std::string& f : program_features(pa)) EXPECT_EQ(f.find(".maximize"), std::string::npos) << f;
    bool on = false;
    for (const std::string& f : program_features(pb)) on = on || f.find(".maximize") != std::string::npos;
    maximized += on;
    if (pb.optimizer && pb.optimizer->kind != OptimizerKind::LBFGS) ++with_optimizer;
    if (!on) EXPECT_EQ(pa.actions.size(), pb.actions.size()) << i;
  }
  EXPECT_GT(maximized, with_optimizer / 8) << "of " << with_optimizer;
  EXPECT_LT(maximized, with_optimizer / 2) << "of " << with_optimizer;
}

}  // namespace
}  // namespace lockstep
