#include "impl/adagrad.h"

#include <cmath>
#include <cstdint>
#include <vector>

// Rounding: every line below is one LibTorch tensor op and rounds once to T, fused where the same ops round
// fused in Adam (adam.cc: `add(other, alpha)` and `addcmul` are one fma; `addcdiv` divides, then adds).
// The decayed learning rate is computed in double. The library is otherwise built with -ffp-contract=off.

namespace lockstep::impl {
namespace {

// SEM-15.1, in LibTorch's order (black-box: with every option bad it names the learning rate); NaN too.
void validate_adagrad_defaults(const AdagradOptions& o) {
  const ErrorKind kind = ErrorKind::InvalidOption;
  if (!(o.lr >= 0)) throw Error(kind, "Invalid learning rate: " + format_option_value(o.lr));
  if (!(o.lr_decay >= 0)) throw Error(kind, "Invalid lr_decay value: " + format_option_value(o.lr_decay));
  if (!(o.weight_decay >= 0)) throw Error(kind, "Invalid weight_decay value: " + format_option_value(o.weight_decay));
  if (!(o.initial_accumulator_value >= 0))
    throw Error(kind, "Invalid initial_accumulator_value value: " + format_option_value(o.initial_accumulator_value));
  if (!(o.eps >= 0)) throw Error(kind, "Invalid epsilon value: " + format_option_value(o.eps));
}

}  // namespace

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& defaults)
    : Adagrad(single_group(std::move(params)), defaults) {}

Adagrad::Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {
  validate_adagrad_defaults(defaults);  // black-box: after the groups' leaf checks
  // SEM-15.2: every parameter gets its state now, its sum full of the defaults' initial_accumulator_value.
  for (const ParamGroup& group : param_groups())
    for (const Tensor& p : group.params) {
      if (find_state(p)) continue;  // listed twice: one state
      auto fresh = std::make_unique<AdagradParamState>();
      fresh->sum = Tensor::from_values(p.dtype(), p.shape(),
                                       std::vector<double>(static_cast<size_t>(p.numel()), defaults.initial_accumulator_value));
      set_state(p, std::move(fresh));
    }
}

void Adagrad::step() {
  for (size_t gi = 0; gi < param_groups().size(); ++gi) {
    const AdagradOptions& o = group_options(gi);
    for (Tensor& p : param_groups()[gi].params) {
      const Tensor grad = gradient_for_step(p.grad(), o.maximize);
      if (!grad.defined()) continue;  // SEM-4.3: skipped, step count unchanged
      if (grad.dtype() != p.dtype() || grad.numel() != p.numel())
        throw Error(ErrorKind::Other, "grad does not match its parameter (dtype or shape)");
      AdagradParamState* state = state_of(p);
      if (!state) {  // added after construction (SEM-15.2): the failed lookup leaves an empty entry behind
        set_empty_state(p);
        throw Error(ErrorKind::Other, "state found NULL for the Tensor (added after construction, SEM-15.2)");
      }
      state->step += 1;
      const double clr = o.lr / (1 + static_cast<double>(state->step - 1) * o.lr_decay);  // in double
      dispatch_dtype(p.dtype(), [&](auto zero) {
        using T = decltype(zero);
        T* param = p.data<T>();
        const T* g_in = grad.data<T>();
        T* sum = state->sum.data<T>();
        const T weight_decay = static_cast<T>(o.weight_decay), eps = static_cast<T>(o.eps);
        const T neg_clr = static_cast<T>(-clr);
        const bool l2 = o.weight_decay != 0;
        for (int64_t i = 0; i < p.numel(); ++i) {
          T g = g_in[i];                                   // g = p.grad
          if (l2) g = std::fma(weight_decay, param[i], g);  // g = g + weight_decay * p  (new)
          sum[i] = std::fma(g, g, sum[i]);                  // sum = sum + g g
          const T std_dev = std::sqrt(sum[i]) + eps;        // std = sqrt(sum) + eps
          param[i] = param[i] + (neg_clr * g) / std_dev;    // p = p - clr * g / std
        }
      });
      p.bump_version();  // an in-place change of p (SEM-2.5, versions)
    }
  }
}

AdagradOptions& Adagrad::group_options(size_t i) { return static_cast<AdagradOptions&>(*param_groups().at(i).options); }
const AdagradOptions& Adagrad::group_options(size_t i) const {
  return static_cast<const AdagradOptions&>(*param_groups().at(i).options);
}

AdagradParamState* Adagrad::state_of(const Tensor& param) { return static_cast<AdagradParamState*>(find_state(param)); }
const AdagradParamState* Adagrad::state_of(const Tensor& param) const {
  return static_cast<const AdagradParamState*>(find_state(param));
}

}  // namespace lockstep::impl
