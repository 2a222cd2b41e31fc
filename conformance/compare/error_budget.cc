// The error budget (see error_budget.h, SEMANTICS §9).
#include "conformance/compare/error_budget.h"

#include "conformance/program/optimizer_descriptions.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "conformance/compare/tolerance.h"

namespace lockstep {

std::vector<double> finite_deviation(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d(a.size(), 0.0);
  if (a.size() != b.size()) return d;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i] - b[i];
    d[i] = std::isfinite(x) ? x : 0.0;
  }
  return d;
}

const std::vector<double>* ErrorBudget::find(const std::string& field) const {
  auto it = fields.find(field);
  return it == fields.end() ? nullptr : &it->second;
}

const std::pair<std::vector<double>, std::vector<double>>* ErrorBudget::evaluation(const std::string& field) const {
  auto it = evaluations.find(field);
  return it == evaluations.end() ? nullptr : &it->second;
}

namespace {

std::vector<double> deviation(const std::vector<double>& a, const std::vector<double>& b) {
  return finite_deviation(a, b);
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

ErrorBudget load_budget(const EngineState& expected_saved, const EngineState& actual_saved) {
  ErrorBudget b;
  for (const ParamObservation& e : expected_saved.params) {
    const ParamObservation* a = actual_saved.param(e.name);
    if (!a) continue;
    for (const StateTensorDescription& t : all_state_tensors()) {
      const std::optional<TensorValue>& se = e.state.*t.field;
      const std::optional<TensorValue>& sa = a->state.*t.field;
      if (se && sa) carry(b, e.name + " → " + t.name, sa->data, se->data);
    }
  }
  return b;
}

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
// The step in double, one side at a time, as the optimizer's description computes it (optimizer_descriptions.h).

namespace {

// One parameter's numbers on one side, as the step goes through the groups.
struct Shadow {
  std::vector<double> p, g;
  std::map<std::string, std::vector<double>> state;  // per state tensor name; absent: not (yet) created
  bool failed = false;                                // its step failed on this state (run_step stopped)
  int64_t step = 0;
  int occurrences = 0;
  OptimizerOptions last_options;  // of the last group that stepped it, resolved
  std::vector<double> peak;       // the largest |p| per element, before and after every update
};

// The parameter as the step reads it: under maximize its gradient negated (SEM-20.1).
ParamObservation as_stepped(const ParamObservation& p, const OptimizerOptions& options) {
  ParamObservation out = p;
  if (options.maximize.value_or(false))
    for (double& g : out.grad.value.data) g = -g;
  return out;
}

void raise_peak(Shadow& s) {
  if (s.peak.size() != s.p.size()) s.peak.assign(s.p.size(), 0.0);
  for (size_t i = 0; i < s.p.size(); ++i)
    if (std::isfinite(s.p[i])) s.peak[i] = std::max(s.peak[i], std::fabs(s.p[i]));
}

// Runs the step on one side's `before` record; returns the shadows of every parameter that stepped. A step that fails
// (step_in_double returns false, SEM-14.2, SEM-15.2) stops there, as the engines' does: the failing parameter keeps
// what its step changed before failing, and no parameter after it is updated.
std::map<std::string, Shadow> run_step(OptimizerKind kind, const Record& before,
                                       const std::vector<GroupObservation>& groups) {
  const OptimizerDescription& description = describe(kind);
  std::map<std::string, Shadow> shadows;
  bool stopped = false;
  for (const GroupObservation& group : groups) {
    if (stopped) break;
    const OptimizerOptions options = resolved_options(kind, group.options);
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
        s.step = p->state.step.value_or(0);
        for (const StateTensorDescription& t : description.state)
          if (const std::optional<TensorValue>& v = p->state.*t.field) s.state[t.name] = v->data;
      }
      ++s.occurrences;
      s.last_options = options;
      raise_peak(s);
      ShadowParam shadow{s.p, s.g, s.step, s.state};
      if (options.maximize.value_or(false))  // SEM-20.1: the step reads the negated gradient, .grad keeps its own
        for (double& g : shadow.g) g = -g;
      const bool ok = description.step_in_double(options, shadow);
      // A failing step still counted and updated what it reached (RMSprop's square_avg, SEM-14.2): those values are
      // the engines' too, and carry the inputs' deviation like any other. The parameter is not changed.
      s.step = shadow.step;
      s.state = std::move(shadow.state);
      if (ok) {
        s.p = std::move(shadow.p);
      } else {
        s.failed = true;
        stopped = true;
      }
      raise_peak(s);
    }
  }
  return shadows;
}

}  // namespace

std::map<std::string, RepeatedUpdate> repeated_updates(OptimizerKind kind, const Record& before,
                                                       const std::vector<GroupObservation>& groups) {
  std::map<std::string, RepeatedUpdate> out;
  for (auto& [name, s] : run_step(kind, before, groups))
    if (s.occurrences > 1) out[name] = RepeatedUpdate{s.occurrences, s.peak};
  return out;
}

ErrorBudget step_budget(OptimizerKind kind, const Record& expected_before, const Record& actual_before,
                        const Record& expected_after, const Record& actual_after) {
  ErrorBudget b;
  const OptimizerDescription& description = describe(kind);
  // Each side with its own group options (they are compared exactly: a difference the expectations accepted, a
  // framework's other default, is what that side computed with), where both have the same groups of parameters.
  bool same_groups = expected_after.state.groups.size() == actual_after.state.groups.size();
  for (size_t i = 0; same_groups && i < expected_after.state.groups.size(); ++i)
    same_groups = expected_after.state.groups[i].params == actual_after.state.groups[i].params;
  const std::vector<GroupObservation>& actual_groups =
      same_groups ? actual_after.state.groups : expected_after.state.groups;
  std::map<std::string, Shadow> e = run_step(kind, expected_before, expected_after.state.groups);
  std::map<std::string, Shadow> a = run_step(kind, actual_before, actual_groups);
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
  for (auto& entry : e) {
    const std::string& name = entry.first;  // not a structured binding: C++17 lambdas cannot capture one
    Shadow& se = entry.second;
    auto it = a.find(name);
    if (it == a.end()) continue;
    Shadow& sa = it->second;
    const ParamObservation* eb = expected_before.state.param(name);
    const ParamObservation* ab = actual_before.state.param(name);
    const ParamObservation* ea = expected_after.state.param(name);
    const ParamObservation* aa = actual_after.state.param(name);
    if (!same_state(eb, ab) || !same_state(ea, aa)) continue;
    // A step that failed on one side only is a structural difference (the error kind), no rounding to carry. Where
    // both failed at the same parameter, what they updated before failing carries the deviation (SEM-14.2).
    if (se.failed != sa.failed) continue;
    // Where the step touched the parameter once: from each side's own new state, as its engine used it
    // (error_budget.h).
    if (se.occurrences == 1 && eb && ab && ea && aa) {
      if (description.value_from_observed_state) {
        auto pe = description.value_from_observed_state(se.last_options, as_stepped(*eb, se.last_options), *ea);
        auto pa = description.value_from_observed_state(sa.last_options, as_stepped(*ab, sa.last_options), *aa);
        if (pe && pa) {
          se.p = std::move(*pe);
          sa.p = std::move(*pa);
        }
      }
      if (description.state_from_observed_state) {
        description.state_from_observed_state(*eb, *ea, se.state);
        description.state_from_observed_state(*ab, *aa, sa.state);
      }
    }
    if (same_steps(eb, ab) && same_steps(ea, aa)) carry(b, name + " → value", sa.p, se.p);
    for (const auto& [field, values] : se.state) {
      auto other = sa.state.find(field);
      if (other != sa.state.end()) carry(b, name + " → " + field, other->second, values);
    }
  }
  return b;
}

}  // namespace lockstep
