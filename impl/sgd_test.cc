// Tests of SGD (SEMANTICS §5) with numbers worked by hand from the box of SEM-5.3, computed here in double
// independently of the implementation, plus the float32 rounding contract (one rounding per box op).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "impl/sgd.h"
#include "impl/test_params.h"

namespace lockstep::impl {
namespace {

TEST(SGD, Sem5_3_PlainStep) {
  Tensor p = make_param({1, -2});
  set_grad(p, {0.5, 4});
  SGD sgd({p}, SGDOptions(0.1));
  sgd.step();
  EXPECT_DOUBLE_EQ(p.at(0), 1 - 0.1 * 0.5);
  EXPECT_DOUBLE_EQ(p.at(1), -2 - 0.1 * 4);
  EXPECT_EQ(sgd.state_of(p), nullptr);  // no momentum, no state
}

TEST(SGD, Sem5_3_FirstMomentumStepCopiesGradWithoutDampening_LaterStepsDampen) {
  Tensor p = make_param({1, 2});
  set_grad(p, {0.5, -1});
  SGD sgd({p}, SGDOptions(0.1).set_momentum(0.9).set_dampening(0.5));
  sgd.step();
  const SGDParamState* s = sgd.state_of(p);
  ASSERT_NE(s, nullptr);
  // buf = copy of g (no (1 - dampening) factor on the first step)
  EXPECT_EQ(s->momentum_buffer.to_values(), (std::vector<double>{0.5, -1}));
  EXPECT_FALSE(s->momentum_buffer.is_same(p.grad()));
  EXPECT_DOUBLE_EQ(p.at(0), 1 - 0.1 * 0.5);
  EXPECT_DOUBLE_EQ(p.at(1), 2 - 0.1 * -1);
  // Second step: buf = 0.9 * buf + 0.5 * g
  set_grad(p, {2, 3});
  const double b0 = 0.9 * 0.5 + 0.5 * 2, b1 = 0.9 * -1 + 0.5 * 3;
  const double p0 = p.at(0), p1 = p.at(1);
  sgd.step();
  EXPECT_DOUBLE_EQ(s->momentum_buffer.at(0), b0);
  EXPECT_DOUBLE_EQ(s->momentum_buffer.at(1), b1);
  EXPECT_DOUBLE_EQ(p.at(0), p0 - 0.1 * b0);
  EXPECT_DOUBLE_EQ(p.at(1), p1 - 0.1 * b1);
}

TEST(SGD, Sem5_3_Nesterov) {
  Tensor p = make_param({3});
  set_grad(p, {2});
  SGD sgd({p}, SGDOptions(0.5).set_momentum(0.25).set_nesterov(true));
  sgd.step();  // buf = 2; d = 2 + 0.25*2 = 2.5
  EXPECT_DOUBLE_EQ(p.at(0), 3 - 0.5 * 2.5);
  set_grad(p, {-1});
  sgd.step();  // buf = 0.25*2 + 1*(-1) = -0.5; d = -1 + 0.25*-0.5 = -1.125
  EXPECT_DOUBLE_EQ(sgd.state_of(p)->momentum_buffer.at(0), -0.5);
  EXPECT_DOUBLE_EQ(p.at(0), 3 - 1.25 + 0.5 * 1.125);
}

TEST(SGD, Sem5_2_NesterovInAGroupWithoutMomentumIsIgnored) {
  Tensor p = make_param({3});
  set_grad(p, {2});
  SGD sgd({ParamGroup({p}, SGDOptions(0.5).set_nesterov(true))}, SGDOptions(0.1));
  sgd.step();
  EXPECT_DOUBLE_EQ(p.at(0), 3 - 0.5 * 2);
  EXPECT_EQ(sgd.state_of(p), nullptr);
}

TEST(SGD, Sem5_3_WeightDecayMakesNewDAndLeavesGradAlone) {
  Tensor p = make_param({2, -4});
  set_grad(p, {1, 1});
  Tensor grad = p.grad();
  SGD sgd({p}, SGDOptions(0.1).set_momentum(0.9).set_weight_decay(0.25));
  sgd.step();  // d = g + 0.25 p = {1.5, 0}
  EXPECT_TRUE(p.grad().is_same(grad));
  EXPECT_EQ(grad.to_values(), (std::vector<double>{1, 1}));
  EXPECT_EQ(sgd.state_of(p)->momentum_buffer.to_values(), (std::vector<double>{1.5, 0}));
  EXPECT_DOUBLE_EQ(p.at(0), 2 - 0.1 * 1.5);
  EXPECT_DOUBLE_EQ(p.at(1), -4);
}

TEST(SGD, Sem4_3_UndefinedGradSkippedZeroGradStepped) {
  Tensor skipped = make_param({5});
  Tensor zeroed = make_param({5});
  set_grad(zeroed, {0});
  SGD sgd({skipped, zeroed}, SGDOptions(0.1).set_momentum(0.9).set_weight_decay(0.5));
  sgd.step();
  EXPECT_EQ(skipped.at(0), 5);                 // no weight decay either
  EXPECT_EQ(sgd.state_of(skipped), nullptr);   // no state created
  EXPECT_FALSE(skipped.grad().defined());
  EXPECT_DOUBLE_EQ(zeroed.at(0), 5 - 0.1 * 2.5);  // d = 0 + 0.5*5
  ASSERT_NE(sgd.state_of(zeroed), nullptr);
  EXPECT_EQ(sgd.state_of(zeroed)->momentum_buffer.at(0), 2.5);
  // A later step with a zero grad still moves it through momentum and decay.
  const double before = zeroed.at(0);
  sgd.step();
  const double b = 0.9 * 2.5 + 0.5 * before;
  EXPECT_DOUBLE_EQ(zeroed.at(0), before - 0.1 * b);
}

TEST(SGD, Sem5_4_LrChangeDoesNotRescaleTheBuffer) {
  Tensor p = make_param({0});
  set_grad(p, {1});
  SGD sgd({p}, SGDOptions(0.1).set_momentum(0.5));
  sgd.step();  // buf 1, p -0.1
  sgd.group_options(0).lr = 1.0;
  sgd.step();  // buf 0.5 + 1 = 1.5 (not rescaled by the lr ratio), p -0.1 - 1.5
  EXPECT_DOUBLE_EQ(sgd.state_of(p)->momentum_buffer.at(0), 1.5);
  EXPECT_DOUBLE_EQ(p.at(0), -0.1 - 1.5);
}

TEST(SGD, Sem5_3_MomentumTurnedOnLaterStartsWithACopy) {
  Tensor p = make_param({0});
  set_grad(p, {2});
  SGD sgd({p}, SGDOptions(0.1).set_dampening(0.5));
  sgd.step();
  EXPECT_EQ(sgd.state_of(p), nullptr);
  sgd.group_options(0).momentum = 0.9;
  sgd.step();
  EXPECT_EQ(sgd.state_of(p)->momentum_buffer.at(0), 2);  // a copy, no dampening
}

TEST(SGD, Sem7_4_ParamTwiceInOneGroupIsUpdatedTwice) {
  Tensor p = make_param({1});
  set_grad(p, {1});
  SGD sgd({ParamGroup({p, p})}, SGDOptions(0.1).set_momentum(0.5).set_dampening(0.25));
  sgd.step();  // first: buf = 1, p = 0.9; second: buf = 0.5 + 0.75 = 1.25, p = 0.9 - 0.125
  EXPECT_DOUBLE_EQ(sgd.state_of(p)->momentum_buffer.at(0), 1.25);
  EXPECT_DOUBLE_EQ(p.at(0), 1 - 0.1 - 0.125);
}

TEST(SGD, Sem7_4_ParamInTwoGroupsUsesEachGroupsOptions) {
  Tensor p = make_param({1});
  set_grad(p, {1});
  SGD sgd({ParamGroup({p}), ParamGroup({p}, SGDOptions(0.5))}, SGDOptions(0.1));
  sgd.step();
  EXPECT_DOUBLE_EQ(p.at(0), 1 - 0.1 - 0.5);
}

// The float32 contract: each op of the box rounds to float once, scalars are converted to float where used,
// and the `add(other, alpha)` lines are fused like LibTorch's (d + wd * p, buf * mom + (1 - damp) * d,
// p - lr * d: std::fma; black-box measurement in sgd.cc).
TEST(SGD, Sem1_3_Float32RoundsLikeLibTorchsFusedOps) {
  const std::vector<double> p0 = {0.1, -3.7, 1e-3, 12345.678, -0.333, 7e-8};
  const std::vector<double> g1 = {0.3, 1.1, -2e-4, 0.77, 5.5, -1e-9};
  const std::vector<double> g2 = {-0.7, 0.01, 3.3, -0.9, 2.2, 4e-7};
  const double lr = 0.013, mom = 0.87, damp = 0.11, wd = 0.031;
  Tensor p = make_param(p0, DType::Float32);
  SGD sgd({p}, SGDOptions(lr).set_momentum(mom).set_dampening(damp).set_weight_decay(wd));
  std::vector<float> P(p0.begin(), p0.end()), B(p0.size());
  for (int step = 0; step < 2; ++step) {
    const auto& g = step == 0 ? g1 : g2;
    set_grad(p, g);
    sgd.step();
    for (size_t i = 0; i < P.size(); ++i) {
      float d = std::fma(static_cast<float>(wd), P[i], static_cast<float>(g[i]));
      if (step == 0) {
        B[i] = d;
      } else {
        float kept = B[i] * static_cast<float>(mom);
        B[i] = std::fma(static_cast<float>(1 - damp), d, kept);
      }
      P[i] = std::fma(static_cast<float>(-lr), B[i], P[i]);
      EXPECT_EQ(p.data<float>()[i], P[i]) << "step " << step << " element " << i;
      EXPECT_EQ(sgd.state_of(p)->momentum_buffer.data<float>()[i], B[i]);
    }
  }
}

TEST(SGD, Sem1_3_NesterovLineIsFusedToo) {
  // float64, one element where fusing matters: d + mom * buf with mom * buf not exact in double.
  const double g0 = 0.1, g1 = 0.7, lr = 0.3, mom = 0.9;
  Tensor p = make_param({1.0}, DType::Float64);
  SGD sgd({p}, SGDOptions(lr).set_momentum(mom).set_nesterov(true));
  set_grad(p, {g0});
  sgd.step();  // buf = g0; d = g0 + mom * g0
  double P = std::fma(-lr, std::fma(mom, g0, g0), 1.0);
  EXPECT_EQ(p.at(0), P);
  set_grad(p, {g1});
  sgd.step();  // buf = g0 * mom + 1 * g1
  double B = std::fma(1.0, g1, g0 * mom);
  P = std::fma(-lr, std::fma(mom, B, g1), P);
  EXPECT_EQ(sgd.state_of(p)->momentum_buffer.at(0), B);
  EXPECT_EQ(p.at(0), P);
}

// Black-box (LibTorch 1.13): SGD's update does not move p's version, so a retained graph that saved p still
// runs after a step and sees the new values (autograd.h, versions); Adam's does (adam_test.cc).
TEST(SGD, Sem2_5_StepDoesNotBumpTheVersion) {
  Tensor p = make_param({0.5, 1.5});
  set_grad(p, {1, 1});
  const uint64_t before = p.version();
  SGD sgd({p}, SGDOptions(0.1).set_momentum(0.9).set_weight_decay(0.1));
  sgd.step();
  sgd.step();
  EXPECT_EQ(p.version(), before);
}

TEST(SGD, Boundaries_InfNanAndDenormalGrads) {
  const float denormal = 1e-40f;  // below FLT_MIN: must not be flushed to zero
  ASSERT_LT(denormal, std::numeric_limits<float>::min());
  Tensor p = make_param({1, 1, 1, 0}, DType::Float32);
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  set_grad(p, {inf, nan, -inf, static_cast<double>(denormal)});
  SGD sgd({p}, SGDOptions(1).set_momentum(0.5));
  sgd.step();
  EXPECT_EQ(p.data<float>()[0], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(p.data<float>()[1]));
  EXPECT_EQ(p.data<float>()[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(p.data<float>()[3], -denormal);
  EXPECT_EQ(sgd.state_of(p)->momentum_buffer.data<float>()[3], denormal);
  // inf in the buffer: 0.5*inf + (-inf) is NaN on the next step.
  set_grad(p, {-inf, 0, 0, 0});
  sgd.step();
  EXPECT_TRUE(std::isnan(sgd.state_of(p)->momentum_buffer.data<float>()[0]));
  EXPECT_EQ(sgd.state_of(p)->momentum_buffer.data<float>()[3], denormal * 0.5f);
}

TEST(SGD, StateIsWritableInPlace) {  // the adapter re-synchronises buffers this way
  Tensor p = make_param({0});
  set_grad(p, {1});
  SGD sgd({p}, SGDOptions(1).set_momentum(0.5));
  sgd.step();
  sgd.state_of(p)->momentum_buffer.set_at(0, 10);
  sgd.step();  // buf = 5 + 1
  EXPECT_DOUBLE_EQ(p.at(0), -1 - 6);
}

}  // namespace
}  // namespace lockstep::impl
