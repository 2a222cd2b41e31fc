// impl/sgd.h: stochastic gradient descent with momentum, dampening, weight decay and Nesterov (SEMANTICS §5).
//
// Example:
//   SGD sgd({w, b}, SGDOptions(0.1).set_momentum(0.9).set_weight_decay(1e-4));
//   sgd.step();                                   // SEM-5.3
//   const SGDParamState* s = sgd.state_of(w);     // null until w's first step with a defined grad
//   s->momentum_buffer.data<float>()[0];
//   sgd.group_options(0).lr = 0.01;               // an lr schedule (SEM-5.4, SEM-7.5)
#pragma once

#include <memory>
#include <vector>

#include "impl/optimizer.h"

namespace lockstep::impl {

// SEM-5.1. lr has no default: it must be given.
struct SGDOptions : OptionsBase {
  explicit SGDOptions(double lr) : lr(lr) {}

  double lr;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;  // SEM-20.1: the step reads -grad

  SGDOptions& set_lr(double v) { lr = v; return *this; }
  SGDOptions& set_momentum(double v) { momentum = v; return *this; }
  SGDOptions& set_dampening(double v) { dampening = v; return *this; }
  SGDOptions& set_weight_decay(double v) { weight_decay = v; return *this; }
  SGDOptions& set_nesterov(bool v) { nesterov = v; return *this; }
  SGDOptions& set_maximize(bool v) { maximize = v; return *this; }

  std::unique_ptr<OptionsBase> clone() const override { return std::make_unique<SGDOptions>(*this); }
};

// SEM-5.3: exists only when momentum != 0, from the parameter's first step with a defined grad.
struct SGDParamState : ParamState {
  Tensor momentum_buffer;  // same dtype and shape as the parameter

  std::unique_ptr<ParamState> clone() const override {
    auto c = std::make_unique<SGDParamState>();
    c->momentum_buffer = copy_of(momentum_buffer);
    return c;
  }
};

class SGD : public Optimizer {
 public:
  // Both validate `defaults` only (SEM-5.2): throws Error(invalid_option) or Error(non_leaf_parameter).
  SGD(std::vector<Tensor> params, const SGDOptions& defaults);
  SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults);

  using Optimizer::step;  // step(closure), SEM-17.1
  void step() override;

  // Group i's options (i < param_groups().size()); readable and writable between steps (SEM-7.5).
  SGDOptions& group_options(size_t i);
  const SGDOptions& group_options(size_t i) const;
  const SGDOptions& sgd_defaults() const;

  // The state of `param`, null when it has none. The non-const form allows overwriting the buffer's numbers
  // in place (lockstep re-synchronisation).
  SGDParamState* state_of(const Tensor& param);
  const SGDParamState* state_of(const Tensor& param) const;
};

}  // namespace lockstep::impl
