// The error budget of a gradient clipping (error_budget.h, SEMANTICS §9, §18): each side's clip in double at its own
// grads before the action.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "conformance/compare/error_budget.h"

namespace lockstep {
namespace {

const TensorValue* grad_before(const EngineState& s, const std::string& param) {
  const ParamObservation* p = s.param(param);
  return p && p->grad.defined ? &p->grad.value : nullptr;
}

// SEM-18.1, 18.2 in double: the total norm of the listed defined grads (a name listed twice counts twice) and the
// coefficient min(1, max_norm / (total + 1e-6)), NaN kept.
struct NormClip {
  double total = 0;
  double coefficient = 1;
};

NormClip norm_clip(const Action& a, const EngineState& before) {
  std::vector<double> norms;
  for (const std::string& name : a.params) {
    const TensorValue* g = grad_before(before, name);
    if (!g) continue;
    norms.push_back(vector_norm(g->data, a.norm_type));
  }
  NormClip c;
  if (norms.empty()) return c;
  c.total = vector_norm(norms, a.norm_type);
  c.coefficient = a.max_norm / (c.total + 1e-6);
  if (c.coefficient > 1) c.coefficient = 1;
  return c;
}

// How many times a tensor was scaled by `coefficient`, read from the oracle's own change (`before` to `after`): a grad
// listed twice, or a 0-d grad sharing storage with a listed one (SEM-3.7, SEM-18.4), is scaled once per listing.
// nullopt where the values cannot tell (the coefficient 1, 0 or not finite, or no finite non-zero element).
std::optional<int> times_scaled(const std::vector<double>& before, const std::vector<double>& after, double coefficient,
                                int most) {
  if (!std::isfinite(coefficient) || coefficient == 1 || coefficient == 0 || before.size() != after.size())
    return std::nullopt;
  std::optional<int> best;
  double best_error = 1e-3;  // relative; a wrong count is off by a factor of the coefficient
  for (int k = 0; k <= most; ++k) {
    double worst = 0;
    bool seen = false;
    for (size_t i = 0; i < before.size(); ++i) {
      if (!std::isfinite(before[i]) || before[i] == 0 || !std::isfinite(after[i])) continue;
      const double predicted = before[i] * std::pow(coefficient, k);
      if (predicted == 0) continue;
      seen = true;
      worst = std::max(worst, std::fabs(after[i] - predicted) / std::fabs(predicted));
    }
    if (seen && worst < best_error) {
      best_error = worst;
      best = k;
    }
  }
  return best;
}

int count_of(const std::vector<std::string>& names, const std::string& name) {
  return static_cast<int>(std::count(names.begin(), names.end(), name));
}

std::vector<double> scaled(const std::vector<double>& x, double coefficient, int times) {
  std::vector<double> out = x;
  for (double& v : out)
    for (int k = 0; k < times; ++k) v *= coefficient;
  return out;
}

// SEM-18.5: max with -clip_value, then min with clip_value; NaN stays NaN, a NaN clip_value gives NaN.
std::vector<double> clamped(const std::vector<double>& x, double clip_value) {
  std::vector<double> out = x;
  for (double& v : out)
    if (!std::isnan(v)) v = std::isnan(clip_value) ? clip_value : std::min(std::max(v, -clip_value), clip_value);
  return out;
}

std::vector<double> shift(const std::vector<double>& a, const std::vector<double>& b) { return finite_deviation(a, b); }

}  // namespace

double vector_norm(const std::vector<double>& values, double norm_type) {
  double acc = 0;
  for (double x : values) {
    if (std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
    const double m = std::fabs(x);
    if (norm_type == 1) acc += m;
    else if (norm_type == 2) acc += m * m;
    else acc = std::max(acc, m);
  }
  return norm_type == 2 ? std::sqrt(acc) : acc;
}

int64_t clip_reduction_length(const Action& a, const EngineState& before) {
  int64_t n = static_cast<int64_t>(a.params.size());
  for (const std::string& name : a.params)
    if (const TensorValue* g = grad_before(before, name)) n = std::max<int64_t>(n, static_cast<int64_t>(g->data.size()));
  return n;
}

ErrorBudget clip_budget(const Action& a, const Record& expected_before, const Record& actual_before,
                        const Record& expected_after) {
  ErrorBudget b;
  const EngineState& eb = expected_before.state;
  const EngineState& ab = actual_before.state;
  const EngineState& ea = expected_after.state;
  const int listed = static_cast<int>(a.params.size());
  std::optional<NormClip> ce, ca;
  if (a.kind == ActionKind::ClipGradNorm) {
    ce = norm_clip(a, eb);
    ca = norm_clip(a, ab);
    // The double evaluation stands for the engines' only where the oracle's total agrees with it: where a square left
    // the dtype's range (SEM-18.1: inf or 0 from finite grads) the two differ, and nothing is carried.
    const double got = expected_after.returned && expected_after.returned->data.size() == 1
                           ? expected_after.returned->data[0] : ce->total;
    const bool like_engines = std::fabs(got - ce->total) <= 1e-3 * std::fabs(ce->total);
    if (like_engines && std::isfinite(ca->total - ce->total)) b.fields["returned"] = {ca->total - ce->total};
  }
  // One tensor that the clip may have changed: `e0`/`a0` before on each side, `e1` the oracle's after; `times` the
  // listings that reach it by name (a grad: its parameter's; a handle: its parameter's where it holds that grad).
  auto carry = [&](const std::string& field, const std::vector<double>& e0, const std::vector<double>& a0,
                   const std::vector<double>& e1, int times) {
    // The oracle failed (nonfinite_norm): nothing changed on its side, the deviation stays.
    if (expected_after.error) {
      b.fields[field] = shift(a0, e0);
      return;
    }
    if (ce) {
      // Where the values cannot tell (a coefficient of 0, 1 or not finite), the listings by name; a tensor the oracle
      // left as it was, none.
      const int k = times_scaled(e0, e1, ce->coefficient, listed).value_or(e0 == e1 ? 0 : times);
      b.fields[field] = shift(scaled(a0, ca->coefficient, k), scaled(e0, ce->coefficient, k));
    } else {
      const bool clamps = times > 0 || !(e0 == e1);  // listed, or changed with a listed grad (SEM-3.7)
      b.fields[field] = clamps ? shift(clamped(a0, a.clip_value), clamped(e0, a.clip_value)) : shift(a0, e0);
    }
  };
  for (const ParamObservation& p : ea.params) {
    const TensorValue* e0 = grad_before(eb, p.name);
    const TensorValue* a0 = grad_before(ab, p.name);
    if (!e0 || !a0 || !p.grad.defined) continue;
    carry(p.name + " → grad", e0->data, a0->data, p.grad.value.data, count_of(a.params, p.name));
  }
  for (const HandleObservation& h : ea.handles) {
    const HandleObservation* e0 = eb.handle(h.name);
    const HandleObservation* a0 = ab.handle(h.name);
    if (!e0 || !a0 || !e0->defined || !a0->defined || !h.defined) continue;
    // By name: the handle still holds a listed parameter's grad when its values are that grad's (the oracle's).
    int times = 0;
    for (const ParamObservation& p : eb.params)
      if (p.grad.defined && p.grad.value == e0->value) times = std::max(times, count_of(a.params, p.name));
    carry("handle " + h.name + " → value", e0->value.data, a0->value.data, h.value.data, times);
  }
  return b;
}

}  // namespace lockstep
