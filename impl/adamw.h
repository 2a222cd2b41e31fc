// impl/adamw.h: AdamW, Adam with decoupled weight decay (SEMANTICS §6.4).
//
// Same options as Adam except weight_decay defaults to 1e-2; same state (AdamParamState). The decay
// p = p * (1 - lr * weight_decay) is applied first, before the state is touched, and no L2 term is added
// to the grad.
//
// Example:
//   AdamW adamw({w}, AdamWOptions(1e-3).set_weight_decay(0.1));
//   adamw.step();
//   adamw.state_of(w)->step;   // 1
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "impl/adam.h"
#include "impl/optimizer.h"

namespace lockstep::impl {

struct AdamWOptions : OptionsBase {
  explicit AdamWOptions(double lr = 1e-3) : lr(lr) {}

  double lr;
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool maximize = false;  // SEM-20.1: the step reads -grad

  AdamWOptions& set_lr(double v) { lr = v; return *this; }
  AdamWOptions& set_betas(std::pair<double, double> v) { betas = v; return *this; }
  AdamWOptions& set_eps(double v) { eps = v; return *this; }
  AdamWOptions& set_weight_decay(double v) { weight_decay = v; return *this; }
  AdamWOptions& set_amsgrad(bool v) { amsgrad = v; return *this; }
  AdamWOptions& set_maximize(bool v) { maximize = v; return *this; }

  std::unique_ptr<OptionsBase> clone() const override { return std::make_unique<AdamWOptions>(*this); }
};

class AdamW : public Optimizer {
 public:
  // Both validate `defaults` only (SEM-6.1): throws Error(invalid_option) or Error(non_leaf_parameter).
  AdamW(std::vector<Tensor> params, const AdamWOptions& defaults = AdamWOptions());
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults = AdamWOptions());

  using Optimizer::step;  // step(closure), SEM-17.1
  void step() override;

  AdamWOptions& group_options(size_t i);
  const AdamWOptions& group_options(size_t i) const;
  const AdamWOptions& adamw_defaults() const;

  AdamParamState* state_of(const Tensor& param);
  const AdamParamState* state_of(const Tensor& param) const;
};

}  // namespace lockstep::impl
