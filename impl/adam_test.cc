// Tests of Adam and AdamW (SEMANTICS §6) with numbers worked from the boxes of SEM-6.3/6.4, computed here
// in double independently of the implementation, plus the float32 rounding contract.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "impl/adam.h"
#include "impl/adamw.h"
#include "impl/test_params.h"

namespace lockstep::impl {
namespace {

// The SEM-6.3/6.4 box for one element in double, the reference for float64 tests.
struct RefAdam {
  double lr, b1, b2, eps, wd;
  bool decoupled = false, amsgrad = false;
  double m = 0, v = 0, vmax = 0;
  int64_t step = 0;
  double update(double p, double g) {
    step += 1;
    double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
    if (decoupled) p = p * (1 - lr * wd);
    else if (wd != 0) g = g + wd * p;
    m = m * b1 + (1 - b1) * g;
    v = v * b2 + (1 - b2) * g * g;
    double second = v;
    if (amsgrad) {
      vmax = (std::isnan(v) || std::isnan(vmax)) ? std::numeric_limits<double>::quiet_NaN() : std::max(vmax, v);
      second = vmax;
    }
    double denom = std::sqrt(second) / std::sqrt(bc2) + eps;
    return p - (lr / bc1) * m / denom;
  }
};

TEST(Adam, Sem6_3_FirstStepIsLrTimesSignLike) {
  // Step 1: m = 0.1 g, v = 0.001 g^2, bc1 = 0.1, bc2 = 0.001 -> p - lr * g / (|g| + eps).
  Tensor p = make_param({1, -2, 0.5});
  set_grad(p, {0.5, -3, 0});
  Adam adam({p}, AdamOptions(0.1).set_eps(1e-8));
  adam.step();
  EXPECT_NEAR(p.at(0), 1 - 0.1 * 0.5 / (0.5 + 1e-8), 1e-15);
  EXPECT_NEAR(p.at(1), -2 + 0.1 * 3 / (3 + 1e-8), 1e-15);
  EXPECT_EQ(p.at(2), 0.5);  // zero grad: zero update, but the step counts
  const AdamParamState* s = adam.state_of(p);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->step, 1);
  EXPECT_DOUBLE_EQ(s->exp_avg.at(1), 0.1 * -3);
  EXPECT_DOUBLE_EQ(s->exp_avg_sq.at(1), 0.001 * 9);
  EXPECT_FALSE(s->max_exp_avg_sq.defined());
}

TEST(Adam, Sem6_3_SeveralStepsWithL2MatchTheBox) {
  const std::vector<double> p0 = {0.3, -1.2, 4.0};
  Tensor p = make_param(p0);
  Adam adam({p}, AdamOptions(0.01).set_betas({0.8, 0.95}).set_eps(1e-6).set_weight_decay(0.2));
  std::vector<RefAdam> ref(3, RefAdam{0.01, 0.8, 0.95, 1e-6, 0.2});
  std::vector<double> expected = p0;
  const double grads[4][3] = {{0.1, 2, -0.3}, {-0.4, 1, 0}, {0.5, -2, 0.25}, {0, 0, 0}};
  for (const auto& g : grads) {
    set_grad(p, {g[0], g[1], g[2]});
    Tensor grad = p.grad();
    adam.step();
    EXPECT_EQ(grad.to_values(), (std::vector<double>{g[0], g[1], g[2]}));  // L2 makes a new g
    for (int i = 0; i < 3; ++i) {
      expected[i] = ref[i].update(expected[i], g[i]);
      EXPECT_NEAR(p.at(i), expected[i], 1e-14) << i;
      EXPECT_NEAR(adam.state_of(p)->exp_avg.at(i), ref[i].m, 1e-15);
      EXPECT_NEAR(adam.state_of(p)->exp_avg_sq.at(i), ref[i].v, 1e-15);
    }
  }
  EXPECT_EQ(adam.state_of(p)->step, 4);
}

TEST(Adam, Sem6_3_EpsAfterSqrtAndAfterBiasCorrection) {
  // g = 1e-4, eps = 1e-3, one step: denom = sqrt(1e-3 * 1e-8) / sqrt(1e-3) + 1e-3 = 1e-4 + 1e-3.
  Tensor p = make_param({0});
  set_grad(p, {1e-4});
  Adam adam({p}, AdamOptions(1).set_eps(1e-3));
  adam.step();
  const double right = -(1 / 0.1) * (0.1 * 1e-4) / (1e-4 + 1e-3);
  const double eps_inside_sqrt = -(1 / 0.1) * (0.1 * 1e-4) / (std::sqrt(1e-11 + 1e-3) / std::sqrt(1e-3));
  const double eps_before_bc2 = -(1 / 0.1) * (0.1 * 1e-4) / ((std::sqrt(1e-11) + 1e-3) / std::sqrt(1e-3));
  EXPECT_NEAR(p.at(0), right, 1e-15);
  EXPECT_GT(std::fabs(p.at(0) - eps_inside_sqrt), 1e-3);
  EXPECT_GT(std::fabs(p.at(0) - eps_before_bc2), 1e-3);
}

TEST(Adam, Sem6_2_PerParameterStepCounts) {
  Tensor a = make_param({1}), b = make_param({1});
  Adam adam({a, b});
  set_grad(a, {1});
  adam.step();
  EXPECT_EQ(adam.state_of(a)->step, 1);
  EXPECT_EQ(adam.state_of(b), nullptr);  // undefined grad: skipped, no state
  EXPECT_EQ(b.at(0), 1);
  set_grad(b, {1});
  adam.step();
  adam.step();
  EXPECT_EQ(adam.state_of(a)->step, 3);
  EXPECT_EQ(adam.state_of(b)->step, 2);
  // b's bias corrections use its own count: after 2 steps with g = 1 each: m = 0.19, v = 0.001999.
  RefAdam ref{1e-3, 0.9, 0.999, 1e-8, 0};
  double expected = ref.update(1, 1);
  expected = ref.update(expected, 1);
  EXPECT_NEAR(b.at(0), expected, 1e-15);
}

TEST(Adam, Sem4_3_ZeroGradCountsUndefinedDoesNot) {
  Tensor p = make_param({1});
  Adam adam({p});
  set_grad(p, {0});
  adam.step();
  EXPECT_EQ(adam.state_of(p)->step, 1);
  EXPECT_EQ(p.at(0), 1);
  p.reset_grad();
  adam.step();
  EXPECT_EQ(adam.state_of(p)->step, 1);
}

TEST(Adam, Sem6_3_AmsgradKeepsTheMaximum) {
  Tensor p = make_param({0});
  Adam adam({p}, AdamOptions(0.1).set_amsgrad(true));
  RefAdam ref{0.1, 0.9, 0.999, 1e-8, 0};
  ref.amsgrad = true;
  double expected = 0;
  for (double g : {10.0, 0.1, 0.1}) {
    set_grad(p, {g});
    adam.step();
    expected = ref.update(expected, g);
  }
  const AdamParamState* s = adam.state_of(p);
  ASSERT_TRUE(s->max_exp_avg_sq.defined());
  EXPECT_GT(s->max_exp_avg_sq.at(0), s->exp_avg_sq.at(0));  // the max stayed at the big grad's level
  EXPECT_NEAR(s->max_exp_avg_sq.at(0), ref.vmax, 1e-15);
  EXPECT_NEAR(p.at(0), expected, 1e-14);
}

TEST(Adam, Sem6_3_AmsgradMaxPropagatesNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Tensor p = make_param({0, 0}, dtype);
    Adam adam({p}, AdamOptions(0.1).set_amsgrad(true));
    set_grad(p, {nan, 1});
    adam.step();
    const AdamParamState* s = adam.state_of(p);
    EXPECT_TRUE(std::isnan(s->max_exp_avg_sq.at(0)));
    EXPECT_FALSE(std::isnan(s->max_exp_avg_sq.at(1)));
    // The next finite grad does not wash the NaN out of the max (nor out of exp_avg_sq).
    set_grad(p, {1, 1});
    adam.step();
    EXPECT_TRUE(std::isnan(s->max_exp_avg_sq.at(0)));
    EXPECT_TRUE(std::isnan(p.at(0)));
    EXPECT_FALSE(std::isnan(p.at(1)));
  }
}

TEST(Adam, AmsgradTurnedOnAfterStateExistsFailsLikeLibTorch) {
  // Black-box, LibTorch 1.13: the step counts and both moments update, p does not, and step() throws.
  Tensor p = make_param({1});
  set_grad(p, {1});
  Adam adam({p});
  adam.step();
  const double p_before = p.at(0);
  adam.group_options(0).amsgrad = true;
  EXPECT_THROW(adam.step(), Error);
  const AdamParamState* s = adam.state_of(p);
  EXPECT_EQ(s->step, 2);
  EXPECT_DOUBLE_EQ(s->exp_avg.at(0), 0.9 * 0.1 + 0.1);
  EXPECT_DOUBLE_EQ(s->exp_avg_sq.at(0), 0.999 * 0.001 + 0.001);
  EXPECT_EQ(p.at(0), p_before);
  EXPECT_FALSE(s->max_exp_avg_sq.defined());
}

TEST(AdamW, AmsgradTurnedOnAfterStateExistsDecaysThenFailsLikeLibTorch) {
  // Black-box, LibTorch 1.13 (float32 and float64, deterministic): AdamW's decay of p is applied before the
  // step fails; the moments update (fused), the step counts, the rest of p's update is not done.
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Tensor p = make_param({0.5, -1.5}, dtype);
    set_grad(p, {0.25, 3.0});
    AdamW adamw({p}, AdamWOptions(1e-3).set_weight_decay(0.1));
    adamw.step();
    const std::vector<double> after_first = p.to_values();
    const std::vector<double> m1 = adamw.state_of(p)->exp_avg.to_values();
    adamw.group_options(0).amsgrad = true;
    EXPECT_THROW(adamw.step(), Error);
    const AdamParamState* s = adamw.state_of(p);
    EXPECT_EQ(s->step, 2);
    EXPECT_FALSE(s->max_exp_avg_sq.defined());
    for (int i = 0; i < 2; ++i) {
      if (dtype == DType::Float32) {
        const float decayed = static_cast<float>(after_first[i]) * static_cast<float>(1 - 1e-3 * 0.1);
        EXPECT_EQ(p.at(i), decayed);
        const float g = static_cast<float>(i == 0 ? 0.25 : 3.0);
        EXPECT_EQ(s->exp_avg.at(i), std::fma(static_cast<float>(1 - 0.9), g, static_cast<float>(m1[i]) * 0.9f));
      } else {
        EXPECT_EQ(p.at(i), after_first[i] * (1 - 1e-3 * 0.1));
      }
    }
  }
}

TEST(Adam, ParamInTwoGroupsOnlyTheSecondWithAmsgradFailsAfterTheFirstUpdate) {
  // Black-box, LibTorch 1.13: the first group steps p normally and creates its state without
  // max_exp_avg_sq; the second (amsgrad) counts a second step, updates the moments, and throws.
  Tensor p = make_param({0.5});
  set_grad(p, {0.25});
  AdamOptions with_amsgrad;
  with_amsgrad.set_amsgrad(true);
  Adam adam({ParamGroup({p}), ParamGroup({p}, with_amsgrad)});
  RefAdam ref{1e-3, 0.9, 0.999, 1e-8, 0};
  const double expected = ref.update(0.5, 0.25);
  try {
    adam.step();
    ADD_FAILURE() << "expected a throw";
  } catch (const Error& e) {
    EXPECT_EQ(error_kind_name(e.kind), "other");
    EXPECT_NE(std::string(e.what()).find("Expected a proper Tensor but got None"), std::string::npos);
  }
  EXPECT_EQ(adam.state_of(p)->step, 2);
  EXPECT_DOUBLE_EQ(p.at(0), expected);
}

// Versions (autograd.h): black-box, LibTorch 1.13's Adam step bumps p's version once, AdamW's twice with
// weight decay (its decay is a separate in-place op) and once without; even with lr 0.
TEST(Adam, Sem2_5_StepBumpsTheVersion) {
  Tensor p = make_param({0.5});
  set_grad(p, {0.25});
  Adam adam({p}, AdamOptions(0.0));
  const uint64_t v0 = p.version();
  adam.step();
  EXPECT_EQ(p.version(), v0 + 1);
}

TEST(AdamW, Sem2_5_StepBumpsTheVersionTwiceWithWeightDecay) {
  Tensor p = make_param({0.5});
  set_grad(p, {0.25});
  AdamW with_decay({p}, AdamWOptions(1e-3).set_weight_decay(0.01));
  uint64_t v0 = p.version();
  with_decay.step();
  EXPECT_EQ(p.version(), v0 + 2);
  Tensor q = make_param({0.5});
  set_grad(q, {0.25});
  AdamW without({q}, AdamWOptions(1e-3).set_weight_decay(0));
  v0 = q.version();
  without.step();
  EXPECT_EQ(q.version(), v0 + 1);
}

TEST(Adam, Sem7_4_ParamTwiceInOneGroupStepsTwice) {
  Tensor p = make_param({1});
  set_grad(p, {1});
  Adam adam({ParamGroup({p, p})});
  adam.step();
  EXPECT_EQ(adam.state_of(p)->step, 2);
}

// The float32 contract: one rounding per op of the box, scalars converted to float where used, bias
// corrections and lr / bc1 and sqrt(bc2) in double; the L2 term and the two moment lines fused like
// LibTorch's (std::fma; black-box measurement in adam.cc). The final line is read as the box writes it:
// p - ((lr / bc1) * exp_avg) / denom, separately rounded.
void expect_float32_matches_fused_ops(bool adamw, bool amsgrad) {
  const std::vector<double> p0 = {0.1, -3.7, 1e-3, 12345.678, -0.333, 7e-8, 2.5};
  const std::vector<std::vector<double>> grads = {{0.3, 1.1, -2e-4, 0.77, 5.5, -1e-9, 0},
                                                  {-0.7, 0.01, 3.3, -0.9, 2.2, 4e-7, 0},
                                                  {0.2, -0.2, 1e-5, 100, -1, 1, 0}};
  const double lr = 0.013, b1 = 0.85, b2 = 0.97, eps = 1e-6, wd = 0.05;
  Tensor p = make_param(p0, DType::Float32);
  std::unique_ptr<Optimizer> opt;
  if (adamw) {
    opt = std::make_unique<AdamW>(std::vector<Tensor>{p},
                                  AdamWOptions(lr).set_betas({b1, b2}).set_eps(eps).set_weight_decay(wd).set_amsgrad(amsgrad));
  } else {
    opt = std::make_unique<Adam>(std::vector<Tensor>{p},
                                 AdamOptions(lr).set_betas({b1, b2}).set_eps(eps).set_weight_decay(wd).set_amsgrad(amsgrad));
  }
  const size_t n = p0.size();
  std::vector<float> P(p0.begin(), p0.end()), M(n, 0), V(n, 0), VM(n, 0);
  for (size_t step = 1; step <= grads.size(); ++step) {
    set_grad(p, grads[step - 1]);
    opt->step();
    const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
    for (size_t i = 0; i < n; ++i) {
      float g = static_cast<float>(grads[step - 1][i]);
      float param = P[i];
      if (adamw) {
        param = param * static_cast<float>(1 - lr * wd);
      } else {
        g = std::fma(static_cast<float>(wd), param, g);
      }
      float mk = M[i] * static_cast<float>(b1);
      M[i] = std::fma(static_cast<float>(1 - b1), g, mk);
      float vk = V[i] * static_cast<float>(b2), vs = static_cast<float>(1 - b2) * g;
      V[i] = std::fma(vs, g, vk);
      float second = V[i];
      if (amsgrad) second = VM[i] = std::max(VM[i], V[i]);
      float root = std::sqrt(second);
      float corrected = root / static_cast<float>(std::sqrt(bc2));
      float denom = corrected + static_cast<float>(eps);
      float scaled = static_cast<float>(lr / bc1) * M[i];
      float update = scaled / denom;
      P[i] = param - update;
      EXPECT_EQ(p.data<float>()[i], P[i]) << "step " << step << " element " << i;
    }
  }
}

TEST(Adam, Sem1_3_Float32RoundsLikeLibTorchsFusedOps) { expect_float32_matches_fused_ops(false, false); }
TEST(Adam, Sem1_3_Float32RoundsLikeLibTorchsFusedOpsAmsgrad) { expect_float32_matches_fused_ops(false, true); }
TEST(AdamW, Sem1_3_Float32RoundsLikeLibTorchsFusedOps) { expect_float32_matches_fused_ops(true, false); }
TEST(AdamW, Sem1_3_Float32RoundsLikeLibTorchsFusedOpsAmsgrad) { expect_float32_matches_fused_ops(true, true); }

TEST(Adam, Sem1_3_LongParamUsesTheVectorisedPathToo) {
  // 1003 elements: vector body plus a scalar tail; every element must equal the 7-element case's numbers.
  const int n = 1003;
  std::vector<double> p0(n), g(n);
  for (int i = 0; i < n; ++i) { p0[i] = std::sin(i) * 3; g[i] = std::cos(i * 0.7) * (i % 5); }
  Tensor big = make_param(p0, DType::Float32);
  set_grad(big, g);
  Adam adam({big}, AdamOptions(0.01).set_amsgrad(true).set_weight_decay(0.1));
  adam.step();
  adam.step();
  for (int i = 0; i < n; i += 97) {
    Tensor one = make_param({p0[i]}, DType::Float32);
    set_grad(one, {g[i]});
    Adam single({one}, AdamOptions(0.01).set_amsgrad(true).set_weight_decay(0.1));
    single.step();
    single.step();
    EXPECT_EQ(big.data<float>()[i], one.data<float>()[0]) << i;
  }
}

TEST(Adam, Boundaries_InfNanDenormalGrads) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const float denormal = 1e-40f;
  Tensor p = make_param({1, 1, 0, 1}, DType::Float32);
  set_grad(p, {inf, nan, static_cast<double>(denormal), -inf});
  Adam adam({p}, AdamOptions(0.1));
  adam.step();
  const AdamParamState* s = adam.state_of(p);
  EXPECT_EQ(s->exp_avg.data<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(s->exp_avg_sq.data<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(p.data<float>()[0]));  // inf / inf
  EXPECT_TRUE(std::isnan(p.data<float>()[1]));
  EXPECT_TRUE(std::isnan(p.data<float>()[3]));
  // Denormal g: exp_avg = 0.1 g (denormal, not flushed), exp_avg_sq underflows to 0, denom = eps.
  float m = 0.0f * 0.9f + static_cast<float>(1 - 0.9) * denormal;
  EXPECT_GT(m, 0.0f);
  EXPECT_EQ(s->exp_avg.data<float>()[2], m);
  EXPECT_EQ(s->exp_avg_sq.data<float>()[2], 0.0f);
  float expected = 0.0f - (static_cast<float>(0.1 / 0.1) * m) / (0.0f + static_cast<float>(1e-8));
  EXPECT_EQ(p.data<float>()[2], expected);
  EXPECT_LT(p.data<float>()[2], 0.0f);
}

TEST(Adam, StateIsWritableInPlace) {
  Tensor p = make_param({0});
  set_grad(p, {1});
  Adam adam({p}, AdamOptions(0.1));
  adam.step();
  AdamParamState* s = adam.state_of(p);
  s->step = 9;
  s->exp_avg.set_at(0, 0);
  s->exp_avg_sq.set_at(0, 0);
  const double before = p.at(0);
  adam.step();  // the 10th step from zero moments
  RefAdam ref{0.1, 0.9, 0.999, 1e-8, 0};
  ref.step = 9;
  EXPECT_NEAR(p.at(0), ref.update(before, 1), 1e-15);
  EXPECT_EQ(s->step, 10);
}

// --- AdamW ------------------------------------------------------------------------------------------------

TEST(AdamW, Sem6_4_DecoupledDecayFirstAndNoL2) {
  const std::vector<double> p0 = {2, -1};
  Tensor p = make_param(p0);
  AdamW adamw({p}, AdamWOptions(0.1).set_weight_decay(0.5));
  RefAdam r0{0.1, 0.9, 0.999, 1e-8, 0.5}, r1 = r0;
  r0.decoupled = r1.decoupled = true;
  double e0 = p0[0], e1 = p0[1];
  for (double g : {0.25, -1.0, 0.0}) {
    set_grad(p, {g, g});
    Tensor grad = p.grad();
    adamw.step();
    EXPECT_EQ(grad.at(0), g);
    e0 = r0.update(e0, g);
    e1 = r1.update(e1, g);
    EXPECT_NEAR(p.at(0), e0, 1e-15);
    EXPECT_NEAR(p.at(1), e1, 1e-15);
    EXPECT_NEAR(adamw.state_of(p)->exp_avg.at(0), r0.m, 1e-15);  // moments see the grad only
  }
}

TEST(AdamW, Sem6_4_ZeroGradOnlyDecays) {
  Tensor p = make_param({3});
  set_grad(p, {0});
  AdamW adamw({p}, AdamWOptions(0.1).set_weight_decay(0.2));
  adamw.step();
  EXPECT_DOUBLE_EQ(p.at(0), 3 * (1 - 0.1 * 0.2));
  EXPECT_EQ(adamw.state_of(p)->step, 1);
}

TEST(AdamW, Sem4_3_UndefinedGradNotDecayed) {
  Tensor p = make_param({3});
  AdamW adamw({p}, AdamWOptions(0.1).set_weight_decay(0.2));
  adamw.step();
  EXPECT_EQ(p.at(0), 3);
  EXPECT_EQ(adamw.state_of(p), nullptr);
}

}  // namespace
}  // namespace lockstep::impl
