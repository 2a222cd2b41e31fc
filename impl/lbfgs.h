// impl/lbfgs.h: L-BFGS (SEMANTICS §16), the one optimizer whose step calls a closure; without a line search (16.3)
// or with line_search_fn "strong_wolfe" (16.6).
//
// The closure re-evaluates the loss and its gradients (zero the grads, forward, backward) and returns the loss;
// the step calls it up to max_iter times and moves every parameter along the L-BFGS direction between calls.
//
// Example:
//   LBFGS lbfgs({w}, LBFGSOptions(1).set_max_iter(5).set_history_size(10));
//   Tensor first_loss = lbfgs.step([&] {
//     lbfgs.zero_grad();
//     Tensor loss = sum(mul(w, w));
//     backward(loss);
//     return loss;
//   });
//   lbfgs.lbfgs_state()->func_evals;   // closure calls over all steps (SEM-16.2)
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "impl/optimizer.h"

namespace lockstep::impl {

// SEM-16.1. Nothing is validated.
struct LBFGSOptions : OptionsBase {
  explicit LBFGSOptions(double lr = 1) : lr(lr) {}

  double lr;
  int64_t max_iter = 20;
  std::optional<int64_t> max_eval;  // unset: the constructor sets max_iter * 5 / 4
  double tolerance_grad = 1e-7;
  double tolerance_change = 1e-9;
  int64_t history_size = 100;
  std::optional<std::string> line_search_fn;  // unset or "strong_wolfe"

  LBFGSOptions& set_lr(double v) { lr = v; return *this; }
  LBFGSOptions& set_max_iter(int64_t v) { max_iter = v; return *this; }
  LBFGSOptions& set_max_eval(int64_t v) { max_eval = v; return *this; }
  LBFGSOptions& set_tolerance_grad(double v) { tolerance_grad = v; return *this; }
  LBFGSOptions& set_tolerance_change(double v) { tolerance_change = v; return *this; }
  LBFGSOptions& set_history_size(int64_t v) { history_size = v; return *this; }
  LBFGSOptions& set_line_search_fn(std::string v) { line_search_fn = std::move(v); return *this; }

  std::unique_ptr<OptionsBase> clone() const override { return std::make_unique<LBFGSOptions>(*this); }
};

// SEM-16.2: one state for the whole optimizer, kept under its first parameter. Vectors are flat over every
// parameter in order, their values those of the flat gradient's dtype (float32 only when every parameter is).
struct LBFGSState : ParamState {
  int64_t func_evals = 0;  // closure calls, every step together
  int64_t n_iter = 0;      // iterations, every step together
  double t = 0;            // the last step length
  double prev_loss = 0;
  std::vector<double> d;               // the last direction
  std::vector<double> prev_flat_grad;  // the flat gradient the last direction was computed from
  double H_diag = 1;
  std::deque<std::vector<double>> old_dirs, old_stps;  // y and s of the kept curvature pairs, oldest first
  std::deque<double> ro;                               // 1 / (y · s) of each
  // The history's capacity: history_size as it was at the history's first use (the second iteration). A history
  // that later holds more pairs (history_size changed since) fails the step (SEM-16.1).
  std::optional<int64_t> capacity;

  std::unique_ptr<ParamState> clone() const override { return std::make_unique<LBFGSState>(*this); }
};

class LBFGS : public Optimizer {
 public:
  // Throws Error(other) for more than one group (SEM-16.1), Error(non_leaf_parameter) as every optimizer.
  LBFGS(std::vector<Tensor> params, const LBFGSOptions& defaults = LBFGSOptions());
  LBFGS(std::vector<ParamGroup> groups, const LBFGSOptions& defaults = LBFGSOptions());

  // SEM-16.3, 16.6. Returns the closure's first loss. Throws Error(other) without a closure, with more than one
  // group (add_param_group), for a closure whose loss has more than one element, and for a line_search_fn other than
  // "strong_wolfe".
  Tensor step(const Closure& closure) override;
  void step() override;  // no closure: throws Error(other), as LibTorch's step(nullptr)

  LBFGSOptions& group_options(size_t i);
  const LBFGSOptions& group_options(size_t i) const;

  // Null before the first step.
  const LBFGSState* lbfgs_state() const;
};

}  // namespace lockstep::impl
