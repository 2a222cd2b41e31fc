// Tests of the impl Engine adapter: actions, errors, observations (SEMANTICS §8) and synchronise().
#include "impl/engine_adapter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conformance/run/interpreter.h"

namespace lockstep {
namespace {

using V = std::vector<double>;

ParamSpec x_spec(DType dtype = DType::Float64) { return {"x", dtype, {3}, {1, 2, 3}}; }

std::unique_ptr<Engine> engine_with_x(DType dtype = DType::Float64) {
  auto engine = make_impl_engine();
  engine->add_parameter(x_spec(dtype));
  return engine;
}

ExprPtr square_sum() { return sum(mul(param("x"), param("x"))); }  // y = (x*x).sum()

template <class F>
std::string error_kind_of(F f) {
  try {
    f();
  } catch (const EngineError& e) {
    return e.kind();
  }
  return "";
}

OptimizerSpec sgd(double lr, std::optional<double> momentum = std::nullopt) {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::SGD;
  spec.defaults.lr = lr;
  spec.defaults.momentum = momentum;
  spec.groups = {ParamGroupSpec{{"x"}, std::nullopt}};
  return spec;
}

// SEM-2.8, SEM-12.5: impl follows the version it is told. A retained graph through embedding(w), an Adam step of w,
// then a second backward: LibTorch 1.13 saved w and refuses (inplace_modified), 2.x saved only the indices and runs
// (black-box, LibTorch 1.13.0 and 2.6.0: oracle/torch_engine_test.cc Sem12_5_EmbeddingSavesItsWeightOn1xOnly).
std::string embedding_backward_after_step(ImplVersion follows) {
  auto engine = make_impl_engine_following(follows);
  engine->add_parameter({"w", DType::Float32, {3, 2}, {1, 2, 3, 4, 5, 6}});
  OptimizerSpec adam;
  adam.kind = OptimizerKind::Adam;
  adam.defaults.lr = 0.1;
  adam.groups = {ParamGroupSpec{{"w"}, std::nullopt}};
  engine->make_optimizer(adam);
  engine->forward(*sum(embedding(param("w"), {2, 0, 2})), false);
  BackwardArgs retain;
  retain.retain_graph = true;
  engine->backward(retain);
  engine->step();
  return error_kind_of([&] { engine->backward({}); });
}

TEST(ImplEngine, SEM_12_5_EmbeddingSavesItsWeightOn1xOnly) {
  EXPECT_EQ(embedding_backward_after_step({1, 13}), error_kind::kInplaceModified);
  EXPECT_EQ(embedding_backward_after_step({2, 0}), "");
  EXPECT_EQ(embedding_backward_after_step({2, 6}), "");
}

TEST(ImplEngine, SEM_12_1_ZeroGradDefaultFollowsTheVersion) {
  EXPECT_FALSE(make_impl_engine_following({1, 13})->zero_grad_sets_to_none_by_default());
  EXPECT_TRUE(make_impl_engine_following({2, 6})->zero_grad_sets_to_none_by_default());
  // Said explicitly, the default wins over the version (a driver's --zero-grad-default).
  EXPECT_TRUE(make_impl_engine(true)->zero_grad_sets_to_none_by_default());
  EXPECT_FALSE(make_impl_engine(false)->zero_grad_sets_to_none_by_default());
  // By default impl follows the LibTorch it was built with (1.13 without one).
  EXPECT_EQ(make_impl_engine()->zero_grad_sets_to_none_by_default(), oracle_build_version().major >= 2);
}

TEST(ImplEngine, VersionsAreReadFromEngineNamesAndHellos) {
  EXPECT_EQ(impl_version_of("libtorch-2.6.0").major, 2);
  EXPECT_EQ(impl_version_of("libtorch-2.6.0").minor, 6);
  EXPECT_EQ(impl_version_of("1.13.1").major, 1);
  EXPECT_EQ(impl_version_of("1.13.1").minor, 13);
  EXPECT_EQ(impl_version_of("2.11.0+cu128").minor, 11);
  EXPECT_EQ(impl_version_of("no version").major, oracle_build_version().major);  // unreadable: the build's
}

TEST(ImplEngine, NameAndInitialState) {
  auto engine = engine_with_x();
  EXPECT_EQ(engine->name(), "impl");
  EngineState s = engine->observe();
  ASSERT_EQ(s.params.size(), 1u);
  EXPECT_EQ(s.params[0].value.data, (V{1, 2, 3}));
  EXPECT_FALSE(s.params[0].grad.defined);  // SEM-2.1
  EXPECT_FALSE(s.output.has_value());
  EXPECT_TRUE(s.groups.empty());
}

// SEM-1.6: the step updates the parameter in place; it stays the same tensor at every observation (the optional
// field param.same_as_previous, reported by impl).
TEST(ImplEngine, SEM_1_6_StepKeepsTheParameterTensor) {
  for (std::optional<double> momentum : {std::optional<double>(), std::optional<double>(0.9)}) {
    auto engine = engine_with_x();
    engine->make_optimizer(sgd(0.5, momentum));
    EXPECT_EQ(engine->observe().params[0].same_as_previous, std::optional<bool>(true));
    for (int k = 0; k < 2; ++k) {
      engine->forward(*square_sum(), false);
      engine->backward({});
      engine->step();
      const EngineState s = engine->observe();
      EXPECT_NE(s.params[0].value.data, (V{1, 2, 3}));
      EXPECT_EQ(s.params[0].same_as_previous, std::optional<bool>(true));
    }
  }
}

TEST(ImplEngine, SEM_3_4_RepeatedBackwardAccumulatesInPlace) {
  auto engine = engine_with_x();
  engine->observe();
  for (int k = 1; k <= 5; ++k) {
    engine->forward(*square_sum(), false);
    engine->backward({});
    EngineState s = engine->observe();
    const GradObservation& g = s.params[0].grad;
    ASSERT_TRUE(g.defined);
    EXPECT_EQ(g.value.data, (V{2.0 * k, 4.0 * k, 6.0 * k}));
    EXPECT_EQ(g.same_as_previous, k > 1) << "SEM-3.2 identity kept after the first";
    EXPECT_FALSE(g.requires_grad);
    EXPECT_FALSE(g.has_grad_fn);
    ASSERT_TRUE(s.output.has_value());
    EXPECT_EQ(s.output->value.data, (V{14}));
    EXPECT_TRUE(s.output->requires_grad);
    EXPECT_TRUE(s.output->has_grad_fn);
  }
}

TEST(ImplEngine, SEM_3_4_RunProgramThroughInterpreter) {
  Program p;
  p.params.push_back(x_spec());
  p.loss = square_sum();
  p.actions = {Action{}, Action{}, Action{}, Action{}};
  p.actions[1].kind = ActionKind::Backward;
  p.actions[3].kind = ActionKind::Backward;
  auto engine = make_impl_engine();
  Trace t = run_program(p, *engine);
  EXPECT_EQ(t.engine, "impl");
  ASSERT_EQ(t.records.size(), 4u);
  EXPECT_FALSE(t.records[3].error.has_value());
  EXPECT_EQ(t.records[3].state.params[0].grad.value.data, (V{4, 8, 12}));
}

TEST(ImplEngine, ErrorsHaveTheNormalisedKinds) {
  auto engine = engine_with_x();
  EXPECT_EQ(error_kind_of([&] { engine->backward({}); }), error_kind::kNoOutput);
  EXPECT_EQ(error_kind_of([&] { engine->step(); }), error_kind::kNoOptimizer);
  EXPECT_EQ(error_kind_of([&] { engine->zero_grad(false); }), error_kind::kNoOptimizer);
  EXPECT_EQ(error_kind_of([&] { engine->set_group_options(0, {}); }), error_kind::kNoOptimizer);

  engine->forward(*square_sum(), /*no_grad=*/true);  // SEM-2.3
  EXPECT_EQ(error_kind_of([&] { engine->backward({}); }), error_kind::kNoGradFn);

  engine->forward(*mul(param("x"), param("x")), false);  // SEM-2.4
  EXPECT_EQ(error_kind_of([&] { engine->backward({}); }), error_kind::kNonscalarBackward);
  V wrong = {1, 2};
  BackwardArgs with_wrong;
  with_wrong.gradient = &wrong;
  EXPECT_EQ(error_kind_of([&] { engine->backward(with_wrong); }), error_kind::kGradientShape);

  engine->forward(*square_sum(), false);  // SEM-2.5
  engine->backward({});
  EXPECT_EQ(error_kind_of([&] { engine->backward({}); }), error_kind::kBackwardThroughFreedGraph);

  engine->make_optimizer(sgd(0.1));
  EXPECT_EQ(error_kind_of([&] { engine->set_group_options(1, {}); }), error_kind::kNoSuchGroup);
  OptimizerOptions foreign;
  foreign.betas = std::make_pair(0.9, 0.99);
  EXPECT_EQ(error_kind_of([&] { engine->set_group_options(0, foreign); }), error_kind::kInvalidOption);
  EXPECT_EQ(error_kind_of([&] { engine->make_optimizer(sgd(-1)); }), error_kind::kInvalidOption);
}

TEST(ImplEngine, SEM_4_HandlesObserveAliasing) {
  auto engine = engine_with_x();
  engine->make_optimizer(sgd(0.1));
  engine->forward(*square_sum(), false);
  engine->backward({});
  engine->hold_grad("x", "g1");
  engine->zero_grad(false);  // SEM-4.1: in place, the handle sees zeros
  EngineState s = engine->observe();
  ASSERT_EQ(s.handles.size(), 1u);
  EXPECT_TRUE(s.handles[0].defined);
  EXPECT_EQ(s.handles[0].value.data, (V{0, 0, 0}));
  EXPECT_TRUE(s.params[0].grad.defined);

  engine->forward(*square_sum(), false);
  engine->backward({});
  engine->zero_grad(true);  // SEM-4.2: the grad becomes undefined, the handle keeps its values
  s = engine->observe();
  EXPECT_FALSE(s.params[0].grad.defined);
  EXPECT_EQ(s.handles[0].value.data, (V{2, 4, 6}));

  engine->hold_grad("x", "none");  // a handle of an undefined grad
  engine->forward(*square_sum(), false);
  engine->backward({});
  s = engine->observe();
  EXPECT_FALSE(s.handles[1].defined);
  EXPECT_TRUE(s.params[0].grad.defined);
  EXPECT_FALSE(s.params[0].grad.same_as_previous) << "SEM-4.2: a new identity after set_to_none";
}

TEST(ImplEngine, SetGradNoneThenBackwardMakesNewGrad) {
  auto engine = engine_with_x();
  engine->forward(*square_sum(), false);
  engine->backward({});
  engine->observe();
  engine->set_grad_none("x");
  EXPECT_FALSE(engine->observe().params[0].grad.defined);
  engine->forward(*square_sum(), false);
  engine->backward({});
  EngineState s = engine->observe();
  EXPECT_EQ(s.params[0].grad.value.data, (V{2, 4, 6}));
  EXPECT_FALSE(s.params[0].grad.same_as_previous);
}

TEST(ImplEngine, SEM_3_3_CreateGraphGradIsRecorded) {
  auto engine = engine_with_x();
  engine->forward(*square_sum(), false);
  engine->backward({});
  engine->observe();
  BackwardArgs args;
  args.create_graph = true;
  engine->forward(*square_sum(), false);
  engine->backward(args);
  EngineState s = engine->observe();
  EXPECT_EQ(s.params[0].grad.value.data, (V{4, 8, 12}));
  EXPECT_TRUE(s.params[0].grad.requires_grad);
  EXPECT_TRUE(s.params[0].grad.has_grad_fn);
  EXPECT_FALSE(s.params[0].grad.same_as_previous);
  engine->backward({});  // retain_graph defaulted to create_graph above: the graph is still there
  EXPECT_EQ(engine->observe().params[0].grad.value.data, (V{6, 12, 18}));
}

// SEM-10 (tutorial 003): lr 1, theta0 = 10, scripted gradients 2, 1, -1 without zeroing: 10, 8, 5, 3.
TEST(ImplEngine, SEM_10_GradientFedProgramWithoutZeroing) {
  auto engine = make_impl_engine();
  engine->add_parameter({"theta", DType::Float64, {}, {10}});
  OptimizerSpec spec = sgd(1.0);
  spec.groups[0].params = {"theta"};
  engine->make_optimizer(spec);
  V thetas;
  for (double g : {2.0, 1.0, -1.0}) {
    engine->forward(*param("theta"), false);  // the output is the leaf itself
    V gradient = {g};
    BackwardArgs args;
    args.gradient = &gradient;
    engine->backward(args);
    engine->step();
    thetas.push_back(engine->observe().params[0].value.data[0]);
  }
  EXPECT_EQ(thetas, (V{8, 5, 3}));
}

TEST(ImplEngine, OptimizerStateAndGroupsObserved) {
  auto engine = engine_with_x(DType::Float32);
  engine->make_optimizer(sgd(0.5, 0.9));
  EngineState s = engine->observe();
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(s.groups[0].params, (std::vector<std::string>{"x"}));
  EXPECT_EQ(s.groups[0].options.lr, 0.5);
  EXPECT_EQ(s.groups[0].options.momentum, 0.9);
  EXPECT_EQ(s.groups[0].options.dampening, 0.0);
  EXPECT_EQ(s.groups[0].options.nesterov, false);
  EXPECT_FALSE(s.params[0].state.exists);
  engine->forward(*square_sum(), false);
  engine->backward({});
  engine->step();
  s = engine->observe();
  ASSERT_TRUE(s.params[0].state.exists);
  ASSERT_TRUE(s.params[0].state.momentum_buffer.has_value());
  EXPECT_EQ(s.params[0].state.momentum_buffer->data, (V{2, 4, 6}));  // SEM-5.3: a copy of d at first
  EXPECT_EQ(s.params[0].value.data, (V{0, 0, 0}));
  EXPECT_EQ(s.params[0].value.dtype, DType::Float32);

  OptimizerOptions lr;
  lr.lr = 0.25;
  engine->set_group_options(0, lr);
  EXPECT_EQ(engine->observe().groups[0].options.lr, 0.25);
}

TEST(ImplEngine, AdamDefaultsResolved) {
  auto engine = engine_with_x();
  OptimizerSpec spec;
  spec.kind = OptimizerKind::Adam;
  spec.groups = {ParamGroupSpec{{"x"}, std::nullopt}};
  engine->make_optimizer(spec);
  EngineState s = engine->observe();
  ASSERT_EQ(s.groups.size(), 1u);
  const OptimizerOptions& o = s.groups[0].options;
  EXPECT_EQ(o.lr, 1e-3);
  EXPECT_EQ(o.betas, std::make_pair(0.9, 0.999));
  EXPECT_EQ(o.eps, 1e-8);
  EXPECT_EQ(o.weight_decay, 0.0);
  EXPECT_EQ(o.amsgrad, false);
  engine->forward(*square_sum(), false);
  engine->backward({});
  engine->step();
  s = engine->observe();
  ASSERT_TRUE(s.params[0].state.exists);
  EXPECT_EQ(s.params[0].state.step, 1);
  EXPECT_TRUE(s.params[0].state.exp_avg.has_value());
  EXPECT_FALSE(s.params[0].state.max_exp_avg_sq.has_value());
}

TEST(ImplEngine, SynchroniseOverwritesNumbersKeepingIdentities) {
  auto engine = engine_with_x();
  engine->make_optimizer(sgd(0.1, 0.9));
  engine->forward(*square_sum(), false);
  engine->backward({});
  engine->step();
  engine->hold_grad("x", "h");
  EngineState target = engine->observe();
  target.params[0].value.data = {7, 8, 9};
  target.params[0].grad.value.data = {-1, -2, -3};
  target.params[0].state.momentum_buffer->data = {0.5, 0.5, 0.5};
  target.handles[0].value.data = {-1, -2, -3};
  target.output->value.data = {42};
  engine->synchronise(target);
  EngineState s = engine->observe();
  EXPECT_EQ(s.params[0].value.data, (V{7, 8, 9}));
  EXPECT_EQ(s.params[0].grad.value.data, (V{-1, -2, -3}));
  EXPECT_TRUE(s.params[0].grad.same_as_previous);
  EXPECT_EQ(s.params[0].state.momentum_buffer->data, (V{0.5, 0.5, 0.5}));
  EXPECT_EQ(s.handles[0].value.data, (V{-1, -2, -3}));
  EXPECT_EQ(s.output->value.data, (V{42}));
  // The next step uses the synchronised numbers: buf = 0.9 * 0.5 + (-1, -2, -3); p -= 0.1 * buf.
  engine->step();
  s = engine->observe();
  EXPECT_NEAR(s.params[0].value.data[0], 7 - 0.1 * (0.45 - 1), 1e-12);
}

TEST(ImplEngine, WeightTyingAndUnusedParameter) {
  auto engine = engine_with_x();
  engine->add_parameter({"unused", DType::Float64, {2}, {1, 1}});
  engine->forward(*add(square_sum(), sum(param("x"))), false);  // SEM-2.6
  engine->backward({});
  EngineState s = engine->observe();
  EXPECT_EQ(s.params[0].grad.value.data, (V{3, 5, 7}));
  EXPECT_FALSE(s.params[1].grad.defined);  // SEM-2.7
}

TEST(ImplEngine, AllOpsEvaluate) {
  auto engine = make_impl_engine();
  engine->add_parameter({"w", DType::Float32, {2, 2}, {0.5, -1, 2, 0.25}});
  engine->add_parameter({"b", DType::Float32, {2}, {0.1, -0.1}});
  ExprPtr w = param("w");
  std::vector<ExprPtr> losses = {
      sum(binary(Op::Sub, w, w)),          sum(binary(Op::Div, w, constant({DType::Float32, {}, {2}}))),
      sum(unary(Op::Neg, w)),              sum(mul_scalar(w, 3)),
      sum(unary(Op::Square, w)),           sum(pow_scalar(unary(Op::Abs, w), 1.5)),
      sum(unary(Op::Exp, w)),              sum(unary(Op::Log, unary(Op::Abs, w))),
      sum(unary(Op::Tanh, w)),             sum(unary(Op::Sigmoid, w)),
      sum(unary(Op::Relu, w)),             sum(binary(Op::Matmul, w, w)),
      mean(w),                             binary(Op::MseLoss, w, constant({DType::Float32, {2, 2}, {0, 0, 0, 0}})),
      cross_entropy(w, {0, 1}),            sum(linear(w, w, param("b"))),
      sum(embedding(w, {1, 1, 0})),        sum(unary(Op::Softplus, w)),
  };
  for (const ExprPtr& loss : losses) {
    engine->forward(*loss, false);
    engine->backward({});
    EngineState s = engine->observe();
    EXPECT_TRUE(s.params[0].grad.defined) << op_name(loss->op);
    EXPECT_EQ(s.output->value.dtype, DType::Float32);
  }
}

}  // namespace
}  // namespace lockstep
