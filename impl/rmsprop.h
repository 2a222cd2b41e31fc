// impl/rmsprop.h: RMSprop with weight decay, momentum and the centered variant (SEMANTICS §14).
//
// Example:
//   RMSprop rms({w}, RMSpropOptions(0.01).set_momentum(0.9).set_centered(true));
//   rms.step();                                        // SEM-14.3
//   const RMSpropParamState* s = rms.state_of(w);      // null until w's first step with a defined grad
//   s->step; s->square_avg; s->momentum_buffer; s->grad_avg   (the last two only when created so)
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "impl/optimizer.h"

namespace lockstep::impl {

// SEM-14.1.
struct RMSpropOptions : OptionsBase {
  explicit RMSpropOptions(double lr = 1e-2) : lr(lr) {}

  double lr;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
  bool maximize = false;  // SEM-20.1: the step reads -grad

  RMSpropOptions& set_lr(double v) { lr = v; return *this; }
  RMSpropOptions& set_alpha(double v) { alpha = v; return *this; }
  RMSpropOptions& set_eps(double v) { eps = v; return *this; }
  RMSpropOptions& set_weight_decay(double v) { weight_decay = v; return *this; }
  RMSpropOptions& set_momentum(double v) { momentum = v; return *this; }
  RMSpropOptions& set_centered(bool v) { centered = v; return *this; }
  RMSpropOptions& set_maximize(bool v) { maximize = v; return *this; }

  std::unique_ptr<OptionsBase> clone() const override { return std::make_unique<RMSpropOptions>(*this); }
};

// SEM-14.2: created at the parameter's first step with a defined grad, from the group's options then.
struct RMSpropParamState : ParamState {
  int64_t step = 0;
  Tensor square_avg;       // zeros like the parameter
  Tensor momentum_buffer;  // zeros, only when momentum > 0 at creation
  Tensor grad_avg;         // zeros, only when centered at creation

  std::unique_ptr<ParamState> clone() const override {
    auto c = std::make_unique<RMSpropParamState>();
    c->step = step;
    c->square_avg = copy_of(square_avg);
    c->momentum_buffer = copy_of(momentum_buffer);
    c->grad_avg = copy_of(grad_avg);
    return c;
  }
};

class RMSprop : public Optimizer {
 public:
  // Both validate `defaults` only (SEM-14.1): throws Error(invalid_option) or Error(non_leaf_parameter).
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults = RMSpropOptions());
  RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& defaults = RMSpropOptions());

  using Optimizer::step;  // step(closure), SEM-17.1
  void step() override;

  RMSpropOptions& group_options(size_t i);
  const RMSpropOptions& group_options(size_t i) const;

  RMSpropParamState* state_of(const Tensor& param);
  const RMSpropParamState* state_of(const Tensor& param) const;
};

}  // namespace lockstep::impl
