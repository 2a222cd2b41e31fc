#include "impl/sgd.h"

#include <cmath>
#include <cstdint>

#include "impl/kernel_clones.h"

namespace lockstep::impl {
namespace {

// SEM-5.2, in this order (black-box: with several bad options LibTorch names the first of these). NaN is
// rejected (black-box: "Invalid learning rate: nan"), hence the negated comparisons.
void validate_sgd_defaults(const SGDOptions& o) {
  const ErrorKind kind = ErrorKind::InvalidOption;
  if (!(o.lr >= 0)) throw Error(kind, "Invalid learning rate: " + format_option_value(o.lr));
  if (!(o.momentum >= 0)) throw Error(kind, "Invalid momentum value: " + format_option_value(o.momentum));
  if (!(o.weight_decay >= 0)) throw Error(kind, "Invalid weight_decay value: " + format_option_value(o.weight_decay));
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
    throw Error(kind, "Nesterov momentum requires a momentum and zero dampening");
}

// One pass over the elements of one parameter: the box of SEM-5.3 line by line. Each line rounds once, as
// LibTorch's tensor op for it does: its four lines are `add(other, alpha)` ops, which LibTorch computes
// fused, so each is one std::fma (black-box measurement: 2 x 4099 random elements per line and dtype, a
// third of them cancelling, through the oracle engine: the fused form matched 100 % on every line in
// float32 and float64, the separately rounded form 64-80 %). The library is otherwise built with
// -ffp-contract=off. The options are template arguments so that the loop has no branch and vectorises.
template <class T, bool kWeightDecay, bool kMomentum, bool kFirstStep, bool kNesterov>
LOCKSTEP_FMA_KERNEL void sgd_pass(T* __restrict p, const T* __restrict grad, T* __restrict buf, int64_t n,
                                  T weight_decay, T momentum, T one_minus_dampening, T neg_lr) {
  for (int64_t i = 0; i < n; ++i) {
    T d = grad[i];                                    // d = p.grad
    if (kWeightDecay) {
      d = std::fma(weight_decay, p[i], d);            // d = d + weight_decay * p   (new tensor; fused)
    }
    if (kMomentum) {
      T b;
      if (kFirstStep) {
        b = d;                                        // buf = copy of d            (no dampening)
      } else {
        T kept = buf[i] * momentum;                   // buf = buf * momentum
        b = std::fma(one_minus_dampening, d, kept);   //       + (1 - dampening) * d   (fused)
      }
      buf[i] = b;
      if (kNesterov) {
        d = std::fma(momentum, b, d);                 // d = d + momentum * buf     (fused)
      } else {
        d = b;                                        // d = buf
      }
    }
    p[i] = std::fma(neg_lr, d, p[i]);                 // p = p - lr * d             (fused)
  }
}

// Turns the four runtime booleans into template arguments.
template <class T>
void run_sgd_pass(bool weight_decay_on, bool momentum_on, bool first, bool nesterov, T* p, const T* grad,
                  T* buf, int64_t n, T wd, T mom, T omd, T neg_lr) {
#define LOCKSTEP_SGD_CASE(W, M, F, N)                                                       \
  if (weight_decay_on == W && momentum_on == M && first == F && nesterov == N)              \
    return sgd_pass<T, W, M, F, N>(p, grad, buf, n, wd, mom, omd, neg_lr);
  LOCKSTEP_SGD_CASE(false, false, false, false)
  LOCKSTEP_SGD_CASE(true, false, false, false)
  LOCKSTEP_SGD_CASE(false, true, false, false)
  LOCKSTEP_SGD_CASE(true, true, false, false)
  LOCKSTEP_SGD_CASE(false, true, true, false)
  LOCKSTEP_SGD_CASE(true, true, true, false)
  LOCKSTEP_SGD_CASE(false, true, false, true)
  LOCKSTEP_SGD_CASE(true, true, false, true)
  LOCKSTEP_SGD_CASE(false, true, true, true)
  LOCKSTEP_SGD_CASE(true, true, true, true)
#undef LOCKSTEP_SGD_CASE
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, const SGDOptions& defaults)
    : SGD(single_group(std::move(params)), defaults) {}

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {
  validate_sgd_defaults(defaults);  // black-box: after the groups' leaf checks
}

void SGD::step() {
  for (size_t gi = 0; gi < param_groups().size(); ++gi) {
    const SGDOptions& o = group_options(gi);
    const bool weight_decay_on = o.weight_decay != 0;
    const bool momentum_on = o.momentum != 0;
    const bool nesterov = momentum_on && o.nesterov;  // SEM-5.2: nesterov without momentum is ignored
    for (Tensor& p : param_groups()[gi].params) {
      Tensor grad = gradient_for_step(p.grad(), o.maximize);
      if (!grad.defined()) continue;  // SEM-4.3: skipped entirely
      if (grad.dtype() != p.dtype() || grad.numel() != p.numel())
        throw Error(ErrorKind::Other, "grad does not match its parameter (dtype or shape)");
      bool first = false;
      SGDParamState* state = nullptr;
      if (momentum_on) {
        state = state_of(p);
        if (!state) {  // SEM-5.3: created lazily at the first step with a defined grad
          auto fresh = std::make_unique<SGDParamState>();
          fresh->momentum_buffer = Tensor::zeros(p.dtype(), p.shape());
          state = static_cast<SGDParamState*>(&set_state(p, std::move(fresh)));
          first = true;
        }
      }
      dispatch_dtype(p.dtype(), [&](auto zero) {
        using T = decltype(zero);
        T* buf = state ? state->momentum_buffer.data<T>() : nullptr;
        run_sgd_pass<T>(weight_decay_on, momentum_on, first, nesterov, p.data<T>(), grad.data<T>(), buf,
                        p.numel(), static_cast<T>(o.weight_decay), static_cast<T>(o.momentum),
                        static_cast<T>(1 - o.dampening), static_cast<T>(-o.lr));
      });
    }
  }
}

SGDOptions& SGD::group_options(size_t i) { return static_cast<SGDOptions&>(*param_groups().at(i).options); }
const SGDOptions& SGD::group_options(size_t i) const {
  return static_cast<const SGDOptions&>(*param_groups().at(i).options);
}
const SGDOptions& SGD::sgd_defaults() const { return static_cast<const SGDOptions&>(defaults()); }

SGDParamState* SGD::state_of(const Tensor& param) { return static_cast<SGDParamState*>(find_state(param)); }
const SGDParamState* SGD::state_of(const Tensor& param) const {
  return static_cast<const SGDParamState*>(find_state(param));
}

}  // namespace lockstep::impl
