// The error budget (see error_budget.h, SEMANTICS §9).
#include "conformance/compare/error_budget.h"

#include "conformance/program/optimizer_descriptions.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "conformance/compare/tolerance.h"

namespace lockstep {

const std::vector<double>* ErrorBudget::find(const std::string& field) const {
  auto it = fields.find(field);
  return it == fields.end() ? nullptr : &it->second;
}

const std::pair<std::vector<double>, std::vector<double>>* ErrorBudget::evaluation(const std::string& field) const {
  auto it = evaluations.find(field);
  return it == evaluations.end() ? nullptr : &it->second;
}

namespace {

// a - b per element (the actual side minus the expected side); 0 where it is not finite or the sizes differ.
std::vector<double> deviation(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d(a.size(), 0.0);
  if (a.size() != b.size()) return d;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i] - b[i];
    d[i] = std::isfinite(x) ? x : 0.0;
  }
  return d;
}

void add_into(std::vector<double>& into, const std::vector<double>& add) {
  if (into.size() != add.size()) return;
  for (size_t i = 0; i < into.size(); ++i) into[i] += add[i];
}

// The budget of `field` from f at each side's inputs: the signed shift, and both evaluations as they are.
void carry(ErrorBudget& b, const std::string& field, const std::vector<double>& at_actual,
           const std::vector<double>& at_expected) {
  b.fields[field] = deviation(at_actual, at_expected);
  if (at_actual.size() == at_expected.size()) b.evaluations[field] = {at_expected, at_actual};
}

const TensorValue* grad_of(const EngineState& s, const std::string& param) {
  const ParamObservation* p = s.param(param);
  return p && p->grad.defined ? &p->grad.value : nullptr;
}

}  // namespace

ErrorBudget forward_budget(const Expr& loss, const EngineState& expected_at_forward,
                           const EngineState& actual_at_forward) {
  ErrorBudget b;
  ExactEvaluation e = exact_evaluation(loss, expected_at_forward, nullptr);
  ExactEvaluation a = exact_evaluation(loss, actual_at_forward, nullptr);
  if (e.ok && a.ok) carry(b, "output → value", a.output, e.output);
  return b;
}

ErrorBudget backward_budget(const Expr& loss, const EngineState& expected_at_forward,
                            const EngineState& actual_at_forward, const std::vector<double>* gradient,
                            const Record& expected_before, const Record& actual_before,
                            const std::map<std::string, std::string>& handle_param) {
  ErrorBudget b;
  ExactEvaluation e = exact_evaluation(loss, expected_at_forward, gradient);
  ExactEvaluation a = exact_evaluation(loss, actual_at_forward, gradient);
  if (!e.ok || !a.ok) return b;
  for (const auto& [param, contribution] : e.grad) {
    auto it = a.grad.find(param);
    if (it == a.grad.end()) continue;
    std::vector<double> budget = deviation(it->second, contribution);
    // SEM-3.2, SEM-3.3: a defined grad is the sum of what it was and the contribution.
    const TensorValue* ge = grad_of(expected_before.state, param);
    const TensorValue* ga = grad_of(actual_before.state, param);
    // f at each side's inputs: the grad it had plus the contribution at its own parameters.
    std::vector<double> at_expected = contribution, at_actual = it->second;
    bool evaluated = (ge != nullptr) == (ga != nullptr) && at_expected.size() == at_actual.size();
    if (ge && ga) {
      add_into(budget, deviation(ga->data, ge->data));
      evaluated = evaluated && ge->data.size() == at_expected.size() && ga->data.size() == at_actual.size();
      add_into(at_expected, ge->data);
      add_into(at_actual, ga->data);
    }
    b.fields[param + " → grad"] = std::move(budget);
    if (evaluated) b.evaluations[param + " → grad"] = {std::move(at_expected), std::move(at_actual)};
  }
  // SEM-3.7: two 0-d grads can share one storage (add(sum(p), sum(q)) of 0-d leaves), so a 0-d parameter the
  // loss does not reach may still see its grad change with another's accumulation. When exactly one reached
  // parameter is 0-d (the only possible partner), an unreached 0-d grad carries its own earlier deviation plus
  // that partner's contribution deviation; otherwise no shift (the partner is unknown).
  const std::string* partner = nullptr;
  int reached_0d = 0;
  for (const auto& [param, contribution] : e.grad) {
    const ParamObservation* p = expected_before.state.param(param);
    if (p && p->value.shape.empty()) {
      ++reached_0d;
      partner = &param;
    }
  }
  auto partner_actual = partner ? a.grad.find(*partner) : a.grad.end();
  if (reached_0d == 1 && partner_actual != a.grad.end()) {
    auto it = partner_actual;
    const std::vector<double> contribution_deviation = deviation(it->second, e.grad.at(*partner));
    for (const ParamObservation& p : expected_before.state.params) {
      if (e.grad.count(p.name) || !p.value.shape.empty() || !p.grad.defined || p.grad.value.data.size() != 1) continue;
      const TensorValue* ga = grad_of(actual_before.state, p.name);
      if (!ga || ga->data.size() != 1 || contribution_deviation.size() != 1) continue;
      std::vector<double> budget = deviation(ga->data, p.grad.value.data);
      add_into(budget, contribution_deviation);
      b.fields[p.name + " → grad"] = std::move(budget);
    }
  }
  for (const auto& [handle, param] : handle_param) {
    const std::vector<double>* g = b.find(param + " → grad");
    if (g) b.fields["handle " + handle + " → value"] = *g;
    if (const auto* ev = b.evaluation(param + " → grad")) b.evaluations["handle " + handle + " → value"] = *ev;
  }
  return b;
}

ErrorBudget hold_grad_budget(const std::string& handle, const std::string& param, const Record& expected_after,
                             const Record& actual_after) {
  ErrorBudget b;
  const TensorValue* ge = grad_of(expected_after.state, param);
  const TensorValue* ga = grad_of(actual_after.state, param);
  if (ge && ga) carry(b, "handle " + handle + " → value", ga->data, ge->data);
  return b;
}

// ---------------------------------------------------------------------------------------------------------
// The step in double (SEMANTICS §5.3, §6.3, §6.4), one side at a time.

namespace {

// One parameter's numbers on one side, as the step goes through the groups.
struct Shadow {
  std::vector<double> p, g;
  std::optional<std::vector<double>> buf, m, v, vmax;
  std::map<std::string, std::vector<double>> state;  // optimizers with a step_in_double (descriptions)
  bool failed = false;                                // their step failed on this state (run_step stopped)
  int64_t step = 0;
  int occurrences = 0;
  std::vector<double> peak;  // the largest |p| per element, before and after every update
};

void raise_peak(Shadow& s) {
  if (s.peak.size() != s.p.size()) s.peak.assign(s.p.size(), 0.0);
  for (size_t i = 0; i < s.p.size(); ++i)
    if (std::isfinite(s.p[i])) s.peak[i] = std::max(s.peak[i], std::fabs(s.p[i]));
}

std::optional<std::vector<double>> data_of(const std::optional<TensorValue>& t) {
  if (!t) return std::nullopt;
  return t->data;
}

struct ResolvedOptions {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool nesterov = false, amsgrad = false;
};

ResolvedOptions resolve(const OptimizerOptions& o) {
  ResolvedOptions r;
  r.lr = o.lr.value_or(0);
  r.momentum = o.momentum.value_or(0);
  r.dampening = o.dampening.value_or(0);
  r.weight_decay = o.weight_decay.value_or(0);
  if (o.betas) std::tie(r.beta1, r.beta2) = *o.betas;
  r.eps = o.eps.value_or(1e-8);
  r.nesterov = o.nesterov.value_or(false);
  r.amsgrad = o.amsgrad.value_or(false);
  return r;
}

// The L2 term, only when weight_decay != 0 (SEM-5.3, SEM-6.3): 0 * inf would make the term NaN.
double l2(const ResolvedOptions& o, double p) { return o.weight_decay != 0 ? o.weight_decay * p : 0.0; }

// The SGD direction d (SEM-5.3) from the shadow's p, g and the momentum buffer `buf` after its update.
std::vector<double> sgd_direction(const Shadow& s, const ResolvedOptions& o, const std::vector<double>* buf) {
  const size_t n = s.p.size();
  std::vector<double> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = s.g[i] + l2(o, s.p[i]);
  if (o.momentum != 0 && buf && buf->size() == n)
    for (size_t i = 0; i < n; ++i) d[i] = o.nesterov ? d[i] + o.momentum * (*buf)[i] : (*buf)[i];
  return d;
}

void sgd_step(Shadow& s, const ResolvedOptions& o) {
  const size_t n = s.p.size();
  if (o.momentum != 0) {
    std::vector<double> d(n);
    for (size_t i = 0; i < n; ++i) d[i] = s.g[i] + l2(o, s.p[i]);
    if (!s.buf || s.buf->size() != n) {
      s.buf = d;  // first step: a copy, no dampening
    } else {
      for (size_t i = 0; i < n; ++i) (*s.buf)[i] = (*s.buf)[i] * o.momentum + (1 - o.dampening) * d[i];
    }
  }
  const std::vector<double> d = sgd_direction(s, o, s.buf ? &*s.buf : nullptr);
  for (size_t i = 0; i < n; ++i) s.p[i] -= o.lr * d[i];
}

// The parameter update of Adam/AdamW from the decayed parameter and the moments (SEM-6.3).
void adam_update(std::vector<double>& p, const std::vector<double>& m, const std::vector<double>& v,
                 const ResolvedOptions& o, int64_t step) {
  const double bc1 = 1 - std::pow(o.beta1, static_cast<double>(step));
  const double bc2 = 1 - std::pow(o.beta2, static_cast<double>(step));
  if (m.size() != p.size() || v.size() != p.size()) return;
  for (size_t i = 0; i < p.size(); ++i) {
    const double denom = std::sqrt(v[i]) / std::sqrt(bc2) + o.eps;
    p[i] -= (o.lr / bc1) * m[i] / denom;
  }
}

void adam_step(Shadow& s, const ResolvedOptions& o, bool decoupled) {
  const size_t n = s.p.size();
  s.step += 1;
  if (decoupled && o.weight_decay != 0)
    for (size_t i = 0; i < n; ++i) s.p[i] *= 1 - o.lr * o.weight_decay;
  std::vector<double> g = s.g;
  if (!decoupled)
    for (size_t i = 0; i < n; ++i) g[i] += l2(o, s.p[i]);
  if (!s.m || s.m->size() != n) s.m = std::vector<double>(n, 0.0);
  if (!s.v || s.v->size() != n) s.v = std::vector<double>(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    (*s.m)[i] = (*s.m)[i] * o.beta1 + (1 - o.beta1) * g[i];
    (*s.v)[i] = (*s.v)[i] * o.beta2 + (1 - o.beta2) * g[i] * g[i];
  }
  if (o.amsgrad) {
    if (!s.vmax || s.vmax->size() != n) s.vmax = std::vector<double>(n, 0.0);
    for (size_t i = 0; i < n; ++i) {
      const double a = (*s.vmax)[i], b = (*s.v)[i];
      (*s.vmax)[i] = std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b);
    }
  }
  adam_update(s.p, *s.m, o.amsgrad ? *s.vmax : *s.v, o, s.step);
}

// Runs the step on one side's `before` record; returns the shadows of every parameter that stepped. A step that fails
// (step_in_double returns false, SEM-14.2, SEM-15.2) stops there, as the engines' does: the failing parameter keeps
// what its step changed before failing, and no parameter after it is updated.
std::map<std::string, Shadow> run_step(OptimizerKind kind, const Record& before,
                                       const std::vector<GroupObservation>& groups,
                                       std::map<std::string, ResolvedOptions>& last_options) {
  std::map<std::string, Shadow> shadows;
  bool stopped = false;
  for (const GroupObservation& group : groups) {
    if (stopped) break;
    const ResolvedOptions o = resolve(group.options);
    for (const std::string& name : group.params) {
      if (stopped) break;
      const ParamObservation* p = before.state.param(name);
      if (!p || !p->grad.defined) continue;  // SEM-4.3: skipped
      auto [it, fresh] = shadows.try_emplace(name);
      Shadow& s = it->second;
      if (fresh) {
        s.p = p->value.data;
        s.g = p->grad.value.data;
        if (s.g.size() != s.p.size()) {
          shadows.erase(it);
          continue;
        }
        s.buf = data_of(p->state.momentum_buffer);
        s.m = data_of(p->state.exp_avg);
        s.v = data_of(p->state.exp_avg_sq);
        s.vmax = data_of(p->state.max_exp_avg_sq);
        s.step = p->state.step.value_or(0);
        for (const StateTensorDescription& t : describe(kind).state)
          if (const std::optional<TensorValue>& v = p->state.*t.field) s.state[t.name] = v->data;
      }
      ++s.occurrences;
      last_options[name] = o;
      raise_peak(s);
      if (const auto step_in_double = describe(kind).step_in_double) {  // optimizer_descriptions.h
        ShadowParam shadow{s.p, s.g, s.step, s.state};
        const bool ok = step_in_double(resolved_options(kind, group.options), shadow);
        // A failing step still counted and updated what it reached (RMSprop's square_avg, SEM-14.2): those values
        // are the engines' too, and carry the inputs' deviation like any other. The parameter is not changed.
        s.step = shadow.step;
        s.state = std::move(shadow.state);
        if (ok) {
          s.p = std::move(shadow.p);
        } else {
          s.failed = true;
          stopped = true;
        }
      } else if (kind == OptimizerKind::SGD) {
        sgd_step(s, o);
      } else {
        adam_step(s, o, describe(kind).decoupled_weight_decay);
      }
      raise_peak(s);
    }
  }
  return shadows;
}

// The parameter after a single-occurrence step, recomputed from the side's own observed new moments or
// momentum buffer (what its engine used), from the side's previous value and grad.
std::optional<std::vector<double>> parameter_from_observed(OptimizerKind kind, const ParamObservation& before,
                                                           const ParamObservation& after,
                                                           const ResolvedOptions& o) {
  Shadow s;
  s.p = before.value.data;
  s.g = before.grad.value.data;
  if (kind == OptimizerKind::SGD) {
    if (o.momentum != 0 && !after.state.momentum_buffer) return std::nullopt;
    std::optional<std::vector<double>> buf = data_of(after.state.momentum_buffer);
    const std::vector<double> d = sgd_direction(s, o, buf ? &*buf : nullptr);
    for (size_t i = 0; i < s.p.size(); ++i) s.p[i] -= o.lr * d[i];
    return s.p;
  }
  const TensorValue* v = o.amsgrad ? (after.state.max_exp_avg_sq ? &*after.state.max_exp_avg_sq : nullptr)
                                   : (after.state.exp_avg_sq ? &*after.state.exp_avg_sq : nullptr);
  if (!after.state.exp_avg || !v || !after.state.step) return std::nullopt;
  if (describe(kind).decoupled_weight_decay && o.weight_decay != 0)
    for (double& x : s.p) x *= 1 - o.lr * o.weight_decay;
  adam_update(s.p, after.state.exp_avg->data, v->data, o, *after.state.step);
  return s.p;
}

}  // namespace

std::map<std::string, RepeatedUpdate> repeated_updates(OptimizerKind kind, const Record& before,
                                                       const std::vector<GroupObservation>& groups) {
  std::map<std::string, ResolvedOptions> options;
  std::map<std::string, RepeatedUpdate> out;
  for (auto& [name, s] : run_step(kind, before, groups, options))
    if (s.occurrences > 1) out[name] = RepeatedUpdate{s.occurrences, s.peak};
  return out;
}

ErrorBudget step_budget(OptimizerKind kind, const Record& expected_before, const Record& actual_before,
                        const Record& expected_after, const Record& actual_after) {
  ErrorBudget b;
  // Each side with its own group options (they are compared exactly: a difference the expectations accepted, a
  // framework's other default, is what that side computed with), where both have the same groups of parameters.
  std::map<std::string, ResolvedOptions> options, actual_options;
  bool same_groups = expected_after.state.groups.size() == actual_after.state.groups.size();
  for (size_t i = 0; same_groups && i < expected_after.state.groups.size(); ++i)
    same_groups = expected_after.state.groups[i].params == actual_after.state.groups[i].params;
  const std::vector<GroupObservation>& actual_groups =
      same_groups ? actual_after.state.groups : expected_after.state.groups;
  std::map<std::string, Shadow> e = run_step(kind, expected_before, expected_after.state.groups, options);
  std::map<std::string, Shadow> a = run_step(kind, actual_before, actual_groups, actual_options);
  // The same optimizer state tensors on both sides, before and after: a deviation is carried only between
  // like states. A state tensor one side lacks (accepted only as a masked structural difference, or not at
  // all) is no rounding to carry: the step's values are then compared without a budget.
  // Step counts apart (a framework that keeps none, accepted as a masked structural difference): the moments, which
  // do not read the count, still carry their deviation; the parameter, whose bias correction reads it, does not.
  auto same_steps = [](const ParamObservation* x, const ParamObservation* y) {
    return x && y && x->state.step == y->state.step;
  };
  auto same_state = [](const ParamObservation* x, const ParamObservation* y) {
    if (!x || !y || x->grad.defined != y->grad.defined) return false;
    for (const StateTensorDescription& t : all_state_tensors())
      if ((x->state.*t.field).has_value() != (y->state.*t.field).has_value()) return false;
    return true;
  };
  const bool described = describe(kind).step_in_double != nullptr;
  for (auto& entry : e) {
    const std::string& name = entry.first;  // not a structured binding: C++17 lambdas cannot capture one
    Shadow& se = entry.second;
    auto it = a.find(name);
    if (it == a.end()) continue;
    Shadow& sa = it->second;
    // The parameter: from each side's own new state where the step touched it once (error_budget.h).
    const ParamObservation* eb = expected_before.state.param(name);
    const ParamObservation* ab = actual_before.state.param(name);
    const ParamObservation* ea = expected_after.state.param(name);
    const ParamObservation* aa = actual_after.state.param(name);
    if (!same_state(eb, ab) || !same_state(ea, aa)) continue;
    const bool counted_alike = same_steps(eb, ab) && same_steps(ea, aa);
    if (described) {
      // A step that failed on one side only is a structural difference (the error kind), no rounding to carry. Where
      // both failed at the same parameter, what they updated before failing carries the deviation (SEM-14.2).
      if (se.failed != sa.failed) continue;
      if (counted_alike) carry(b, name + " → value", sa.p, se.p);
      for (const auto& [field, values] : se.state) {
        auto other = sa.state.find(field);
        if (other != sa.state.end()) carry(b, name + " → " + field, other->second, values);
      }
      continue;
    }
    if (se.occurrences == 1 && eb && ab && ea && aa) {
      auto pe = parameter_from_observed(kind, *eb, *ea, options[name]);
      auto pa = parameter_from_observed(kind, *ab, *aa, actual_options[name]);
      if (pe && pa) {
        se.p = std::move(*pe);
        sa.p = std::move(*pa);
      }
    }
    if (counted_alike) carry(b, name + " → value", sa.p, se.p);
    auto field = [&](const char* what, const std::optional<std::vector<double>>& x,
                     const std::optional<std::vector<double>>& y) {
      if (x && y) carry(b, name + " → " + what, *y, *x);
    };
    field("momentum_buffer", se.buf, sa.buf);
    field("exp_avg", se.m, sa.m);
    field("exp_avg_sq", se.v, sa.v);
    // max(v_max, v) reads the new second moment in place: each side's own.
    if (se.vmax && sa.vmax && ea && aa && ea->state.exp_avg_sq && aa->state.exp_avg_sq && se.occurrences == 1 &&
        eb && ab) {
      auto vmax_of = [](const ParamObservation& before, const ParamObservation& after) {
        std::vector<double> v = after.state.exp_avg_sq->data;
        if (before.state.max_exp_avg_sq && before.state.max_exp_avg_sq->data.size() == v.size())
          for (size_t i = 0; i < v.size(); ++i) {
            const double x = before.state.max_exp_avg_sq->data[i];
            v[i] = std::isnan(x) || std::isnan(v[i]) ? std::nan("") : std::max(x, v[i]);
          }
        return v;
      };
      carry(b, name + " → max_exp_avg_sq", vmax_of(*ab, *aa), vmax_of(*eb, *ea));
    } else {
      field("max_exp_avg_sq", se.vmax, sa.vmax);
    }
  }
  return b;
}

}  // namespace lockstep
