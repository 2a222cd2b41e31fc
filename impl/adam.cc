#include "impl/adam.h"

#include <cmath>
#include <cstdint>

#include "impl/kernel_clones.h"

// Speed (the loop is compute-bound on its square root and two divisions):
//  - it vectorises only when compiled with -fno-math-errno (a std::sqrt that may set errno keeps GCC from
//    vectorising, and GCC 12 ignores a per-function no-math-errno); the step never reads errno and the
//    square root is the same correctly rounded IEEE operation either way. impl/CMakeLists.txt should give
//    lockstep_impl -fno-math-errno;
//  - on x86-64 with GCC the loop is also compiled for x86-64-v3 (AVX2 + FMA, kernel_clones.h, chosen at
//    load time): 8 lanes instead of 4 and std::fma one instruction. Both builds give bit-identical results.
//
// Rounding (measured black-box through the oracle engine, 2 x 4099 random elements per line, dtype and
// option set (lr 1 / 1e-3 / 0.3, weight decay 0 / 0.01 / 0.1, amsgrad on and off, betas (0.8, 0) and
// (0.9, 0.999)), a third of them cancelling): the form chosen below matched 100 % on every line in float32
// and float64 for Adam and AdamW; the alternatives:
//  - g + weight_decay * p (L2):            fused 100 %,  separately rounded 65-77 %
//  - exp_avg * beta1 + (1 - beta1) * g:    fma(1 - beta1, g, exp_avg * beta1) 100 %,  separate 87-93 %
//  - exp_avg_sq * beta2 + (1-beta2) g g:   fma((1 - beta2) * g, g, exp_avg_sq * beta2) 100 %,
//                                          separate 91-95 %, fma(1 - beta2, g * g, .) 73-83 %
//  - sqrt(.) / sqrt(bc2) + eps:            a true division (times the reciprocal: 88-98 %)
//  - p - (lr / bc1) * exp_avg / denom:     p - ((lr / bc1) * exp_avg) / denom, separately rounded 100 %
//                                          (fma(-lr / bc1, exp_avg / denom, p) 51-75 %)
//  - AdamW p * (1 - lr * weight_decay):    one multiplication by the factor rounded to T, 100 %
// The library is otherwise built with -ffp-contract=off, so every other operation rounds on its own.

namespace lockstep::impl {
namespace adam_detail {
namespace {

// The scalars of one pass, computed in double and rounded to T once (SEM-1.3, SEM-6.3).
template <class T>
struct PassScalars {
  T l2_weight_decay;  // Adam's weight_decay (0 for AdamW)
  T decay_factor;     // AdamW's 1 - lr * weight_decay (1 for Adam)
  T beta1, one_minus_beta1, beta2, one_minus_beta2;
  T sqrt_bc2;         // sqrt(1 - beta2^step)
  T eps;
  T step_size;        // lr / (1 - beta1^step)
};

template <class T>
PassScalars<T> pass_scalars(const AdamStepOptions& o, int64_t step) {
  const double beta1 = o.betas.first, beta2 = o.betas.second;
  const double counted = static_cast<double>(step);
  const double bc1 = 1 - std::pow(beta1, counted);
  const double bc2 = 1 - std::pow(beta2, counted);
  const bool decoupled = o.weight_decay_form == WeightDecayForm::Decoupled;
  return {static_cast<T>(decoupled ? 0.0 : o.weight_decay), static_cast<T>(decoupled ? 1 - o.lr * o.weight_decay : 1.0),
          static_cast<T>(beta1), static_cast<T>(1 - beta1), static_cast<T>(beta2), static_cast<T>(1 - beta2),
          static_cast<T>(std::sqrt(bc2)), static_cast<T>(o.eps), static_cast<T>(o.lr / bc1)};
}

// The tensors of one parameter's pass.
template <class T>
struct PassTensors {
  T* p;
  const T* grad;
  T* exp_avg;
  T* exp_avg_sq;
  T* max_exp_avg_sq;  // null without amsgrad
  int64_t n;
};

// Each line is one tensor op of the box of SEM-6.3/6.4 and so one rounding to T, fused where LibTorch fuses
// (see above). The options are template arguments so that the loop has no branch and vectorises; the scalars
// come by value, so that nothing the loop stores can alias them.
template <class T, bool kL2, bool kDecoupled, bool kAmsgrad>
LOCKSTEP_FMA_KERNEL void adam_pass(T* __restrict p, const T* __restrict grad, T* __restrict exp_avg,
                                   T* __restrict exp_avg_sq, T* __restrict max_exp_avg_sq, int64_t n,
                                   PassScalars<T> s) {
  for (int64_t i = 0; i < n; ++i) {
    T param = p[i];
    if (kDecoupled) param = param * s.decay_factor;     // AdamW: p = p * (1 - lr * weight_decay), first
    T g = grad[i];                                      // g = p.grad
    if (kL2) g = std::fma(s.l2_weight_decay, param, g);  // Adam: g = g + weight_decay * p   (new; fused)
    T m_kept = exp_avg[i] * s.beta1;                    // exp_avg = exp_avg * beta1
    T m = std::fma(s.one_minus_beta1, g, m_kept);       //           + (1 - beta1) * g        (fused)
    exp_avg[i] = m;
    T v_kept = exp_avg_sq[i] * s.beta2;                 // exp_avg_sq = exp_avg_sq * beta2
    T v_scaled = s.one_minus_beta2 * g;                 //              + (1 - beta2) * g * g
    T v = std::fma(v_scaled, g, v_kept);                //              (fused: ((1 - beta2) g) g + kept)
    exp_avg_sq[i] = v;
    T second = v;
    if (kAmsgrad) {
      T old_max = max_exp_avg_sq[i];                    // max_exp_avg_sq = max(max_exp_avg_sq, exp_avg_sq)
      T new_max = (v > old_max || v != v) ? v : old_max;  // NaN on either side propagates
      max_exp_avg_sq[i] = new_max;
      second = new_max;
    }
    T root = std::sqrt(second);                         // denom = sqrt(.) / sqrt(bc2) + eps
    T corrected = root / s.sqrt_bc2;
    T denom = corrected + s.eps;
    T scaled = s.step_size * m;                         // p = p - (lr / bc1) * exp_avg / denom
    T update = scaled / denom;
    p[i] = param - update;
  }
}

// The failing step described in adam_update: AdamW's decay of p (when decoupled) and the moment updates,
// rounded as in adam_pass, and nothing after them.
template <class T>
void moments_only_pass(const PassTensors<T>& t, bool l2, bool decoupled, const PassScalars<T>& s) {
  for (int64_t i = 0; i < t.n; ++i) {
    if (decoupled) t.p[i] = t.p[i] * s.decay_factor;
    T g = t.grad[i];
    if (l2) g = std::fma(s.l2_weight_decay, t.p[i], g);
    t.exp_avg[i] = std::fma(s.one_minus_beta1, g, t.exp_avg[i] * s.beta1);
    t.exp_avg_sq[i] = std::fma(s.one_minus_beta2 * g, g, t.exp_avg_sq[i] * s.beta2);
  }
}

// adam_pass instantiated for the options: the weight decay's form where it is not zero, and amsgrad.
template <class T, bool kL2, bool kDecoupled>
void run_pass(bool amsgrad, const PassTensors<T>& t, const PassScalars<T>& s) {
  if (amsgrad)
    adam_pass<T, kL2, kDecoupled, true>(t.p, t.grad, t.exp_avg, t.exp_avg_sq, t.max_exp_avg_sq, t.n, s);
  else
    adam_pass<T, kL2, kDecoupled, false>(t.p, t.grad, t.exp_avg, t.exp_avg_sq, t.max_exp_avg_sq, t.n, s);
}
template <class T>
void run_pass(const AdamStepOptions& o, const PassTensors<T>& t, const PassScalars<T>& s) {
  if (o.weight_decay == 0) return run_pass<T, false, false>(o.amsgrad, t, s);
  if (o.weight_decay_form == WeightDecayForm::L2) return run_pass<T, true, false>(o.amsgrad, t, s);
  run_pass<T, false, true>(o.amsgrad, t, s);
}

}  // namespace

void validate_adam_family(const AdamStepOptions& o) {
  // SEM-6.1, in this order (black-box: with several bad options, LibTorch names the first of these). The
  // comparisons are written so that NaN is rejected (black-box: "Invalid learning rate: nan").
  const ErrorKind kind = ErrorKind::InvalidOption;
  if (!(o.lr >= 0)) throw Error(kind, "Invalid learning rate: " + format_option_value(o.lr));
  if (!(o.eps >= 0)) throw Error(kind, "Invalid epsilon value: " + format_option_value(o.eps));
  if (!(0 <= o.betas.first && o.betas.first < 1))
    throw Error(kind, "Invalid beta parameter at index 0: " + format_option_value(o.betas.first));
  if (!(0 <= o.betas.second && o.betas.second < 1))
    throw Error(kind, "Invalid beta parameter at index 1: " + format_option_value(o.betas.second));
  if (!(o.weight_decay >= 0)) throw Error(kind, "Invalid weight_decay value: " + format_option_value(o.weight_decay));
}

std::unique_ptr<AdamParamState> fresh_state(const Tensor& param, bool amsgrad) {
  auto s = std::make_unique<AdamParamState>();  // SEM-6.2
  s->step = 0;
  s->exp_avg = Tensor::zeros(param.dtype(), param.shape());
  s->exp_avg_sq = Tensor::zeros(param.dtype(), param.shape());
  if (amsgrad) s->max_exp_avg_sq = Tensor::zeros(param.dtype(), param.shape());
  return s;
}

void adam_update(Tensor& param, const Tensor& grad, AdamParamState& state, const AdamStepOptions& o) {
  if (grad.dtype() != param.dtype() || grad.numel() != param.numel())
    throw Error(ErrorKind::Other, "grad does not match its parameter (dtype or shape)");
  const bool l2 = o.weight_decay_form == WeightDecayForm::L2 && o.weight_decay != 0;
  const bool decoupled = o.weight_decay_form == WeightDecayForm::Decoupled && o.weight_decay != 0;

  dispatch_dtype(param.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const PassScalars<T> s = pass_scalars<T>(o, state.step);
    const bool has_max = o.amsgrad && state.max_exp_avg_sq.defined();
    const PassTensors<T> t{param.data<T>(), grad.data<T>(), state.exp_avg.data<T>(), state.exp_avg_sq.data<T>(),
                           has_max ? state.max_exp_avg_sq.data<T>() : nullptr, param.numel()};
    if (o.amsgrad && !has_max) {
      // This parameter's state was created without max_exp_avg_sq and a group with amsgrad steps it (the
      // group turned amsgrad on with set_options after its first step, or the parameter also sits in a
      // group without amsgrad that stepped it first). Black-box, LibTorch 1.13 (Adam and AdamW, float32
      // and float64, deterministic) has then already counted the step, applied AdamW's decay to p and
      // updated both moments when the max fails on the undefined tensor; the rest of p's update is not
      // done. We do the same and fail with its message.
      moments_only_pass<T>(t, l2, decoupled, s);
      if (decoupled) param.bump_version();  // the decay is an in-place change of p (SEM-2.5, versions)
      throw Error(ErrorKind::Other,
                  "Expected a proper Tensor but got None (or an undefined Tensor in C++) for argument #1 'other'");
    }
    // Versions (autograd.h): black-box, a retained graph that saved p fails after a step at version 1 for
    // Adam and AdamW without weight decay, at version 2 for AdamW with it (the decay is its own in-place
    // change), even with lr 0.
    param.bump_version();
    if (decoupled) param.bump_version();
    run_pass<T>(o, t, s);
  });
}

}  // namespace adam_detail

Adam::Adam(std::vector<Tensor> params, const AdamOptions& defaults)
    : Adam(single_group(std::move(params)), defaults) {}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {
  // Black-box: the groups' leaf checks come before the option checks.
  adam_detail::validate_adam_family(adam_detail::step_options(defaults, adam_detail::WeightDecayForm::L2));
}

void Adam::step() {
  for (size_t gi = 0; gi < param_groups().size(); ++gi) {
    const AdamOptions& o = group_options(gi);
    for (Tensor& p : param_groups()[gi].params) {
      const Tensor grad = gradient_for_step(p.grad(), o.maximize);
      if (!grad.defined()) continue;  // SEM-4.3, SEM-6.3: skipped, step count unchanged
      AdamParamState* state = state_of(p);
      if (!state)  // SEM-6.2: lazily, at the first step with a defined grad
        state = static_cast<AdamParamState*>(&set_state(p, adam_detail::fresh_state(p, o.amsgrad)));
      state->step += 1;  // SEM-6.3: a zero grad still counts
      adam_detail::adam_update(p, grad, *state, adam_detail::step_options(o, adam_detail::WeightDecayForm::L2));
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
