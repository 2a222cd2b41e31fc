// RMSprop as data (SEMANTICS §14): options, state, and its step for the tolerance and the error budget.
#include <algorithm>
#include <cmath>
#include <limits>

#include "conformance/program/optimizer_descriptions.h"

namespace lockstep {
namespace {

double min_normal(DType d) {
  return d == DType::Float32 ? static_cast<double>(std::numeric_limits<float>::min()) : std::numeric_limits<double>::min();
}
const std::vector<double>* data_of(const std::optional<TensorValue>& t, size_t n) {
  return t && t->data.size() == n ? &t->data : nullptr;
}

// SEM-14.3: avg = sqrt(square_avg) + eps, or sqrt(square_avg - grad_avg^2) + eps when centered. The centered
// difference cancels where the gradient hardly varies: a few roundings of square_avg (4 ULP of it) move its
// square root by min(dx / (2 root), sqrt(dx)), so the update is judged at its magnitude times 1 + that
// relative change in ULPs.
void rmsprop_scales(const StepScaleInputs& in, StepScaleOutputs& out) {
  const OptimizerOptions& o = in.options;
  const size_t n = in.gradient.size();
  const std::vector<double>* sa = data_of(in.after.state.square_avg, n);
  if (!sa) return;
  const std::vector<double>* ga = o.centered.value_or(false) ? data_of(in.after.state.grad_avg, n) : nullptr;
  const std::vector<double>* buf_old = data_of(in.before.state.momentum_buffer, n);
  const std::vector<double>* buf_new = data_of(in.after.state.momentum_buffer, n);
  const DType dtype = in.after.value.dtype;
  const double u = unit_roundoff(dtype), lr = std::fabs(o.lr.value_or(0)), eps = o.eps.value_or(0);
  const double momentum = std::fabs(o.momentum.value_or(0));
  std::vector<double>& buf = out.state["momentum_buffer"];
  buf.assign(n, 0);
  out.update.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const double g = in.gradient[i];
    const double x = ga ? (*sa)[i] - (*ga)[i] * (*ga)[i] : (*sa)[i];
    if (!(x >= 0) || !std::isfinite(x)) continue;  // NaN (sqrt of a negative) and inf are compared exactly
    const double root = std::sqrt(x), avg = root + eps;
    if (!(avg > 0)) continue;
    double cond = 1;
    if (ga) {
      const double dx = 4 * u * std::fabs((*sa)[i]);
      const double droot = root > 0 ? std::min(dx / (2 * root), std::sqrt(dx)) : std::sqrt(dx);
      cond += droot / avg / u;
    }
    const double q = g / avg * cond;  // the g / avg term
    if (momentum != 0 && buf_new) {
      buf[i] = momentum * (buf_old ? std::fabs((*buf_old)[i]) : 0.0) + q;
      out.update[i] = lr * std::max(buf[i], std::fabs((*buf_new)[i]));
    } else {
      out.update[i] = 2 * lr * q;  // (-lr * g) / avg + p: three roundings
    }
    out.update[i] = std::max(out.update[i], min_normal(dtype) / avg);  // a subnormal -lr * g, divided
  }
}

// SEM-14.3 in double. The state is created at the first step from the options then (SEM-14.2). A later step that
// needs a tensor the state lacks fails, and does what the engines do before failing: it counts the step and updates
// square_avg, and grad_avg where centered finds one (a missing grad_avg fails first, a missing momentum buffer after
// it); the parameter is not changed. Returns false then (error_budget.cc carries the state it leaves).
bool rmsprop_step(const OptimizerOptions& o, ShadowParam& s) {
  const size_t n = s.p.size();
  const double lr = *o.lr, alpha = *o.alpha, eps = *o.eps, wd = *o.weight_decay, momentum = *o.momentum;
  const bool centered = *o.centered;
  if (!s.state.count("square_avg")) {
    s.state["square_avg"] = std::vector<double>(n, 0.0);
    if (momentum > 0) s.state["momentum_buffer"] = std::vector<double>(n, 0.0);
    if (centered) s.state["grad_avg"] = std::vector<double>(n, 0.0);
  }
  std::vector<double>& sa = s.state["square_avg"];
  if (sa.size() != n) return false;
  s.step += 1;
  std::vector<double> g(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] = s.g[i] + (wd != 0 ? wd * s.p[i] : 0.0);
    sa[i] = alpha * sa[i] + (1 - alpha) * g[i] * g[i];
  }
  std::vector<double> x = sa;
  if (centered) {
    auto it = s.state.find("grad_avg");
    if (it == s.state.end() || it->second.size() != n) return false;  // fails before touching grad_avg
    std::vector<double>& ga = it->second;
    for (size_t i = 0; i < n; ++i) {
      ga[i] = alpha * ga[i] + (1 - alpha) * g[i];
      x[i] -= ga[i] * ga[i];
    }
  }
  std::vector<double>* buf = nullptr;
  if (momentum > 0) {
    auto it = s.state.find("momentum_buffer");
    if (it == s.state.end() || it->second.size() != n) return false;  // fails after square_avg (and grad_avg)
    buf = &it->second;
  }
  for (size_t i = 0; i < n; ++i) {
    const double avg = std::sqrt(x[i]) + eps;
    if (buf) {
      double& b = (*buf)[i];
      b = momentum * b + g[i] / avg;
      s.p[i] -= lr * b;
    } else {
      s.p[i] -= lr * g[i] / avg;
    }
  }
  return true;
}

}  // namespace

OptimizerDescription rmsprop_description() {
  OptimizerDescription d;
  d.kind = OptimizerKind::RMSprop;
  d.name = "rmsprop";
  d.semantics = "SEM-14";
  d.since_protocol = 2;
  d.options = {number_option("lr", &OptimizerOptions::lr, 1e-2, {0.01, 0.001, 0.1, 0.5, 0.05}, {-0.01}),
               // alpha 0 is left out (unstable_values): centered, it makes the denominator sqrt(g^2 - g^2), the rounding error of
               // g^2, whose sign (NaN or not) any legitimate difference in rounding flips (SEM-14.3)
               number_option("alpha", &OptimizerOptions::alpha, 0.99, {0.9, 0.5, 0.1, 0.999, 1.0}, {-0.1}),
               number_option("eps", &OptimizerOptions::eps, 1e-8, {1e-6, 1e-3, 0.0}, {-1e-8}),
               number_option("weight_decay", &OptimizerOptions::weight_decay, 0, {0.01, 0.1}, {-0.1}),
               number_option("momentum", &OptimizerOptions::momentum, 0, {0.9, 0.5, 0.0}, {-0.5}),
               flag_option("centered", &OptimizerOptions::centered, false), maximize_option()};
  d.options[1].unstable_values = {0.0};
  d.counts_steps = true;
  d.state = {{"square_avg", &OptimizerStateObservation::square_avg, StateScale::GradientSquared},
             {"momentum_buffer", &OptimizerStateObservation::momentum_buffer},
             {"grad_avg", &OptimizerStateObservation::grad_avg, StateScale::Gradient}};
  d.lr_values = d.options[0].values;
  d.rejects = [](const OptimizerOptions& o) {  // SEM-14.1: NaN is rejected too; alpha > 1 is not
    return !(*o.lr >= 0) || !(*o.eps >= 0) || !(*o.momentum >= 0) || !(*o.weight_decay >= 0) || !(*o.alpha >= 0);
  };
  d.step_scales = rmsprop_scales;
  d.step_in_double = rmsprop_step;
  return d;
}

}  // namespace lockstep
