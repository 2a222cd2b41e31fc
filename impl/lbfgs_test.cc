// Tests of L-BFGS (SEMANTICS §16) against numbers dumped from LibTorch 1.13's torch::optim::LBFGS by the black-box
// probes of oracle/probes/lbfgs/ (closure_calls.cc, edges.cc, versions_and_groups.cc), and its edges. The closures
// here set the grads by hand from the loss's derivative, so only the optimizer is under test.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "impl/lbfgs.h"
#include "impl/test_params.h"

namespace lockstep::impl {
namespace {

// The probe's problem 0: w (3), v (2); loss = sum(w^4) + 3 sum(v^2) + sum(w) sum(v).
struct Problem0 {
  Tensor w = make_param({1.5, -0.5, 2.0});
  Tensor v = make_param({0.25, 3.0});
  std::vector<std::vector<double>> calls;  // w and v at every closure call

  Tensor loss() {
    calls.push_back({w.at(0), w.at(1), w.at(2), v.at(0), v.at(1)});
    double sw = 0, sv = 0, l = 0;
    for (int i = 0; i < 3; ++i) sw += w.at(i);
    for (int i = 0; i < 2; ++i) sv += v.at(i);
    std::vector<double> gw, gv;
    for (int i = 0; i < 3; ++i) {
      const double a = w.at(i);
      l += a * a * a * a;
      gw.push_back(4 * a * a * a + sv);
    }
    for (int i = 0; i < 2; ++i) {
      const double a = v.at(i);
      l += 3 * a * a;
      gv.push_back(6 * a + sw);
    }
    l += sw * sv;
    set_grad(w, gw);
    set_grad(v, gv);
    return Tensor::scalar(DType::Float64, l);
  }
};

void expect_near_relative(const std::vector<double>& actual, const std::vector<double>& expected, double rel,
                          const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], rel * std::fabs(expected[i])) << what << " [" << i << "]";
}

// SEM-16.3 against LibTorch 1.13 (`closure_calls none 0 20 1 100 f64 2`): the same closure calls, at the same
// parameter values to rounding (dot products add in another order), and the same state.
TEST(LBFGS, Sem16_3_ClosureCallsMatchLibTorch) {
  Problem0 pr;
  LBFGS opt({pr.w, pr.v});
  const Tensor first = opt.step([&] { return pr.loss(); });
  EXPECT_EQ(first.at(0), 58.0625);  // the first call's loss
  ASSERT_EQ(pr.calls.size(), 20u);  // max_iter 20: 19 moves evaluated, the 20th not
  const LBFGSState* st = opt.lbfgs_state();
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->func_evals, 20);
  EXPECT_EQ(st->n_iter, 20);
  EXPECT_EQ(st->old_dirs.size(), 17u);
  EXPECT_NEAR(st->H_diag, 0.4666738923853383, 1e-11);
  expect_near_relative(pr.calls[1], {1.2912772585669783, -0.53426791277258567, 1.5607476635514019, 0.19392523364485981,
                                     2.7383177570093458}, 1e-14, "call 1");
  expect_near_relative(pr.calls[7], {0.33734581775238281, -0.036179254887286738, 0.32098801601070998,
                                     -0.055722424166995618, -0.096306245369458615}, 1e-12, "call 7");
  expect_near_relative(pr.calls[19], {0.49980085654048856, 0.50046730873205014, 0.50002605432482206,
                                      -0.24996303764303293, -0.25000473023616182}, 1e-12, "call 19");

  // The second step starts from the 20th move and stops at |loss - prev_loss| < tolerance_change after 3 calls.
  opt.step([&] { return pr.loss(); });
  ASSERT_EQ(pr.calls.size(), 23u);
  EXPECT_EQ(st->func_evals, 23);
  EXPECT_EQ(st->n_iter, 23);
  EXPECT_EQ(st->old_dirs.size(), 20u);
  expect_near_relative(pr.calls[22], {0.50000186081832099, 0.49999948411202272, 0.49999696237248181,
                                      -0.24999977397901665, -0.2499995859670423}, 1e-12, "call 22");
}

// SEM-16.6 against LibTorch 1.13 (`closure_calls strong_wolfe 0 5 1 100 f64 2`): every iteration's line search
// accepts its first trial here; the same calls at the same points, the same counts and history.
TEST(LBFGS, Sem16_6_StrongWolfeMatchesLibTorch) {
  Problem0 pr;
  LBFGS opt({pr.w, pr.v}, LBFGSOptions(1).set_max_iter(5).set_line_search_fn("strong_wolfe"));
  EXPECT_EQ(opt.step([&] { return pr.loss(); }).at(0), 58.0625);
  ASSERT_EQ(pr.calls.size(), 6u);  // one before the iterations, one per iteration's line search, the last one's too
  const LBFGSState* st = opt.lbfgs_state();
  EXPECT_EQ(st->func_evals, 6);
  EXPECT_EQ(st->n_iter, 5);
  EXPECT_EQ(st->old_dirs.size(), 4u);
  EXPECT_EQ(st->t, 1);
  EXPECT_NEAR(st->prev_loss, 0.10985052636540382, 1e-14);
  EXPECT_NEAR(st->H_diag, 0.16744876173112574, 1e-12);
  expect_near_relative(pr.calls[2], {0.77759831441824301, -0.65108947192655831, 0.94818091317849951, 0.027017904013911104,
                                     1.7690365325251278}, 1e-13, "call 2");
  expect_near_relative(pr.calls[5], {0.33219212729679937, -0.40287337831404058, 0.38860256673920063,
                                     -0.043061696338035471, -0.065623712537475121}, 1e-12, "call 5");
  // The step ends at the chosen point: the last call's, here.
  expect_near_relative({pr.w.at(0), pr.v.at(1)}, {0.33219212729679937, -0.065623712537475121}, 1e-12, "after");
  opt.step([&] { return pr.loss(); });
  ASSERT_EQ(pr.calls.size(), 12u);
  EXPECT_EQ(st->func_evals, 12);
  EXPECT_EQ(st->n_iter, 9);
  EXPECT_EQ(st->old_dirs.size(), 8u);
  EXPECT_NEAR(st->H_diag, 0.78604178372906097, 1e-10);
  expect_near_relative(pr.calls[11], {0.42648843505168221, 0.58216202030340636, 0.26589962332402589,
                                      -0.1849584960277465, -0.2020633996337973}, 1e-10, "call 11");
}

// SEM-16.6 (`closure_calls strong_wolfe 0 3 10 100 f64 2`): lr 10 overshoots, the first trial fails the sufficient
// decrease and the zoom's cubic step is taken; max_eval (3) ends each step after its first line search. func_evals
// counts a search's calls when it returns, so calls inside it see the count from before it.
TEST(LBFGS, Sem16_6_StrongWolfeZoomsAndCountsAfterTheSearch) {
  Problem0 pr;
  LBFGS opt({pr.w, pr.v}, LBFGSOptions(10).set_max_iter(3).set_line_search_fn("strong_wolfe"));
  std::vector<int64_t> seen;
  const auto closure = [&] {
    const LBFGSState* st = opt.lbfgs_state();
    seen.push_back(st ? st->func_evals : -1);
    return pr.loss();
  };
  opt.step(closure);
  const LBFGSState* st = opt.lbfgs_state();
  ASSERT_EQ(pr.calls.size(), 3u);
  EXPECT_EQ(st->func_evals, 3);
  EXPECT_EQ(st->n_iter, 1);
  EXPECT_NEAR(st->t, 0.071299688340632966, 1e-13);
  expect_near_relative(pr.calls[1], {-0.58722741433021808, -0.84267912772585674, -2.3925233644859811,
                                     -0.31074766355140188, 0.38317757009345793}, 1e-13, "call 1 (rejected)");
  expect_near_relative(pr.calls[2], {0.30573022029439784, -0.69607414293674064, -0.51331401400731203,
                                     -0.070848597532848348, 1.5027065448467076}, 1e-12, "call 2 (chosen)");
  opt.step(closure);
  ASSERT_EQ(pr.calls.size(), 6u);
  EXPECT_EQ(st->func_evals, 6);
  EXPECT_EQ(st->n_iter, 2);
  EXPECT_NEAR(st->t, 1.7427116975575103, 1e-12);
  EXPECT_NEAR(st->H_diag, 0.077956385386347526, 1e-12);
  expect_near_relative(pr.calls[3], pr.calls[2], 0, "step 2 starts where step 1 moved");
  expect_near_relative(pr.calls[4], {-1.2932241001422482, -0.80853975158092339, -1.8051931802231178, 1.0297132490964693,
                                     -5.9184951297392869}, 1e-12, "call 4 (rejected)");
  expect_near_relative(pr.calls[5], {0.027078580485891564, -0.71567365611245493, -0.73845130748682486,
                                     0.1209476028677923, 0.20940504802326798}, 1e-11, "call 5 (chosen)");
  // The first call of a step sees the count so far (the state exists from the first step on, as LibTorch's probe
  // shows: 0 at the first call); the search's calls see it from before the search.
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 1, 3, 4, 4}));
}

// SEM-16.6 (`search_width.cc`, `search_tolerance.py`): on mean(w) with a backward gradient that is not its slope the
// bracketing phase ends at two equal losses 1e-8 apart in t. The C++ API still makes one zoom trial (7 calls; Python
// makes none: 6), and the search's bracket width is tested against 1e-9 whatever tolerance_change is.
TEST(LBFGS, Sem16_6_TheZoomTestsTheBracketAfterItsTrialAgainst1e9) {
  for (double tolerance_change : {1e-9, 0.0, 1.220703125e-4}) {
    std::vector<double> start(9, 0.0);
    start[7] = 8388608.0;
    Tensor w = make_param(start);
    std::vector<double> w0;
    LBFGS opt({w}, LBFGSOptions(1).set_max_eval(0).set_tolerance_change(tolerance_change).set_line_search_fn("strong_wolfe"));
    opt.step([&] {
      double sum = 0;
      for (int i = 0; i < 9; ++i) sum += w.at(i);
      set_grad(w, std::vector<double>(9, 0.04998779296875 / 9));
      w0.push_back(w.at(0));
      return Tensor::scalar(DType::Float64, sum / 9);
    });
    ASSERT_EQ(w0.size(), 7u) << "tolerance_change " << tolerance_change;
    EXPECT_EQ(w0[5], -0.0056103022406005848);
    EXPECT_EQ(w0[6], -0.0056103021967959972);  // the zoom's trial inside a bracket 5.6e-11 wide
    EXPECT_EQ(w.at(0), -0.0056103021850585938);  // the low end: the first of the equal losses
  }
}

// A short history and a learning rate (`closure_calls none 1 5 0.5 2 f64 3`): loss = sum(e^w) + 10 sum((v-1)^2) +
// sum(w^2); max_iter 5 so max_eval 6; history_size 2 drops the oldest pair.
TEST(LBFGS, Sem16_3_ShortHistoryMatchesLibTorch) {
  Tensor w = make_param({1.5, -0.5, 2.0}), v = make_param({0.25, 3.0});
  std::vector<std::vector<double>> calls;
  auto closure = [&] {
    calls.push_back({w.at(0), w.at(1), w.at(2), v.at(0), v.at(1)});
    double l = 0;
    std::vector<double> gw, gv;
    for (int i = 0; i < 3; ++i) {
      l += std::exp(w.at(i)) + w.at(i) * w.at(i);
      gw.push_back(std::exp(w.at(i)) + 2 * w.at(i));
    }
    for (int i = 0; i < 2; ++i) {
      l += 10 * (v.at(i) - 1) * (v.at(i) - 1);
      gv.push_back(20 * (v.at(i) - 1));
    }
    set_grad(w, gw);
    set_grad(v, gv);
    return Tensor::scalar(DType::Float64, l);
  };
  LBFGS opt({w, v}, LBFGSOptions(0.5).set_max_iter(5).set_history_size(2));
  for (int s = 0; s < 3; ++s) opt.step(closure);
  ASSERT_EQ(calls.size(), 15u);
  EXPECT_EQ(opt.lbfgs_state()->old_dirs.size(), 2u);
  EXPECT_NEAR(opt.lbfgs_state()->H_diag, 0.077577265872508142, 1e-10);
  expect_near_relative(calls[14], {-0.35269255271941347, -0.35054039356885763, -0.34850693253591158, 0.99968441063083857,
                                   1.000841571651097}, 1e-11, "call 14");
}

// SEM-16.1 / 16.3: max_eval defaults to max_iter * 5 / 4, so max_iter k calls the closure k times and moves k - 1
// times evaluated plus, when max_eval does not stop it first, once more; each move bumps the version once.
TEST(LBFGS, Sem16_3_CallsAndMovesPerMaxIter) {
  const int expected_versions[] = {1, 1, 2, 4};  // versions_and_groups.cc: 2 -> 3, 3, 4, 6
  for (int64_t max_iter = 1; max_iter <= 4; ++max_iter) {
    Tensor x = make_param({1.5, -0.5});
    LBFGS opt({x}, LBFGSOptions(1).set_max_iter(max_iter));
    int calls = 0;
    const int64_t v0 = x.version();
    opt.step([&] {
      ++calls;
      set_grad(x, {4 * std::pow(x.at(0), 3), 4 * std::pow(x.at(1), 3)});
      return Tensor::scalar(DType::Float64, std::pow(x.at(0), 4) + std::pow(x.at(1), 4));
    });
    EXPECT_EQ(calls, max_iter) << max_iter;
    EXPECT_EQ(x.version() - v0, expected_versions[max_iter - 1]) << max_iter;
  }
}

// SEM-16.3 in float32 (versions_and_groups.cc): t = min(1, 1 / sum|g|) lr, and 1.13 moves p + t d as one fused
// multiply-add with t rounded to float.
TEST(LBFGS, Sem16_4_Float32MoveIsFused) {
  Tensor z = make_param({3.0, 0.1, -7.0}, DType::Float32);
  LBFGS opt({z}, LBFGSOptions(0.3).set_max_iter(1));
  opt.step([&] {
    set_grad(z, {2 * z.at(0), 2 * z.at(1), 2 * z.at(2)});
    return Tensor::scalar(DType::Float32, static_cast<float>(z.at(0) * z.at(0) + z.at(1) * z.at(1) + z.at(2) * z.at(2)));
  });
  EXPECT_EQ(static_cast<float>(z.at(0)), 2.91089106f);
  EXPECT_EQ(static_cast<float>(z.at(1)), 0.0970297009f);
  EXPECT_EQ(static_cast<float>(z.at(2)), -6.79207945f);  // 2.6 rounds the product first: -6.79207897
}

// SEM-16.2/16.3 edges, as edges.cc observed them.
TEST(LBFGS, Sem16_3_AnOptimalPointCallsOnceAndDoesNotIterate) {
  Tensor x = make_param({0, 0});
  LBFGS opt({x});
  int calls = 0;
  opt.step([&] {
    ++calls;
    set_grad(x, {0, 0});
    return Tensor::scalar(DType::Float64, 0);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(opt.lbfgs_state()->func_evals, 1);
  EXPECT_EQ(opt.lbfgs_state()->n_iter, 0);
}

TEST(LBFGS, Sem16_2_AnUndefinedGradReadsAsZeros) {
  Tensor x = make_param({1.5, -0.5}), y = make_param({7});
  LBFGS opt({x, y}, LBFGSOptions(1).set_max_iter(3));
  int calls = 0;
  opt.step([&] {
    ++calls;
    set_grad(x, {2 * x.at(0), 2 * x.at(1)});
    return Tensor::scalar(DType::Float64, x.at(0) * x.at(0) + x.at(1) * x.at(1));
  });
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(x.at(0), 0);  // the quadratic's minimum in one move
  EXPECT_EQ(y.at(0), 7);
  EXPECT_FALSE(y.grad().defined());
}

TEST(LBFGS, Sem16_3_MaxIterZeroCallsOnce) {
  Tensor x = make_param({1.5, -0.5});
  LBFGS opt({x}, LBFGSOptions(1).set_max_iter(0));
  EXPECT_EQ(*opt.group_options(0).max_eval, 0);
  int calls = 0;
  opt.step([&] {
    ++calls;
    set_grad(x, {3, -1});
    return Tensor::scalar(DType::Float64, 1);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(x.at(0), 1.5);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return std::string(error_kind_name(e.kind)) + ": " + e.what();
  }
  return "";
}

TEST(LBFGS, Sem16_1_ErrorsOfConstructionAndStep) {
  Tensor w = make_param({1.5, -0.5}), u = make_param({2});
  EXPECT_EQ(error_of([&] { LBFGS({ParamGroup({w}), ParamGroup({u})}); }),
            "other: LBFGS doesn't support per-parameter options (parameter groups)");
  EXPECT_EQ(error_of([&] { LBFGS opt({w}); opt.step(); }), "other: LBFGS requires a closure function");
  EXPECT_EQ(error_of([&] { LBFGS opt({w}); opt.step(LBFGS::Closure()); }), "other: LBFGS requires a closure function");
  EXPECT_EQ(error_of([&] { LBFGS opt({w}, LBFGSOptions(-1)); }), "");  // nothing validated
  auto closure = [&] {
    set_grad(w, {1, 1});
    return Tensor::scalar(DType::Float64, 1);
  };
  // An unknown line search fails inside the first iteration, after the first closure call and the descent check
  // (edges.cc): not at all where the point is optimal or the direction is no descent.
  {
    int foo_calls = 0;
    LBFGS opt({w}, LBFGSOptions(1).set_line_search_fn("foo"));
    EXPECT_EQ(error_of([&] { opt.step([&] { ++foo_calls; return closure(); }); }), "other: only 'strong_wolfe' is supported");
    EXPECT_EQ(foo_calls, 1);
    EXPECT_EQ(opt.lbfgs_state()->n_iter, 1);
    EXPECT_EQ(opt.lbfgs_state()->func_evals, 1);
  }
  for (const std::vector<double>& g : {std::vector<double>{0, 0}, std::vector<double>{1e-5, 0}}) {
    Tensor x = make_param({1.5, -0.5});
    LBFGS opt({x}, LBFGSOptions(1).set_line_search_fn("foo"));
    EXPECT_EQ(error_of([&] {
                opt.step([&] {
                  set_grad(x, g);
                  return Tensor::scalar(DType::Float64, 1);
                });
              }),
              "")
        << g[0];
  }
  int calls = 0;
  EXPECT_NE(error_of([&] {
              LBFGS opt({w});
              opt.add_param_group(ParamGroup({u}));
              opt.step([&] { ++calls; return closure(); });
            }).find("other: param_groups_.size() == 1"),
            std::string::npos);
  EXPECT_EQ(calls, 0);  // before the closure
  EXPECT_EQ(error_of([&] {
              LBFGS opt({w});
              opt.step([&] {
                set_grad(w, {1, 1});
                return Tensor::from_values(DType::Float64, {2}, {1, 2});
              });
            }),
            "other: a Tensor with 2 elements cannot be converted to Scalar");
}

// A NaN gradient is never small (edges.cc): the step moves into NaN instead of stopping as at an optimum.
TEST(LBFGS, Sem16_3_ANanGradientIsNotSmall) {
  const double nan = std::nan("");
  for (const std::vector<double>& g : {std::vector<double>{nan, nan}, std::vector<double>{nan, 1e-9}}) {
    Tensor x = make_param({1.5, -0.5});
    LBFGS opt({x}, LBFGSOptions(1).set_max_iter(3));
    int calls = 0;
    opt.step([&] {
      ++calls;
      set_grad(x, g);
      return Tensor::scalar(DType::Float64, 1);
    });
    EXPECT_EQ(calls, 2) << g[1];  // then |loss - prev_loss| = 0 stops it
    EXPECT_EQ(opt.lbfgs_state()->n_iter, 1);
    EXPECT_TRUE(std::isnan(x.at(0)));
  }
}

// SEM-16.1: a negative history_size fails at the first use of the history (the second iteration); 0 crashes
// LibTorch 1.13, and impl fails there instead. The defaults' max_eval is fixed by the constructor too.
TEST(LBFGS, Sem16_1_HistorySizeBelowOneAndTheDefaultsMaxEval) {
  for (int64_t h : {int64_t{-1}, int64_t{0}}) {
    Tensor x = make_param({1.5, -0.5});
    LBFGS opt({x}, LBFGSOptions(1).set_max_iter(4).set_history_size(h));
    int calls = 0;
    const std::string e = error_of([&] {
      opt.step([&] {
        ++calls;
        set_grad(x, {4 * std::pow(x.at(0), 3), 4 * std::pow(x.at(1), 3)});
        return Tensor::scalar(DType::Float64, std::pow(x.at(0), 4) + std::pow(x.at(1), 4));
      });
    });
    EXPECT_EQ(calls, 2) << h;
    EXPECT_EQ(e.rfind("other: ", 0), 0u) << h << ": " << e;
  }
  Tensor x = make_param({1.5, -0.5});
  LBFGS opt({x}, LBFGSOptions(1).set_max_iter(8));
  EXPECT_EQ(static_cast<const LBFGSOptions&>(opt.defaults()).max_eval, std::optional<int64_t>(10));
  EXPECT_EQ(opt.group_options(0).max_eval, std::optional<int64_t>(10));
}

}  // namespace
}  // namespace lockstep::impl
