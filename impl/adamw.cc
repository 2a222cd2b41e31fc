#include "impl/adamw.h"

namespace lockstep::impl {

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& defaults)
    : AdamW(single_group(std::move(params)), defaults) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {
  // SEM-6.1 (same checks as Adam); black-box, the groups' leaf checks come first.
  adam_detail::validate_adam_family(adam_detail::step_options(defaults, adam_detail::WeightDecayForm::Decoupled));
}

void AdamW::step() {
  for (size_t gi = 0; gi < param_groups().size(); ++gi) {
    const AdamWOptions& o = group_options(gi);
    for (Tensor& p : param_groups()[gi].params) {
      const Tensor grad = gradient_for_step(p.grad(), o.maximize);
      if (!grad.defined()) continue;  // SEM-4.3: skipped, no decay, step count unchanged
      AdamParamState* state = state_of(p);
      if (!state) state = static_cast<AdamParamState*>(&set_state(p, adam_detail::fresh_state(p, o.amsgrad)));
      state->step += 1;
      // SEM-6.4: p = p * (1 - lr * weight_decay) first, then Adam's box without the L2 term (one pass).
      adam_detail::adam_update(p, grad, *state, adam_detail::step_options(o, adam_detail::WeightDecayForm::Decoupled));
    }
  }
}

AdamWOptions& AdamW::group_options(size_t i) { return static_cast<AdamWOptions&>(*param_groups().at(i).options); }
const AdamWOptions& AdamW::group_options(size_t i) const {
  return static_cast<const AdamWOptions&>(*param_groups().at(i).options);
}
const AdamWOptions& AdamW::adamw_defaults() const { return static_cast<const AdamWOptions&>(defaults()); }

AdamParamState* AdamW::state_of(const Tensor& param) { return static_cast<AdamParamState*>(find_state(param)); }
const AdamParamState* AdamW::state_of(const Tensor& param) const {
  return static_cast<const AdamParamState*>(find_state(param));
}

}  // namespace lockstep::impl
