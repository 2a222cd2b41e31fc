// feature_areas.h: each area from a small program that exercises exactly it.
#include "conformance/program/feature_areas.h"

#include <limits>

#include <gtest/gtest.h>

namespace lockstep {
namespace {

using Areas = std::vector<std::string>;

Action act(ActionKind k) {
  Action a;
  a.kind = k;
  return a;
}

Program one_param(std::vector<double> values = {1, 2}) {
  Program p;
  p.params.push_back({"w", DType::Float32, {static_cast<int64_t>(values.size())}, std::move(values)});
  p.loss = sum(unary(Op::Tanh, param("w")));
  return p;
}

Program with_optimizer(Program p, OptimizerKind kind) {
  OptimizerSpec o;
  o.kind = kind;
  o.defaults.lr = 0.1;
  o.groups.push_back({{"w"}, std::nullopt});
  p.optimizer = o;
  return p;
}

TEST(FeatureAreas, ForwardsAloneExerciseNothing) {
  Program p = one_param();
  p.actions = {act(ActionKind::Forward)};
  EXPECT_EQ(feature_areas(p), Areas{});
}

TEST(FeatureAreas, OneBackwardIsAutogradTwoAreAccumulation) {
  Program p = one_param();
  p.actions = {act(ActionKind::Forward), act(ActionKind::Backward)};
  EXPECT_EQ(feature_areas(p), Areas{"autograd"});
  p.actions.push_back(act(ActionKind::Forward));
  p.actions.push_back(act(ActionKind::Backward));
  EXPECT_EQ(feature_areas(p), (Areas{"autograd", "accumulation"}));
}

TEST(FeatureAreas, AnOptimizerCountsOnlyWhenItSteps) {
  Program p = with_optimizer(one_param(), OptimizerKind::Adam);
  p.actions = {act(ActionKind::Forward), act(ActionKind::Backward), act(ActionKind::ZeroGrad)};
  EXPECT_EQ(feature_areas(p), (Areas{"autograd", "zero_grad"}));
  p.actions.push_back(act(ActionKind::Step));
  EXPECT_EQ(feature_areas(p), (Areas{"autograd", "zero_grad", "adam"}));
  p.optimizer->kind = OptimizerKind::AdamW;
  EXPECT_EQ(feature_areas(p), (Areas{"autograd", "zero_grad", "adamw"}));
  p.optimizer->kind = OptimizerKind::SGD;
  p.optimizer->groups.push_back({{}, OptimizerOptions{}});  // a second group
  EXPECT_EQ(feature_areas(p), (Areas{"autograd", "zero_grad", "sgd", "groups"}));
}

TEST(FeatureAreas, ErrorsTheSpecificationDefines) {
  Program p = one_param();
  p.actions = {act(ActionKind::Backward)};  // nothing to backpropagate: no_output
  EXPECT_EQ(feature_areas(p), (Areas{"autograd", "errors"}));
  Action no_grad = act(ActionKind::Forward);
  no_grad.no_grad = true;
  p.actions = {no_grad, act(ActionKind::Backward)};  // no_grad_fn
  EXPECT_EQ(feature_areas(p), (Areas{"autograd", "errors"}));
  p.actions = {act(ActionKind::Step)};  // no_optimizer
  EXPECT_EQ(feature_areas(p), (Areas{"errors"}));
  Program invalid = with_optimizer(one_param(), OptimizerKind::SGD);
  invalid.optimizer->defaults.lr = -1;  // SEM-5.2
  invalid.actions = {act(ActionKind::Step)};
  EXPECT_EQ(feature_areas(invalid), (Areas{"sgd", "errors"}));
}

TEST(FeatureAreas, NumericsAtSpecialValuesAndOpEdges) {
  Program p = one_param({1, std::numeric_limits<double>::infinity()});
  p.actions = {act(ActionKind::Forward)};
  EXPECT_EQ(feature_areas(p), Areas{"numerics"});
  Program tiny = one_param({1, 1e-41});  // a float32 subnormal into tanh
  tiny.actions = {act(ActionKind::Forward)};
  EXPECT_EQ(feature_areas(tiny), Areas{"numerics"});
  Program zero = one_param({0, 1});  // zero is an edge, but an everyday one: not "numerics"
  zero.actions = {act(ActionKind::Forward)};
  EXPECT_EQ(feature_areas(zero), Areas{});
}

}  // namespace
}  // namespace lockstep
