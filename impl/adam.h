// impl/adam.h: Adam with L2 weight decay and AMSGrad (SEMANTICS §6.1-6.3).
//
// Example:
//   Adam adam({w}, AdamOptions(1e-3).set_betas({0.9, 0.99}).set_amsgrad(true));
//   adam.step();                                    // SEM-6.3
//   const AdamParamState* s = adam.state_of(w);     // null until w's first step with a defined grad
//   s->step; s->exp_avg; s->exp_avg_sq; s->max_exp_avg_sq (defined only with amsgrad)
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "impl/optimizer.h"

namespace lockstep::impl {

// SEM-6.1.
struct AdamOptions : OptionsBase {
  explicit AdamOptions(double lr = 1e-3) : lr(lr) {}

  double lr;
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;  // SEM-20.1: the step reads -grad

  AdamOptions& set_lr(double v) { lr = v; return *this; }
  AdamOptions& set_betas(std::pair<double, double> v) { betas = v; return *this; }
  AdamOptions& set_eps(double v) { eps = v; return *this; }
  AdamOptions& set_weight_decay(double v) { weight_decay = v; return *this; }
  AdamOptions& set_amsgrad(bool v) { amsgrad = v; return *this; }
  AdamOptions& set_maximize(bool v) { maximize = v; return *this; }

  std::unique_ptr<OptionsBase> clone() const override { return std::make_unique<AdamOptions>(*this); }
};

// SEM-6.2: the state of Adam and AdamW alike.
struct AdamParamState : ParamState {
  int64_t step = 0;
  Tensor exp_avg;         // zeros like the parameter at creation
  Tensor exp_avg_sq;      // zeros like the parameter at creation
  Tensor max_exp_avg_sq;  // defined only when the group had amsgrad at the state's creation; a group that
                          // turns amsgrad on later fails at step() like LibTorch 1.13 (see adam.cc)

  std::unique_ptr<ParamState> clone() const override {
    auto c = std::make_unique<AdamParamState>();
    c->step = step;
    c->exp_avg = copy_of(exp_avg);
    c->exp_avg_sq = copy_of(exp_avg_sq);
    c->max_exp_avg_sq = copy_of(max_exp_avg_sq);
    return c;
  }
};

class Adam : public Optimizer {
 public:
  // Both validate `defaults` only (SEM-6.1): throws Error(invalid_option) or Error(non_leaf_parameter).
  Adam(std::vector<Tensor> params, const AdamOptions& defaults = AdamOptions());
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults = AdamOptions());

  using Optimizer::step;  // step(closure), SEM-17.1
  void step() override;

  AdamOptions& group_options(size_t i);
  const AdamOptions& group_options(size_t i) const;
  const AdamOptions& adam_defaults() const;

  AdamParamState* state_of(const Tensor& param);
  const AdamParamState* state_of(const Tensor& param) const;
};

namespace adam_detail {
// Where a step of the Adam family puts the weight decay: Adam adds weight_decay * p to the grad (SEM-6.3), AdamW
// scales p by 1 - lr * weight_decay first (SEM-6.4).
enum class WeightDecayForm { L2, Decoupled };

// One group's options as a step of the Adam family reads them.
struct AdamStepOptions {
  double lr = 1e-3;
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  WeightDecayForm weight_decay_form = WeightDecayForm::L2;
  bool amsgrad = false;
};
// AdamOptions or AdamWOptions (the same fields) as step options.
template <class Options>
AdamStepOptions step_options(const Options& o, WeightDecayForm form) {
  return {o.lr, o.betas, o.eps, o.weight_decay, form, o.amsgrad};
}

// The option checks Adam and AdamW share (SEM-6.1); throws Error(ErrorKind::InvalidOption).
void validate_adam_family(const AdamStepOptions& o);

// One Adam/AdamW update of one parameter, one pass over its elements (SEM-6.3, SEM-6.4). `state.step` must
// already be incremented.
void adam_update(Tensor& param, const Tensor& grad, AdamParamState& state, const AdamStepOptions& o);

// The state of a parameter at its first step: step 0, zeros (and max_exp_avg_sq when amsgrad).
std::unique_ptr<AdamParamState> fresh_state(const Tensor& param, bool amsgrad);
}  // namespace adam_detail

}  // namespace lockstep::impl
