// Tests of the optimizer descriptions' arithmetic hooks (optimizer_descriptions.h): every optimizer has them, and
// the step in double follows SEMANTICS on hand-worked numbers.
#include "conformance/program/optimizer_descriptions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>

namespace lockstep {
namespace {

TEST(OptimizerDescriptions, EveryOptimizerHasItsArithmetic) {
  // The comparator's tolerance and the error budget call these for every optimizer: none may be missing.
  // An optimizer whose step moves between closure calls (L-BFGS) is followed by its model instead.
  for (const OptimizerDescription& d : optimizer_descriptions()) {
    if (d.closure_step_model) {
      EXPECT_TRUE(d.needs_closure) << d.name;
      continue;
    }
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

// SEMANTICS §16.3 through the comparison's model of L-BFGS (optimizer_lbfgs.cc), on the hand-worked sum(w * w) from
// w = [1, -1, 2] of the named case sem16-lbfgs-moves-between-closure-calls: a move of -w/4 (t = 1/8), then of -3w/4
// onto the minimum, then a call that finds the gradient zero.
struct LbfgsCall {
  ParamObservation w;
  explicit LbfgsCall(std::vector<double> values, DType dtype = DType::Float64) {
    w.name = "w";
    w.value.dtype = dtype;
    w.value.shape = {static_cast<int64_t>(values.size())};
    w.value.data = values;
    w.grad.defined = true;
    w.grad.value = w.value;
    for (double& g : w.grad.value.data) g *= 2;  // d/dw sum(w * w)
  }
  ClosureCallSeen seen() const {
    ClosureCallSeen c;
    c.params = {&w};
    double loss = 0;
    for (double v : w.value.data) loss += v * v;
    c.loss = loss;
    return c;
  }
};

TEST(LbfgsModel, Sem16_3_FollowsTheHandWorkedSteps) {
  std::unique_ptr<ClosureStepModel> m = describe(OptimizerKind::LBFGS).closure_step_model();
  m->begin_step(resolved_options(OptimizerKind::LBFGS, OptimizerOptions{}));
  PlannedMove first = m->after_call(LbfgsCall({1, -1, 2}).seen());
  ASSERT_TRUE(first.moves);
  EXPECT_TRUE(first.calls_again);
  EXPECT_EQ(first.move.at("w"), (std::vector<double>{-0.25, 0.25, -0.5}));
  EXPECT_EQ(first.undecided, "");
  PlannedMove second = m->after_call(LbfgsCall({0.75, -0.75, 1.5}).seen());
  ASSERT_TRUE(second.moves) << second.decisions;
  EXPECT_NE(second.decisions.find("pair kept"), std::string::npos) << second.decisions;
  const std::vector<double> w{1, -1, 2};
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(second.move.at("w")[i], -0.75 * w[i], 1e-15);
  // Bounded, and in float64 tiny: each side's own rounding of the direction.
  for (double e : second.error.at("w")) EXPECT_LT(e, 1e-13);
  PlannedMove third = m->after_call(LbfgsCall({0, 0, 0}).seen());
  EXPECT_FALSE(third.moves);
  EXPECT_EQ(third.decisions, "grad small");
}

TEST(LbfgsModel, Sem16_3_ANanGradientIsNeverSmallAndMovesIntoNan) {
  std::unique_ptr<ClosureStepModel> m = describe(OptimizerKind::LBFGS).closure_step_model();
  m->begin_step(resolved_options(OptimizerKind::LBFGS, OptimizerOptions{}));
  LbfgsCall c({1, NAN});
  PlannedMove first = m->after_call(c.seen());
  ASSERT_TRUE(first.moves) << first.decisions;
  EXPECT_TRUE(std::isnan(first.move.at("w")[1]));
  PlannedMove second = m->after_call(LbfgsCall({0.5, NAN}).seen());
  EXPECT_TRUE(second.moves) << second.decisions;  // no stop on a NaN |d t|_max or loss
}

TEST(LbfgsModel, Sem16_1_AHistoryOverItsFirstCapacityFailsTheStep) {
  // history_size 1 at the history's first use, 2 later: the second pair fails the step (LibTorch's range check).
  std::unique_ptr<ClosureStepModel> m = describe(OptimizerKind::LBFGS).closure_step_model();
  OptimizerOptions o;
  o.history_size = 1;
  o.max_iter = 2;
  o.max_eval = 10;
  m->begin_step(resolved_options(OptimizerKind::LBFGS, o));
  ASSERT_TRUE(m->after_call(LbfgsCall({1, -3}).seen()).moves);
  PlannedMove two = m->after_call(LbfgsCall({0.75, -2}).seen());  // the first pair; the last move of the step
  ASSERT_TRUE(two.moves) << two.decisions;
  EXPECT_FALSE(two.calls_again);
  o.history_size = 2;
  m->begin_step(resolved_options(OptimizerKind::LBFGS, o));
  PlannedMove three = m->after_call(LbfgsCall({0.5, -1}).seen());
  EXPECT_FALSE(three.moves);
  EXPECT_NE(three.decisions.find("capacity"), std::string::npos) << three.decisions;
}

TEST(LbfgsModel, Sem16_4_ACurvatureTestWithinRoundingIsUndecided) {
  // y · s lands on 1e-10 within float32's rounding of s = d t: the model cannot tell whether the pair is kept.
  std::unique_ptr<ClosureStepModel> m = describe(OptimizerKind::LBFGS).closure_step_model();
  m->begin_step(resolved_options(OptimizerKind::LBFGS, OptimizerOptions{}));
  LbfgsCall a({1}, DType::Float32);
  a.w.grad.value.data = {1};  // t = 1, d = -1: s = -1
  ASSERT_TRUE(m->after_call(a.seen()).moves);
  LbfgsCall b({0}, DType::Float32);
  b.w.grad.value.data = {1 - 1e-10};  // y = -1e-10, y · s = 1e-10
  EXPECT_NE(m->after_call(b.seen()).undecided, "");
}

}  // namespace
}  // namespace lockstep
