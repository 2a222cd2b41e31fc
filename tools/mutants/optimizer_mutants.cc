// tools/mutants/optimizer_mutants.cc: the mutants that change an optimizer's step (mutants.h). Each is a
// subclass of impl's optimizer (same options, state and validation) whose step() is a copy of impl's with one
// line wrong; everything the mutant does not concern rounds as impl does (std::fma where impl fuses).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "impl/adagrad.h"
#include "impl/adam.h"
#include "impl/adamw.h"
#include "impl/lbfgs.h"
#include "impl/rmsprop.h"
#include "impl/sgd.h"
#include "tools/mutants/mutant_engines.h"

namespace lockstep::mutants_detail {
namespace {

using impl::Tensor;

bool all_zero(const Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.at(i) != 0) return false;
  return true;
}

void check_fits(const Tensor& p, const Tensor& grad) {
  if (grad.dtype() != p.dtype() || grad.numel() != p.numel())
    throw impl::Error(impl::ErrorKind::Other, "grad does not match its parameter (dtype or shape)");
}

// ---------------------------------------------------------------------------------------------------------
// SGD (SEM-5.3): impl's box line by line, the mutant's line changed.

template <class T>
void sgd_mutant_pass(Mutant m, T* p, T* grad, T* buf, int64_t n, bool weight_decay_on, bool momentum_on, bool first,
                     bool nesterov, T weight_decay, T momentum, T one_minus_dampening, T lr, bool negate_after_decay) {
  const bool velocity = m == Mutant::SgdVelocityForm && momentum_on;
  const bool decay_after = m == Mutant::SgdWeightDecayAfterMomentum;
  for (int64_t i = 0; i < n; ++i) {
    T d = grad[i];
    if (weight_decay_on && !decay_after) d = std::fma(weight_decay, p[i], d);
    if (negate_after_decay) d = -d;  // MaximizeAfterWeightDecay: -(g + wd * p)
    if (velocity) d = lr * d;  // the buffer holds lr-scaled velocities
    if (momentum_on) {
      T b;
      if (first && m != Mutant::SgdDampeningFirstStep) b = d;
      else b = std::fma(one_minus_dampening, d, buf[i] * momentum);  // the first buffer is zeros
      buf[i] = b;
      d = (nesterov && m != Mutant::SgdNesterovBufferOnly) ? std::fma(momentum, b, d) : b;
    }
    if (weight_decay_on && decay_after) d = std::fma(weight_decay, p[i], d);
    if (m == Mutant::StepModifiesGrad) grad[i] = d;
    p[i] = velocity ? p[i] - d : std::fma(-lr, d, p[i]);
  }
}

class MutantSGD : public impl::SGD {
 public:
  MutantSGD(Mutant m, std::vector<impl::ParamGroup> groups, const impl::SGDOptions& defaults)
      : impl::SGD(std::move(groups), defaults), m_(m) {}

  void step() override {
    for (size_t gi = 0; gi < param_groups().size(); ++gi) {
      const impl::SGDOptions& o = group_options(gi);
      if (o.lr == 0 && m_ == Mutant::LrZeroGroupSkipped) continue;
      const bool weight_decay_on = o.weight_decay != 0;
      const bool momentum_on = o.momentum != 0;
      const bool nesterov = momentum_on && o.nesterov;
      for (Tensor& p : param_groups()[gi].params) {
        const bool negate_after_decay = o.maximize && m_ == Mutant::MaximizeAfterWeightDecay;
        Tensor grad = impl::gradient_for_step(p.grad(), o.maximize && !negate_after_decay);  // SEM-20.1, as impl
        if (!grad.defined()) {
          if (m_ != Mutant::StepUndefinedGradAsZero) continue;
          grad = Tensor::zeros(p.dtype(), p.shape());
        }
        check_fits(p, grad);
        bool first = false;
        impl::SGDParamState* state = nullptr;
        if (momentum_on) {
          state = state_of(p);
          if (!state) {
            auto fresh = std::make_unique<impl::SGDParamState>();
            fresh->momentum_buffer = Tensor::zeros(p.dtype(), p.shape());
            state = static_cast<impl::SGDParamState*>(&set_state(p, std::move(fresh)));
            first = true;
          }
        }
        impl::dispatch_dtype(p.dtype(), [&](auto zero) {
          using T = decltype(zero);
          T* buf = state ? state->momentum_buffer.data<T>() : nullptr;
          sgd_mutant_pass<T>(m_, p.data<T>(), grad.data<T>(), buf, p.numel(), weight_decay_on, momentum_on, first,
                             nesterov, static_cast<T>(o.weight_decay), static_cast<T>(o.momentum),
                             static_cast<T>(1 - o.dampening), static_cast<T>(o.lr), negate_after_decay);
        });
      }
    }
  }

 private:
  Mutant m_;
};

// ---------------------------------------------------------------------------------------------------------
// Adam and AdamW (SEM-6.3, SEM-6.4). Mutants of a formula run one plain pass (below); the others change which
// parameters step, their counts or their weight decay, and leave the update to impl (adam_update).

bool concerns_adam_pass(Mutant m) {
  return m == Mutant::StepModifiesGrad || m == Mutant::AdamEpsInsideSqrt || m == Mutant::AdamEpsBeforeBiasCorrection ||
         m == Mutant::AmsgradMaxOfCorrected || m == Mutant::AmsgradMaxDropsNan || m == Mutant::AdamwDecayAfterUpdate ||
         m == Mutant::AdamNoBiasCorrection || m == Mutant::MaximizeAfterWeightDecay;
}

template <class T>
void adam_mutant_pass(Mutant mutant, T* p, T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, int64_t n,
                      bool l2, bool decoupled, bool amsgrad, T l2_weight_decay, T decay_factor, T beta1,
                      T one_minus_beta1, T beta2, T one_minus_beta2, T bc2, T sqrt_bc2, T eps, T step_size) {
  const bool decay_after = decoupled && mutant == Mutant::AdamwDecayAfterUpdate;
  for (int64_t i = 0; i < n; ++i) {
    T param = p[i];
    if (decoupled && !decay_after) param = param * decay_factor;
    T g = grad[i];
    if (l2) g = std::fma(l2_weight_decay, param, g);  // fused, as impl/adam.cc's adam_pass
    if (mutant == Mutant::MaximizeAfterWeightDecay) g = -g;  // the step was given +grad: -(g + wd * p)
    if (mutant == Mutant::StepModifiesGrad) grad[i] = g;
    T m = std::fma(one_minus_beta1, g, exp_avg[i] * beta1);
    exp_avg[i] = m;
    T v = std::fma(one_minus_beta2 * g, g, exp_avg_sq[i] * beta2);
    exp_avg_sq[i] = v;
    T second = v;
    bool corrected = false;  // `second` already divided by bc2
    if (amsgrad) {
      T old_max = max_exp_avg_sq[i];
      T candidate = v;
      if (mutant == Mutant::AmsgradMaxOfCorrected) candidate = v / bc2, corrected = true;
      T new_max = mutant == Mutant::AmsgradMaxDropsNan ? std::fmax(old_max, candidate)
                                                       : ((candidate > old_max || candidate != candidate) ? candidate : old_max);
      max_exp_avg_sq[i] = new_max;
      second = new_max;
    }
    T denom;
    if (mutant == Mutant::AdamEpsInsideSqrt) denom = std::sqrt(second / bc2 + eps);
    else if (mutant == Mutant::AdamEpsBeforeBiasCorrection) denom = (std::sqrt(second) + eps) / sqrt_bc2;
    else if (corrected) denom = std::sqrt(second) + eps;
    else denom = std::sqrt(second) / sqrt_bc2 + eps;
    T result = param - (step_size * m) / denom;
    if (decay_after) result = result * decay_factor;
    p[i] = result;
  }
}


// One parameter's update under mutant m: impl's adam_update, or the mutant pass.
void mutant_adam_update(Mutant m, Tensor& param, Tensor& grad, impl::AdamParamState& state,
                        const impl::adam_detail::AdamStepOptions& o) {
  if (m == Mutant::AdamBiasCorrectionOffByOne) {  // the corrections of step + 1
    state.step += 1;
    try {
      impl::adam_detail::adam_update(param, grad, state, o);
    } catch (...) {
      state.step -= 1;
      throw;
    }
    state.step -= 1;
    return;
  }
  const double lr = o.lr, eps = o.eps;
  const bool amsgrad = o.amsgrad;
  const bool decoupled_form = o.weight_decay_form == impl::adam_detail::WeightDecayForm::Decoupled;
  const double l2_weight_decay = decoupled_form ? 0 : o.weight_decay;
  const double decoupled_weight_decay = decoupled_form ? o.weight_decay : 0;
  if (!concerns_adam_pass(m) || (amsgrad && !state.max_exp_avg_sq.defined())) {
    impl::adam_detail::adam_update(param, grad, state, o);
    return;
  }
  check_fits(param, grad);
  const double beta1 = o.betas.first, beta2 = o.betas.second;
  const double counted = static_cast<double>(state.step);
  double bc1 = 1 - std::pow(beta1, counted), bc2 = 1 - std::pow(beta2, counted);
  if (m == Mutant::AdamNoBiasCorrection) bc1 = bc2 = 1;
  const bool l2 = l2_weight_decay != 0, decoupled = decoupled_weight_decay != 0;
  param.bump_version();
  if (decoupled) param.bump_version();
  impl::dispatch_dtype(param.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* vmax = amsgrad ? state.max_exp_avg_sq.data<T>() : nullptr;
    adam_mutant_pass<T>(m, param.data<T>(), grad.data<T>(), state.exp_avg.data<T>(), state.exp_avg_sq.data<T>(), vmax,
                        param.numel(), l2, decoupled, amsgrad, static_cast<T>(l2_weight_decay),
                        static_cast<T>(1 - lr * decoupled_weight_decay), static_cast<T>(beta1),
                        static_cast<T>(1 - beta1), static_cast<T>(beta2), static_cast<T>(1 - beta2),
                        static_cast<T>(bc2), static_cast<T>(std::sqrt(bc2)), static_cast<T>(eps),
                        static_cast<T>(lr / bc1));
  });
}

// Adam and AdamW share the loop; Base is impl::Adam or impl::AdamW.
template <class Base, class Options>
class MutantAdamFamily : public Base {
 public:
  MutantAdamFamily(Mutant m, bool decoupled, std::vector<impl::ParamGroup> groups, const Options& defaults)
      : Base(std::move(groups), defaults), m_(m), decoupled_(decoupled) {}

  void step() override {
    int64_t optimizer_step = 0;  // AdamStepPerOptimizer: 1 + the largest count of any parameter
    if (m_ == Mutant::AdamStepPerOptimizer) {
      for (const impl::ParamGroup& g : this->param_groups())
        for (const Tensor& p : g.params)
          if (const impl::AdamParamState* s = this->state_of(p)) optimizer_step = std::max(optimizer_step, s->step);
      optimizer_step += 1;
    }
    for (size_t gi = 0; gi < this->param_groups().size(); ++gi) {
      const Options& o = this->group_options(gi);
      if (o.lr == 0 && m_ == Mutant::LrZeroGroupSkipped) continue;
      for (Tensor& p : this->param_groups()[gi].params) {
        const bool negate_after_decay = o.maximize && m_ == Mutant::MaximizeAfterWeightDecay;
        Tensor grad = impl::gradient_for_step(p.grad(), o.maximize && !negate_after_decay);  // SEM-20.1, as impl
        if (!grad.defined()) {
          if (m_ != Mutant::StepUndefinedGradAsZero) continue;
          grad = Tensor::zeros(p.dtype(), p.shape());
        } else if (m_ == Mutant::AdamSkipZeroGrad && all_zero(grad)) {
          continue;
        }
        impl::AdamParamState* state = this->state_of(p);
        if (!state)
          state = static_cast<impl::AdamParamState*>(&this->set_state(p, impl::adam_detail::fresh_state(p, o.amsgrad)));
        state->step += 1;
        if (optimizer_step) state->step = optimizer_step;
        using impl::adam_detail::WeightDecayForm;
        impl::adam_detail::AdamStepOptions step = impl::adam_detail::step_options(
            o, decoupled_ || m_ == Mutant::AdamDecoupledDecay ? WeightDecayForm::Decoupled : WeightDecayForm::L2);
        if (m_ == Mutant::MaximizeAfterWeightDecay && !negate_after_decay)
          impl::adam_detail::adam_update(p, grad, *state, step);  // it concerns maximize only
        else
          mutant_adam_update(m_, p, grad, *state, step);
      }
    }
  }

 private:
  Mutant m_;
  bool decoupled_;
};

// ---------------------------------------------------------------------------------------------------------
// RMSprop (SEM-14.3): impl's step with one line changed.

class MutantRMSprop : public impl::RMSprop {
 public:
  MutantRMSprop(Mutant m, std::vector<impl::ParamGroup> groups, const impl::RMSpropOptions& defaults)
      : impl::RMSprop(std::move(groups), defaults), m_(m) {}

  void step() override {
    for (size_t gi = 0; gi < param_groups().size(); ++gi) {
      const impl::RMSpropOptions& o = group_options(gi);
      for (Tensor& p : param_groups()[gi].params) {
        const Tensor grad = impl::gradient_for_step(p.grad(), o.maximize);  // SEM-20.1, as impl
        if (!grad.defined()) continue;
        check_fits(p, grad);
        impl::RMSpropParamState* state = state_of(p);
        if (!state) {
          auto fresh = std::make_unique<impl::RMSpropParamState>();
          fresh->square_avg = Tensor::zeros(p.dtype(), p.shape());
          if (o.momentum > 0) fresh->momentum_buffer = Tensor::zeros(p.dtype(), p.shape());
          if (o.centered) fresh->grad_avg = Tensor::zeros(p.dtype(), p.shape());
          state = static_cast<impl::RMSpropParamState*>(&set_state(p, std::move(fresh)));
        }
        state->step += 1;
        // A tensor the options need and the state lacks (SEM-14.2): impl updates square_avg (and, centered,
        // grad_avg when it has one), then fails.
        const bool missing = (o.centered && !state->grad_avg.defined()) || (o.momentum > 0 && !state->momentum_buffer.defined());
        const bool centered = o.centered && state->grad_avg.defined();
        const bool momentum = o.momentum > 0 && state->momentum_buffer.defined();
        impl::dispatch_dtype(p.dtype(), [&](auto zero) {
          using T = decltype(zero);
          T* param = p.data<T>();
          const T* g_in = grad.data<T>();
          T* sa = state->square_avg.data<T>();
          T* ga = centered ? state->grad_avg.data<T>() : nullptr;
          T* buf = momentum ? state->momentum_buffer.data<T>() : nullptr;
          const T alpha = static_cast<T>(o.alpha), one_minus_alpha = static_cast<T>(1 - o.alpha);
          const T wd = static_cast<T>(o.weight_decay), eps = static_cast<T>(o.eps);
          const T mom = static_cast<T>(o.momentum), neg_lr = static_cast<T>(-o.lr);
          for (int64_t i = 0; i < p.numel(); ++i) {
            T g = g_in[i];
            if (o.weight_decay != 0) g = std::fma(wd, param[i], g);
            sa[i] = m_ == Mutant::RmspropSquareAvgUnweighted ? std::fma(g, g, sa[i] * alpha)  // (1 - alpha) dropped
                                                            : std::fma(one_minus_alpha * g, g, sa[i] * alpha);
            T x = sa[i];
            if (ga) {
              ga[i] = std::fma(one_minus_alpha, g, ga[i] * alpha);
              if (m_ != Mutant::RmspropCenteredIgnored) x = std::fma(-ga[i], ga[i], sa[i]);
            }
            if (missing) continue;
            const T avg = m_ == Mutant::RmspropEpsInsideSqrt ? std::sqrt(x + eps) : std::sqrt(x) + eps;
            if (buf) {
              if (m_ == Mutant::RmspropMomentumBufferRawGrad) {  // buf accumulates g; the update divides by avg
                buf[i] = buf[i] * mom + g;
                param[i] = param[i] + (neg_lr * buf[i]) / avg;
              } else {
                buf[i] = buf[i] * mom + g / avg;
                param[i] = std::fma(neg_lr, buf[i], param[i]);
              }
            } else {
              param[i] = param[i] + (neg_lr * g) / avg;
            }
          }
        });
        if (missing)
          throw impl::Error(impl::ErrorKind::Other, "Expected a proper Tensor but got None (or an undefined Tensor in C++) for "
                                     "argument #0 'self'");
        p.bump_version();
      }
    }
  }

 private:
  Mutant m_;
};

// ---------------------------------------------------------------------------------------------------------
// Adagrad (SEM-15.2, SEM-15.3): its own optimizer (impl's constructor would create the state the lazy mutant
// leaves out), with impl's options and state types and impl's validation.

class MutantAdagrad : public impl::Optimizer {
 public:
  MutantAdagrad(Mutant m, std::vector<impl::ParamGroup> groups, const impl::AdagradOptions& defaults)
      : impl::Optimizer(std::move(groups), defaults.clone()), m_(m) {
    impl::Adagrad validate(std::vector<Tensor>{}, defaults);  // impl's checks and messages (SEM-15.1)
    if (m_ == Mutant::AdagradLazyState) return;
    for (const impl::ParamGroup& group : param_groups()) {
      const double initial = m_ == Mutant::AdagradGroupInitialAccumulator
                                 ? static_cast<const impl::AdagradOptions&>(*group.options).initial_accumulator_value
                                 : defaults.initial_accumulator_value;
      for (const Tensor& p : group.params)
        if (!find_state(p)) set_state(p, fresh(p, initial));
    }
  }

  void step() override {
    int64_t optimizer_step = 0;  // AdagradLrDecayPerOptimizer: 1 + the largest count of any parameter
    for (const impl::ParamGroup& g : param_groups())
      for (const Tensor& p : g.params)
        if (const auto* s = static_cast<const impl::AdagradParamState*>(find_state(p)))
          optimizer_step = std::max(optimizer_step, s->step);
    optimizer_step += 1;
    for (size_t gi = 0; gi < param_groups().size(); ++gi) {
      const auto& o = static_cast<const impl::AdagradOptions&>(*param_groups()[gi].options);
      for (Tensor& p : param_groups()[gi].params) {
        const Tensor grad = impl::gradient_for_step(p.grad(), o.maximize);  // SEM-20.1, as impl
        if (!grad.defined()) continue;
        check_fits(p, grad);
        auto* state = static_cast<impl::AdagradParamState*>(find_state(p));
        if (!state && m_ == Mutant::AdagradLazyState)
          state = static_cast<impl::AdagradParamState*>(&set_state(p, fresh(p, o.initial_accumulator_value)));
        if (!state) {
          set_empty_state(p);
          throw impl::Error(impl::ErrorKind::Other, "state found NULL for the Tensor (added after construction, SEM-15.2)");
        }
        state->step += 1;
        const int64_t counted = m_ == Mutant::AdagradLrDecayPerOptimizer ? optimizer_step : state->step;
        const double clr = o.lr / (1 + static_cast<double>(counted - 1) * o.lr_decay);
        impl::dispatch_dtype(p.dtype(), [&](auto zero) {
          using T = decltype(zero);
          T* param = p.data<T>();
          const T* g_in = grad.data<T>();
          T* sum = state->sum.data<T>();
          const T wd = static_cast<T>(o.weight_decay), eps = static_cast<T>(o.eps), neg_clr = static_cast<T>(-clr);
          for (int64_t i = 0; i < p.numel(); ++i) {
            T g = g_in[i];
            if (o.weight_decay != 0) g = std::fma(wd, param[i], g);
            sum[i] = std::fma(g, g, sum[i]);
            const T std_dev = m_ == Mutant::AdagradEpsInsideSqrt ? std::sqrt(sum[i] + eps) : std::sqrt(sum[i]) + eps;
            param[i] = param[i] + (neg_clr * g) / std_dev;
          }
        });
        p.bump_version();
      }
    }
  }

 private:
  static std::unique_ptr<impl::AdagradParamState> fresh(const Tensor& p, double initial) {
    auto s = std::make_unique<impl::AdagradParamState>();
    s->sum = Tensor::from_values(p.dtype(), p.shape(), std::vector<double>(static_cast<size_t>(p.numel()), initial));
    return s;
  }

  Mutant m_;
};

// ---------------------------------------------------------------------------------------------------------
// L-BFGS (SEM-16.3), in double (a correct rounding of the specification at every parameter's dtype, which is all the
// comparison asks, SEM-16.4): impl's loop line by line, the mutant's line changed.

class MutantLBFGS : public impl::LBFGS {
 public:
  MutantLBFGS(Mutant m, std::vector<impl::ParamGroup> groups, const impl::LBFGSOptions& defaults)
      : impl::LBFGS(std::move(groups), defaults), m_(m) {}

  using impl::LBFGS::step;
  Tensor step(const Closure& closure) override {
    if (!closure || param_groups().size() != 1 || param_groups()[0].params.empty()) return impl::LBFGS::step(closure);
    const impl::LBFGSOptions& o = group_options(0);
    std::vector<Tensor>& params = param_groups()[0].params;
    auto* st = static_cast<impl::LBFGSState*>(find_state(params[0]));
    if (!st) st = static_cast<impl::LBFGSState*>(&set_state(params[0], std::make_unique<impl::LBFGSState>()));
    auto call = [&] {
      const Tensor loss = closure();
      if (loss.numel() != 1)
        throw impl::Error(impl::ErrorKind::Other,
                          "a Tensor with " + std::to_string(loss.numel()) + " elements cannot be converted to Scalar");
      return loss;
    };
    const Tensor first = call();
    st->func_evals += 1;
    std::vector<double> g = flat_grad(params);
    if (max_abs(g) <= o.tolerance_grad) return first;
    double loss = first.at(0);
    const int64_t max_eval = o.max_eval.value_or(o.max_iter * 5 / 4);
    const int64_t eval_limit = m_ == Mutant::LbfgsMaxEvalOffByOne ? max_eval + 1 : max_eval;
    int64_t evals = 1;
    std::vector<double>& d = st->d;
    for (int64_t n = 1; n <= o.max_iter; ++n) {
      st->n_iter += 1;
      if (st->n_iter == 1) {
        d.assign(g.size(), 0);
        for (size_t i = 0; i < g.size(); ++i) d[i] = -g[i];
        st->old_dirs.clear();
        st->old_stps.clear();
        st->ro.clear();
        st->H_diag = 1;
      } else {
        std::vector<double> y(g.size()), s(g.size());
        for (size_t i = 0; i < g.size(); ++i) {
          y[i] = g[i] - st->prev_flat_grad[i];
          s[i] = d[i] * st->t;
        }
        const double ys = dot(y, s);
        if (ys > 1e-10) {
          if (static_cast<int64_t>(st->old_dirs.size()) == o.history_size) {
            if (m_ == Mutant::LbfgsHistoryDropsNewest) {
              st->old_dirs.pop_back();
              st->old_stps.pop_back();
              st->ro.pop_back();
            } else {
              st->old_dirs.pop_front();
              st->old_stps.pop_front();
              st->ro.pop_front();
            }
          }
          st->old_dirs.push_back(y);
          st->old_stps.push_back(s);
          st->ro.push_back(1 / ys);
          st->H_diag = ys / dot(y, y);
        }
        const size_t pairs = st->old_dirs.size();
        if (!st->capacity) st->capacity = o.history_size;
        if (static_cast<int64_t>(pairs) > *st->capacity)
          throw impl::Error(impl::ErrorKind::Other, "the history holds more pairs than its capacity (SEM-16.1)");
        std::vector<double> al(pairs), q(g.size());
        for (size_t i = 0; i < g.size(); ++i) q[i] = -g[i];
        for (size_t k = pairs; k-- > 0;) {
          al[k] = dot(st->old_stps[k], q) * st->ro[k];
          for (size_t i = 0; i < q.size(); ++i) q[i] -= al[k] * st->old_dirs[k][i];
        }
        for (size_t i = 0; i < q.size(); ++i) d[i] = q[i] * st->H_diag;
        for (size_t k = 0; k < pairs; ++k) {
          const double be = dot(st->old_dirs[k], d) * st->ro[k];
          for (size_t i = 0; i < d.size(); ++i) d[i] += (al[k] - be) * st->old_stps[k][i];
        }
      }
      st->prev_flat_grad = g;
      st->prev_loss = loss;
      double abs_sum = 0;
      for (double v : g) abs_sum += std::fabs(v);
      const bool scaled = st->n_iter == 1 && m_ != Mutant::LbfgsFirstStepUnscaled;
      st->t = scaled ? std::min(1.0, 1.0 / abs_sum) * o.lr : o.lr;
      const double gtd = dot(g, d);
      if (gtd > -o.tolerance_change) break;
      bool small = false;
      if (o.line_search_fn) {  // SEM-16.6
        if (*o.line_search_fn != "strong_wolfe") throw impl::Error(impl::ErrorKind::Other, "only 'strong_wolfe' is supported");
        const std::vector<std::vector<double>> x0 = values_of(params);
        const auto phi = [&](double s) {
          set_values(params, x0, s, d);
          const double f = call().at(0);
          if (m_ == Mutant::LbfgsSearchCountsPerCall) st->func_evals += 1;
          Point at{s, f, flat_grad(params), 0};
          at.gtd = dot(at.g, d);
          set_values(params, x0, 0, d, true);
          return at;
        };
        int64_t calls = 0;
        Point chosen = strong_wolfe(phi, st->t, d, Point{0, loss, g, gtd}, calls);
        set_values(params, x0, chosen.t, d);
        st->t = chosen.t;
        loss = chosen.f;
        g = chosen.g;
        small = max_abs(g) <= o.tolerance_grad;
        evals += calls;
        if (m_ != Mutant::LbfgsSearchCountsPerCall) st->func_evals += calls;
      } else {
        move(params, st->t, d);
      }
      if (!o.line_search_fn && n != o.max_iter) {
        loss = call().at(0);
        g = flat_grad(params);
        small = max_abs(g) <= o.tolerance_grad;
        evals += 1;
        st->func_evals += 1;
      }
      if (n == o.max_iter || evals >= eval_limit) break;
      if (small) break;
      double moved = 0;
      for (double v : d) moved = std::isnan(v) || std::isnan(moved) ? NAN : std::max(moved, std::fabs(v * st->t));
      if (moved <= o.tolerance_change) break;
      if (std::fabs(loss - st->prev_loss) < o.tolerance_change) break;
    }
    return first;
  }

 private:
  struct Point {
    double t = 0, f = 0;
    std::vector<double> g;
    double gtd = 0;
  };

  static void move(std::vector<Tensor>& params, double t, const std::vector<double>& d) {
    for (size_t offset = 0, k = 0; k < params.size(); offset += static_cast<size_t>(params[k].numel()), ++k) {
      impl::dispatch_dtype(params[k].dtype(), [&](auto zero) {
        using P = decltype(zero);
        P* values = params[k].data<P>();
        for (int64_t i = 0; i < params[k].numel(); ++i)
          values[i] = static_cast<P>(static_cast<double>(values[i]) + t * d[offset + static_cast<size_t>(i)]);
      });
      params[k].bump_version();
    }
  }
  static std::vector<std::vector<double>> values_of(const std::vector<Tensor>& params) {
    std::vector<std::vector<double>> x;
    for (const Tensor& p : params) {
      x.emplace_back();
      for (int64_t i = 0; i < p.numel(); ++i) x.back().push_back(p.at(i));
    }
    return x;
  }
  // p = x0 + t d, or x0 itself (restore), one version bump each.
  static void set_values(std::vector<Tensor>& params, const std::vector<std::vector<double>>& x0, double t,
                         const std::vector<double>& d, bool restore = false) {
    for (size_t offset = 0, k = 0; k < params.size(); offset += static_cast<size_t>(params[k].numel()), ++k) {
      impl::dispatch_dtype(params[k].dtype(), [&](auto zero) {
        using P = decltype(zero);
        P* values = params[k].data<P>();
        for (int64_t i = 0; i < params[k].numel(); ++i) {
          const size_t j = static_cast<size_t>(i);
          values[i] = restore ? static_cast<P>(x0[k][j])
                              : std::fma(static_cast<P>(t), static_cast<P>(d[offset + j]), static_cast<P>(x0[k][j]));
        }
      });
      params[k].bump_version();
    }
  }
  static double cubic_min(double x1, double f1, double g1, double x2, double f2, double g2, double lo, double hi) {
    const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
    const double d2_square = d1 * d1 - g1 * g2;
    if (!(d2_square >= 0)) return (lo + hi) / 2;
    const double d2 = std::sqrt(d2_square);
    const double m = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                              : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
    return std::min(std::max(m, lo), hi);
  }
  // impl's strong_wolfe (SEM-16.6), the mutant's line changed.
  Point strong_wolfe(const std::function<Point(double)>& phi, double t, const std::vector<double>& d, const Point& at0,
                     int64_t& calls) const {
    const double c1 = 1e-4, c2 = m_ == Mutant::LbfgsWolfeCurvatureWithC1 ? 1e-4 : 0.9;
    const int max_ls = 25;
    const double gtd = at0.gtd, d_norm = max_abs(d);
    Point now = phi(t);
    calls = 1;
    Point prev = at0;
    std::vector<Point> bracket;
    bool done = false;
    int i = 0;
    while (i < max_ls) {
      if (now.f > at0.f + c1 * now.t * gtd || (i > 1 && now.f >= prev.f)) {
        bracket = {prev, now};
        break;
      }
      if (std::fabs(now.gtd) <= -c2 * gtd) {
        bracket = {now};
        done = true;
        break;
      }
      if (now.gtd >= 0) {
        bracket = {prev, now};
        break;
      }
      const double next = cubic_min(prev.t, prev.f, prev.gtd, now.t, now.f, now.gtd, now.t + 0.01 * (now.t - prev.t), now.t * 10);
      prev = now;
      now = phi(next);
      calls += 1;
      i += 1;
    }
    if (i == max_ls) bracket = {at0, now};
    size_t low = bracket.front().f <= bracket.back().f ? 0 : 1, high = 1 - low;
    bool progress_short = false;
    while (!done && i < max_ls) {
      const Point b0 = bracket[0], b1 = bracket[1];
      double s = cubic_min(b0.t, b0.f, b0.gtd, b1.t, b1.f, b1.gtd, std::min(b0.t, b1.t), std::max(b0.t, b1.t));
      const double top = std::max(b0.t, b1.t), bottom = std::min(b0.t, b1.t), e = 0.1 * (top - bottom);
      if (std::min(top - s, s - bottom) < e) {
        if (progress_short || s >= top || s <= bottom) {
          s = std::fabs(s - top) < std::fabs(s - bottom) ? top - e : bottom + e;
          progress_short = false;
        } else {
          progress_short = true;
        }
      } else {
        progress_short = false;
      }
      now = phi(s);
      calls += 1;
      i += 1;
      if (now.f > at0.f + c1 * now.t * gtd || now.f >= bracket[low].f) {
        bracket[m_ == Mutant::LbfgsZoomReplacesLowEnd ? low : high] = now;
        low = bracket[0].f <= bracket[1].f ? 0 : 1;
        high = 1 - low;
      } else {
        if (std::fabs(now.gtd) <= -c2 * gtd) done = true;
        else if (now.gtd * (bracket[high].t - bracket[low].t) >= 0) bracket[high] = bracket[low];
        bracket[low] = now;
      }
      if (std::fabs(bracket[1].t - bracket[0].t) * d_norm < 1e-9) break;
    }
    return bracket[bracket.size() == 1 ? 0 : low];
  }

  static std::vector<double> flat_grad(const std::vector<Tensor>& params) {
    std::vector<double> g;
    for (const Tensor& p : params) {
      const Tensor grad = p.grad();
      for (int64_t i = 0; i < p.numel(); ++i) g.push_back(grad.defined() ? grad.at(i) : 0.0);
    }
    return g;
  }
  static double max_abs(const std::vector<double>& v) {
    double m = 0;
    for (double x : v) {
      if (std::isnan(x)) return x;
      m = std::max(m, std::fabs(x));
    }
    return m;
  }
  static double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
  }

  Mutant m_;
};

}  // namespace

bool is_optimizer_level(Mutant m) {
  switch (m) {
    case Mutant::StepUndefinedGradAsZero:
    case Mutant::StepModifiesGrad:
    case Mutant::SgdDampeningFirstStep:
    case Mutant::SgdWeightDecayAfterMomentum:
    case Mutant::SgdNesterovBufferOnly:
    case Mutant::SgdVelocityForm:
    case Mutant::AdamEpsInsideSqrt:
    case Mutant::AdamEpsBeforeBiasCorrection:
    case Mutant::AdamBiasCorrectionOffByOne:
    case Mutant::AdamNoBiasCorrection:
    case Mutant::AdamStepPerOptimizer:
    case Mutant::AmsgradMaxOfCorrected:
    case Mutant::AmsgradMaxDropsNan:
    case Mutant::AdamwDecayAfterUpdate:
    case Mutant::AdamDecoupledDecay:
    case Mutant::AdamSkipZeroGrad:
    case Mutant::RmspropEpsInsideSqrt:
    case Mutant::RmspropCenteredIgnored:
    case Mutant::RmspropMomentumBufferRawGrad:
    case Mutant::RmspropSquareAvgUnweighted:
    case Mutant::AdagradLazyState:
    case Mutant::AdagradGroupInitialAccumulator:
    case Mutant::AdagradLrDecayPerOptimizer:
    case Mutant::AdagradEpsInsideSqrt:
    case Mutant::LbfgsHistoryDropsNewest:
    case Mutant::LbfgsFirstStepUnscaled:
    case Mutant::LbfgsMaxEvalOffByOne:
    case Mutant::LbfgsWolfeCurvatureWithC1:
    case Mutant::LbfgsZoomReplacesLowEnd:
    case Mutant::LbfgsSearchCountsPerCall:
    case Mutant::LrZeroGroupSkipped:
    case Mutant::MaximizeAfterWeightDecay:
      return true;
    default:
      return false;
  }
}

std::unique_ptr<impl::Optimizer> make_optimizer_mutant(Mutant m, OptimizerKind kind, std::vector<impl::ParamGroup> groups,
                                                      const impl::OptionsBase& defaults) {
  const bool rmsprop = m == Mutant::RmspropEpsInsideSqrt || m == Mutant::RmspropCenteredIgnored ||
                       m == Mutant::RmspropMomentumBufferRawGrad || m == Mutant::RmspropSquareAvgUnweighted;
  const bool adagrad = m == Mutant::AdagradLazyState || m == Mutant::AdagradGroupInitialAccumulator ||
                       m == Mutant::AdagradLrDecayPerOptimizer || m == Mutant::AdagradEpsInsideSqrt;
  const bool lbfgs = m == Mutant::LbfgsHistoryDropsNewest || m == Mutant::LbfgsFirstStepUnscaled ||
                     m == Mutant::LbfgsMaxEvalOffByOne || m == Mutant::LbfgsWolfeCurvatureWithC1 ||
                     m == Mutant::LbfgsZoomReplacesLowEnd || m == Mutant::LbfgsSearchCountsPerCall;
  if (!is_optimizer_level(m)) return nullptr;
  switch (kind) {
    case OptimizerKind::SGD:
      if (rmsprop || adagrad || lbfgs) return nullptr;
      return std::make_unique<MutantSGD>(m, std::move(groups), static_cast<const impl::SGDOptions&>(defaults));
    case OptimizerKind::Adam:
      if (rmsprop || adagrad || lbfgs) return nullptr;
      return std::make_unique<MutantAdamFamily<impl::Adam, impl::AdamOptions>>(
          m, false, std::move(groups), static_cast<const impl::AdamOptions&>(defaults));
    case OptimizerKind::AdamW:
      if (rmsprop || adagrad || lbfgs) return nullptr;
      return std::make_unique<MutantAdamFamily<impl::AdamW, impl::AdamWOptions>>(
          m, true, std::move(groups), static_cast<const impl::AdamWOptions&>(defaults));
    case OptimizerKind::RMSprop:
      if (!rmsprop) return nullptr;
      return std::make_unique<MutantRMSprop>(m, std::move(groups), static_cast<const impl::RMSpropOptions&>(defaults));
    case OptimizerKind::Adagrad:
      if (!adagrad) return nullptr;
      return std::make_unique<MutantAdagrad>(m, std::move(groups), static_cast<const impl::AdagradOptions&>(defaults));
    case OptimizerKind::LBFGS:
      if (!lbfgs) return nullptr;
      return std::make_unique<MutantLBFGS>(m, std::move(groups), static_cast<const impl::LBFGSOptions&>(defaults));
  }
  return nullptr;
}

}  // namespace lockstep::mutants_detail
