// Tests of the optimizer descriptions' arithmetic hooks (optimizer_descriptions.h): every optimizer has them, and
// the step in double follows SEMANTICS on hand-worked numbers.
#include "conformance/program/optimizer_descriptions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace lockstep {
namespace {

TEST(OptimizerDescriptions, EveryOptimizerHasItsArithmetic) {
  // The comparator's tolerance and the error budget call these for every optimizer: none may be missing.
  for (const OptimizerDescription& d : optimizer_descriptions()) {
    EXPECT_NE(d.step_scales, nullptr) << d.name;
    EXPECT_NE(d.step_in_double, nullptr) << d.name;
    for (const StateTensorDescription& t : d.state) EXPECT_NE(t.field, nullptr) << d.name << " " << t.name;
  }
}

TEST(OptimizerDescriptions, StepVariantNamesAreOptimizerScopedAndEvaluable) {
  std::set<std::string> names;
  for (const OptimizerDescription& d : optimizer_descriptions())
    for (const StepFormulaVariant& v : d.step_variants) {
      EXPECT_NE(v.value, nullptr) << v.name;
      // A variant is named after the optimizer it belongs to ("adam.*" for Adam and AdamW alike).
      const std::string family = d.kind == OptimizerKind::AdamW ? "adam" : d.name;
      EXPECT_EQ(std::string(v.name).rfind(family + ".", 0), 0u) << v.name << " in " << d.name;
      names.insert(v.name);
    }
  EXPECT_TRUE(names.count("adam.no_bias_correction"));
  EXPECT_TRUE(names.count("sgd.nesterov_adds_momentum_buffer_to_grad"));
}

ShadowParam shadow(std::vector<double> p, std::vector<double> g) {
  ShadowParam s;
  s.p = std::move(p);
  s.g = std::move(g);
  return s;
}

TEST(OptimizerDescriptions, SgdMomentumBufferStartsAsACopyOfTheFirstGradient) {  // SEM-5.3
  OptimizerOptions given;
  given.lr = 0.1;
  given.momentum = 0.9;
  given.dampening = 0.5;  // not applied at the first step
  const OptimizerOptions o = resolved_options(OptimizerKind::SGD, given);
  ShadowParam s = shadow({1.0}, {2.0});
  ASSERT_TRUE(describe(OptimizerKind::SGD).step_in_double(o, s));
  EXPECT_EQ(s.state.at("momentum_buffer"), std::vector<double>{2.0});
  EXPECT_DOUBLE_EQ(s.p[0], 1.0 - 0.1 * 2.0);
  s.g = {4.0};  // second step: buf = 0.9 * 2 + (1 - 0.5) * 4 = 3.8
  ASSERT_TRUE(describe(OptimizerKind::SGD).step_in_double(o, s));
  EXPECT_DOUBLE_EQ(s.state.at("momentum_buffer")[0], 3.8);
  EXPECT_DOUBLE_EQ(s.p[0], 0.8 - 0.1 * 3.8);
}

TEST(OptimizerDescriptions, AdamFirstStepIsBiasCorrectedAndCounted) {  // SEM-6.3
  OptimizerOptions given;
  given.lr = 0.5;
  given.eps = 0.0;
  const OptimizerOptions o = resolved_options(OptimizerKind::Adam, given);
  ShadowParam s = shadow({3.0}, {-2.0});
  ASSERT_TRUE(describe(OptimizerKind::Adam).step_in_double(o, s));
  EXPECT_EQ(s.step, 1);
  EXPECT_DOUBLE_EQ(s.state.at("exp_avg")[0], 0.1 * -2.0);
  EXPECT_DOUBLE_EQ(s.state.at("exp_avg_sq")[0], (1 - 0.999) * 4.0);
  EXPECT_FALSE(s.state.count("max_exp_avg_sq"));
  // m / bc1 = -2 and sqrt(v / bc2) = 2: the first step moves p by lr against the gradient's sign.
  EXPECT_NEAR(s.p[0], 3.0 + 0.5, 1e-12);
}

TEST(OptimizerDescriptions, AdamWDecaysTheParameterNotTheGradient) {  // SEM-6.4
  OptimizerOptions given;
  given.lr = 0.5;
  given.eps = 0.0;
  given.weight_decay = 0.1;
  given.amsgrad = true;
  ShadowParam adamw = shadow({3.0}, {-2.0});
  ASSERT_TRUE(describe(OptimizerKind::AdamW).step_in_double(resolved_options(OptimizerKind::AdamW, given), adamw));
  EXPECT_DOUBLE_EQ(adamw.state.at("exp_avg")[0], 0.1 * -2.0);  // the grad alone
  EXPECT_DOUBLE_EQ(adamw.state.at("max_exp_avg_sq")[0], adamw.state.at("exp_avg_sq")[0]);
  EXPECT_NEAR(adamw.p[0], 3.0 * (1 - 0.5 * 0.1) + 0.5, 1e-12);
  ShadowParam adam = shadow({3.0}, {-2.0});
  ASSERT_TRUE(describe(OptimizerKind::Adam).step_in_double(resolved_options(OptimizerKind::Adam, given), adam));
  EXPECT_DOUBLE_EQ(adam.state.at("exp_avg")[0], 0.1 * (-2.0 + 0.1 * 3.0));  // the L2 term in g
}

TEST(OptimizerDescriptions, TheScopeNeverLeavesNesterovWithoutItsMomentum) {  // SEM-5.2
  OptimizerOptions o;
  o.nesterov = true;
  o.momentum = 0.9;
  describe(OptimizerKind::SGD).unset_invalid_combinations(o);
  EXPECT_TRUE(o.nesterov.has_value());
  o.momentum.reset();  // the scope unset it
  describe(OptimizerKind::SGD).unset_invalid_combinations(o);
  EXPECT_FALSE(o.nesterov.has_value());
}

}  // namespace
}  // namespace lockstep
