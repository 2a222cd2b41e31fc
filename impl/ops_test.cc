// Tests of impl/ops: forward values, backward against central finite differences (float64), which ops save
// tensors (SEMANTICS §2.5), dtype handling (§1.3) and bad operands.
#include "impl/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "impl/autograd.h"

namespace lockstep::impl {
namespace {

using V = std::vector<double>;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

Tensor leaf(const Shape& shape, const V& values, DType dtype = DType::Float64) {
  Tensor t = Tensor::from_values(dtype, shape, values);
  t.set_requires_grad(true);
  return t;
}

Tensor constant(const Shape& shape, const V& values, DType dtype = DType::Float64) {
  return Tensor::from_values(dtype, shape, values);
}

// Fixed pseudo-random weights in [-1, 1], so that the loss sum(f(x) * weights) exercises every output.
V weights(int64_t n) {
  V w(n);
  uint32_t state = 12345;
  for (auto& v : w) {
    state = state * 1664525u + 1013904223u;
    v = (static_cast<double>(state >> 8) / (1u << 24)) * 2 - 1;
  }
  return w;
}

// The scalar loss of f at `inputs`: f's output itself when 0-d, else sum(f * weights).
Tensor scalar_loss(const Fn& f, const std::vector<Tensor>& inputs) {
  Tensor out = f(inputs);
  if (out.dim() == 0) return out;
  return ops::sum(ops::mul(out, constant(out.shape(), weights(out.numel()))));
}

// Every input's grad from backward() agrees with central finite differences.
void expect_gradients_match(const Fn& f, std::vector<Tensor> inputs, double tolerance = 1e-6) {
  for (Tensor& t : inputs) t.reset_grad();
  backward(scalar_loss(f, inputs));
  const double h = 1e-6;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor& x = inputs[i];
    if (!x.requires_grad()) continue;
    ASSERT_TRUE(x.grad().defined()) << "input " << i << " got no grad";
    ASSERT_EQ(x.grad().shape(), x.shape());
    for (int64_t j = 0; j < x.numel(); ++j) {
      NoGradGuard no_grad;
      const double original = x.at(j);
      x.set_at(j, original + h);
      const double plus = scalar_loss(f, inputs).at(0);
      x.set_at(j, original - h);
      const double minus = scalar_loss(f, inputs).at(0);
      x.set_at(j, original);
      const double numeric = (plus - minus) / (2 * h);
      const double analytic = x.grad().at(j);
      EXPECT_NEAR(analytic, numeric, tolerance * std::max(1.0, std::abs(numeric)))
          << "input " << i << " element " << j;
    }
  }
}

Fn unary(Tensor (*op)(const Tensor&)) {
  return [op](const std::vector<Tensor>& x) { return op(x[0]); };
}
Fn binary(Tensor (*op)(const Tensor&, const Tensor&)) {
  return [op](const std::vector<Tensor>& x) { return op(x[0], x[1]); };
}

const V kMixed = {-1.3, 0.4, 2.1, -0.7, 1.9, 0.6};   // no zeros: relu and abs are smooth here
const V kPositive = {0.3, 1.4, 2.2, 0.9, 3.1, 0.5};
const V kOther = {0.8, -1.1, 0.5, 1.7, -0.4, 2.3};

// ---------------------------------------------------------------------------------------------------------
// Backward against finite differences.

TEST(OpsGradient, BinarySameShape) {
  for (auto op : {&ops::add, &ops::sub, &ops::mul, &ops::div}) {
    expect_gradients_match(binary(op), {leaf({2, 3}, kMixed), leaf({2, 3}, kOther)});
  }
}

TEST(OpsGradient, BinaryWithBroadcastZeroDimOperand) {
  for (auto op : {&ops::add, &ops::sub, &ops::mul, &ops::div}) {
    expect_gradients_match(binary(op), {leaf({2, 3}, kMixed), leaf({}, {1.7})});
    expect_gradients_match(binary(op), {leaf({}, {-0.6}), leaf({2, 3}, kOther)});
  }
}

TEST(OpsGradient, BinaryWithConstantOperand) {
  expect_gradients_match(binary(&ops::mul), {leaf({3}, {1, 2, 3}), constant({3}, {4, 5, 6})});
  expect_gradients_match(binary(&ops::div), {constant({3}, {4, 5, 6}), leaf({3}, {1, 2, 3})});
}

TEST(OpsGradient, UnarySmooth) {
  for (auto op : {&ops::neg, &ops::square, &ops::exp, &ops::tanh, &ops::sigmoid, &ops::relu, &ops::abs}) {
    expect_gradients_match(unary(op), {leaf({2, 3}, kMixed)});
  }
  expect_gradients_match(unary(&ops::log), {leaf({2, 3}, kPositive)});
  expect_gradients_match(unary(&ops::softplus), {leaf({2, 3}, kMixed)});
}

TEST(OpsGradient, SoftplusGradIsDifferentiable) {
  expect_gradients_match(binary(&ops::softplus_grad), {leaf({2, 3}, kMixed), leaf({2, 3}, {0.1, -0.5, 0.9, 3, -2, 0})});
}

// Black-box values from LibTorch 1.13 and 2.6 (SEM-2.12): the threshold is strict (a > 20), above it the value is
// a and the grad 1; an infinite incoming grad where e^a underflows is NaN.
TEST(OpsGradient, SoftplusAtItsThresholdAndWhereEToTheAUnderflows) {
  Tensor x = leaf({4}, {20, 20.0001, 0, -1000}, DType::Float64);
  Tensor y = ops::softplus(x);
  EXPECT_EQ(y.data<double>()[0], 20.000000002061153);
  EXPECT_EQ(y.data<double>()[1], 20.0001);
  EXPECT_EQ(y.data<double>()[2], std::log(2.0));
  EXPECT_EQ(y.data<double>()[3], 0.0);
  backward(ops::sum(y));
  EXPECT_EQ(x.grad().data<double>()[0], 0.9999999979388464);
  EXPECT_EQ(x.grad().data<double>()[1], 1.0);
  EXPECT_EQ(x.grad().data<double>()[2], 0.5);
  EXPECT_EQ(x.grad().data<double>()[3], 0.0);
  Tensor z = leaf({3}, {30, -1000, 0}, DType::Float32);
  const double inf = std::numeric_limits<double>::infinity();
  Tensor g = constant({3}, {inf, inf, inf}, DType::Float32);
  backward(ops::softplus(z), &g);
  EXPECT_EQ(z.grad().data<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(z.grad().data<float>()[1]));
  EXPECT_EQ(z.grad().data<float>()[2], std::numeric_limits<float>::infinity());
}

TEST(OpsGradient, TanhGradIsDifferentiable) {
  expect_gradients_match(binary(&ops::tanh_grad), {leaf({2, 3}, kMixed), leaf({2, 3}, {0.1, -0.5, 0.9, 0.3, -0.99, 0})});
}

// Black-box value from LibTorch 1.13 (float32): tanh at 3.25, gradient -0.5546875. 1 - t^2 cancels; the
// op-by-op form is 4 ulp away, the fused one agrees.
TEST(OpsGradient, TanhBackwardMatchesOracleUnderCancellation) {
  Tensor x = leaf({}, {3.25}, DType::Float32);
  Tensor g = constant({}, {-0.5546875}, DType::Float32);
  backward(ops::tanh(x), &g);
  EXPECT_EQ(x.grad().data<float>()[0], -0.003325727f);
}

TEST(OpsGradient, ScalarOps) {
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::mul_scalar(x[0], 2.5); }, {leaf({3}, {1, -2, 3})});
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::div_scalar(x[0], -3); }, {leaf({3}, {1, -2, 3})});
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::add_scalar(x[0], 0.5); }, {leaf({3}, {1, -2, 3})});
}

TEST(OpsGradient, Pow) {
  for (double p : {2.0, 3.0, 0.5, -1.5, 1.0}) {
    expect_gradients_match([p](const std::vector<Tensor>& x) { return ops::pow_scalar(x[0], p); },
                           {leaf({2, 3}, kPositive)});
  }
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::pow_scalar(x[0], 3.0); }, {leaf({2, 3}, kMixed)});
}

// LibTorch computes a^-2 as 1 / (a * a) (SEM-2.11): 0 where a * a overflows, not the subnormal of std::pow; the grad of
// a^-1 reads it.
TEST(OpsValues, PowMinusTwoIsTheReciprocalOfTheSquare) {
  Tensor x = constant({2}, {std::ldexp(1.0, 64), 3.0}, DType::Float32);
  EXPECT_EQ(ops::pow_scalar(x, -2.0).to_values(), (V{0.0, static_cast<double>(1.0f / 9.0f)}));
  Tensor y = leaf({1}, {std::ldexp(1.0, 512)});
  backward(ops::sum(ops::pow_scalar(y, -1.0)));
  ASSERT_EQ(y.grad().to_values(), (V{0.0}));
  EXPECT_TRUE(std::signbit(y.grad().to_values()[0]));
}

TEST(OpsGradient, PowZeroExponentHasZeroGrad) {
  Tensor x = leaf({3}, {0, 1, 2});
  backward(ops::sum(ops::pow_scalar(x, 0)));
  EXPECT_EQ(x.grad().to_values(), (V{0, 0, 0}));
}

TEST(OpsGradient, Reductions) {
  expect_gradients_match(unary(&ops::sum), {leaf({2, 3}, kMixed)});
  expect_gradients_match(unary(&ops::mean), {leaf({2, 3}, kMixed)});
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::sum_dim(x[0], 0); }, {leaf({2, 3}, kMixed)});
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::sum_dim(x[0], 1); }, {leaf({2, 3}, kMixed)});
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::expand_dim(x[0], 0, 2); }, {leaf({3}, {1, 2, 3})});
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::expand_dim(x[0], 1, 4); }, {leaf({3}, {1, 2, 3})});
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::expand(x[0], {2, 2}); }, {leaf({}, {1.5})});
  expect_gradients_match(unary(&ops::transpose), {leaf({2, 3}, kMixed)});
}

TEST(OpsGradient, Matmul) {
  expect_gradients_match(binary(&ops::matmul), {leaf({2, 3}, kMixed), leaf({3, 2}, kOther)});
}

TEST(OpsGradient, MseLoss) {
  expect_gradients_match(binary(&ops::mse_loss), {leaf({2, 3}, kMixed), leaf({2, 3}, kOther)});
}

TEST(OpsGradient, LogSoftmaxAndCrossEntropy) {
  expect_gradients_match(unary(&ops::log_softmax), {leaf({2, 3}, kMixed)});
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::cross_entropy(x[0], {2, 0}); },
                         {leaf({2, 3}, kMixed)});
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::nll_loss(x[0], {1, 1}); },
                         {leaf({2, 3}, kMixed)});
}

TEST(OpsGradient, Linear) {
  // x (2,3), W (2,3), b (2)
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::linear(x[0], x[1], x[2]); },
                         {leaf({2, 3}, kMixed), leaf({2, 3}, kOther), leaf({2}, {0.3, -0.2})});
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::linear(x[0], x[1]); },
                         {leaf({2, 3}, kMixed), leaf({2, 3}, kOther)});
}

TEST(OpsGradient, EmbeddingAndGathers) {
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::embedding(x[0], {2, 0, 2, 2}); },
                         {leaf({3, 2}, kMixed)});
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::index_add_rows(x[0], {1, 1}, 3); },
                         {leaf({2, 3}, kMixed)});
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::pick_per_row(x[0], {2, 1}); },
                         {leaf({2, 3}, kMixed)});
  expect_gradients_match([](const std::vector<Tensor>& x) { return ops::place_per_row(x[0], {2, 1}, 3); },
                         {leaf({2}, {0.5, -1})});
}

TEST(OpsGradient, EmbeddingRepeatedIndicesAccumulate) {
  Tensor w = leaf({3, 2}, {1, 2, 3, 4, 5, 6});
  backward(ops::sum(ops::embedding(w, {2, 0, 2, 2})));
  EXPECT_EQ(w.grad().to_values(), (V{1, 1, 0, 0, 3, 3}));
}

TEST(OpsGradient, ComposedExpression) {
  // A small network: cross_entropy(linear(tanh(linear(x, W1, b1)), W2), t) + mse of an embedding.
  Fn f = [](const std::vector<Tensor>& p) {
    Tensor hidden = ops::tanh(ops::linear(p[0], p[1], p[2]));
    Tensor logits = ops::linear(hidden, p[3]);
    Tensor e = ops::embedding(p[4], {1, 0});
    return ops::add(ops::cross_entropy(logits, {1, 0}), ops::mse_loss(e, ops::sigmoid(hidden)));
  };
  expect_gradients_match(f, {leaf({2, 3}, kMixed), leaf({2, 3}, kOther), leaf({2}, {0.1, -0.3}),
                             leaf({2, 2}, {0.5, -0.5, 1, 0.2}), leaf({2, 2}, {0.1, 0.2, 0.3, 0.4})});
}

// ---------------------------------------------------------------------------------------------------------
// Forward values.

TEST(OpsForward, CrossEntropyOfUniformLogitsIsLogC) {
  Tensor logits = constant({2, 4}, {0, 0, 0, 0, 3, 3, 3, 3});
  EXPECT_NEAR(ops::cross_entropy(logits, {0, 3}).at(0), std::log(4.0), 1e-15);
}

TEST(OpsForward, LogSoftmaxIsStableForLargeLogits) {
  Tensor y = ops::log_softmax(constant({1, 2}, {1000, 0}, DType::Float32));
  EXPECT_EQ(y.at(0), 0.0);
  EXPECT_EQ(y.at(1), -1000.0);
}

TEST(OpsForward, MseLossAndMean) {
  EXPECT_EQ(ops::mse_loss(constant({2}, {1, 2}), constant({2}, {3, 5})).at(0), (4.0 + 9.0) / 2);
  EXPECT_EQ(ops::mean(constant({4}, {1, 2, 3, 4})).at(0), 2.5);
}

TEST(OpsForward, MatmulAndLinear) {
  Tensor a = constant({2, 2}, {1, 2, 3, 4});
  Tensor b = constant({2, 1}, {5, 6});
  EXPECT_EQ(ops::matmul(a, b).to_values(), (V{17, 39}));
  // x (1,2), W (3,2), b (3): x W^T + b
  Tensor y = ops::linear(constant({1, 2}, {1, 2}), constant({3, 2}, {1, 0, 0, 1, 1, 1}), constant({3}, {10, 20, 30}));
  EXPECT_EQ(y.shape(), (Shape{1, 3}));
  EXPECT_EQ(y.to_values(), (V{11, 22, 33}));
}

TEST(OpsForward, ElementwiseSpecialValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(ops::relu(constant({1}, {nan})).at(0)));
  EXPECT_EQ(ops::relu(constant({2}, {-2, 3})).to_values(), (V{0, 3}));
  EXPECT_EQ(ops::sign(constant({4}, {-2, 0, 3, nan})).to_values(), (V{-1, 0, 1, 0}));
  EXPECT_EQ(ops::abs(constant({2}, {-2, 3})).to_values(), (V{2, 3}));
  EXPECT_EQ(ops::sigmoid(constant({1}, {0})).at(0), 0.5);
}

TEST(OpsForward, SEM_1_3_Float32ArithmeticInFloat) {
  Tensor a = constant({1}, {0.1}, DType::Float32);
  Tensor y = ops::mul_scalar(a, 0.1);  // the scalar is converted to float where it is used
  EXPECT_EQ(y.dtype(), DType::Float32);
  EXPECT_EQ(y.data<float>()[0], 0.1f * 0.1f);
  Tensor m = ops::mean(constant({3}, {0.1, 0.2, 0.4}, DType::Float32));
  EXPECT_EQ(m.data<float>()[0], (0.1f + 0.2f + 0.4f) / 3.0f);
}

TEST(OpsForward, LongSumIsAccurate) {
  // 2^20 float32 values of 0.1: a naive float loop drifts by far more than the pairwise sum.
  const int64_t n = 1 << 20;
  Tensor x = Tensor::zeros(DType::Float32, {n});
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = 0.1f;
  const double exact = static_cast<double>(0.1f) * n;
  EXPECT_NEAR(ops::sum(x).at(0), exact, exact * 1e-6);
}

TEST(OpsForward, BadOperandsThrowErrors) {
  auto kind_of = [](auto f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return error_kind_name(e.kind);
    }
    return "";
  };
  EXPECT_EQ(kind_of([] { ops::add(constant({2}, {1, 2}), constant({3}, {1, 2, 3})); }), "other");
  EXPECT_EQ(kind_of([] { ops::add(constant({2}, {1, 2}), constant({2}, {1, 2}, DType::Float32)); }), "other");
  EXPECT_EQ(kind_of([] { ops::matmul(constant({2, 2}, {1, 2, 3, 4}), constant({3, 1}, {1, 2, 3})); }), "other");
  EXPECT_EQ(kind_of([] { ops::cross_entropy(constant({1, 2}, {1, 2}), {2}); }), "other");
  EXPECT_EQ(kind_of([] { ops::embedding(constant({2, 2}, {1, 2, 3, 4}), {-1}); }), "other");
  EXPECT_EQ(kind_of([] { ops::sum(Tensor()); }), "other");
}

// ---------------------------------------------------------------------------------------------------------
// SEM-2.5: a second backward without retain_graph fails exactly for the ops that save tensors.

struct SecondBackwardCase {
  const char* name;
  Fn loss;
  bool second_fails;
};

TEST(OpsSavedTensors, SEM_2_5_SecondBackwardTable) {
  auto c = [] { return constant({2, 2}, {0.5, 1.5, 2.5, 3.5}); };
  const std::vector<SecondBackwardCase> cases = {
      {"a+b", [](auto& p) { return ops::sum(ops::add(p[0], p[1])); }, false},
      {"a-b", [](auto& p) { return ops::sum(ops::sub(p[0], p[1])); }, false},
      {"-a", [](auto& p) { return ops::sum(ops::neg(p[0])); }, false},
      {"a*scalar", [](auto& p) { return ops::sum(ops::mul_scalar(p[0], 3)); }, false},
      {"sum", [](auto& p) { return ops::sum(p[0]); }, false},
      {"mean", [](auto& p) { return ops::mean(p[0]); }, false},
      {"a*b", [](auto& p) { return ops::sum(ops::mul(p[0], p[1])); }, true},
      {"a*constant", [c](auto& p) { return ops::sum(ops::mul(p[0], c())); }, true},
      {"a/b", [](auto& p) { return ops::sum(ops::div(p[0], p[1])); }, true},
      {"pow", [](auto& p) { return ops::sum(ops::pow_scalar(p[0], 2)); }, true},
      {"square", [](auto& p) { return ops::sum(ops::square(p[0])); }, true},
      {"relu", [](auto& p) { return ops::sum(ops::relu(p[0])); }, true},
      {"tanh", [](auto& p) { return ops::sum(ops::tanh(p[0])); }, true},
      {"sigmoid", [](auto& p) { return ops::sum(ops::sigmoid(p[0])); }, true},
      {"exp", [](auto& p) { return ops::sum(ops::exp(p[0])); }, true},
      {"log", [](auto& p) { return ops::sum(ops::log(p[0])); }, true},
      {"abs", [](auto& p) { return ops::sum(ops::abs(p[0])); }, true},
      {"softplus", [](auto& p) { return ops::sum(ops::softplus(p[0])); }, true},
      {"matmul", [](auto& p) { return ops::sum(ops::matmul(p[0], p[1])); }, true},
      {"mse_loss", [](auto& p) { return ops::mse_loss(p[0], p[1]); }, true},
      {"log_softmax", [](auto& p) { return ops::sum(ops::log_softmax(p[0])); }, true},
      {"cross_entropy", [](auto& p) { return ops::cross_entropy(p[0], {0, 1}); }, true},
      {"linear", [](auto& p) { return ops::sum(ops::linear(p[0], p[1])); }, true},
      {"embedding", [](auto& p) { return ops::sum(ops::embedding(p[0], {1, 0, 1})); }, true},
  };
  for (const auto& k : cases) {
    std::vector<Tensor> p = {leaf({2, 2}, {1, 2, 3, 4}), leaf({2, 2}, {0.5, 0.25, 2, 1})};
    Tensor y = k.loss(p);
    backward(y);
    std::string kind;
    try {
      backward(y);
    } catch (const Error& e) {
      kind = error_kind_name(e.kind);
    }
    EXPECT_EQ(kind, k.second_fails ? "backward_through_freed_graph" : "") << k.name;
  }
}

// Black-box (LibTorch 1.13): a step between two backwards through a retained graph changes the parameter
// in place. Ops that save their operand see the new values (the saved tensor aliases the parameter); ops
// that save their output use the forward's values.
TEST(OpsSavedTensors, SavedOperandAliasesSavedOutputIsFrozen) {
  Tensor x = leaf({1}, {0.5});
  Tensor y_mul = ops::sum(ops::mul(x, x));
  Tensor y_tanh = ops::sum(ops::tanh(x));
  backward(y_mul, nullptr, true);
  x.set_at(0, 2.0);  // as a step would, in place
  backward(y_mul);
  EXPECT_EQ(x.grad().to_values(), (V{2 * 0.5 + 2 * 2.0}));
  x.reset_grad();
  backward(y_tanh, nullptr, true);
  backward(y_tanh);
  const double t = std::tanh(0.5);
  EXPECT_DOUBLE_EQ(x.grad().at(0), 2 * (1 - t * t));
}

TEST(OpsSavedTensors, CreateGraphThroughSavedOutputIsDifferentiable) {
  // d/dx tanh(x) = 1 - t^2 with a grad_fn; d/dx (1 - t^2) = -2 t (1 - t^2)
  Tensor x = leaf({2}, {0.3, -1.2});
  backward(ops::sum(ops::tanh(x)), nullptr, true, true);
  Tensor g = x.grad();
  EXPECT_TRUE(g.requires_grad());
  EXPECT_TRUE(g.grad_fn() != nullptr);
  x.reset_grad();
  backward(ops::sum(g));
  for (int64_t i = 0; i < 2; ++i) {
    const double t = std::tanh(x.at(i));
    EXPECT_NEAR(x.grad().at(i), -2 * t * (1 - t * t), 1e-14);
  }
  // The same through exp and sigmoid: second derivatives against finite differences of the first.
  for (auto op : {&ops::exp, &ops::sigmoid, &ops::tanh}) {
    auto first_derivative = [op](double v) {
      Tensor z = leaf({}, {v});
      backward(op(z));
      return z.grad().at(0);
    };
    Tensor z = leaf({}, {0.3});
    backward(op(z), nullptr, true, true);
    Tensor first = z.grad();
    z.reset_grad();
    backward(first);
    const double h = 1e-6;
    EXPECT_NEAR(z.grad().at(0), (first_derivative(0.3 + h) - first_derivative(0.3 - h)) / (2 * h), 1e-6);
  }
}

TEST(OpsNoGrad, SEM_2_3_NothingRecorded) {
  Tensor x = leaf({2, 2}, {1, 2, 3, 4});
  NoGradGuard no_grad;
  for (const Tensor& y : {ops::mul(x, x), ops::sum(x), ops::cross_entropy(x, {0, 1}), ops::linear(x, x),
                          ops::embedding(x, {1}), ops::tanh(x), ops::expand_dim(ops::sum_dim(x, 0), 0, 2)}) {
    EXPECT_FALSE(y.requires_grad());
    EXPECT_FALSE(y.grad_fn());
  }
}

// Black-box (LibTorch 1.13): the divisor's grad is -g * ((a / b) / b), rounded in that order; it decides
// where inf appears when a / b is large and b tiny (float32: 1 / 4.7e-38 = 2.1e37, / 4.7e-38 = inf).
TEST(Ops, DivGradOfTheDivisorIsMinusGTimesAOverBOverB) {
  Tensor b = leaf({2}, {4.7019774e-38, 3.0}, DType::Float32);
  Tensor a = constant({2}, {1.0, 0.7}, DType::Float32);
  backward(ops::sum(ops::div(a, b)));
  EXPECT_EQ(b.grad().at(0), -std::numeric_limits<float>::infinity());
  const float a1 = 0.7f, b1 = 3.0f;
  EXPECT_EQ(b.grad().at(1), -1.0f * ((a1 / b1) / b1));
  Tensor bd = leaf({1}, {0.3});
  Tensor ad = constant({1}, {0.1});
  Tensor g = Tensor::from_values(DType::Float64, {1}, {1.7});
  Tensor y = ops::div(ad, bd);
  backward(y, &g);
  EXPECT_EQ(bd.grad().at(0), -1.7 * ((0.1 / 0.3) / 0.3));
}

}  // namespace
}  // namespace lockstep::impl
