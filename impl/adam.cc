#include "impl/adam.h"

#include <cmath>
#include <cstdint>

// Speed (the loop is compute-bound on its square root and two divisions):
//  - it vectorises only when compiled with -fno-math-errno (a std::sqrt that may set errno keeps GCC from
//    vectorising, and GCC 12 ignores a per-function no-math-errno); the step never reads errno and the
//    square root is the same correctly rounded IEEE operation either way. impl/CMakeLists.txt should give
//    lockstep_impl -fno-math-errno;
//  - on x86-64 with GCC the loop is also compiled for AVX2 (target_clones, chosen at load time): 8 lanes
//    instead of 4. Every operation is still one IEEE operation rounded to T (no FMA: AVX2 does not imply
//    it, and the library is built with -ffp-contract=off), so both builds give bit-identical results.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define LOCKSTEP_ADAM_KERNEL __attribute__((target_clones("avx2", "default")))
#else
#define LOCKSTEP_ADAM_KERNEL
#endif

namespace lockstep::impl {
namespace adam_detail {
namespace {

// Each line is one tensor op of the box of SEM-6.3/6.4 and so one rounding to T (the library is built with
// -ffp-contract=off). The options are template arguments so that the loop has no branch and vectorises.
template <class T, bool kL2, bool kDecoupled, bool kAmsgrad>
LOCKSTEP_ADAM_KERNEL void adam_pass(T* __restrict p, const T* __restrict grad, T* __restrict exp_avg, T* __restrict exp_avg_sq,
               T* __restrict max_exp_avg_sq, int64_t n, T l2_weight_decay, T decay_factor, T beta1,
               T one_minus_beta1, T beta2, T one_minus_beta2, T sqrt_bc2, T eps, T step_size) {
  for (int64_t i = 0; i < n; ++i) {
    T param = p[i];
    if (kDecoupled) param = param * decay_factor;   // AdamW: p = p * (1 - lr * weight_decay), first
    T g = grad[i];                                  // g = p.grad
    if (kL2) {
      T decay = l2_weight_decay * param;            // Adam: g = g + weight_decay * p   (new tensor)
      g = g + decay;
    }
    T m_kept = exp_avg[i] * beta1;                  // exp_avg = exp_avg * beta1
    T m_added = one_minus_beta1 * g;                //           + (1 - beta1) * g
    T m = m_kept + m_added;
    exp_avg[i] = m;
    T v_kept = exp_avg_sq[i] * beta2;               // exp_avg_sq = exp_avg_sq * beta2
    T v_scaled = one_minus_beta2 * g;               //              + (1 - beta2) * g * g
    T v_added = v_scaled * g;
    T v = v_kept + v_added;
    exp_avg_sq[i] = v;
    T second = v;
    if (kAmsgrad) {
      T old_max = max_exp_avg_sq[i];                // max_exp_avg_sq = max(max_exp_avg_sq, exp_avg_sq)
      T new_max = (v > old_max || v != v) ? v : old_max;  // NaN on either side propagates
      max_exp_avg_sq[i] = new_max;
      second = new_max;
    }
    T root = std::sqrt(second);                     // denom = sqrt(.) / sqrt(bc2) + eps
    T corrected = root / sqrt_bc2;
    T denom = corrected + eps;
    T scaled = step_size * m;                       // p = p - (lr / bc1) * exp_avg / denom
    T update = scaled / denom;
    p[i] = param - update;
  }
}

// The moment updates alone (the box up to the amsgrad line), for the failing step described in
// adam_update.
template <class T>
void moments_only_pass(const T* p, const T* grad, T* exp_avg, T* exp_avg_sq, int64_t n, bool l2,
                       T l2_weight_decay, T beta1, T one_minus_beta1, T beta2, T one_minus_beta2) {
  for (int64_t i = 0; i < n; ++i) {
    T g = grad[i];
    if (l2) {
      T decay = l2_weight_decay * p[i];
      g = g + decay;
    }
    T m_kept = exp_avg[i] * beta1;
    T m_added = one_minus_beta1 * g;
    exp_avg[i] = m_kept + m_added;
    T v_kept = exp_avg_sq[i] * beta2;
    T v_scaled = one_minus_beta2 * g;
    T v_added = v_scaled * g;
    exp_avg_sq[i] = v_kept + v_added;
  }
}

template <class T>
void run_adam_pass(bool l2, bool decoupled, bool amsgrad, T* p, const T* grad, T* m, T* v, T* vmax, int64_t n,
                   T l2_wd, T decay_factor, T b1, T omb1, T b2, T omb2, T sqrt_bc2, T eps, T step_size) {
#define LOCKSTEP_ADAM_CASE(L, D, A)                                                                     \
  if (l2 == L && decoupled == D && amsgrad == A)                                                        \
    return adam_pass<T, L, D, A>(p, grad, m, v, vmax, n, l2_wd, decay_factor, b1, omb1, b2, omb2, sqrt_bc2, \
                                 eps, step_size);
  LOCKSTEP_ADAM_CASE(false, false, false)
  LOCKSTEP_ADAM_CASE(true, false, false)
  LOCKSTEP_ADAM_CASE(false, true, false)
  LOCKSTEP_ADAM_CASE(false, false, true)
  LOCKSTEP_ADAM_CASE(true, false, true)
  LOCKSTEP_ADAM_CASE(false, true, true)
#undef LOCKSTEP_ADAM_CASE
  throw Error("other", "adam_update: L2 and decoupled weight decay together");
}

}  // namespace

void validate_adam_family(double lr, double eps, std::pair<double, double> betas, double weight_decay) {
  // SEM-6.1, in this order (black-box: with several bad options, LibTorch names the first of these). The
  // comparisons are written so that NaN is rejected (black-box: "Invalid learning rate: nan").
  const char* kind = optimizer_error::kInvalidOption;
  if (!(lr >= 0)) throw Error(kind, "Invalid learning rate: " + format_option_value(lr));
  if (!(eps >= 0)) throw Error(kind, "Invalid epsilon value: " + format_option_value(eps));
  if (!(0 <= betas.first && betas.first < 1))
    throw Error(kind, "Invalid beta parameter at index 0: " + format_option_value(betas.first));
  if (!(0 <= betas.second && betas.second < 1))
    throw Error(kind, "Invalid beta parameter at index 1: " + format_option_value(betas.second));
  if (!(weight_decay >= 0)) throw Error(kind, "Invalid weight_decay value: " + format_option_value(weight_decay));
}

std::unique_ptr<AdamParamState> fresh_state(const Tensor& param, bool amsgrad) {
  auto s = std::make_unique<AdamParamState>();  // SEM-6.2
  s->step = 0;
  s->exp_avg = Tensor::zeros(param.dtype(), param.shape());
  s->exp_avg_sq = Tensor::zeros(param.dtype(), param.shape());
  if (amsgrad) s->max_exp_avg_sq = Tensor::zeros(param.dtype(), param.shape());
  return s;
}

void adam_update(Tensor& param, const Tensor& grad, AdamParamState& state, double lr,
                 std::pair<double, double> betas, double eps, double l2_weight_decay,
                 double decoupled_weight_decay, bool amsgrad) {
  if (grad.dtype() != param.dtype() || grad.numel() != param.numel())
    throw Error("other", "grad does not match its parameter (dtype or shape)");
  const double beta1 = betas.first, beta2 = betas.second;
  // Bias corrections and the scalars derived from them in double (SEM-1.3, SEM-6.3).
  const double bc1 = 1 - std::pow(beta1, static_cast<double>(state.step));
  const double bc2 = 1 - std::pow(beta2, static_cast<double>(state.step));
  const double step_size = lr / bc1;
  const double sqrt_bc2 = std::sqrt(bc2);
  const bool l2 = l2_weight_decay != 0;
  const bool decoupled = decoupled_weight_decay != 0;
  const int64_t n = param.numel();

  dispatch_dtype(param.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if (amsgrad && !state.max_exp_avg_sq.defined()) {
      // The group turned amsgrad on after this parameter's state was created without max_exp_avg_sq.
      // Black-box, LibTorch 1.13 has then already counted the step and updated both moments (and not p)
      // when the max fails on the undefined tensor; we do the same and fail with its message.
      moments_only_pass<T>(param.data<T>(), grad.data<T>(), state.exp_avg.data<T>(), state.exp_avg_sq.data<T>(),
                           n, l2, static_cast<T>(l2_weight_decay), static_cast<T>(beta1),
                           static_cast<T>(1 - beta1), static_cast<T>(beta2), static_cast<T>(1 - beta2));
      throw Error("other",
                  "Expected a proper Tensor but got None (or an undefined Tensor in C++) for argument #1 'other'");
    }
    T* vmax = amsgrad ? state.max_exp_avg_sq.data<T>() : nullptr;
    run_adam_pass<T>(l2, decoupled, amsgrad, param.data<T>(), grad.data<T>(), state.exp_avg.data<T>(),
                     state.exp_avg_sq.data<T>(), vmax, n, static_cast<T>(l2_weight_decay),
                     static_cast<T>(1 - lr * decoupled_weight_decay), static_cast<T>(beta1),
                     static_cast<T>(1 - beta1), static_cast<T>(beta2), static_cast<T>(1 - beta2),
                     static_cast<T>(sqrt_bc2), static_cast<T>(eps), static_cast<T>(step_size));
  });
}

}  // namespace adam_detail

Adam::Adam(std::vector<Tensor> params, const AdamOptions& defaults)
    : Adam(single_group(std::move(params)), defaults) {}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {
  // Black-box: the groups' leaf checks come before the option checks.
  adam_detail::validate_adam_family(defaults.lr, defaults.eps, defaults.betas, defaults.weight_decay);
}

void Adam::step() {
  for (size_t gi = 0; gi < param_groups().size(); ++gi) {
    const AdamOptions& o = group_options(gi);
    for (Tensor& p : param_groups()[gi].params) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;  // SEM-4.3, SEM-6.3: skipped, step count unchanged
      AdamParamState* state = state_of(p);
      if (!state)  // SEM-6.2: lazily, at the first step with a defined grad
        state = static_cast<AdamParamState*>(&set_state(p, adam_detail::fresh_state(p, o.amsgrad)));
      state->step += 1;  // SEM-6.3: a zero grad still counts
      adam_detail::adam_update(p, grad, *state, o.lr, o.betas, o.eps, /*l2_weight_decay=*/o.weight_decay,
                               /*decoupled_weight_decay=*/0, o.amsgrad);
    }
  }
}

AdamOptions& Adam::group_options(size_t i) { return static_cast<AdamOptions&>(*param_groups().at(i).options); }
const AdamOptions& Adam::group_options(size_t i) const {
  return static_cast<const AdamOptions&>(*param_groups().at(i).options);
}
const AdamOptions& Adam::adam_defaults() const { return static_cast<const AdamOptions&>(defaults()); }

AdamParamState* Adam::state_of(const Tensor& param) { return static_cast<AdamParamState*>(find_state(param)); }
const AdamParamState* Adam::state_of(const Tensor& param) const {
  return static_cast<const AdamParamState*>(find_state(param));
}

}  // namespace lockstep::impl
