// Tests of maximize (SEMANTICS §20) on every optimizer that has it: the numbers PyTorch's Python API printed in the
// probe of SEM-20.1 (w = [1, 2], grad [2, 4] at every step, float64), and for each optimizer that a maximizing step
// is exactly the minimizing step on -grad while .grad keeps its values and its identity.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include "impl/adagrad.h"
#include "impl/adam.h"
#include "impl/adamw.h"
#include "impl/rmsprop.h"
#include "impl/sgd.h"
#include "impl/test_params.h"

namespace lockstep::impl {
namespace {

TEST(Maximize, Sem20_1_SgdMomentumMovesUpTheGradientAndKeepsANegatedBuffer) {
  Tensor w = make_param({1, 2});
  set_grad(w, {2, 4});
  const Tensor grad = w.grad();
  SGD sgd({w}, SGDOptions(0.1).set_momentum(0.9).set_maximize(true));
  sgd.step();
  EXPECT_EQ(w.to_values(), (std::vector<double>{1.2, 2.4}));
  EXPECT_EQ(sgd.state_of(w)->momentum_buffer.to_values(), (std::vector<double>{-2, -4}));
  EXPECT_TRUE(w.grad().is_same(grad));  // .grad keeps its identity ...
  EXPECT_EQ(w.grad().to_values(), (std::vector<double>{2, 4}));  // ... and its values
  sgd.step();
  EXPECT_EQ(sgd.state_of(w)->momentum_buffer.to_values(), (std::vector<double>{-3.8, -7.6}));
}

TEST(Maximize, Sem20_1_TheGradientIsNegatedBeforeWeightDecay) {
  Tensor w = make_param({1, 2});
  set_grad(w, {2, 4});
  SGD sgd({w}, SGDOptions(0.1).set_weight_decay(0.5).set_maximize(true));
  sgd.step();  // d = -g + 0.5 w = [-1.5, -3]
  EXPECT_EQ(w.to_values(), (std::vector<double>{1.15, 2.3}));

  Tensor a = make_param({1, 2});
  set_grad(a, {2, 4});
  Adam adam({a}, AdamOptions(0.1).set_weight_decay(0.5).set_maximize(true));
  adam.step();  // exp_avg = 0.1 (-g + 0.5 w)
  const std::vector<double> m = adam.state_of(a)->exp_avg.to_values();
  EXPECT_DOUBLE_EQ(m[0], -0.15);
  EXPECT_DOUBLE_EQ(m[1], -0.3);
}

TEST(Maximize, Sem20_1_AdamsFirstMomentIsNegatedAndItsSecondIsNot) {
  Tensor w = make_param({1, 2});
  set_grad(w, {2, 4});
  Adam adam({w}, AdamOptions(0.1).set_maximize(true));
  adam.step();
  const AdamParamState* s = adam.state_of(w);
  EXPECT_DOUBLE_EQ(s->exp_avg.at(0), -0.2);
  EXPECT_DOUBLE_EQ(s->exp_avg.at(1), -0.4);
  EXPECT_NEAR(s->exp_avg_sq.at(0), 0.004, 1e-15);
  EXPECT_NEAR(s->exp_avg_sq.at(1), 0.016, 1e-15);
  EXPECT_GT(w.at(0), 1);
}

// Each optimizer, maximizing on g, lands bit for bit where minimizing on -g does, in its state too.
struct Case {
  const char* name;
  std::function<std::unique_ptr<Optimizer>(Tensor&, bool)> make;
};

TEST(Maximize, Sem20_1_MaximizingIsMinimizingTheNegatedGradientOnEveryOptimizer) {
  const std::vector<Case> cases = {
      {"sgd", [](Tensor& p, bool m) {
         return std::make_unique<SGD>(std::vector<Tensor>{p},
                                      SGDOptions(0.1).set_momentum(0.9).set_nesterov(true).set_weight_decay(0.01).set_maximize(m));
       }},
      {"adam", [](Tensor& p, bool m) {
         return std::make_unique<Adam>(std::vector<Tensor>{p}, AdamOptions(0.1).set_amsgrad(true).set_weight_decay(0.1).set_maximize(m));
       }},
      {"adamw", [](Tensor& p, bool m) {
         return std::make_unique<AdamW>(std::vector<Tensor>{p}, AdamWOptions(0.1).set_maximize(m));
       }},
      {"rmsprop", [](Tensor& p, bool m) {
         return std::make_unique<RMSprop>(std::vector<Tensor>{p},
                                          RMSpropOptions(0.01).set_momentum(0.5).set_centered(true).set_maximize(m));
       }},
      {"adagrad", [](Tensor& p, bool m) {
         return std::make_unique<Adagrad>(std::vector<Tensor>{p}, AdagradOptions(0.1).set_lr_decay(0.01).set_maximize(m));
       }},
  };
  for (const Case& c : cases) {
    Tensor up = make_param({0.5, -1.25, 3}, DType::Float32), down = make_param({0.5, -1.25, 3}, DType::Float32);
    std::unique_ptr<Optimizer> maximizing = c.make(up, true), minimizing = c.make(down, false);
    const std::vector<std::vector<double>> grads = {{0.25, -2, 1e-3}, {1, 0.5, -3}, {-0.75, 0, 2}};
    for (const std::vector<double>& g : grads) {
      set_grad(up, g);
      const std::vector<double> grad_before = up.grad().to_values();  // g in float32
      std::vector<double> negated;
      for (double x : g) negated.push_back(-x);
      set_grad(down, negated);
      maximizing->step();
      minimizing->step();
      EXPECT_EQ(up.to_values(), down.to_values()) << c.name;
      EXPECT_EQ(up.grad().to_values(), grad_before) << c.name << ": .grad keeps its values";
    }
  }
}

}  // namespace
}  // namespace lockstep::impl
