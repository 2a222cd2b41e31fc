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

  AdamOptions& set_lr(double v) { lr = v; return *this; }
  AdamOptions& set_betas(std::pair<double, double> v) { betas = v; return *this; }
  AdamOptions& set_eps(double v) { eps = v; return *this; }
  AdamOptions& set_weight_decay(double v) { weight_decay = v; return *this; }
  AdamOptions& set_amsgrad(bool v) { amsgrad = v; return *this; }

  std::unique_ptr<OptionsBase> clone() const override { return std::make_unique<AdamOptions>(*this); }
};

// SEM-6.2: the state of Adam and AdamW alike.
struct AdamParamState : ParamState {
  int64_t step = 0;
  Tensor exp_avg;         // zeros like the parameter at creation
  Tensor exp_avg_sq;      // zeros like the parameter at creation
  Tensor max_exp_avg_sq;  // defined only when the group had amsgrad at the state's creation; a group that
                          // turns amsgrad on later fails at step() like LibTorch 1.13 (see adam.cc)
};

class Adam : public Optimizer {
 public:
  // Both validate `defaults` only (SEM-6.1): throws Error(invalid_option) or Error(non_leaf_parameter).
  Adam(std::vector<Tensor> params, const AdamOptions& defaults = AdamOptions());
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults = AdamOptions());

  void step() override;

  AdamOptions& group_options(size_t i);
  const AdamOptions& group_options(size_t i) const;
  const AdamOptions& adam_defaults() const;

  AdamParamState* state_of(const Tensor& param);
  const AdamParamState* state_of(const Tensor& param) const;
};

namespace adam_detail {
// The option checks Adam and AdamW share (SEM-6.1); throws Error(invalid_option).
void validate_adam_family(double lr, double eps, std::pair<double, double> betas, double weight_decay);

// One Adam/AdamW update of one parameter, one pass over its elements (SEM-6.3, SEM-6.4). `l2_weight_decay`
// is added to the grad (Adam), `decoupled_weight_decay` scales p first (AdamW); at most one is non-zero.
// `state.step` must already be incremented.
void adam_update(Tensor& param, const Tensor& grad, AdamParamState& state, double lr,
                 std::pair<double, double> betas, double eps, double l2_weight_decay,
                 double decoupled_weight_decay, bool amsgrad);

// The state of a parameter at its first step: step 0, zeros (and max_exp_avg_sq when amsgrad).
std::unique_ptr<AdamParamState> fresh_state(const Tensor& param, bool amsgrad);
}  // namespace adam_detail

}  // namespace lockstep::impl
