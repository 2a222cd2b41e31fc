// Adam and AdamW as data (SEMANTICS §6): options, state, and their step for the tolerance and the error budget.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "conformance/program/optimizer_descriptions.h"

namespace lockstep {
namespace {

// A group's options as numbers.
struct AdamNumbers {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad;
};
AdamNumbers read(const OptimizerOptions& o) {
  AdamNumbers r{o.lr.value_or(0), 0.9, 0.999, o.eps.value_or(1e-8), o.weight_decay.value_or(0), o.amsgrad.value_or(false)};
  if (o.betas) std::tie(r.beta1, r.beta2) = *o.betas;
  return r;
}

// Tolerance (SEM-6.3): the update (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps) at operand magnitudes, at the largest
// lr of the parameter's groups and the first group's betas and eps; the first moment combines the gradient, the
// second moments its square (StateScale).
void adam_scales(const StepScaleInputs& in, StepScaleOutputs& out) {
  double lr = 0;
  for (const OptimizerOptions& group : in.groups) lr = std::max(lr, std::fabs(read(group).lr));
  const AdamNumbers first = read(in.groups.front());
  const ParamObservation& p = in.after;
  const size_t n = in.gradient.size();
  out.update.assign(n, 0);
  if (!p.state.step || !p.state.exp_avg || !p.state.exp_avg_sq) return;
  // LibTorch rounds (lr / bc1) * exp_avg before dividing by denom: in the subnormal range that product has an
  // absolute error of a denormal, which the division by denom (~eps) magnifies. Floor: the dtype's smallest normal
  // number over denom (tolerance.h, subnormals).
  const double min_normal = p.value.dtype == DType::Float32 ? static_cast<double>(std::numeric_limits<float>::min())
                                                             : std::numeric_limits<double>::min();
  const double step = static_cast<double>(*p.state.step);
  const double bc1 = 1 - std::pow(first.beta1, step), bc2 = 1 - std::pow(first.beta2, step);
  const TensorValue& v = p.state.max_exp_avg_sq ? *p.state.max_exp_avg_sq : *p.state.exp_avg_sq;
  const std::optional<TensorValue>& m_old = in.before.state.exp_avg;
  if (!(bc1 > 0 && bc2 > 0) || v.data.size() != n) return;
  for (size_t i = 0; i < n; ++i) {
    const double m = (m_old && m_old->data.size() == n) ? std::fabs(m_old->data[i]) : 0;
    const double denom = std::sqrt(std::fabs(v.data[i])) / std::sqrt(bc2) + first.eps;
    // About five roundings at the update's scale on each side (sqrt, / sqrt(bc2), + eps, * lr/bc1, / denom): two
    // independent implementations may differ by up to ~5 ULP of U, so the scale is 2U.
    out.update[i] = 2 * lr / bc1 * (first.beta1 * m + (1 - first.beta1) * in.gradient[i]) / denom;
    if (denom > 0) out.update[i] = std::max(out.update[i], min_normal / denom);
  }
}

// The parameter update from the (decayed) parameter and the moments (SEM-6.3).
void update_parameter(std::vector<double>& p, const std::vector<double>& m, const std::vector<double>& v,
                      const AdamNumbers& o, int64_t step) {
  const double bc1 = 1 - std::pow(o.beta1, static_cast<double>(step));
  const double bc2 = 1 - std::pow(o.beta2, static_cast<double>(step));
  if (m.size() != p.size() || v.size() != p.size()) return;
  for (size_t i = 0; i < p.size(); ++i) {
    const double denom = std::sqrt(v[i]) / std::sqrt(bc2) + o.eps;
    p[i] -= (o.lr / bc1) * m[i] / denom;
  }
}

// max(v_max, v) with NaN on either side propagating (SEM-6.3).
double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b); }

// SEM-6.3 (Adam: the L2 term in g) and SEM-6.4 (AdamW: p decayed first) in double.
template <bool kDecoupled>
bool adam_step(const OptimizerOptions& options, ShadowParam& s) {
  const AdamNumbers o = read(options);
  const size_t n = s.p.size();
  s.step += 1;
  if (kDecoupled && o.weight_decay != 0)
    for (size_t i = 0; i < n; ++i) s.p[i] *= 1 - o.lr * o.weight_decay;
  std::vector<double> g = s.g;
  if (!kDecoupled && o.weight_decay != 0)  // 0 * inf would make the term NaN
    for (size_t i = 0; i < n; ++i) g[i] += o.weight_decay * s.p[i];
  std::vector<double>& m = s.state["exp_avg"];
  std::vector<double>& v = s.state["exp_avg_sq"];
  if (m.size() != n) m.assign(n, 0.0);
  if (v.size() != n) v.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    m[i] = m[i] * o.beta1 + (1 - o.beta1) * g[i];
    v[i] = v[i] * o.beta2 + (1 - o.beta2) * g[i] * g[i];
  }
  if (o.amsgrad) {
    std::vector<double>& vmax = s.state["max_exp_avg_sq"];
    if (vmax.size() != n) vmax.assign(n, 0.0);
    for (size_t i = 0; i < n; ++i) vmax[i] = nan_max(vmax[i], v[i]);
  }
  update_parameter(s.p, m, o.amsgrad ? s.state["max_exp_avg_sq"] : v, o, s.step);
  return true;
}

// The new value from this side's own observed new moments and count.
template <bool kDecoupled>
std::optional<std::vector<double>> adam_value_from_observed(const OptimizerOptions& options,
                                                            const ParamObservation& before,
                                                            const ParamObservation& after) {
  const AdamNumbers o = read(options);
  const std::optional<TensorValue>& v = o.amsgrad ? after.state.max_exp_avg_sq : after.state.exp_avg_sq;
  if (!after.state.exp_avg || !v || !after.state.step) return std::nullopt;
  std::vector<double> p = before.value.data;
  if (kDecoupled && o.weight_decay != 0)
    for (double& x : p) x *= 1 - o.lr * o.weight_decay;
  update_parameter(p, after.state.exp_avg->data, v->data, o, *after.state.step);
  return p;
}

// max(v_max, v) reads the new second moment in place: each side's own.
void max_from_observed(const ParamObservation& before, const ParamObservation& after,
                       std::map<std::string, std::vector<double>>& state) {
  auto it = state.find("max_exp_avg_sq");
  if (it == state.end() || !after.state.exp_avg_sq) return;
  std::vector<double> v = after.state.exp_avg_sq->data;
  const std::optional<TensorValue>& old = before.state.max_exp_avg_sq;
  if (old && old->data.size() == v.size())
    for (size_t i = 0; i < v.size(); ++i) v[i] = nan_max(old->data[i], v[i]);
  it->second = std::move(v);
}

OptimizerDescription adam_family(OptimizerKind kind, const char* name, const char* semantics, double weight_decay) {
  OptimizerDescription d;
  d.kind = kind;
  d.name = name;
  d.semantics = semantics;
  d.options = {
      number_option("lr", &OptimizerOptions::lr, 1e-3, {0.001, 0.01, 0.1, 0.5, 1.0, 0.05}, {-0.001}),
      pair_option("betas", &OptimizerOptions::betas, {0.9, 0.999}, {{0.9, 0.999}, {0.5, 0.9}, {0.0, 0.99}, {0.8, 0.0}},
                  {{1.0, 0.999}, {-0.1, 0.999}, {0.9, 1.0}}),
      number_option("eps", &OptimizerOptions::eps, 1e-8, {1e-8, 1e-6, 1e-3, 0.0}, {-1e-8}),
      number_option("weight_decay", &OptimizerOptions::weight_decay, weight_decay, {0.0, 0.01, 0.1}, {-0.1}),
      flag_option("amsgrad", &OptimizerOptions::amsgrad, false), maximize_option()};
  d.counts_steps = true;
  d.state = {{"exp_avg", &OptimizerStateObservation::exp_avg, StateScale::Gradient},
             {"exp_avg_sq", &OptimizerStateObservation::exp_avg_sq, StateScale::GradientSquared},
             {"max_exp_avg_sq", &OptimizerStateObservation::max_exp_avg_sq, StateScale::GradientSquared}};
  d.lr_values = d.options[0].values;
  d.rejects = [](const OptimizerOptions& o) {  // SEM-6.1
    const std::pair<double, double> betas = o.betas.value_or(std::make_pair(0.9, 0.999));
    auto in_unit = [](double b) { return 0 <= b && b < 1; };
    return !(o.lr.value_or(1e-3) >= 0) || !(o.eps.value_or(1e-8) >= 0) || !in_unit(betas.first) ||
           !in_unit(betas.second) || !(o.weight_decay.value_or(0) >= 0);
  };
  d.step_scales = adam_scales;
  d.state_from_observed_state = max_from_observed;
  return d;
}

std::optional<double> element(const TensorValue& t, size_t i) {
  if (i >= t.data.size()) return std::nullopt;
  return t.data[i];
}

// js-pytorch's optim.Adam: no bias correction, weight decay taken off p at the end.
std::optional<double> no_bias_correction(const StepFormulaInputs& in) {
  const OptimizerOptions& o = in.options;
  if (in.field != "value" || !in.after.state.exp_avg || !in.after.state.exp_avg_sq) return std::nullopt;
  const auto p = element(in.before.value, in.index), m = element(*in.after.state.exp_avg, in.index),
             s = element(*in.after.state.exp_avg_sq, in.index);
  if (!p || !m || !s || !o.lr) return std::nullopt;
  const double lr = *o.lr, eps = o.eps.value_or(0), wd = o.weight_decay.value_or(0);
  return *p + (-(*m * lr) / (std::sqrt(*s) + eps) + -(*p * (wd * lr)));  // js-pytorch's order: NaN at p = inf
}

// The specification's moment update from the implementation's own previous moments, grad and betas.
template <bool kDecoupled>
std::optional<double> moments_from_its_own_state(const StepFormulaInputs& in) {
  const OptimizerOptions& o = in.options;
  const bool first = in.field == "exp_avg";
  if ((!first && in.field != "exp_avg_sq") || !in.before.grad.defined || !o.betas) return std::nullopt;
  auto g = element(in.before.grad.value, in.index);
  const std::optional<TensorValue>& old = first ? in.before.state.exp_avg : in.before.state.exp_avg_sq;
  // Where the oracle had no moments before (its first step), the specification's are zero: moments the
  // implementation made up before its first step (never judged) are not a baseline.
  const bool oracle_had = in.oracle_before && (first ? in.oracle_before->state.exp_avg.has_value()
                                                     : in.oracle_before->state.exp_avg_sq.has_value());
  const double previous = oracle_had && old ? element(*old, in.index).value_or(0) : 0;
  if (!g) return std::nullopt;
  const auto p = element(in.before.value, in.index);  // Adam's L2 term (SEM-6.3); AdamW decays p instead
  if (!kDecoupled && o.weight_decay && p) *g += *o.weight_decay * *p;
  if (first) return o.betas->first * previous + (1 - o.betas->first) * *g;
  return o.betas->second * previous + (1 - o.betas->second) * *g * *g;
}

template <bool kDecoupled>
std::vector<StepFormulaVariant> adam_variants() {
  return {{"adam.no_bias_correction", "step: parameter values",
           "p = p_old - lr * exp_avg / (sqrt(exp_avg_sq) + eps) - lr * weight_decay * p_old, with the "
           "implementation's own moments and group options: js-pytorch's optim.Adam",
           no_bias_correction},
          {"adam.moments_from_its_own_state", "step: exp_avg and exp_avg_sq",
           "exp_avg = beta1 * m_old + (1 - beta1) * g, exp_avg_sq = beta2 * v_old + (1 - beta2) * g^2 from the "
           "implementation's own previous moments (zero where it had none), grad and betas: the specification's "
           "update, for a framework whose moments exist before the first step or whose step count differs",
           moments_from_its_own_state<kDecoupled>}};
}

// The generator's options of the Adam family.
template <OptimizerKind kKind>
void adam_generate(OptionDraws& draw, bool for_defaults, bool invalid_allowed, OptimizerOptions& o) {
  const OptimizerDescription& d = describe(kKind);
  if (draw.chance(70)) o.lr = draw.lr(d.lr_values);
  if (draw.chance(30)) o.betas = draw.element(find_option(kKind, "betas")->pair_values);
  if (draw.chance(20)) o.eps = draw.element(find_option(kKind, "eps")->values);
  if (draw.chance(35)) o.weight_decay = draw.element(find_option(kKind, "weight_decay")->values);
  if (draw.chance(35)) o.amsgrad = draw.chance(60);
  if (invalid_allowed && draw.chance(for_defaults ? 4 : 10)) {
    // SEM-6.1.
    switch (draw.below(6)) {
      case 0: o.lr = -0.001; break;
      case 1: o.eps = -1e-8; break;
      case 2: o.betas = std::make_pair(1.0, 0.999); break;
      case 3: o.betas = std::make_pair(-0.1, 0.999); break;
      case 4: o.betas = std::make_pair(0.9, 1.0); break;
      default: o.weight_decay = -0.1; break;
    }
  }
}

void adam_carry_into_change(OptionDraws&, const OptimizerOptions& other, OptimizerOptions& change) {
  if (other.betas) change.betas = other.betas;
  if (other.eps) change.eps = other.eps;
  if (other.amsgrad) change.amsgrad = other.amsgrad;
}

// Adam (kDecoupled false, SEM-6.3) or AdamW (SEM-6.4) with its hooks.
template <OptimizerKind kKind, bool kDecoupled>
OptimizerDescription adam_family_with_hooks(const char* name, const char* semantics, double weight_decay) {
  OptimizerDescription d = adam_family(kKind, name, semantics, weight_decay);
  d.decoupled_weight_decay = kDecoupled;
  d.generate_options = adam_generate<kKind>;
  d.carry_into_change = adam_carry_into_change;
  d.step_in_double = adam_step<kDecoupled>;
  d.step_variants = adam_variants<kDecoupled>();
  d.value_from_observed_state = adam_value_from_observed<kDecoupled>;
  return d;
}

}  // namespace

OptimizerDescription adam_description() {
  return adam_family_with_hooks<OptimizerKind::Adam, false>("adam", "SEM-6.1", 0);
}

OptimizerDescription adamw_description() {
  return adam_family_with_hooks<OptimizerKind::AdamW, true>("adamw", "SEM-6.4", 1e-2);
}

}  // namespace lockstep
