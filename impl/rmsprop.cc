#include "impl/rmsprop.h"

#include <cmath>
#include <cstdint>

// Rounding: every line below is one LibTorch tensor op and rounds once to T, fused where the same ops round
// fused in Adam (adam.cc: `add(other, alpha)` and `addcmul` are one fma; `addcdiv` divides, then adds).
// The library is otherwise built with -ffp-contract=off.

namespace lockstep::impl {
namespace {

// SEM-14.1, in LibTorch's order (black-box: with every option bad it names the learning rate). NaN is
// rejected; alpha above 1 is not.
void validate_rmsprop_defaults(const RMSpropOptions& o) {
  const ErrorKind kind = ErrorKind::InvalidOption;
  if (!(o.lr >= 0)) throw Error(kind, "Invalid learning rate: " + format_option_value(o.lr));
  if (!(o.eps >= 0)) throw Error(kind, "Invalid epsilon value: " + format_option_value(o.eps));
  if (!(o.momentum >= 0)) throw Error(kind, "Invalid momentum value: " + format_option_value(o.momentum));
  if (!(o.weight_decay >= 0)) throw Error(kind, "Invalid weight_decay value: " + format_option_value(o.weight_decay));
  if (!(o.alpha >= 0)) throw Error(kind, "Invalid alpha value: " + format_option_value(o.alpha));
}

// LibTorch's message for a state tensor the step needs and the state was created without (SEM-14.2).
[[noreturn]] void missing_state_tensor() {
  throw Error(ErrorKind::Other, "Expected a proper Tensor but got None (or an undefined Tensor in C++) for argument #0 'self'");
}

// SEM-14.3, the part every step does: g (with the L2 term) and square_avg. Returns g.
template <class T>
std::vector<T> square_avg_pass(const T* p, const T* grad, T* square_avg, int64_t n, T weight_decay, T alpha,
                               T one_minus_alpha, bool l2) {
  std::vector<T> g(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    T gi = grad[i];                                                    // g = p.grad
    if (l2) gi = std::fma(weight_decay, p[i], gi);                     // g = g + weight_decay * p  (new)
    g[i] = gi;
    square_avg[i] = std::fma(one_minus_alpha * gi, gi, square_avg[i] * alpha);  // sa = sa*alpha + (1-alpha) g g
  }
  return g;
}

}  // namespace

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults)
    : RMSprop(single_group(std::move(params)), defaults) {}

RMSprop::RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {
  validate_rmsprop_defaults(defaults);  // black-box: after the groups' leaf checks
}

void RMSprop::step() {
  for (size_t gi = 0; gi < param_groups().size(); ++gi) {
    const RMSpropOptions& o = group_options(gi);
    for (Tensor& p : param_groups()[gi].params) {
      const Tensor grad = gradient_for_step(p.grad(), o.maximize);
      if (!grad.defined()) continue;  // SEM-4.3: skipped, step count unchanged
      if (grad.dtype() != p.dtype() || grad.numel() != p.numel())
        throw Error(ErrorKind::Other, "grad does not match its parameter (dtype or shape)");
      RMSpropParamState* state = state_of(p);
      if (!state) {  // SEM-14.2: lazily, from the group's options at this step
        auto fresh = std::make_unique<RMSpropParamState>();
        fresh->square_avg = Tensor::zeros(p.dtype(), p.shape());
        if (o.momentum > 0) fresh->momentum_buffer = Tensor::zeros(p.dtype(), p.shape());
        if (o.centered) fresh->grad_avg = Tensor::zeros(p.dtype(), p.shape());
        state = static_cast<RMSpropParamState*>(&set_state(p, std::move(fresh)));
      }
      state->step += 1;
      dispatch_dtype(p.dtype(), [&](auto zero) {
        using T = decltype(zero);
        const int64_t n = p.numel();
        T* param = p.data<T>();
        const T alpha = static_cast<T>(o.alpha), one_minus_alpha = static_cast<T>(1 - o.alpha);
        const std::vector<T> g = square_avg_pass<T>(param, grad.data<T>(), state->square_avg.data<T>(), n,
                                                    static_cast<T>(o.weight_decay), alpha, one_minus_alpha,
                                                    o.weight_decay != 0);
        const T* sa = state->square_avg.data<T>();
        std::vector<T> avg(static_cast<size_t>(n));
        if (o.centered) {
          if (!state->grad_avg.defined()) missing_state_tensor();  // SEM-14.2: centered turned on later
          T* ga = state->grad_avg.data<T>();
          for (int64_t i = 0; i < n; ++i) {
            ga[i] = std::fma(one_minus_alpha, g[i], ga[i] * alpha);   // ga = ga*alpha + (1-alpha) g
            avg[i] = std::sqrt(std::fma(-ga[i], ga[i], sa[i]));       // avg = sqrt(sa - ga ga)
          }
        } else {
          for (int64_t i = 0; i < n; ++i) avg[i] = std::sqrt(sa[i]);   // avg = sqrt(sa)
        }
        const T eps = static_cast<T>(o.eps);
        for (int64_t i = 0; i < n; ++i) avg[i] = avg[i] + eps;         //       + eps
        if (o.momentum > 0) {
          if (!state->momentum_buffer.defined()) missing_state_tensor();  // SEM-14.2: momentum turned on later
          T* buf = state->momentum_buffer.data<T>();
          const T momentum = static_cast<T>(o.momentum), neg_lr = static_cast<T>(-o.lr);
          for (int64_t i = 0; i < n; ++i) {
            buf[i] = buf[i] * momentum + g[i] / avg[i];                // buf = buf*momentum + g / avg
            param[i] = std::fma(neg_lr, buf[i], param[i]);             // p = p - lr * buf
          }
        } else {
          const T neg_lr = static_cast<T>(-o.lr);
          for (int64_t i = 0; i < n; ++i) param[i] = param[i] + (neg_lr * g[i]) / avg[i];  // p = p - lr g / avg
        }
      });
      p.bump_version();  // an in-place change of p (SEM-2.5, versions)
    }
  }
}

RMSpropOptions& RMSprop::group_options(size_t i) { return static_cast<RMSpropOptions&>(*param_groups().at(i).options); }
const RMSpropOptions& RMSprop::group_options(size_t i) const {
  return static_cast<const RMSpropOptions&>(*param_groups().at(i).options);
}

RMSpropParamState* RMSprop::state_of(const Tensor& param) { return static_cast<RMSpropParamState*>(find_state(param)); }
const RMSpropParamState* RMSprop::state_of(const Tensor& param) const {
  return static_cast<const RMSpropParamState*>(find_state(param));
}

}  // namespace lockstep::impl
