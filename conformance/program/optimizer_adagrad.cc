// Adagrad as data (SEMANTICS §15): options, state, and its step for the tolerance and the error budget.
#include <algorithm>
#include <cmath>
#include <limits>

#include "conformance/program/optimizer_descriptions.h"

namespace lockstep {
namespace {

double min_normal(DType d) {
  return d == DType::Float32 ? static_cast<double>(std::numeric_limits<float>::min()) : std::numeric_limits<double>::min();
}

// SEM-15.3: clr = lr / (1 + (step - 1) * lr_decay), sum += g^2, p -= clr * g / (sqrt(sum) + eps).
double step_lr(const OptimizerOptions& o, int64_t step) {
  return *o.lr / (1 + static_cast<double>(step - 1) * *o.lr_decay);
}

void adagrad_scales(const StepScaleInputs& in, StepScaleOutputs& out) {
  const size_t n = in.gradient.size();
  const std::optional<TensorValue>& sum = in.after.state.sum;
  if (!sum || sum->data.size() != n || !in.after.state.step) return;
  const double clr = std::fabs(step_lr(in.options, *in.after.state.step)), eps = in.options.eps.value_or(0);
  out.update.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const double std_dev = std::sqrt(std::fabs(sum->data[i])) + eps;
    if (!(std_dev > 0) || !std::isfinite(std_dev)) continue;
    // (-clr * g) / std + p: three roundings at the update's scale on each side.
    out.update[i] = std::max(2 * clr * in.gradient[i] / std_dev, min_normal(in.after.value.dtype) / std_dev);
  }
}

bool adagrad_step(const OptimizerOptions& o, ShadowParam& s) {
  auto it = s.state.find("sum");
  if (it == s.state.end()) return false;  // a parameter added after construction has no state: step fails
  std::vector<double>& sum = it->second;
  s.step += 1;
  const double clr = step_lr(o, s.step), wd = *o.weight_decay, eps = *o.eps;
  for (size_t i = 0; i < s.p.size(); ++i) {
    const double g = s.g[i] + (wd != 0 ? wd * s.p[i] : 0.0);
    sum[i] += g * g;
    s.p[i] -= clr * g / (std::sqrt(sum[i]) + eps);
  }
  return true;
}

}  // namespace

OptimizerDescription adagrad_description() {
  OptimizerDescription d;
  d.kind = OptimizerKind::Adagrad;
  d.name = "adagrad";
  d.semantics = "SEM-15";
  d.since_protocol = 2;
  d.options = {number_option("lr", &OptimizerOptions::lr, 1e-2, {0.01, 0.1, 0.5, 1.0, 0.05}, {-0.01}),
               number_option("lr_decay", &OptimizerOptions::lr_decay, 0, {0.1, 0.5, 0.01}, {-0.1}),
               number_option("weight_decay", &OptimizerOptions::weight_decay, 0, {0.01, 0.1}, {-0.1}),
               number_option("initial_accumulator_value", &OptimizerOptions::initial_accumulator_value, 0,
                             {0.1, 1.0, 0.5}, {-0.1}),
               number_option("eps", &OptimizerOptions::eps, 1e-10, {1e-8, 1e-3, 0.0}, {-1e-10}), maximize_option()};
  d.counts_steps = true;
  d.state = {{"sum", &OptimizerStateObservation::sum, StateScale::GradientSquared}};
  d.state_from_construction = true;  // SEM-15.2
  d.lr_values = d.options[0].values;
  d.rejects = [](const OptimizerOptions& o) {  // SEM-15.1, NaN included
    return !(*o.lr >= 0) || !(*o.lr_decay >= 0) || !(*o.weight_decay >= 0) || !(*o.initial_accumulator_value >= 0) ||
           !(*o.eps >= 0);
  };
  d.step_scales = adagrad_scales;
  d.step_in_double = adagrad_step;
  return d;
}

}  // namespace lockstep
