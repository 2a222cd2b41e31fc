// Tests of the program model: names, builders, TensorValue equality, infer_shape and validate (program.h).
#include "conformance/program/program.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TensorValue f64(Shape shape, std::vector<double> data) { return {DType::Float64, std::move(shape), std::move(data)}; }

std::vector<ParamSpec> params() {
  return {
      {"x", DType::Float64, {3}, {1, 2, 3}},
      {"s", DType::Float64, {}, {2}},
      {"m", DType::Float64, {2, 3}, {1, 2, 3, 4, 5, 6}},
      {"w", DType::Float64, {4, 3}, std::vector<double>(12, 0.5)},
      {"b", DType::Float64, {4}, {0, 0, 0, 0}},
      {"h", DType::Float32, {3}, {1, 2, 3}},
      {"t", DType::Float64, {3, 5}, std::vector<double>(15, 1.0)},
  };
}

// Expects infer_shape to throw ProgramError at exactly `path`.
void expect_error_at(const ExprPtr& e, const std::string& path, const std::string& fragment = "") {
  try {
    infer_shape(*e, params(), "/loss");
    FAIL() << "expected ProgramError at " << path;
  } catch (const ProgramError& err) {
    EXPECT_EQ(err.path(), path) << err.what();
    EXPECT_NE(std::string(err.what()).find(fragment), std::string::npos) << err.what();
  }
}

TEST(ProgramNames, OpNamesRoundTrip) {
  const std::vector<std::string> names = {"param", "const", "add", "sub", "mul", "div", "neg", "mul_scalar",
                                          "square", "pow", "exp", "log", "tanh", "sigmoid", "relu", "abs", "softplus",
                                          "matmul", "sum", "mean", "mse_loss", "cross_entropy", "linear",
                                          "embedding"};
  for (const auto& n : names) {
    auto op = op_from_name(n);
    ASSERT_TRUE(op) << n;
    EXPECT_EQ(op_name(*op), n);
  }
  EXPECT_EQ(op_name(Op::MseLoss), std::string("mse_loss"));
  EXPECT_FALSE(op_from_name("Add"));
  EXPECT_FALSE(op_from_name(""));
}

TEST(ProgramNames, ActionsOptimizersDtypes) {
  const std::vector<std::string> names = {"forward", "backward", "zero_grad", "set_grad_none", "hold_grad",
                                          "step", "set_options", "add_param_group"};
  for (const auto& n : names) {
    auto k = action_from_name(n);
    ASSERT_TRUE(k) << n;
    EXPECT_EQ(action_name(*k), n);
  }
  EXPECT_FALSE(action_from_name("backwards"));
  EXPECT_EQ(std::string(optimizer_name(OptimizerKind::SGD)), "sgd");
  EXPECT_EQ(std::string(optimizer_name(OptimizerKind::Adam)), "adam");
  EXPECT_EQ(std::string(optimizer_name(OptimizerKind::AdamW)), "adamw");
  EXPECT_EQ(std::string(dtype_name(DType::Float32)), "float32");
  EXPECT_EQ(std::string(dtype_name(DType::Float64)), "float64");
}

TEST(ProgramModel, Numel) {
  EXPECT_EQ(numel({}), 1);
  EXPECT_EQ(numel({3}), 3);
  EXPECT_EQ(numel({2, 3}), 6);
  EXPECT_EQ(numel({0, 5}), 0);
}

TEST(ProgramModel, TensorValueEqualityIsBitwise) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(f64({2}, {1, nan}), f64({2}, {1, -nan}));  // every NaN equals every NaN
  EXPECT_FALSE(f64({1}, {0.0}) == f64({1}, {-0.0}));
  EXPECT_FALSE(f64({1}, {0.1}) == f64({1}, {static_cast<double>(0.1f)}));
  EXPECT_FALSE(f64({2}, {1, 2}) == f64({1, 2}, {1, 2}));
  TensorValue f32 = f64({1}, {1});
  f32.dtype = DType::Float32;
  EXPECT_FALSE(f32 == f64({1}, {1}));
}

TEST(ProgramModel, OptimizerOptionsEquality) {
  OptimizerOptions a, b;
  EXPECT_EQ(a, b);
  a.lr = 0.1;
  EXPECT_FALSE(a == b);
  b.lr = 0.1;
  EXPECT_EQ(a, b);
  a.betas = std::make_pair(0.9, 0.999);
  b.betas = std::make_pair(0.9, 0.99);
  EXPECT_FALSE(a == b);
  b.betas = a.betas;
  a.weight_decay = -0.0;
  b.weight_decay = 0.0;
  EXPECT_FALSE(a == b);
  a.nesterov = false;
  b.weight_decay = -0.0;
  EXPECT_FALSE(a == b);  // nesterov set vs unset
}

TEST(ProgramModel, BuildersMakeTheRightNodes) {
  auto e = linear(param("x"), param("w"), param("b"));
  EXPECT_EQ(e->op, Op::Linear);
  ASSERT_EQ(e->args.size(), 3u);
  EXPECT_EQ(e->args[2]->name, "b");
  EXPECT_EQ(linear(param("x"), param("w"))->args.size(), 2u);
  EXPECT_EQ(pow_scalar(param("x"), 3)->scalar, 3);
  EXPECT_EQ(mul_scalar(param("x"), 2.5)->scalar, 2.5);
  EXPECT_EQ(cross_entropy(param("m"), {0, 2})->indices, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(embedding(param("w"), {1, 1})->op, Op::Embedding);
  EXPECT_EQ(constant(f64({1}, {4}))->constant.data, std::vector<double>{4});
  EXPECT_EQ(binary(Op::Div, param("x"), param("x"))->op, Op::Div);
  EXPECT_EQ(unary(Op::Tanh, param("x"))->op, Op::Tanh);
}

// SEMANTICS §2: element-wise ops.
TEST(InferShape, ElementwiseSameShapeOrScalar) {
  auto ps = params();
  EXPECT_EQ(infer_shape(*add(param("x"), param("x")), ps, "").shape, (Shape{3}));
  EXPECT_EQ(infer_shape(*mul(param("x"), param("s")), ps, "").shape, (Shape{3}));
  EXPECT_EQ(infer_shape(*binary(Op::Sub, param("s"), param("m")), ps, "").shape, (Shape{2, 3}));
  EXPECT_EQ(infer_shape(*unary(Op::Relu, param("m")), ps, "").shape, (Shape{2, 3}));
  EXPECT_EQ(infer_shape(*pow_scalar(param("m"), 2), ps, "").shape, (Shape{2, 3}));
  EXPECT_EQ(infer_shape(*sum(param("m")), ps, "").shape, Shape{});
  EXPECT_EQ(infer_shape(*mean(param("x")), ps, "").shape, Shape{});
  EXPECT_EQ(infer_shape(*param("h"), ps, "").dtype, DType::Float32);
  expect_error_at(add(param("x"), param("m")), "/loss", "shapes do not match");
  expect_error_at(sum(add(param("x"), param("h"))), "/loss/args/0", "dtypes differ");
}

TEST(InferShape, MatmulLinearEmbeddingCrossEntropy) {
  auto ps = params();
  EXPECT_EQ(infer_shape(*binary(Op::Matmul, param("m"), unary(Op::Neg, param("t"))), ps, "").shape, (Shape{2, 5}));
  expect_error_at(binary(Op::Matmul, param("m"), param("m")), "/loss", "inner dimensions");
  expect_error_at(binary(Op::Matmul, param("x"), param("m")), "/loss", "rank 2");
  EXPECT_EQ(infer_shape(*linear(param("m"), param("w"), param("b")), ps, "").shape, (Shape{2, 4}));
  expect_error_at(linear(param("m"), param("w"), param("x")), "/loss", "bias");
  expect_error_at(linear(param("m"), param("t")), "/loss", "linear");
  EXPECT_EQ(infer_shape(*embedding(param("w"), {0, 3, 3}), ps, "").shape, (Shape{3, 3}));
  expect_error_at(embedding(param("w"), {0, 4}), "/loss/indices/1", "not a row");
  EXPECT_EQ(infer_shape(*cross_entropy(param("m"), {0, 2}), ps, "").shape, Shape{});
  expect_error_at(cross_entropy(param("m"), {0, 3}), "/loss/targets/1", "not a class");
  expect_error_at(cross_entropy(param("m"), {0}), "/loss/targets", "need 2 targets");
  expect_error_at(binary(Op::MseLoss, param("x"), param("s")), "/loss", "mse_loss");
  EXPECT_EQ(infer_shape(*binary(Op::MseLoss, param("x"), param("x")), ps, "").shape, Shape{});
}

TEST(InferShape, NamesConstantsArityAndLimits) {
  expect_error_at(sum(mul(param("x"), param("nope"))), "/loss/args/0/args/1/name", "unknown parameter 'nope'");
  expect_error_at(add(param("x"), constant(f64({2}, {1}))), "/loss/args/1/values", "needs 2 values");
  expect_error_at(constant(f64({2, 2, 2}, std::vector<double>(8))), "/loss/shape", "rank 3");
  expect_error_at(constant(f64({-1}, {})), "/loss/shape/0", "negative");
  auto bad_arity = std::make_shared<Expr>();
  bad_arity->op = Op::Add;
  bad_arity->args = {param("x")};
  expect_error_at(bad_arity, "/loss/args", "takes 2 operands");
  auto null_arg = std::make_shared<Expr>();
  null_arg->op = Op::Neg;
  null_arg->args = {nullptr};
  expect_error_at(null_arg, "/loss/args/0", "missing operand");

  ExprPtr deep = param("x");
  for (int i = 0; i < 70; ++i) deep = unary(Op::Neg, deep);
  expect_error_at(deep, "/loss" + [] { std::string s; for (int i = 0; i < 64; ++i) s += "/args/0"; return s; }(),
                  "depth limit of 64");

  ProgramLimits small;
  small.max_elements_per_tensor = 10;
  std::vector<ParamSpec> ps = {{"w", DType::Float64, {4, 2}, std::vector<double>(8)}};
  EXPECT_THROW(infer_shape(*embedding(param("w"), {0, 0, 0, 0, 0, 0}), ps, "", small), ProgramError);
  EXPECT_NO_THROW(infer_shape(*embedding(param("w"), {0, 0, 0, 0, 0}), ps, "", small));
}

Program valid_program() {
  Program p;
  p.params = {{"x", DType::Float64, {3}, {1, 2, 3}}, {"y", DType::Float32, {2}, {1, 2}}};
  p.loss = sum(mul(param("x"), param("x")));
  OptimizerSpec o;
  o.kind = OptimizerKind::SGD;
  o.defaults.lr = 0.1;
  o.groups = {{{"x"}, std::nullopt}};
  p.optimizer = o;
  Action fwd, bwd, step;
  bwd.kind = ActionKind::Backward;
  step.kind = ActionKind::Step;
  p.actions = {fwd, bwd, step};
  return p;
}

void expect_invalid(const Program& p, const std::string& path, const std::string& fragment) {
  try {
    validate(p);
    FAIL() << "expected ProgramError at " << path;
  } catch (const ProgramError& e) {
    EXPECT_EQ(e.path(), path) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Validate, AcceptsAValidProgram) { EXPECT_NO_THROW(validate(valid_program())); }

TEST(Validate, Params) {
  Program p = valid_program();
  p.params[1].name = "x";
  expect_invalid(p, "/params/1/name", "duplicate");
  p = valid_program();
  p.params[0].name = "";
  expect_invalid(p, "/params/0/name", "empty");
  p = valid_program();
  p.params[1].values = {1, 2, 3};
  expect_invalid(p, "/params/1/values", "needs 2 values, got 3");
  p = valid_program();
  p.params[1].shape = {2000, 2000};
  expect_invalid(p, "/params/1/shape", "limit");
  p = valid_program();
  p.params[1].shape = {int64_t{1} << 40, int64_t{1} << 40};  // no overflow
  expect_invalid(p, "/params/1/shape", "limit");
  p = valid_program();
  p.params[1].shape = {1, 1, 2};
  expect_invalid(p, "/params/1/shape", "rank 3");
}

TEST(Validate, Optimizer) {
  Program p = valid_program();
  p.optimizer->defaults.lr.reset();
  expect_invalid(p, "/optimizer/defaults", "lr");
  p = valid_program();
  p.optimizer->defaults.betas = std::make_pair(0.9, 0.99);
  expect_invalid(p, "/optimizer/defaults/betas", "betas");
  p = valid_program();
  p.optimizer->kind = OptimizerKind::Adam;
  p.optimizer->defaults.momentum = 0.9;
  expect_invalid(p, "/optimizer/defaults/momentum", "momentum");
  p = valid_program();
  p.optimizer->groups.push_back({{"y", "z"}, std::nullopt});
  expect_invalid(p, "/optimizer/groups/1/params/1", "unknown parameter 'z'");
  p = valid_program();
  p.optimizer->groups[0].options = OptimizerOptions{};  // SGD group options without lr (§5.1)
  expect_invalid(p, "/optimizer/groups/0/options", "lr");
  p = valid_program();
  p.optimizer->groups = {{{"x", "x"}, std::nullopt}};  // duplicates are a run-time matter (§7.4)
  EXPECT_NO_THROW(validate(p));
  p.optimizer->groups = {};  // C++ accepts an empty list (§7.2)
  EXPECT_NO_THROW(validate(p));
}

TEST(Validate, Actions) {
  Program p = valid_program();
  p.actions[1].gradient = std::vector<double>{1, 2};
  expect_invalid(p, "/actions/1/gradient", "needs 1 value, got 2");
  p.actions[1].gradient = std::vector<double>{1};
  EXPECT_NO_THROW(validate(p));

  // The gradient follows the most recent forward's loss.
  p = valid_program();
  Action fwd2;
  fwd2.loss = mul(param("x"), param("x"));
  Action bwd2;
  bwd2.kind = ActionKind::Backward;
  bwd2.gradient = std::vector<double>{1, 1, 1};
  p.actions.push_back(fwd2);
  p.actions.push_back(bwd2);
  EXPECT_NO_THROW(validate(p));
  p.actions.back().gradient = std::vector<double>{1};
  expect_invalid(p, "/actions/4/gradient", "needs 3 values");

  // A backward before any forward is a run-time error (no_output), not a static one.
  p = valid_program();
  p.actions[1].gradient = std::vector<double>{1, 2, 3, 4};
  p.actions.insert(p.actions.begin(), p.actions[1]);
  p.actions[2].gradient.reset();
  EXPECT_NO_THROW(validate(p));

  p = valid_program();
  p.loss = nullptr;
  expect_invalid(p, "/actions/0", "no loss");
  p.actions[0].loss = sum(param("y"));
  EXPECT_NO_THROW(validate(p));
  p.actions[0].loss = sum(param("q"));
  expect_invalid(p, "/actions/0/loss/args/0/name", "unknown parameter 'q'");

  p = valid_program();
  Action hold;
  hold.kind = ActionKind::HoldGrad;
  hold.param = "x";
  p.actions.push_back(hold);
  expect_invalid(p, "/actions/3/handle", "handle");
  p.actions[3].handle = "g0";
  EXPECT_NO_THROW(validate(p));
  p.actions[3].param = "nope";
  expect_invalid(p, "/actions/3/param", "unknown parameter");
  p.actions[3].kind = ActionKind::SetGradNone;
  expect_invalid(p, "/actions/3/param", "unknown parameter");

  p = valid_program();
  Action set;
  set.kind = ActionKind::SetOptions;
  set.options.eps = 1e-3;
  p.actions.push_back(set);
  expect_invalid(p, "/actions/3/options/eps", "eps");
  p.actions[3].options = OptimizerOptions{};
  p.actions[3].options.lr = 0.5;  // set_options changes only the given fields: no lr rule
  EXPECT_NO_THROW(validate(p));
  p.actions[3].group = -1;
  expect_invalid(p, "/actions/3/group", "negative");
  p.actions[3].group = 7;  // a missing group is a run-time error (no_such_group)
  EXPECT_NO_THROW(validate(p));
  p.optimizer.reset();
  expect_invalid(p, "/actions/3", "needs an optimizer");

  p = valid_program();
  Action addg;
  addg.kind = ActionKind::AddParamGroup;
  addg.new_group = {{"y", "nope"}, std::nullopt};
  p.actions.push_back(addg);
  expect_invalid(p, "/actions/3/params/1", "unknown parameter");
  p.actions[3].new_group = {{"y"}, OptimizerOptions{}};
  expect_invalid(p, "/actions/3/options", "lr");
  p.actions[3].new_group.options->lr = 0.01;
  EXPECT_NO_THROW(validate(p));

  // step / zero_grad without an optimizer are run-time errors (no_optimizer).
  p = valid_program();
  p.optimizer.reset();
  Action zero;
  zero.kind = ActionKind::ZeroGrad;
  p.actions.push_back(zero);
  EXPECT_NO_THROW(validate(p));
}

TEST(Validate, Limits) {
  Program p = valid_program();
  ProgramLimits limits;
  limits.max_actions = 2;
  EXPECT_THROW(validate(p, limits), ProgramError);
  limits = {};
  limits.max_params = 1;
  try {
    validate(p, limits);
    FAIL();
  } catch (const ProgramError& e) {
    EXPECT_EQ(e.path(), "/params");
  }
}

}  // namespace
}  // namespace lockstep
