// impl/adagrad.h: Adagrad with learning-rate decay, weight decay and an initial accumulator (SEMANTICS §15).
//
// Example:
//   Adagrad ada({w}, AdagradOptions(0.1).set_lr_decay(0.01).set_initial_accumulator_value(0.1));
//   ada.state_of(w)->sum;        // exists from construction: full of the defaults' initial_accumulator_value
//   ada.step();                  // SEM-15.3
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "impl/optimizer.h"

namespace lockstep::impl {

// SEM-15.1.
struct AdagradOptions : OptionsBase {
  explicit AdagradOptions(double lr = 1e-2) : lr(lr) {}

  double lr;
  double lr_decay = 0;
  double weight_decay = 0;
  double initial_accumulator_value = 0;
  double eps = 1e-10;
  bool maximize = false;  // SEM-20.1: the step reads -grad

  AdagradOptions& set_lr(double v) { lr = v; return *this; }
  AdagradOptions& set_lr_decay(double v) { lr_decay = v; return *this; }
  AdagradOptions& set_weight_decay(double v) { weight_decay = v; return *this; }
  AdagradOptions& set_initial_accumulator_value(double v) { initial_accumulator_value = v; return *this; }
  AdagradOptions& set_eps(double v) { eps = v; return *this; }
  AdagradOptions& set_maximize(bool v) { maximize = v; return *this; }

  std::unique_ptr<OptionsBase> clone() const override { return std::make_unique<AdagradOptions>(*this); }
};

// SEM-15.2: created by the constructor for every parameter of its groups.
struct AdagradParamState : ParamState {
  int64_t step = 0;
  Tensor sum;  // full of the optimizer's defaults' initial_accumulator_value (not the group's)

  std::unique_ptr<ParamState> clone() const override {
    auto c = std::make_unique<AdagradParamState>();
    c->step = step;
    c->sum = copy_of(sum);
    return c;
  }
};

class Adagrad : public Optimizer {
 public:
  // Both validate `defaults` only (SEM-15.1): throws Error(invalid_option) or Error(non_leaf_parameter).
  Adagrad(std::vector<Tensor> params, const AdagradOptions& defaults = AdagradOptions());
  Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& defaults = AdagradOptions());

  // A parameter added by add_param_group has no state: its step fails (SEM-15.2), after the parameters
  // before it were updated.
  using Optimizer::step;  // step(closure), SEM-17.1
  void step() override;

  AdagradOptions& group_options(size_t i);
  const AdagradOptions& group_options(size_t i) const;

  AdagradParamState* state_of(const Tensor& param);
  const AdagradParamState* state_of(const Tensor& param) const;
};

}  // namespace lockstep::impl
