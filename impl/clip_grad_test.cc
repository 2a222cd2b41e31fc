// Tests of gradient clipping (SEMANTICS §18) with numbers worked by hand, at the boundaries on purpose: undefined grads,
// a parameter listed twice, shared storage, float32 squares that overflow or underflow, infinities and NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "impl/clip_grad.h"
#include "impl/error.h"
#include "impl/test_params.h"

namespace lockstep::impl {
namespace {

const double kInf = std::numeric_limits<double>::infinity();

TEST(ClipGradNorm, Sem18_2_OneCoefficientFromTheTotalNorm) {
  Tensor w = make_param({1}), b = make_param({1});
  set_grad(w, {3});
  set_grad(b, {4});
  const Tensor grad_before = w.grad();
  Tensor total = clip_grad_norm_({w, b}, 1.0);
  EXPECT_EQ(total.dtype(), DType::Float64);
  EXPECT_EQ(total.shape(), Shape{});
  EXPECT_EQ(total.at(0), 5);
  const double c = 1 / (5 + 1e-6);
  EXPECT_EQ(w.grad().at(0), 3 * c);
  EXPECT_EQ(b.grad().at(0), 4 * c);
  EXPECT_TRUE(w.grad().is_same(grad_before));  // in place (SEM-18.2)
}

TEST(ClipGradNorm, Sem18_2_NeverScalesUp) {
  Tensor w = make_param({3, -4});
  set_grad(w, {3, -4});
  EXPECT_EQ(clip_grad_norm_({w}, 10.0).at(0), 5);
  EXPECT_EQ(w.grad().to_values(), (std::vector<double>{3, -4}));
}

TEST(ClipGradNorm, Sem18_1_UndefinedGradsSkippedAndNoneIsZero) {
  Tensor w = make_param({1}), u = make_param({1});
  set_grad(w, {3});
  EXPECT_EQ(clip_grad_norm_({u, w, u}, 1.0).at(0), 3);
  EXPECT_FALSE(u.grad().defined());
  Tensor none = clip_grad_norm_({u}, 1.0);
  EXPECT_EQ(none.dtype(), DType::Float32);
  EXPECT_EQ(none.at(0), 0);
  EXPECT_EQ(clip_grad_norm_({}, 1.0).at(0), 0);
}

TEST(ClipGradNorm, Sem18_1_NormTypesOneAndInfinity) {
  Tensor w = make_param({0, 0}), b = make_param({0});
  set_grad(w, {3, -5});
  set_grad(b, {4});
  EXPECT_EQ(clip_grad_norm_({w, b}, 100.0, 1.0).at(0), 12);
  EXPECT_EQ(clip_grad_norm_({w, b}, 100.0, kInf).at(0), 5);
}

TEST(ClipGradNorm, Sem18_4_ListedTwiceCountsAndScalesTwice) {
  Tensor w = make_param({1});
  set_grad(w, {3});
  const double total = clip_grad_norm_({w, w}, 1.0).at(0);
  EXPECT_EQ(total, std::sqrt(18.0));
  const double c = 1 / (std::sqrt(18.0) + 1e-6);
  EXPECT_EQ(w.grad().at(0), 3 * c * c);
}

TEST(ClipGradNorm, Sem18_4_SharedStorageIsScaledOncePerListing) {
  Tensor p = make_param({1}), q = make_param({1});
  set_grad(p, {3});
  q.set_grad(p.grad().share_storage());  // two identities, one storage (SEM-3.7)
  clip_grad_norm_({p}, 1.0);             // q is not listed, but sees the change
  EXPECT_EQ(q.grad().at(0), p.grad().at(0));
  EXPECT_EQ(p.grad().at(0), 3 / (3 + 1e-6));
}

TEST(ClipGradNorm, Sem18_1_Float32SquaresOverflowAndUnderflow) {
  Tensor big = make_param({0}, DType::Float32), tiny = make_param({0}, DType::Float32);
  set_grad(big, {1e20});  // finite, but its square is not a float32
  EXPECT_EQ(clip_grad_norm_({big}, kInf).at(0), kInf);
  set_grad(tiny, {1e-23});  // its square underflows to 0
  Tensor zero = clip_grad_norm_({tiny}, 1.0);
  EXPECT_EQ(zero.at(0), 0);
  EXPECT_EQ(tiny.grad().at(0), static_cast<double>(1e-23f));  // 1 / (0 + 1e-6) is clamped to 1
  Tensor d = make_param({0});  // float64 squares of the same numbers are fine
  set_grad(d, {1e20});
  EXPECT_EQ(clip_grad_norm_({d}, kInf).at(0), 1e20);
}

TEST(ClipGradNorm, Sem18_1_OneElementExactIn2x) {  // black-box, LibTorch 2.6 against 1.13
  const NormSquares v2 = NormSquares::InDtypeButOneElementExact;
  Tensor big = make_param({0}, DType::Float32), two = make_param({0, 0}, DType::Float32);
  set_grad(big, {1e20});
  EXPECT_EQ(clip_grad_norm_({big}, kInf, 2.0, false, v2).at(0), static_cast<double>(1e20f));
  EXPECT_EQ(clip_grad_norm_({big}, kInf, 2.0, false, NormSquares::InDtype).at(0), kInf);
  set_grad(two, {1e20, 1});  // two elements: squared in float32 in 2.x too
  EXPECT_EQ(clip_grad_norm_({two}, kInf, 2.0, false, v2).at(0), kInf);
  Tensor tiny = make_param({0});
  set_grad(tiny, {1e-310});
  EXPECT_EQ(clip_grad_norm_({tiny}, kInf, 2.0, false, v2).at(0), 1e-310);
  EXPECT_EQ(clip_grad_norm_({tiny}, kInf, 2.0, false, NormSquares::InDtype).at(0), 0);  // 1.x: the square underflows
  Tensor a = make_param({0}, DType::Float32), b = make_param({0}, DType::Float32);  // the norm of two norms: squared
  set_grad(a, {3e19});
  set_grad(b, {4e19});
  EXPECT_EQ(clip_grad_norm_({a, b}, kInf, 2.0, false, v2).at(0), kInf);
}

TEST(ClipGradNorm, Sem18_1_MixedDtypesGiveAFloat64Total) {
  Tensor f = make_param({0}, DType::Float32), d = make_param({0});
  set_grad(f, {3});
  set_grad(d, {4});
  Tensor total = clip_grad_norm_({f, d}, 1.0);
  EXPECT_EQ(total.dtype(), DType::Float64);
  EXPECT_EQ(total.at(0), 5);
  EXPECT_EQ(f.grad().at(0), static_cast<double>(static_cast<float>(3 * (1 / (5 + 1e-6)))));
}

TEST(ClipGradNorm, Sem18_3_NonfiniteTotal) {
  Tensor w = make_param({0, 0});
  set_grad(w, {kInf, 2});
  try {
    clip_grad_norm_({w}, 1.0, 2.0, /*error_if_nonfinite=*/true);
    FAIL() << "a non-finite total with error_if_nonfinite must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind, ErrorKind::NonfiniteNorm);
  }
  EXPECT_EQ(w.grad().to_values(), (std::vector<double>{kInf, 2}));  // untouched
  EXPECT_EQ(clip_grad_norm_({w}, 1.0).at(0), kInf);
  EXPECT_TRUE(std::isnan(w.grad().at(0)));  // inf * 0
  EXPECT_EQ(w.grad().at(1), 0);
  set_grad(w, {std::nan(""), 2});
  EXPECT_TRUE(std::isnan(clip_grad_norm_({w}, 1.0).at(0)));
  EXPECT_TRUE(std::isnan(w.grad().at(1)));  // a NaN coefficient reaches every grad
}

TEST(ClipGradNorm, Sem18_2_MaxNormNotValidated) {
  Tensor a = make_param({0}), b = make_param({0});
  set_grad(a, {3});
  set_grad(b, {4});
  clip_grad_norm_({a, b}, -1.0);
  EXPECT_EQ(a.grad().at(0), 3 * (-1 / (5 + 1e-6)));  // the signs flip
  EXPECT_EQ(b.grad().at(0), 4 * (-1 / (5 + 1e-6)));
  clip_grad_norm_({a}, 0.0);
  EXPECT_EQ(a.grad().at(0), 0);  // -0.6 * 0: a negative zero
  EXPECT_TRUE(std::signbit(a.grad().at(0)));
}

TEST(ClipGradValue, Sem18_5_ClampsBothSidesKeepsNaN) {
  Tensor w = make_param({0, 0, 0, 0});
  set_grad(w, {2.5, -2.5, 1, std::nan("")});
  const Tensor before = w.grad();
  clip_grad_value_({w}, 1.0);
  EXPECT_EQ(w.grad().at(0), 1);
  EXPECT_EQ(w.grad().at(1), -1);
  EXPECT_EQ(w.grad().at(2), 1);
  EXPECT_TRUE(std::isnan(w.grad().at(3)));
  EXPECT_TRUE(w.grad().is_same(before));
}

TEST(ClipGradValue, Sem18_5_NegativeAndNaNClipValues) {
  Tensor w = make_param({0, 0, 0, 0});
  set_grad(w, {2.5, -2.5, 1, std::nan("")});
  clip_grad_value_({w}, -1.0);
  EXPECT_EQ(w.grad().at(0), -1);
  EXPECT_EQ(w.grad().at(1), -1);
  EXPECT_EQ(w.grad().at(2), -1);
  EXPECT_TRUE(std::isnan(w.grad().at(3)));
  set_grad(w, {2.5, -2.5, 1, 0});
  clip_grad_value_({w}, std::nan(""));
  for (double v : w.grad().to_values()) EXPECT_TRUE(std::isnan(v));
  Tensor u = make_param({1});
  clip_grad_value_({u}, 1.0);
  EXPECT_FALSE(u.grad().defined());
}

TEST(ClipGradValue, Sem18_5_SubnormalsAndInfinities) {
  Tensor w = make_param({0, 0, 0}, DType::Float32);
  const double denorm = std::numeric_limits<float>::denorm_min();
  set_grad(w, {denorm, kInf, -kInf});
  clip_grad_value_({w}, 0.5);
  EXPECT_EQ(w.grad().to_values(), (std::vector<double>{denorm, 0.5, -0.5}));
  clip_grad_value_({w}, kInf);
  EXPECT_EQ(w.grad().to_values(), (std::vector<double>{denorm, 0.5, -0.5}));
}

}  // namespace
}  // namespace lockstep::impl
