// SGD as data (SEMANTICS §5): options, state, and its step for the tolerance and the error budget.
#include <algorithm>
#include <cmath>

#include "conformance/program/optimizer_descriptions.h"

namespace lockstep {
namespace {

// A group's options as numbers (a traced group always sets lr; 0 where it does not, as SGD has no default).
struct Sgd {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
};
Sgd read(const OptimizerOptions& o) {
  return {o.lr.value_or(0), o.momentum.value_or(0), o.dampening.value_or(0), o.weight_decay.value_or(0),
          o.nesterov.value_or(false)};
}

// The L2 term, only when weight_decay != 0 (SEM-5.3): 0 * inf would make the term NaN.
double l2(const Sgd& o, double p) { return o.weight_decay != 0 ? o.weight_decay * p : 0.0; }

// The direction d (SEM-5.3) from p, g and the momentum buffer `buf` after its update (null: none).
std::vector<double> direction(const std::vector<double>& p, const std::vector<double>& g, const Sgd& o,
                              const std::vector<double>* buf) {
  const size_t n = p.size();
  std::vector<double> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = g[i] + l2(o, p[i]);
  if (o.momentum != 0 && buf && buf->size() == n)
    for (size_t i = 0; i < n; ++i) d[i] = o.nesterov ? d[i] + o.momentum * (*buf)[i] : (*buf)[i];
  return d;
}

// Tolerance (SEM-5.3): p - lr * (g + L2 + momentum * buf), at the largest lr and momentum of the parameter's groups;
// the momentum buffer combines the gradient (StateScale::Gradient).
void sgd_scales(const StepScaleInputs& in, StepScaleOutputs& out) {
  double lr = 0, momentum = 0;
  for (const OptimizerOptions& group : in.groups) {
    lr = std::max(lr, std::fabs(read(group).lr));
    momentum = std::max(momentum, std::fabs(read(group).momentum));
  }
  const size_t n = in.gradient.size();
  const std::optional<TensorValue>& buf_new = in.after.state.momentum_buffer;
  const std::optional<TensorValue>& buf_old = in.before.state.momentum_buffer;
  out.update.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    double buf = 0;
    if (buf_new && buf_new->data.size() == n) buf = std::max(buf, std::fabs(buf_new->data[i]));
    if (buf_old && buf_old->data.size() == n) buf = std::max(buf, std::fabs(buf_old->data[i]));
    out.update[i] = lr * (in.gradient[i] + momentum * buf);
  }
}

// SEM-5.3 in double: the buffer is a copy of d at its first step (no dampening), then buf * momentum + (1 -
// dampening) * d.
bool sgd_step(const OptimizerOptions& options, ShadowParam& s) {
  const Sgd o = read(options);
  const size_t n = s.p.size();
  const std::vector<double>* buf = nullptr;
  if (o.momentum != 0) {
    std::vector<double> d(n);
    for (size_t i = 0; i < n; ++i) d[i] = s.g[i] + l2(o, s.p[i]);
    auto it = s.state.find("momentum_buffer");
    if (it == s.state.end() || it->second.size() != n) {
      s.state["momentum_buffer"] = d;  // first step: a copy
    } else {
      for (size_t i = 0; i < n; ++i) it->second[i] = it->second[i] * o.momentum + (1 - o.dampening) * d[i];
    }
    buf = &s.state["momentum_buffer"];
  }
  const std::vector<double> d = direction(s.p, s.g, o, buf);
  for (size_t i = 0; i < n; ++i) s.p[i] -= o.lr * d[i];
  return true;
}

// The new value from this side's own observed momentum buffer.
std::optional<std::vector<double>> sgd_value_from_observed(const OptimizerOptions& options,
                                                           const ParamObservation& before,
                                                           const ParamObservation& after) {
  const Sgd o = read(options);
  if (o.momentum != 0 && !after.state.momentum_buffer) return std::nullopt;
  std::vector<double> p = before.value.data;
  const std::vector<double>* buf = after.state.momentum_buffer ? &after.state.momentum_buffer->data : nullptr;
  const std::vector<double> d = direction(p, before.grad.value.data, o, buf);
  for (size_t i = 0; i < p.size(); ++i) p[i] -= o.lr * d[i];
  return p;
}

// The generator's SGD options: lr always (SEM-5.1: no default), nesterov mostly where it is valid.
void sgd_generate(OptionDraws& draw, bool for_defaults, bool invalid_allowed, OptimizerOptions& o) {
  const OptimizerDescription& d = describe(OptimizerKind::SGD);
  auto values = [&](const char* name) -> const std::vector<double>& { return find_option(d.kind, name)->values; };
  o.lr = draw.lr(d.lr_values);
  if (draw.chance(50)) o.momentum = draw.element(values("momentum"));
  if (draw.chance(25)) o.dampening = draw.element(values("dampening"));
  if (draw.chance(30)) {
    const bool valid_nesterov = o.momentum && *o.momentum > 0 && (!o.dampening || *o.dampening == 0);
    o.nesterov = valid_nesterov ? draw.chance(80) : false;
  }
  if (draw.chance(30)) o.weight_decay = draw.element(values("weight_decay"));
  if (invalid_allowed && draw.chance(for_defaults ? 4 : 10)) {
    // SEM-5.2: rejected for the defaults; a group's own options are not validated.
    switch (draw.below(5)) {
      case 0: o.lr = -0.1; break;
      case 1: o.momentum = -0.5; break;
      case 2: o.weight_decay = -0.01; break;
      case 3: o.nesterov = true; o.momentum = 0.0; break;
      default: o.nesterov = true; o.momentum = 0.9; o.dampening = 0.5; break;
    }
  }
}

void sgd_carry_into_change(OptionDraws& draw, const OptimizerOptions& other, OptimizerOptions& change) {
  if (other.momentum && draw.chance(60)) change.momentum = other.momentum;
  if (other.dampening) change.dampening = other.dampening;
  if (other.nesterov) change.nesterov = other.nesterov;
}

void sgd_unset_invalid(OptimizerOptions& o) {  // SEM-5.2: nesterov needs a momentum and no dampening
  if (o.nesterov && *o.nesterov && (!o.momentum || *o.momentum <= 0 || o.dampening.value_or(0) != 0)) o.nesterov.reset();
}

// Foreach SGD with nesterov: the step leaves grad = grad_old + momentum * momentum_buffer.
std::optional<double> nesterov_adds_momentum_buffer_to_grad(const StepFormulaInputs& in) {
  if (in.field != "grad" || !in.before.grad.defined || !in.after.state.momentum_buffer) return std::nullopt;
  const std::vector<double>& g = in.before.grad.value.data;
  const std::vector<double>& b = in.after.state.momentum_buffer->data;
  if (in.index >= g.size() || in.index >= b.size()) return std::nullopt;
  return g[in.index] + in.options.momentum.value_or(0) * b[in.index];
}

}  // namespace

OptimizerDescription sgd_description() {
  OptimizerDescription d;
  d.kind = OptimizerKind::SGD;
  d.name = "sgd";
  d.semantics = "SEM-5";
  OptionDescription lr = number_option("lr", &OptimizerOptions::lr, 0, {0.1, 0.01, 0.5, 1.0, 0.05, 0.25, 0.001, 2.0},
                                       {-0.1});
  lr.has_default = false;  // SEM-5.1: SGD has no default learning rate
  d.options = {lr,
               number_option("momentum", &OptimizerOptions::momentum, 0, {0.9, 0.5, 0.99, 0.0}, {-0.5}),
               number_option("dampening", &OptimizerOptions::dampening, 0, {0.0, 0.1, 0.5}),
               number_option("weight_decay", &OptimizerOptions::weight_decay, 0, {0.0, 0.01, 0.1, 0.5}, {-0.01}),
               flag_option("nesterov", &OptimizerOptions::nesterov, false), maximize_option()};
  d.state = {{"momentum_buffer", &OptimizerStateObservation::momentum_buffer, StateScale::Gradient}};
  d.lr_values = d.options[0].values;
  d.step_bumps_version = false;
  d.rejects = [](const OptimizerOptions& o) {  // SEM-5.2
    const double momentum = o.momentum.value_or(0), dampening = o.dampening.value_or(0);
    return !(o.lr.value_or(0) >= 0) || !(momentum >= 0) || !(o.weight_decay.value_or(0) >= 0) ||
           (o.nesterov.value_or(false) && (momentum <= 0 || dampening != 0));
  };
  d.generate_options = sgd_generate;
  d.carry_into_change = sgd_carry_into_change;
  d.unset_invalid_combinations = sgd_unset_invalid;
  d.step_variants = {{"sgd.nesterov_adds_momentum_buffer_to_grad", "step: grads and the handles holding them",
                      "the step leaves grad = grad_old + momentum * momentum_buffer (foreach SGD with nesterov)",
                      nesterov_adds_momentum_buffer_to_grad}};
  d.step_scales = sgd_scales;
  d.step_in_double = sgd_step;
  d.value_from_observed_state = sgd_value_from_observed;
  return d;
}

}  // namespace lockstep
