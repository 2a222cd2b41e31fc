// Tests of impl/autograd: graph recording, accumulation into .grad and its identity (SEMANTICS §2, §3).
#include "impl/autograd.h"

#include <gtest/gtest.h>

#include <cmath>

#include <string>
#include <vector>

#include "impl/ops.h"

namespace lockstep::impl {
namespace {

using V = std::vector<double>;

Tensor param(const V& values, DType dtype = DType::Float64) {
  Tensor t = Tensor::from_values(dtype, {static_cast<int64_t>(values.size())}, values);
  t.set_requires_grad(true);
  return t;
}

Tensor square_sum(const Tensor& x) { return ops::sum(ops::mul(x, x)); }  // y = (x*x).sum()

// The kind of the Error `f` throws ("" when it throws none).
template <class F>
std::string error_kind_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return error_kind_name(e.kind);
  }
  return "";
}

TEST(Autograd, SEM_2_1_ParameterGradStartsUndefined) {
  Tensor x = param({1, 2, 3});
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, SEM_2_2_ResultOfRecordedOpRequiresGradAndIsNotLeaf) {
  Tensor x = param({1, 2, 3});
  Tensor c = Tensor::from_values(DType::Float64, {3}, {1, 1, 1});
  Tensor y = ops::mul(x, c);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  Tensor z = ops::mul(c, c);  // no operand requires grad
  EXPECT_FALSE(z.requires_grad());
  EXPECT_TRUE(z.is_leaf());
}

TEST(Autograd, SEM_3_4_RepeatedBackwardAccumulates) {
  Tensor x = param({1, 2, 3});
  Tensor first_grad;
  for (int k = 1; k <= 5; ++k) {
    backward(square_sum(x));
    EXPECT_EQ(x.grad().to_values(), (V{2.0 * k, 4.0 * k, 6.0 * k})) << "backward " << k;
    if (k == 1) first_grad = x.grad();
    EXPECT_TRUE(x.grad().is_same(first_grad)) << "SEM-3.2: in place, identity kept";
    EXPECT_FALSE(x.grad().requires_grad());
    EXPECT_FALSE(x.grad().grad_fn());
  }
  EXPECT_EQ(first_grad.to_values(), (V{10, 20, 30})) << "a held handle sees the sum";
}

TEST(Autograd, SEM_3_4_ZeroingBeforeEachBackwardGivesTheSameGrad) {
  Tensor x = param({1, 2, 3});
  for (int k = 0; k < 5; ++k) {
    if (x.grad().defined()) {
      Tensor g = x.grad();
      g.detach_();
      g.zero_();
    }
    backward(square_sum(x));
    EXPECT_EQ(x.grad().to_values(), (V{2, 4, 6}));
  }
}

TEST(Autograd, SEM_3_1_ExplicitGradientIsCopiedNotAliased) {
  Tensor x = param({1, 2, 3});
  Tensor g = Tensor::from_values(DType::Float64, {3}, {1, 1, 1});
  backward(x, &g);  // the output is the leaf itself: it receives g
  ASSERT_TRUE(x.grad().defined());
  EXPECT_FALSE(x.grad().is_same(g));
  g.set_at(0, 100);
  EXPECT_EQ(x.grad().to_values(), (V{1, 1, 1}));
  backward(x, &g);  // SEM-3.2
  EXPECT_EQ(x.grad().to_values(), (V{101, 2, 2}));
}

TEST(Autograd, SEM_3_1_ExplicitGradientThroughPassThroughOpIsCopied) {
  Tensor x = param({1, 2, 3});
  Tensor y = ops::add(x, Tensor::from_values(DType::Float64, {3}, {0, 0, 0}));  // grad passes through as is
  Tensor g = Tensor::from_values(DType::Float64, {3}, {4, 5, 6});
  backward(y, &g);
  EXPECT_FALSE(x.grad().is_same(g));
  EXPECT_EQ(x.grad().to_values(), (V{4, 5, 6}));
}

TEST(Autograd, SEM_3_1_TwoLeavesOfOneAddGetDistinctGrads) {
  Tensor a = param({1, 2});
  Tensor b = param({3, 4});
  backward(ops::sum(ops::add(a, b)));
  ASSERT_TRUE(a.grad().defined() && b.grad().defined());
  EXPECT_FALSE(a.grad().is_same(b.grad()));
  a.grad().set_at(0, 7);
  EXPECT_EQ(b.grad().to_values(), (V{1, 1}));
}

TEST(Autograd, SEM_3_3_CreateGraphFirstContributionIsRecordedCopy) {
  Tensor x = param({1, 2, 3});
  backward(square_sum(x), nullptr, /*retain_graph=*/true, /*create_graph=*/true);
  Tensor g = x.grad();
  ASSERT_TRUE(g.defined());
  EXPECT_TRUE(g.requires_grad());
  EXPECT_TRUE(g.grad_fn() != nullptr);
  EXPECT_EQ(g.to_values(), (V{2, 4, 6}));
  x.reset_grad();  // the grad's graph holds x (SEM-3.3): break the cycle, as PyTorch's docs advise
}

TEST(Autograd, SEM_3_3_CreateGraphAccumulatesOutOfPlace) {
  Tensor x = param({1, 2, 3});
  backward(square_sum(x));
  Tensor held = x.grad();
  backward(square_sum(x), nullptr, true, true);
  EXPECT_FALSE(x.grad().is_same(held)) << "new identity";
  EXPECT_EQ(held.to_values(), (V{2, 4, 6})) << "a held handle keeps the old values";
  EXPECT_EQ(x.grad().to_values(), (V{4, 8, 12}));
  EXPECT_TRUE(x.grad().requires_grad());
  EXPECT_TRUE(x.grad().grad_fn() != nullptr);
  // A later backward without create_graph accumulates in place into the new grad.
  Tensor held2 = x.grad();
  backward(square_sum(x));
  EXPECT_TRUE(x.grad().is_same(held2));
  EXPECT_EQ(held2.to_values(), (V{6, 12, 18}));
  x.reset_grad();  // the grad's graph holds x (SEM-3.3): break the cycle
}

TEST(Autograd, SEM_3_3_CreateGraphOnGraphWithoutSavedInputsGivesPlainGrad) {
  Tensor x = param({1, 2, 3});
  backward(ops::sum(x), nullptr, true, true);  // the grad (ones) depends on nothing that requires grad
  EXPECT_EQ(x.grad().to_values(), (V{1, 1, 1}));
  EXPECT_FALSE(x.grad().requires_grad());
}

// Second order (create_graph): the grad is itself differentiable for add, mul, sum, mean.
TEST(Autograd, SEM_3_3_SecondOrderMulSum) {
  Tensor x = param({1, 2, 3});
  backward(ops::sum(ops::mul(ops::mul(x, x), x)), nullptr, true, true);  // grad 3x^2
  Tensor g = x.grad();
  EXPECT_EQ(g.to_values(), (V{3, 12, 27}));
  x.reset_grad();
  backward(ops::sum(g));  // d/dx sum(3x^2) = 6x
  EXPECT_EQ(x.grad().to_values(), (V{6, 12, 18}));
}

TEST(Autograd, SEM_3_3_SecondOrderAddMean) {
  Tensor x = param({1, 2, 3, 4});
  backward(ops::mean(ops::add(ops::mul(x, x), x)), nullptr, true, true);  // grad (2x + 1) / 4
  Tensor g = x.grad();
  EXPECT_EQ(g.to_values(), (V{0.75, 1.25, 1.75, 2.25}));
  x.reset_grad();
  backward(ops::mean(ops::mul(g, g)));  // d/dx mean(((2x+1)/4)^2) = 2 * (2x+1)/4 * (2/4) / 4
  V expected;
  for (double v : {1.0, 2.0, 3.0, 4.0}) expected.push_back(2 * (2 * v + 1) / 4 * 0.5 / 4);
  EXPECT_EQ(x.grad().to_values(), expected);
}

TEST(Autograd, SEM_2_3_NoGradRecordsNothing) {
  Tensor x = param({1, 2, 3});
  backward(square_sum(x));
  Tensor y;
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(grad_mode_enabled());
    y = square_sum(x);
  }
  EXPECT_TRUE(grad_mode_enabled());
  EXPECT_FALSE(y.requires_grad());
  EXPECT_FALSE(y.grad_fn());
  EXPECT_EQ(error_kind_of([&] { backward(y); }), "no_grad_fn");
  try {
    backward(y);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("element 0 of tensors does not require grad and does not have a grad_fn"),
              std::string::npos);
  }
  EXPECT_EQ(x.grad().to_values(), (V{2, 4, 6})) << "grads unchanged";
}

TEST(Autograd, SEM_2_4_NonscalarBackwardNeedsGradient) {
  Tensor x = param({1, 2, 3});
  Tensor y = ops::mul(x, x);
  EXPECT_EQ(error_kind_of([&] { backward(y); }), "nonscalar_backward");
  EXPECT_FALSE(x.grad().defined());
  Tensor g = Tensor::from_values(DType::Float64, {3}, {1, 0, 2});
  backward(y, &g);
  EXPECT_EQ(x.grad().to_values(), (V{2, 0, 12}));
}

TEST(Autograd, ExplicitGradientOfWrongShapeFails) {
  Tensor x = param({1, 2, 3});
  Tensor y = ops::mul(x, x);
  Tensor g = Tensor::from_values(DType::Float64, {2}, {1, 1});
  EXPECT_EQ(error_kind_of([&] { backward(y, &g); }), "gradient_shape");
}

TEST(Autograd, OneElementOutputGetsImplicitOne) {
  Tensor x = Tensor::scalar(DType::Float32, 3);
  x.set_requires_grad(true);
  backward(x);  // a 0-d leaf output: grad 1
  EXPECT_EQ(x.grad().to_values(), (V{1}));
  EXPECT_EQ(x.grad().dtype(), DType::Float32);
}

TEST(Autograd, SEM_2_6_WeightTyingSumsContributions) {
  Tensor w = param({1, 2});
  // y = sum(w*w) + sum(3w) + sum(w): three paths to w
  Tensor y = ops::add(ops::add(square_sum(w), ops::sum(ops::mul_scalar(w, 3))), ops::sum(w));
  backward(y);
  EXPECT_EQ(w.grad().to_values(), (V{2 + 3 + 1, 4 + 3 + 1}));
  // With create_graph the leaf is updated once: one new tensor whose grad_fn adds the old grad once.
  Tensor held = w.grad();
  Tensor y2 = ops::add(square_sum(w), ops::sum(w));
  backward(y2, nullptr, true, true);
  EXPECT_EQ(w.grad().to_values(), (V{6 + 3, 8 + 5}));
  EXPECT_EQ(held.to_values(), (V{6, 8}));
  w.reset_grad();  // the grad's graph holds w (SEM-3.3): break the cycle
}

TEST(Autograd, SEM_2_7_UnusedParameterKeepsItsGrad) {
  Tensor x = param({1, 2, 3});
  Tensor unused = param({5});
  Tensor other = param({7});
  backward(ops::sum(other));
  Tensor other_grad = other.grad();
  backward(square_sum(x));
  EXPECT_FALSE(unused.grad().defined());
  EXPECT_TRUE(other.grad().is_same(other_grad));
  EXPECT_EQ(other.grad().to_values(), (V{1}));
}

TEST(Autograd, SEM_2_5_RetainGraphAllowsRepeatedBackwardUntilFreed) {
  Tensor x = param({1, 2, 3});
  Tensor y = square_sum(x);  // mul saves its operands
  backward(y, nullptr, /*retain_graph=*/true);
  backward(y, nullptr, /*retain_graph=*/true);
  backward(y);  // frees
  EXPECT_EQ(x.grad().to_values(), (V{6, 12, 18}));
  EXPECT_EQ(error_kind_of([&] { backward(y); }), "backward_through_freed_graph");
  try {
    backward(y);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("Trying to backward through the graph a second time", 0), 0u);
  }
  EXPECT_EQ(x.grad().to_values(), (V{6, 12, 18})) << "a failed backward reached no leaf";
}

TEST(Autograd, SEM_2_5_GraphWithoutSavedTensorsRunsTwice) {
  Tensor x = param({1, 2, 3, 4});
  // sum(-(2x - 3x)) + mean(x): grad 1 + 1/4 per element
  Tensor y = ops::add(ops::sum(ops::neg(ops::sub(ops::add(x, x), ops::mul_scalar(x, 3)))), ops::mean(x));
  backward(y);
  backward(y);
  EXPECT_EQ(x.grad().to_values(), (V{2.5, 2.5, 2.5, 2.5}));
}

TEST(Autograd, FloatGradsStayFloat) {
  Tensor x = param({1, 2, 3}, DType::Float32);
  backward(square_sum(x));
  EXPECT_EQ(x.grad().dtype(), DType::Float32);
  EXPECT_EQ(x.grad().to_values(), (V{2, 4, 6}));
}

TEST(Autograd, BackwardOfUndefinedTensorFailsCleanly) {
  EXPECT_EQ(error_kind_of([] { backward(Tensor()); }), "other");
}

TEST(Autograd, GradModeGuardRestores) {
  {
    GradModeGuard off(false);
    EXPECT_FALSE(grad_mode_enabled());
    {
      GradModeGuard on(true);
      EXPECT_TRUE(grad_mode_enabled());
    }
    EXPECT_FALSE(grad_mode_enabled());
  }
  EXPECT_TRUE(grad_mode_enabled());
}

// ---------------------------------------------------------------------------------------------------------
// Saved tensors only when needed, and their versions (black-box, LibTorch 1.13; see autograd.h).

Tensor constant(const V& values, const Shape& shape) { return Tensor::from_values(DType::Float64, shape, values); }

TEST(Autograd, SEM_2_5_LinearWithOnlyTheBiasRequiringGradSavesNothing) {
  Tensor b = param({0});
  Tensor y = ops::sum(ops::linear(constant({0}, {1, 1}), constant({0}, {1, 1}), b));
  backward(y);
  EXPECT_EQ(error_kind_of([&] { backward(y); }), "");  // the oracle's second backward succeeds
  EXPECT_EQ(b.grad().at(0), 2);
}

TEST(Autograd, SEM_2_5_LinearWithTheWeightRequiringGradStillSaves) {
  Tensor w = constant({0.5}, {1, 1});
  w.set_requires_grad(true);
  Tensor y = ops::sum(ops::linear(constant({1}, {1, 1}), w, param({0})));
  backward(y);
  EXPECT_EQ(error_kind_of([&] { backward(y); }), "backward_through_freed_graph");
}

// Runs backward(retain) of f(p), an in-place change of p (as an Adam step makes), and a second backward:
// the kind it throws ("" for none).
template <class F>
std::string kind_after_inplace_change(F f) {
  Tensor p = param({0.5, 1.5});
  Tensor y = f(p);
  backward(y, nullptr, /*retain_graph=*/true);
  p.bump_version();
  return error_kind_of([&] { backward(y); });
}

TEST(Autograd, SEM_2_5_SavedOperandChangedInPlaceFailsTheBackward) {
  const Tensor c = constant({2, 3}, {2});
  EXPECT_EQ(kind_after_inplace_change([](const Tensor& p) { return ops::sum(ops::square(p)); }), "inplace_modified");
  EXPECT_EQ(kind_after_inplace_change([](const Tensor& p) { return ops::sum(ops::mul(p, p)); }), "inplace_modified");
  EXPECT_EQ(kind_after_inplace_change([&](const Tensor& p) { return ops::sum(ops::div(c, p)); }), "inplace_modified");
  EXPECT_EQ(kind_after_inplace_change([&](const Tensor& p) { return ops::mse_loss(p, c); }), "inplace_modified");
  EXPECT_EQ(kind_after_inplace_change([](const Tensor& p) { return ops::sum(ops::log(p)); }), "inplace_modified");
  EXPECT_EQ(kind_after_inplace_change([](const Tensor& p) { return ops::sum(ops::abs(p)); }), "inplace_modified");
  EXPECT_EQ(kind_after_inplace_change([](const Tensor& p) { return ops::sum(ops::pow_scalar(p, 3)); }),
            "inplace_modified");
}

TEST(Autograd, SEM_2_5_OperandNotNeededByAnyGradIsNotSaved) {
  // mul(p, c) and mul(c, p) need only c; div(p, c) only c; exp, tanh, sigmoid, relu save their output.
  const Tensor c = constant({2, 3}, {2});
  EXPECT_EQ(kind_after_inplace_change([&](const Tensor& p) { return ops::sum(ops::mul(p, c)); }), "");
  EXPECT_EQ(kind_after_inplace_change([&](const Tensor& p) { return ops::sum(ops::mul(c, p)); }), "");
  EXPECT_EQ(kind_after_inplace_change([&](const Tensor& p) { return ops::sum(ops::div(p, c)); }), "");
  EXPECT_EQ(kind_after_inplace_change([](const Tensor& p) { return ops::sum(ops::exp(p)); }), "");
  EXPECT_EQ(kind_after_inplace_change([](const Tensor& p) { return ops::sum(ops::tanh(p)); }), "");
  EXPECT_EQ(kind_after_inplace_change([](const Tensor& p) { return ops::sum(ops::relu(p)); }), "");
}

TEST(Autograd, SEM_2_5_MatmulLinearAndEmbeddingSaveWhatTheGradsNeed) {
  for (int which = 0; which < 5; ++which) {
    Tensor p = Tensor::from_values(DType::Float64, {2, 2}, {0.5, 1.5, -1, 2});
    p.set_requires_grad(true);
    const Tensor c = constant({1, 2, 3, 4}, {2, 2});
    Tensor y;
    switch (which) {
      case 0: y = ops::sum(ops::matmul(p, c)); break;      // saves c only
      case 1: y = ops::sum(ops::matmul(p, p)); break;      // saves p
      case 2: y = ops::sum(ops::linear(c, p)); break;      // the weight's grad needs x = c only
      case 3: y = ops::sum(ops::linear(p, p)); break;      // saves p
      case 4: y = ops::sum(ops::embedding(p, {0, 1, 1})); break;  // saves its weight
    }
    backward(y, nullptr, true);
    p.bump_version();
    const bool fails = which == 1 || which == 3 || which == 4;
    EXPECT_EQ(error_kind_of([&] { backward(y); }), fails ? "inplace_modified" : "") << which;
  }
}

TEST(Autograd, SEM_2_5_FreedCheckComesBeforeTheVersionCheck) {
  Tensor p = param({0.5});
  Tensor y = ops::sum(ops::square(p));
  backward(y);
  p.bump_version();
  EXPECT_EQ(error_kind_of([&] { backward(y); }), "backward_through_freed_graph");
}

TEST(Autograd, SEM_2_5_InplaceModifiedMessageIsLibTorchs) {
  Tensor p = Tensor::from_values(DType::Float32, {2}, {0.5, 1.5});
  p.set_requires_grad(true);
  Tensor y = ops::sum(ops::square(p));
  backward(y, nullptr, true);
  p.bump_version();
  try {
    backward(y);
    FAIL() << "expected a throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind, ErrorKind::InplaceModified);
    EXPECT_EQ(std::string(e.what()).rfind("one of the variables needed for gradient computation has been modified by "
                                          "an inplace operation: [CPUFloatType [2]] is at version 1; expected "
                                          "version 0 instead.", 0),
              0u)
        << e.what();
  }
}

TEST(Autograd, VersionsMoveOnInPlaceChangesOnly) {
  Tensor x = param({1, 2});
  const uint64_t v0 = x.version();
  x.set_at(0, 5);  // the harness's writes (re-synchronising values) are not in-place ops of a program
  EXPECT_EQ(x.version(), v0);
  x.zero_();
  EXPECT_EQ(x.version(), v0 + 1);
  ops::add_in_place(x, constant({1, 1}, {2}));
  EXPECT_EQ(x.version(), v0 + 2);
  Tensor alias = x;
  EXPECT_EQ(alias.version(), x.version());  // one counter per tensor, shared by its handles
}

// ---------------------------------------------------------------------------------------------------------
// Storage sharing between grads (black-box, LibTorch 1.13): a sum over a 0-d input passes on a new tensor
// on the incoming grad's storage, and a first contribution nobody else holds is taken over (SEM-3.1). So
// two 0-d leaves behind two sums get two grads (two identities) on one storage, and each in-place
// accumulation (SEM-3.2) is seen by both.

Tensor scalar_param(double v, DType dtype = DType::Float32) {
  Tensor t = Tensor::scalar(dtype, v);
  t.set_requires_grad(true);
  return t;
}

TEST(Autograd, SEM_3_1_SumsOfTwo0dLeavesLeaveGradsOnOneStorage) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Tensor p0 = scalar_param(0, dtype), p1 = scalar_param(0, dtype);
    Tensor y = ops::add(ops::sum(p0), ops::sum(p1));
    backward(y);
    ASSERT_TRUE(p0.grad().defined() && p1.grad().defined());
    EXPECT_FALSE(p0.grad().is_same(p1.grad()));          // two tensors ...
    EXPECT_TRUE(p0.grad().shares_storage_with(p1.grad()));  // ... on one storage
    backward(y);  // in place into each: 1 + 1 + 1 (the oracle's 3 and 3)
    EXPECT_EQ(p0.grad().to_values(), V{3});
    EXPECT_EQ(p1.grad().to_values(), V{3});
  }
}

TEST(Autograd, SEM_3_1_SharedGradStorageThroughScalingAndExplicitGradient) {
  Tensor p0 = scalar_param(0), p1 = scalar_param(0), p2 = scalar_param(0);
  // the tensor fanned out by add may come from mul_scalar, neg, an outer sum or an explicit gradient
  Tensor y = ops::neg(ops::mul_scalar(ops::add(ops::add(ops::sum(p0), ops::sum(p1)), ops::sum(ops::sum(p2))), 2));
  Tensor g = Tensor::scalar(DType::Float32, 0.5);
  backward(y, &g, /*retain_graph=*/true);
  EXPECT_TRUE(p0.grad().shares_storage_with(p1.grad()));
  EXPECT_TRUE(p0.grad().shares_storage_with(p2.grad()));
  EXPECT_EQ(p0.grad().to_values(), V{-1});
  EXPECT_EQ(g.to_values(), V{0.5});  // the caller's gradient is not written
  Tensor held = p0.grad();
  p0.reset_grad();  // SEM-4.2: p0 gets a new grad; p1's in-place accumulation still reaches the held one
  backward(y, &g, /*retain_graph=*/true);
  EXPECT_FALSE(p0.grad().shares_storage_with(held));
  EXPECT_EQ(held.to_values(), V{-3});  // -1, then -1 into p1 and -1 into p2
  EXPECT_EQ(p0.grad().to_values(), V{-1});
}

TEST(Autograd, SEM_3_1_NoSharedGradStorageWhereTheOracleHasNone) {
  auto shares_after_two_backwards = [](const Shape& shape, auto loss_of) {
    Tensor p0 = Tensor::zeros(DType::Float32, shape), p1 = Tensor::zeros(DType::Float32, shape);
    p0.set_requires_grad(true);
    p1.set_requires_grad(true);
    Tensor y = loss_of(p0, p1);
    backward(y, nullptr, /*retain_graph=*/false, /*create_graph=*/false);
    bool shares = p0.grad().shares_storage_with(p1.grad());
    backward(y);
    EXPECT_EQ(std::abs(p0.grad().at(0)), std::abs(p1.grad().at(0)));  // no leak from one into the other
    return shares;
  };
  auto sum_sum = [](const Tensor& a, const Tensor& b) { return ops::add(ops::sum(a), ops::sum(b)); };
  auto mean_mean = [](const Tensor& a, const Tensor& b) { return ops::add(ops::mean(a), ops::mean(b)); };
  auto add_direct = [](const Tensor& a, const Tensor& b) { return ops::sum(ops::add(a, b)); };
  auto sum_and_leaf = [](const Tensor& a, const Tensor& b) { return ops::add(ops::sum(a), b); };
  auto sub_sums = [](const Tensor& a, const Tensor& b) { return ops::sub(ops::sum(a), ops::sum(b)); };
  auto scaled_sums = [](const Tensor& a, const Tensor& b) {
    return ops::add(ops::mul_scalar(ops::sum(a), 2), ops::mul_scalar(ops::sum(b), 2));
  };
  EXPECT_TRUE(shares_after_two_backwards({}, sum_sum));
  EXPECT_FALSE(shares_after_two_backwards({1}, sum_sum));     // one element but not 0-d
  EXPECT_FALSE(shares_after_two_backwards({1, 1}, sum_sum));
  EXPECT_FALSE(shares_after_two_backwards({2, 3}, sum_sum));
  EXPECT_FALSE(shares_after_two_backwards({}, mean_mean));
  EXPECT_FALSE(shares_after_two_backwards({}, add_direct));   // add hands both leaves one tensor: copied
  EXPECT_FALSE(shares_after_two_backwards({}, sum_and_leaf));
  EXPECT_FALSE(shares_after_two_backwards({}, sub_sums));     // p1 receives -g, a new tensor
  EXPECT_FALSE(shares_after_two_backwards({}, scaled_sums));
  // A gradient a node passes straight through (add, sub) is copied by the leaf, never taken over: with the
  // other leaf holding sum's tensor on the same storage, taking it over would leak one grad into the other
  // (found by the lockstep property, RapidCheck: 3 and 3 against the oracle's 2 and 2).
  const Tensor zero = Tensor::scalar(DType::Float32, 0);
  auto sum_and_sub = [&](const Tensor& a, const Tensor& b) { return ops::add(ops::sum(a), ops::sub(b, zero)); };
  auto sum_and_add = [&](const Tensor& a, const Tensor& b) { return ops::add(ops::sum(a), ops::add(b, zero)); };
  auto sub_and_sum = [&](const Tensor& a, const Tensor& b) { return ops::add(ops::sub(a, zero), ops::sum(b)); };
  EXPECT_FALSE(shares_after_two_backwards({}, sum_and_sub));
  EXPECT_FALSE(shares_after_two_backwards({}, sum_and_add));
  EXPECT_FALSE(shares_after_two_backwards({}, sub_and_sum));
}

TEST(Autograd, SEM_3_3_CreateGraphGradsDoNotShareStorage) {
  Tensor p0 = scalar_param(0), p1 = scalar_param(0);
  Tensor y = ops::add(ops::sum(p0), ops::sum(p1));
  backward(y, nullptr, /*retain_graph=*/true, /*create_graph=*/true);
  EXPECT_FALSE(p0.grad().shares_storage_with(p1.grad()));
  EXPECT_EQ(p0.grad().to_values(), V{1});
}

TEST(Tensor, ShareStorageIsANewTensorOnTheSameValues) {
  Tensor a = Tensor::from_values(DType::Float64, {2}, {1, 2});
  Tensor b = a.share_storage();
  EXPECT_FALSE(a.is_same(b));
  EXPECT_TRUE(a.shares_storage_with(b));
  a.zero_();
  EXPECT_EQ(b.to_values(), (V{0, 0}));
  b.copy_values_from(Tensor::from_values(DType::Float64, {2}, {3, 4}));  // in place: a sees it
  EXPECT_EQ(a.to_values(), (V{3, 4}));
  Tensor c = a.clone();  // clone copies
  EXPECT_FALSE(c.shares_storage_with(a));
  c.set_at(0, 9);
  EXPECT_EQ(a.at(0), 3);
}

}  // namespace
}  // namespace lockstep::impl
