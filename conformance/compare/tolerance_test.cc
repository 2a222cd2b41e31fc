// Tests of the tolerance model (SEMANTICS §9): ULPs, the reduction factor and the operand scales.
#include "conformance/compare/tolerance.h"
#include "conformance/program/optimizer_descriptions.h"

#include <cfloat>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TEST(Sem9Ulp, Float32AndFloat64Spacing) {
  EXPECT_EQ(ulp(1.0, DType::Float32), std::ldexp(1.0, -23));
  EXPECT_EQ(ulp(1.0, DType::Float64), std::ldexp(1.0, -52));
  EXPECT_EQ(ulp(-3.5, DType::Float32), std::ldexp(1.0, -22));  // 2 <= 3.5 < 4
  EXPECT_EQ(ulp(1.9999, DType::Float64), std::ldexp(1.0, -52));
  EXPECT_EQ(ulp(2.0, DType::Float64), std::ldexp(1.0, -51));   // the gap above a power of two
  // ulp(x) agrees with nextafter for ordinary values.
  const float f = 1234.5678f;
  EXPECT_EQ(ulp(f, DType::Float32), static_cast<double>(std::nextafter(f, INFINITY) - f));
  const double d = 1234.5678;
  EXPECT_EQ(ulp(d, DType::Float64), std::nextafter(d, INFINITY) - d);
}

TEST(Sem9Ulp, ZeroAndDenormalsUseTheSmallestDenormal) {
  EXPECT_EQ(ulp(0.0, DType::Float32), static_cast<double>(std::numeric_limits<float>::denorm_min()));
  EXPECT_EQ(ulp(0.0, DType::Float64), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(ulp(-0.0, DType::Float64), std::numeric_limits<double>::denorm_min());
  const double tiny_float = 1e-40;  // a float32 denormal
  EXPECT_EQ(ulp(tiny_float, DType::Float32), static_cast<double>(std::numeric_limits<float>::denorm_min()));
  EXPECT_EQ(ulp(FLT_MIN, DType::Float32), static_cast<double>(std::numeric_limits<float>::denorm_min()));
  // A float32 denormal is a normal double: its double ULP is much smaller.
  EXPECT_LT(ulp(tiny_float, DType::Float64), 1e-50);
}

TEST(Sem9Ulp, LargeAndNonFinite) {
  EXPECT_EQ(ulp(FLT_MAX, DType::Float32), std::ldexp(1.0, 104));
  EXPECT_EQ(ulp(1e300, DType::Float32), std::ldexp(1.0, 996 - 23));  // beyond float range: same formula
  EXPECT_TRUE(std::isinf(ulp(INFINITY, DType::Float32)));
  EXPECT_TRUE(std::isnan(ulp(NAN, DType::Float64)));
}

TEST(Sem9Tolerance, ReductionFactorIsCeilLog2) {
  EXPECT_EQ(reduction_factor(0), 1);
  EXPECT_EQ(reduction_factor(1), 1);
  EXPECT_EQ(reduction_factor(2), 1);
  EXPECT_EQ(reduction_factor(3), 2);
  EXPECT_EQ(reduction_factor(1024), 10);
  EXPECT_EQ(reduction_factor(1025), 11);
}

TEST(Sem9Tolerance, DefaultsAreSingleDigitsAndOverridable) {
  Tolerance t;
  for (Quantity q : all_quantities()) {
    EXPECT_GE(t.k(q), 1) << quantity_name(q);
    EXPECT_LT(t.k(q), 10) << quantity_name(q);
  }
  t.k(Quantity::state("exp_avg_sq")) = 7;
  EXPECT_EQ(t.k(Quantity::state("exp_avg_sq")), 7);
  EXPECT_EQ(t.k(Quantity::state("exp_avg")), 4);
  EXPECT_STREQ(quantity_name(Quantity::state("max_exp_avg_sq")), "max_exp_avg_sq");
  EXPECT_EQ(all_quantities().size(), quantity_count());
}

// Every optimizer state tensor is a quantity of its name (optimizer_descriptions.h), in report order between the
// grad and the output; the names are the tolerance file's keys and the report's columns.
TEST(Sem9Tolerance, QuantitiesAreTheFixedOnesAndEveryStateTensor) {
  std::vector<std::string> names;
  for (Quantity q : all_quantities()) names.push_back(quantity_name(q));
  std::vector<std::string> expected = {"param", "grad"};
  for (const StateTensorDescription& s : all_state_tensors()) expected.push_back(s.name);
  expected.push_back("output");
  expected.push_back("handle");
  EXPECT_EQ(names, expected);
  for (Quantity q : all_quantities()) EXPECT_EQ(quantity_from_name(quantity_name(q)), q) << quantity_name(q);
  EXPECT_FALSE(quantity_from_name("momentum"));
  EXPECT_THROW(Quantity::state("param"), std::invalid_argument);
}

EngineState state_with(const std::string& name, Shape shape, std::vector<double> values) {
  EngineState s;
  ParamObservation p;
  p.name = name;
  p.value = TensorValue{DType::Float64, std::move(shape), std::move(values)};
  s.params.push_back(p);
  return s;
}

TEST(Sem9OperandScales, CancellingSumIsJudgedAtTheScaleOfItsTerms) {
  // sum([1000, -999.5]) = 0.5, but its rounding happened at the scale of 1999.5.
  EngineState s = state_with("x", {2}, {1000, -999.5});
  OperandScales scales = operand_scales(*sum(param("x")), s, nullptr);
  ASSERT_EQ(scales.output.size(), 1u);
  EXPECT_EQ(scales.output[0], 1999.5);
  EXPECT_EQ(scales.reduction_length, 2);
  // d sum / dx = 1 per element.
  ASSERT_EQ(scales.grad.count("x"), 1u);
  EXPECT_EQ(scales.grad["x"], (std::vector<double>{1, 1}));
}

// An explicit gradient below the smallest normal number: mse_loss's backward forms 2 g / n in the subnormal range,
// rounded to an absolute denormal that (a - b) = 256 multiplies; the grad's scale covers it (random-174107 of seed 7,
// 500,000 programs, failed at 29 ULPs of a 16-ULP bound before).
TEST(Sem9OperandScales, ASubnormalExplicitGradientIsRoundedInsideTheBackward) {
  std::vector<double> values(9, 0.0);
  values[7] = 256;
  EngineState s = state_with("p", {3, 3}, values);
  auto loss = binary(Op::MseLoss, param("p"), constant(TensorValue{DType::Float64, {3, 3}, std::vector<double>(9, 0.0)}));
  const std::vector<double> gradient = {-9.56086423577313e-310};
  OperandScales scales = operand_scales(*loss, s, &gradient);
  ASSERT_EQ(scales.grad.count("p"), 1u);
  EXPECT_GE(scales.grad["p"][7], 2.0 / 9 * 256 * DBL_MIN);
  // A normal gradient is not floored: the scale is exactly 2 |g| / n * 256.
  const std::vector<double> normal = {-0.5};
  EXPECT_EQ(operand_scales(*loss, s, &normal).grad["p"][7], 2.0 / 9 * 0.5 * 256);
}

TEST(Sem9OperandScales, MeanDividesTheScale) {
  EngineState s = state_with("x", {4}, {1, -1, 2, -2});
  OperandScales scales = operand_scales(*mean(param("x")), s, nullptr);
  EXPECT_EQ(scales.output[0], 1.5);  // (1+1+2+2)/4
  EXPECT_EQ(scales.grad["x"], (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
}

TEST(Sem9OperandScales, ProductGradScalesAreTheOtherOperand) {
  // loss = sum(w * c): dloss/dw = c, element by element (not the tensor's largest element).
  EngineState s = state_with("w", {3}, {5, 6, 7});
  auto loss = sum(mul(param("w"), constant(TensorValue{DType::Float64, {3}, {0.001, -2, 1000}})));
  OperandScales scales = operand_scales(*loss, s, nullptr);
  EXPECT_EQ(scales.grad["w"], (std::vector<double>{0.001, 2, 1000}));
  EXPECT_EQ(scales.output[0], 5 * 0.001 + 12 + 7000);
}

// SEMANTICS §9.5: a zero's sign is compared where every operand was zero. A product with an exact zero takes the
// other factor's sign: a leaf's, or the root's seed, is exact; a computed value's may be rounding's. random-95330 of
// seed 5 (max size 100): x = w * c with c[1] = 0 fed linear, whose grad of x cancelled to about 0, so w's grad[1] was
// -0 in LibTorch and +0 in impl, both correct; it was judged "the sign of zero must match".
TEST(Sem9OperandScales, AZeroMadeWithAComputedNonZeroOperandHasNoExactSign) {
  EngineState s = state_with("w", {2}, {4, 1});
  s.params.push_back(state_with("v", {2}, {1, 1}).params[0]);
  auto c = [] { return constant(TensorValue{DType::Float64, {2}, {0.5, 0}}); };
  // At the root, the seed's sign is exact: w's grad[1] = g * 0 has an exact sign, and so has the output w * 0.
  const std::vector<double> seed = {1, -1};
  OperandScales root = operand_scales(*mul(param("w"), c()), s, &seed);
  EXPECT_EQ(root.grad_exact_zero["w"], (std::vector<char>{0, 1}));
  EXPECT_EQ(root.output_exact_zero, (std::vector<char>{0, 1}));
  // Below the root, the incoming gradient is computed: w's grad[1] may have either sign.
  OperandScales below = operand_scales(*sum(mul(param("w"), c())), s, nullptr);
  EXPECT_EQ(below.grad_exact_zero["w"], (std::vector<char>{0, 0}));
  // Forward: (w - v) * c, where (w - v)[1] = 0 is computed from non-zero operands (SEM-9.5 compares only zeros of
  // zero operands): not exact.
  OperandScales forward = operand_scales(*mul(binary(Op::Sub, param("w"), param("v")), c()), s, &seed);
  EXPECT_EQ(forward.output_exact_zero, (std::vector<char>{0, 0}));
  // The mark survives a reduction's 1/n below it: sum(mean(w) * 0), w's grads are mean's incoming / 2.
  auto zero = constant(TensorValue{DType::Float64, {}, {0}});
  OperandScales through_mean = operand_scales(*sum(mul(mean(param("w")), zero)), s, nullptr);
  EXPECT_EQ(through_mean.grad_exact_zero["w"], (std::vector<char>{0, 0}));
  // An exact zero gradient times a computed factor: an explicit gradient of zeros into (w - v) * (v - w), whose
  // operands' grads 0 * (v - w) and 0 * (w - v) take the computed factor's sign.
  const std::vector<double> zeros = {0, 0};
  OperandScales mirror =
      operand_scales(*mul(binary(Op::Sub, param("w"), param("v")), binary(Op::Sub, param("v"), param("w"))), s, &zeros);
  EXPECT_EQ(mirror.grad_exact_zero["w"], (std::vector<char>{0, 0}));
}

TEST(Sem9OperandScales, SharedParameterAccumulatesScalesOverPaths) {
  // loss = sum(x * x): both paths contribute |x| (SEM-2.6).
  EngineState s = state_with("x", {2}, {3, -4});
  OperandScales scales = operand_scales(*sum(mul(param("x"), param("x"))), s, nullptr);
  EXPECT_EQ(scales.grad["x"], (std::vector<double>{6, 8}));
}

TEST(Sem9OperandScales, ExplicitGradientSeedsTheBackward) {
  EngineState s = state_with("x", {2}, {3, -4});
  std::vector<double> gradient = {-2, 0.5};
  OperandScales scales = operand_scales(*mul_scalar(param("x"), -3), s, &gradient);
  EXPECT_EQ(scales.grad["x"], (std::vector<double>{6, 1.5}));
}

TEST(Sem9OperandScales, MatmulUsesAbsoluteProducts) {
  // [1, -1] @ [[2], [2]] = 0, scale |1*2| + |-1*2| = 4; reduction length = largest numel (2).
  EngineState s = state_with("a", {1, 2}, {1, -1});
  s.params.push_back(state_with("b", {2, 1}, {2, 2}).params[0]);
  OperandScales scales = operand_scales(*sum(binary(Op::Matmul, param("a"), param("b"))), s, nullptr);
  EXPECT_EQ(scales.output[0], 4);
  EXPECT_EQ(scales.grad["a"], (std::vector<double>{2, 2}));
  EXPECT_EQ(scales.grad["b"], (std::vector<double>{1, 1}));
  EXPECT_EQ(scales.reduction_length, 2);
}

TEST(Sem9OperandScales, ReductionLengthIsTheLongestSum) {
  EngineState s = state_with("a", {3, 5}, std::vector<double>(15, 1.0));
  s.params.push_back(state_with("b", {5, 2}, std::vector<double>(10, 1.0)).params[0]);
  // (3,5) @ (5,2): sums of 5 forward, of 3 (grad of b) and 2 (grad of a) backward; then mean over 6.
  EXPECT_EQ(operand_scales(*mean(binary(Op::Matmul, param("a"), param("b"))), s, nullptr).reduction_length, 6);
  EXPECT_EQ(operand_scales(*sum(param("a")), s, nullptr).reduction_length, 15);
  // A 0-d operand broadcast over 15 elements collects 15 terms in its gradient.
  auto scalar = constant(TensorValue{DType::Float64, {}, {2}});
  EXPECT_EQ(operand_scales(*mul(param("a"), scalar), s, std::nullptr_t{}).reduction_length, 15);
  EXPECT_EQ(operand_scales(*mul(param("a"), param("a")), s, nullptr).reduction_length, 1);
}

TEST(Sem9OperandScales, DivisionByZeroDoesNotAcceptEverything) {
  EngineState s = state_with("x", {2}, {1, 0});
  auto loss = sum(binary(Op::Div, constant(TensorValue{DType::Float64, {2}, {1, 1}}), param("x")));
  OperandScales scales = operand_scales(*loss, s, nullptr);
  for (const auto& [name, g] : scales.grad)
    for (double v : g) EXPECT_TRUE(std::isfinite(v)) << name;
  for (double v : scales.output) EXPECT_TRUE(std::isfinite(v));
}

TEST(Sem9OperandScales, UnknownParameterGivesEmptyScales) {
  EngineState s = state_with("x", {1}, {1});
  OperandScales scales = operand_scales(*sum(param("nope")), s, nullptr);
  EXPECT_TRUE(scales.output.empty());
  EXPECT_TRUE(scales.grad.empty());
}

}  // namespace
}  // namespace lockstep
