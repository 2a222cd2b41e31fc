// Tests of the op descriptions (op_descriptions.h) through the one evaluator (op_evaluator.h): every op has its
// arithmetic, each op's gradient agrees with its own value by central differences, scales bound values, and the
// formula variants replace what they say.
#include "conformance/program/op_descriptions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "conformance/program/op_evaluator.h"

namespace lockstep {
namespace {

TEST(OpDescriptions, EveryOpHasItsArithmeticAndItsName) {
  std::set<std::string> names;
  for (const OpDescription& d : op_descriptions()) {
    EXPECT_EQ(op_from_name(d.name), d.op) << d.name;
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    if (d.op == Op::Param || d.op == Op::Const) continue;
    EXPECT_TRUE(d.result_shape && d.forward && d.forward_scale) << d.name;
    if (d.elementwise) EXPECT_TRUE(d.local_derivative && d.local_scale) << d.name;
    else EXPECT_TRUE(d.backward && d.backward_scale) << d.name;
    EXPECT_GE(d.max_operands, d.min_operands) << d.name;
  }
  EXPECT_FALSE(op_from_name("softmax").has_value());
}

// The loss's value and each parameter's gradient in double, the parameters given by name.
struct Evaluated {
  double value = 0;
  std::map<std::string, std::vector<double>> grad;
};
Evaluated evaluate(const Expr& loss, const std::map<std::string, TensorValue>& params,
                   const ExpressionVariant* variant = nullptr) {
  ForwardPass pass;
  pass.variant = variant;
  pass.leaf = [&](const Expr& e, EvalNode& n) {
    const TensorValue& t = e.op == Op::Param ? params.at(e.name) : e.constant;
    n.dtype = t.dtype;
    n.shape = t.shape;
    n.v = t.data;
  };
  std::vector<EvalNode> nodes = evaluate_forward(loss, pass);
  Evaluated out;
  out.value = nodes.back().v.at(0);
  backward_values(nodes, {1.0}, variant);
  out.grad = parameter_gradients(nodes);
  return out;
}

TensorValue f64(Shape shape, std::vector<double> data) { return TensorValue{DType::Float64, std::move(shape), std::move(data)}; }

struct OpCase {
  const char* name;
  ExprPtr loss;
  std::map<std::string, TensorValue> params;
};

std::vector<OpCase> one_case_per_op() {
  const TensorValue a = f64({3}, {0.3, 0.7, 1.2});
  const TensorValue b = f64({3}, {1.5, -0.4, 2.5});
  const TensorValue m = f64({2, 3}, {0.1, -0.2, 0.3, 0.5, 0.4, -0.6});
  const TensorValue n = f64({3, 2}, {0.7, -0.1, 0.2, 0.9, -0.3, 0.4});
  const TensorValue bias = f64({2}, {0.25, -0.5});
  auto un = [&](Op op) { return OpCase{op_name(op), sum(unary(op, param("a"))), {{"a", a}}}; };
  auto bin = [&](Op op) { return OpCase{op_name(op), sum(binary(op, param("a"), param("b"))), {{"a", a}, {"b", b}}}; };
  return {
      bin(Op::Add), bin(Op::Sub), bin(Op::Mul), bin(Op::Div),
      {"div 0-d", sum(binary(Op::Div, param("a"), param("s"))), {{"a", a}, {"s", f64({}, {0.8})}}},
      un(Op::Neg), {"mul_scalar", sum(mul_scalar(param("a"), -1.5)), {{"a", a}}}, un(Op::Square),
      {"pow", sum(pow_scalar(param("a"), 2.5)), {{"a", a}}}, un(Op::Exp), un(Op::Log), un(Op::Tanh),
      un(Op::Sigmoid), {"relu", sum(unary(Op::Relu, param("b"))), {{"b", b}}},
      {"abs", sum(unary(Op::Abs, param("b"))), {{"b", b}}}, un(Op::Sum), un(Op::Mean),
      {"mse_loss", binary(Op::MseLoss, param("a"), param("b")), {{"a", a}, {"b", b}}},
      {"cross_entropy", cross_entropy(param("m"), {2, 0}), {{"m", m}}},
      {"matmul", sum(binary(Op::Matmul, param("m"), param("n"))), {{"m", m}, {"n", n}}},
      {"linear", sum(mul(linear(param("m"), param("w"), param("bias")), linear(param("m"), param("w"), param("bias")))),
       {{"m", m}, {"w", f64({2, 3}, {0.3, 0.1, -0.2, 0.6, -0.5, 0.2})}, {"bias", bias}}},
      {"embedding", sum(mul(embedding(param("w"), {0, 2, 0}), embedding(param("w"), {0, 2, 0}))),
       {{"w", n}}},
  };
}

// Every op's backward is the derivative of its own forward: central differences on each parameter element.
TEST(OpDescriptions, EachOpsGradientIsTheDerivativeOfItsValue) {
  for (const OpCase& c : one_case_per_op()) {
    const Evaluated at = evaluate(*c.loss, c.params);
    for (const auto& [name, value] : c.params)
      for (size_t i = 0; i < value.data.size(); ++i) {
        const double h = 1e-6;
        std::map<std::string, TensorValue> up = c.params, down = c.params;
        up[name].data[i] += h;
        down[name].data[i] -= h;
        const double numeric = (evaluate(*c.loss, up).value - evaluate(*c.loss, down).value) / (2 * h);
        EXPECT_NEAR(at.grad.at(name)[i], numeric, 1e-6 * (1 + std::fabs(numeric))) << c.name << " d/d" << name << "[" << i << "]";
      }
  }
}

TEST(OpDescriptions, HandWorkedValuesAndGradients) {
  // tanh(0.5) * 0.5: d/dw (w tanh w) = tanh w + w (1 - tanh^2 w)
  const Evaluated t = evaluate(*sum(mul(unary(Op::Tanh, param("w")), param("w"))), {{"w", f64({1}, {0.5})}});
  EXPECT_DOUBLE_EQ(t.value, 0.5 * std::tanh(0.5));
  EXPECT_DOUBLE_EQ(t.grad.at("w")[0], std::tanh(0.5) + 0.5 * (1 - std::tanh(0.5) * std::tanh(0.5)));
  // cross_entropy of [[0, ln 3]] at class 1: log(1 + 3) - ln 3; its gradient softmax - onehot = [1/4, -1/4]
  const Evaluated ce = evaluate(*cross_entropy(param("x"), {1}), {{"x", f64({1, 2}, {0, std::log(3.0)})}});
  EXPECT_NEAR(ce.value, std::log(4.0) - std::log(3.0), 1e-15);
  EXPECT_NEAR(ce.grad.at("x")[0], 0.25, 1e-15);
  EXPECT_NEAR(ce.grad.at("x")[1], -0.25, 1e-15);
  // A 0-d operand broadcast: its gradient sums the whole result's.
  const Evaluated bc = evaluate(*sum(mul(param("s"), param("v"))), {{"s", f64({}, {2})}, {"v", f64({3}, {1, 2, 3})}});
  EXPECT_DOUBLE_EQ(bc.grad.at("s")[0], 6);
  EXPECT_EQ(bc.grad.at("v"), (std::vector<double>{2, 2, 2}));
}

TEST(OpDescriptions, ScalesBoundEveryValue) {
  for (const OpCase& c : one_case_per_op()) {
    ForwardPass pass;
    pass.scales = true;
    pass.leaf = [&](const Expr& e, EvalNode& n) {
      const TensorValue& t = c.params.at(e.name);
      n.dtype = t.dtype;
      n.shape = t.shape;
      n.v = t.data;
      for (double x : n.v) n.b.push_back(std::fabs(x));
    };
    for (const EvalNode& n : evaluate_forward(*c.loss, pass))
      for (size_t i = 0; i < n.v.size(); ++i) EXPECT_GE(n.b[i], std::fabs(n.v[i]) * (1 - 1e-15)) << c.name;
  }
}

TEST(OpDescriptions, FormulaVariantsReplaceOnlyWhatTheySay) {
  // An op's variant, found by name in its description (formula_variants.h's expression_variant() does the same).
  auto variant_of = [](Op op, const std::string& name) -> std::optional<ExpressionVariant> {
    for (const OpFormulaVariant& v : describe(op).variants)
      if (v.name == name) return ExpressionVariant{op, &v};
    return std::nullopt;
  };
  const std::optional<ExpressionVariant> leaky_variant = variant_of(Op::Relu, "relu.leaky_0.001");
  ASSERT_TRUE(leaky_variant);
  const ExpressionVariant* leaky = &*leaky_variant;
  const std::map<std::string, TensorValue> w = {{"w", f64({2}, {-2, 3})}};
  const Evaluated own = evaluate(*sum(unary(Op::Relu, param("w"))), w);
  const Evaluated variant = evaluate(*sum(unary(Op::Relu, param("w"))), w, leaky);
  EXPECT_DOUBLE_EQ(own.value, 3);
  EXPECT_DOUBLE_EQ(variant.value, 3 - 0.002);
  EXPECT_EQ(variant.grad.at("w"), (std::vector<double>{0.001, 1}));
  // A variant of relu leaves abs alone.
  EXPECT_EQ(evaluate(*sum(unary(Op::Abs, param("w"))), w, leaky).grad.at("w"), (std::vector<double>{-1, 1}));
  const std::optional<ExpressionVariant> abs0 = variant_of(Op::Abs, "abs.grad_of_zero_is_minus_one");
  ASSERT_TRUE(abs0);
  EXPECT_EQ(evaluate(*sum(unary(Op::Abs, param("w"))), {{"w", f64({1}, {0})}}).grad.at("w")[0], 0);
  EXPECT_EQ(evaluate(*sum(unary(Op::Abs, param("w"))), {{"w", f64({1}, {0})}}, &*abs0).grad.at("w")[0], -1);
}

}  // namespace
}  // namespace lockstep
