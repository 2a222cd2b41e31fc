// The comparator: records compared field by field (see comparator.h, SEMANTICS §8, §9).
#include "conformance/compare/comparator.h"

#include "conformance/program/optimizer_descriptions.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace lockstep {

std::string number_text(double v, DType dtype) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (dtype == DType::Float32 && static_cast<double>(static_cast<float>(v)) == v)
    return fmt::format("{}", static_cast<float>(v));
  return fmt::format("{}", v);
}

std::string describe_bound(double allowed_ulps, double scale, DType dtype) {
  return fmt::format("{} ulp of {} ({})", allowed_ulps, scale, dtype_name(dtype));
}

std::string centre_text(const Difference& d) {
  if (d.kind != DifferenceKind::Numeric || d.omitted > 0 || d.carried == 0 || std::isnan(d.centre)) return "";
  return fmt::format("{} at its own inputs, {:+.3g} carried", d.centre, d.carried);
}

std::string difference_text(const Difference& d) {
  std::string s = d.path + ": expected " + d.expected_text;
  const std::string centre = centre_text(d);
  if (!centre.empty()) s += " (" + centre + ")";
  if (d.omitted > 0) return d.path + ": " + d.expected_text + " (" + d.bound + ")";
  s += ", actual " + d.actual_text;
  if (d.kind == DifferenceKind::Numeric && !std::isnan(d.bound_value))
    s += fmt::format(": error {:.3g} > bound {:.3g} ({})", d.absolute_error, d.bound_value, d.bound);
  else if (!d.bound.empty())
    s += " (" + d.bound + ")";
  return s;
}

bool has_structural_difference(const std::vector<Difference>& differences) {
  for (const Difference& d : differences)
    if (d.kind == DifferenceKind::Structure) return true;
  return false;
}

namespace {

// At most this many out-of-tolerance elements per tensor are listed; one more entry counts the rest.
constexpr int kMaxElementsPerTensor = 8;

std::string index_text(const Shape& shape, size_t flat) {
  if (shape.empty()) return "";
  std::vector<int64_t> index(shape.size());
  int64_t rest = static_cast<int64_t>(flat);
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t extent = std::max<int64_t>(1, shape[d]);
    index[d] = rest % extent;
    rest /= extent;
  }
  std::string out = "[";
  for (size_t d = 0; d < index.size(); ++d) out += (d ? "," : "") + std::to_string(index[d]);
  return out + "]";
}

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (size_t d = 0; d < s.size(); ++d) out += (d ? "," : "") + std::to_string(s[d]);
  return out + "]";
}

std::string bool_text(bool b) { return b ? "true" : "false"; }

bool same_number(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }
std::string defined_text(bool b) { return b ? "defined" : "undefined"; }

std::string optional_number_text(const std::optional<double>& v) {
  return v ? number_text(*v, DType::Float64) : "unset";
}

// Operand magnitudes of one step for one parameter (tolerance.h): G (per element) and the update scale U.
struct StepScales {
  std::vector<double> gradient;      // G = |g| + wd*|p_old|
  std::vector<double> gradient_sq;   // G^2
  std::vector<double> update;        // U
  std::map<std::string, std::vector<double>> state;  // per state tensor, where the optimizer's description
                                                     // gives its own scales (optimizer_descriptions.h)
};

class Comparer {
 public:
  Comparer(const Record& expected, const Record& actual, const Record* previous, const CompareContext& context,
           ErrorStats* stats)
      : e_(expected), a_(actual), prev_(previous), ctx_(context), stats_(stats) {}

  std::vector<Difference> run() {
    if (e_.action != a_.action) structure("action", e_.action, a_.action);
    compare_error();
    compare_params();
    compare_handles();
    compare_groups();
    compare_output();
    compare_total_norm();
    return std::move(out_);
  }

 private:
  const Record& e_;
  const Record& a_;
  const Record* prev_;
  const CompareContext& ctx_;
  ErrorStats* stats_;
  std::vector<Difference> out_;

  bool is_action(const char* name) const { return e_.action == name; }

  void structure(const std::string& path, const std::string& expected, const std::string& actual) {
    Difference d;
    d.kind = DifferenceKind::Structure;
    d.path = path;
    d.expected_text = expected;
    d.actual_text = actual;
    d.bound = "exact";
    out_.push_back(std::move(d));
  }

  void compare_error() {
    const std::string expected = e_.error ? e_.error->kind : "none";
    const std::string actual = a_.error ? a_.error->kind : "none";
    if (expected == actual) return;
    structure("error.kind", expected, actual);
    // The implementation's own message is not compared, but it is what tells its author why the action failed.
    if (a_.error && !a_.error->message.empty()) {
      std::string message = a_.error->message.substr(0, 200);
      if (a_.error->message.size() > 200) message += "...";
      out_.back().bound += "; the implementation's message: " + message;
    }
  }

  // Compares a tensor's values. `extra` (may be null or empty) adds per-element operand magnitudes to m;
  // `previous` (may be null) is the oracle's value of the same field at the previous record, and
  // `actual_previous` the engine under test's (free-running only, CompareContext::actual_previous).
  void compare_tensor(const std::string& prefix, Quantity quantity, const TensorValue& expected,
                      const TensorValue& actual, const TensorValue* previous, const TensorValue* actual_previous,
                      const std::vector<double>* extra, double allowed_ulps) {
    if (expected.dtype != actual.dtype) {
      structure(prefix + ".dtype", dtype_name(expected.dtype), dtype_name(actual.dtype));
      return;
    }
    if (expected.shape != actual.shape) {
      structure(prefix + ".shape", shape_text(expected.shape), shape_text(actual.shape));
      return;
    }
    if (expected.data.size() != actual.data.size()) {
      structure(prefix + ".size", std::to_string(expected.data.size()), std::to_string(actual.data.size()));
      return;
    }
    const DType dtype = expected.dtype;
    const bool clipped = ctx_.clip_fields.count(prefix) > 0;  // SEMANTICS §18.7
    const bool has_previous = previous && previous->shape == expected.shape &&
                              previous->data.size() == expected.data.size();
    const bool has_extra = extra && extra->size() == expected.data.size();
    const bool has_actual_previous = has_previous && actual_previous && actual_previous->shape == expected.shape &&
                                     actual_previous->data.size() == expected.data.size();
    const std::vector<double>* budget = ctx_.budget ? ctx_.budget->find(prefix) : nullptr;
    const std::vector<char>* exact_zero = exact_zero_flags(prefix);
    if (budget && budget->size() != expected.data.size()) budget = nullptr;
    auto numeric_difference = [&](size_t i, double ev, double av) {
      Difference d;
      d.kind = DifferenceKind::Numeric;
      d.quantity = quantity;
      d.path = prefix + index_text(expected.shape, i);
      d.expected = ev;
      d.actual = av;
      d.expected_text = number_text(ev, dtype);
      d.actual_text = number_text(av, dtype);
      d.dtype = dtype;
      d.field = prefix;
      d.element = i;
      return d;
    };
    int listed = 0, more = 0;
    double worst = -1;
    bool best_resolved = false;  // SEMANTICS §9.6: the judged value best resolved by its bound
    double best_resolution = 0, best_allowed = 0, best_centre = 0;
    size_t best_index = 0;
    for (size_t i = 0; i < expected.data.size(); ++i) {
      const double ev = expected.data[i];
      const double av = actual.data[i];
      bool bad = false;
      double ulp_error = 0, m = 0, carried = 0, allowed = 0, unit = 0, k = allowed_ulps;
      const char* rule = nullptr;
      if (std::isnan(ev) || std::isnan(av)) {
        // SEMANTICS §9: NaN equals NaN at the same position.
        bad = std::isnan(ev) != std::isnan(av);
        rule = "NaN must match NaN";
      } else if (std::isinf(ev) || std::isinf(av)) {
        // +inf/-inf must match exactly; a finite value against an infinite one is a mismatch.
        bad = ev != av;
        rule = "inf must match exactly";
      } else {
        // m: the largest finite magnitude among the operands (tolerance.h).
        m = std::fabs(ev);
        auto consider = [&m](double x) {
          if (std::isfinite(x)) m = std::max(m, std::fabs(x));
        };
        if (has_previous && !clipped) {
          consider(previous->data[i]);
          consider(ev - previous->data[i]);
        }
        if (has_extra) consider((*extra)[i]);
        // The error budget (error_budget.h): the signed shift the inputs' accepted deviation carries through
        // the action; the tested value must round from expected + carried.
        if (budget) carried = (*budget)[i];
        // The engine under test rounded its own, drifted value: at the scale of |expected| + |carried|, and at
        // its own magnitude (across a power of two the ULP doubles). A wrong value gains at most a relative
        // k * 2^-23 (float32) from this. Only where something was carried: with equal inputs m is the oracle's.
        if (carried != 0) {
          consider(std::fabs(ev) + std::fabs(carried));
          consider(av);
        }
        unit = ulp(m, clipped && ctx_.clip_float32_norms ? DType::Float32 : dtype);
        // A float64 shift comes from a double evaluation that rounds like the engines: k more ULPs for it.
        if (carried != 0 && dtype == DType::Float64) k = 2 * allowed_ulps;
        allowed = k * unit;
        const double residual = std::fabs(av - (ev + carried));
        ulp_error = residual / unit;
        bad = residual > allowed;
        // SEMANTICS §9.5: the sign of a zero is defined where every operand was zero (m = 0, the operand scale's
        // exact zero before its subnormal floor) and nothing was carried; a zero that rounding or cancellation made
        // of non-zero operands may have either sign. Where the exact scale is known it decides: a grad's scale may be
        // 0 (w * 0) while the factor that gave the zero its sign was computed (tolerance.h, OperandScales).
        const bool exact_known = has_extra && exact_zero && exact_zero->size() == expected.data.size();
        // A clip's zero keeps its input's sign (CompareContext::clip_fields): defined where both inputs were zeros of
        // one sign.
        const bool zero_operands =
            clipped ? has_actual_previous && previous->data[i] == 0 && actual_previous->data[i] == 0 &&
                          std::signbit(previous->data[i]) == std::signbit(actual_previous->data[i])
                    : exact_known ? (*exact_zero)[i] && (!has_previous || previous->data[i] == 0) : m == 0;
        if (!bad && ev == 0 && av == 0 && zero_operands && carried == 0 && std::signbit(ev) != std::signbit(av)) {
          bad = true;
          rule = "the sign of zero must match";
        }
      }
      if (rule && bad) ulp_error = std::numeric_limits<double>::infinity();
      // Free-running: a number neither engine changed in this action was judged (and counted in the
      // growth) when it was produced, with that action's operand scales; carried drift is not judged or
      // counted again at the tighter scale of its own value.
      if (has_actual_previous && same_number(ev, previous->data[i]) && same_number(av, actual_previous->data[i]))
        continue;
      // A NaN or infinity on one side only where a singularity is straddled (SEMANTICS §9.1, §9.2): accepted by rule,
      // and listed (CompareContext::accepted).
      if (rule && bad && (std::isnan(ev) || std::isinf(ev) || std::isnan(av) || std::isinf(av))) {
        const std::string why = straddled(prefix, i, ev, av, dtype, allowed_ulps, has_previous ? previous : nullptr,
                                          has_actual_previous ? actual_previous : nullptr, has_extra ? extra : nullptr);
        if (!why.empty()) {
          bad = false;
          ulp_error = 0;
          if (ctx_.accepted) {
            Difference d = numeric_difference(i, ev, av);
            d.bound = why;
            ctx_.accepted->push_back(std::move(d));
          }
        }
      }
      worst = std::max(worst, ulp_error);
      // SEMANTICS §9.6: a tensor none of whose judged values is larger than its bound could not be told from its
      // negation or a multiple of it: imprecise, never silently passed.
      if (!rule && ev + carried != 0) {
        const double resolution = std::fabs(ev + carried) / allowed;
        if (!best_resolved || resolution > best_resolution) {
          best_resolved = true;
          best_resolution = resolution;
          best_index = i;
          best_allowed = allowed;
          best_centre = std::fabs(ev + carried);
        }
      }
      if (!bad) continue;
      if (listed >= kMaxElementsPerTensor && !ctx_.list_every_element) {
        ++more;
        continue;
      }
      ++listed;
      Difference d = numeric_difference(i, ev, av);
      if (has_actual_previous) {
        d.has_actual_before = true;
        d.actual_before = actual_previous->data[i];
      }
      d.ulp_error = ulp_error;
      if (rule) {
        d.absolute_error = std::fabs(av - ev);
        d.bound = rule;
      } else {
        const double centre = ev + carried;
        d.centre = centre;
        d.absolute_error = std::fabs(av - centre);
        d.relative_error = centre == 0 ? std::numeric_limits<double>::infinity() : d.absolute_error / std::fabs(centre);
        d.scale = m;
        d.allowed_ulps = k;
        d.bound_value = allowed;
        d.carried = carried;
        d.bound = describe_bound(k, m, dtype);
      }
      out_.push_back(std::move(d));
    }
    if (best_resolved && best_resolution <= 1 && ctx_.imprecision) {
      Imprecision& im = *ctx_.imprecision;
      if (im.values++ == 0)
        im.first = fmt::format("{}: bound {:.3g} ≥ |expected| {:.3g}", prefix + index_text(expected.shape, best_index),
                               best_allowed, best_centre);
    }
    if (more > 0) {
      Difference d;
      d.kind = DifferenceKind::Numeric;
      d.quantity = quantity;
      d.path = prefix + "[...]";
      d.expected_text = fmt::format("{} more elements out of tolerance", more);
      d.actual_text = "";
      d.bound = "as above";
      d.omitted = static_cast<size_t>(more);
      out_.push_back(std::move(d));
    }
    if (stats_ && worst >= 0) (*stats_)[quantity] = std::max((*stats_)[quantity], worst);
  }

  // The class of a number for the singularity rules: finite, NaN, +inf, -inf.
  static int number_class(double x) { return std::isnan(x) ? 1 : std::isinf(x) ? (x > 0 ? 2 : 3) : 0; }

  // Why element i of the tensor at `prefix`, NaN or infinite on one side only (ev against av), is a singularity
  // straddled, or "" when it is not:
  //  - by the inputs' deviation (SEMANTICS §9.2; free-running): f in double is of the oracle's class at the oracle's
  //    inputs and of the implementation's class at the implementation's (error_budget.h), and a finite actual value
  //    is within k ULPs (2k for float64, as for a carried shift) of f at its inputs. With equal inputs the two
  //    evaluations are equal, so this never applies in lockstep;
  //  - by a rounding inside a backward (SEMANTICS §9.1): a grad (or a handle of one) whose class hangs on tanh's or
  //    sigmoid's output rounding to exactly 1 under an infinite gradient (OperandScales::grad_straddle), NaN on one
  //    side and the specification's own ±inf on the other, the grad before the backward finite on both sides.
  std::string straddled(const std::string& prefix, size_t i, double ev, double av, DType dtype, double allowed_ulps,
                        const TensorValue* previous, const TensorValue* actual_previous,
                        const std::vector<double>* extra) const {
    const int ce = number_class(ev), ca = number_class(av);
    if (ce == ca) return "";
    const auto* evaluation = ctx_.budget ? ctx_.budget->evaluation(prefix) : nullptr;
    if (evaluation && evaluation->first.size() > i && evaluation->second.size() > i) {
      const double fe = evaluation->first[i], fa = evaluation->second[i];
      if (number_class(fe) == ce && number_class(fa) == ca) {
        bool close = true;
        if (ca == 0) {
          double m = std::max(std::fabs(av), std::fabs(fa));
          if (previous && std::isfinite(previous->data[i])) m = std::max(m, std::fabs(previous->data[i]));
          if (extra && std::isfinite((*extra)[i])) m = std::max(m, std::fabs((*extra)[i]));
          const double k = dtype == DType::Float64 ? 2 * allowed_ulps : allowed_ulps;
          close = std::fabs(av - fa) <= k * ulp(m, dtype);
        }
        if (close)
          return fmt::format("a singularity the inputs' accepted deviation straddles: the specification gives {} at "
                             "the oracle's inputs, {} at the implementation's (SEMANTICS §9.2)",
                             number_text(fe, dtype), number_text(fa, dtype));
      }
    }
    const std::vector<double>* straddle = grad_straddle(prefix);
    if (straddle && straddle->size() > i && std::isinf((*straddle)[i])) {
      const double fs = (*straddle)[i];
      const bool finite_before = (!previous || std::isfinite(previous->data[i])) &&
                                 (!actual_previous || std::isfinite(actual_previous->data[i]));
      if (finite_before && ((ce == 1 && av == fs) || (ca == 1 && ev == fs)))
        return fmt::format("an infinite gradient through tanh or sigmoid at saturation, or softplus where e^a underflows: inf * 0 (NaN) or {} as the "
                           "output rounds (SEMANTICS §9.1)", number_text(fs, dtype));
    }
    return "";
  }

  // The backward's rounding straddles (OperandScales::grad_straddle) of the grad "w → grad" or of the grad handle
  // "handle h → value" at `prefix`; null elsewhere.
  const std::vector<double>* grad_straddle(const std::string& prefix) const {
    if (!ctx_.scales || !is_action("backward") || ctx_.scales->grad_straddle.empty()) return nullptr;
    const std::string grad_suffix = " → grad", handle_prefix = "handle ", handle_suffix = " → value";
    auto ends_with = [&](const std::string& suffix) {
      return prefix.size() > suffix.size() && prefix.compare(prefix.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    std::string param;
    if (prefix.rfind(handle_prefix, 0) == 0 && ends_with(handle_suffix)) {
      auto it = ctx_.handle_param.find(
          prefix.substr(handle_prefix.size(), prefix.size() - handle_prefix.size() - handle_suffix.size()));
      if (it == ctx_.handle_param.end()) return nullptr;
      param = it->second;
    } else if (ends_with(grad_suffix)) {
      param = prefix.substr(0, prefix.size() - grad_suffix.size());
    } else {
      return nullptr;
    }
    auto it = ctx_.scales->grad_straddle.find(param);
    return it == ctx_.scales->grad_straddle.end() ? nullptr : &it->second;
  }

  // OperandScales' exact zeros of a value this forward or backward produced (the output, a grad, a handle's grad).
  const std::vector<char>* exact_zero_flags(const std::string& prefix) const {
    if (!ctx_.scales) return nullptr;
    if (is_action("forward") && prefix == "output → value") return &ctx_.scales->output_exact_zero;
    if (!is_action("backward")) return nullptr;
    static const std::string grad = " → grad", handle = "handle ", value = " → value";
    std::string param;
    if (prefix.size() > grad.size() && prefix.compare(prefix.size() - grad.size(), grad.size(), grad) == 0) {
      param = prefix.substr(0, prefix.size() - grad.size());
    } else if (prefix.rfind(handle, 0) == 0 && prefix.size() > value.size() &&
               prefix.compare(prefix.size() - value.size(), value.size(), value) == 0) {
      auto it = ctx_.handle_param.find(prefix.substr(handle.size(), prefix.size() - handle.size() - value.size()));
      if (it == ctx_.handle_param.end()) return nullptr;
      param = it->second;
    } else {
      return nullptr;
    }
    auto it = ctx_.scales->grad_exact_zero.find(param);
    return it == ctx_.scales->grad_exact_zero.end() ? nullptr : &it->second;
  }

  // `prefix`: the field, for a clip's (CompareContext::clip_fields).
  double k_for(Quantity q, const std::string& prefix = "") const {
    double k = ctx_.tolerance.k(q);
    // SEMANTICS §18.7: a clip_grad_norm's total norm and the grads it scaled hang on a reduction over the counted grads.
    if (ctx_.clip_reduction_length > 0 && ctx_.clip_fields.count(prefix))
      return k * (reduction_factor(ctx_.clip_reduction_length) + 2);
    const bool produced_by_autograd =
        (q == Quantity::Output && is_action("forward")) ||
        ((q == Quantity::Grad || q == Quantity::Handle) && is_action("backward"));
    if (produced_by_autograd && ctx_.scales) k *= reduction_factor(ctx_.scales->reduction_length);
    return k;
  }

  const std::vector<double>* grad_scale(const std::string& param) const {
    if (!ctx_.scales || !is_action("backward")) return nullptr;
    auto it = ctx_.scales->grad.find(param);
    if (it != ctx_.scales->grad.end()) return &it->second;
    // SEMANTICS §3.7: a 0-d grad the loss does not reach may share its storage with a reached 0-d grad and
    // change with it: it is judged at the widest scale of the reached 0-d grads (found by the default
    // generator at max size 100: 2 of 100,000 programs judged an aliased grad at its own ULP).
    const ParamObservation* self = previous_param(param);
    if (!self || !self->value.shape.empty() || !self->grad.defined) return nullptr;
    const std::vector<double>* widest = nullptr;
    for (const auto& [name, scale] : ctx_.scales->grad) {
      const ParamObservation* other = previous_param(name);
      if (other && other->value.shape.empty() && scale.size() == 1 && (!widest || scale[0] > (*widest)[0]))
        widest = &scale;
    }
    return widest;
  }

  const ParamObservation* previous_param(const std::string& name) const {
    return prev_ ? prev_->state.param(name) : nullptr;
  }

  // SEMANTICS §5.3, §6.3, §14.3, §15.3: the operand magnitudes a step combined, for parameter `p` (tolerance.h), as
  // the program's optimizer describes them (optimizer_descriptions.h).
  StepScales step_scales(const ParamObservation& p) const {
    StepScales s;
    const ParamObservation* before = previous_param(p.name);
    if (!is_action("step") || !before || !p.grad.defined || !ctx_.optimizer) return s;
    const std::vector<double>& g = p.grad.value.data;
    const std::vector<double>& old_value = before->value.data;
    if (g.size() != p.value.data.size() || old_value.size() != g.size()) return s;
    const OptimizerDescription& description = describe(*ctx_.optimizer);
    std::vector<OptimizerOptions> groups;  // every group holding p, each option resolved
    double wd = 0;
    for (const GroupObservation& group : e_.state.groups) {
      if (std::find(group.params.begin(), group.params.end(), p.name) == group.params.end()) continue;
      wd = std::max(wd, std::fabs(group.options.weight_decay.value_or(0)));
      groups.push_back(resolved_options(description.kind, group.options));
    }
    if (groups.empty()) return s;  // not in any group
    const double l2 = description.decoupled_weight_decay ? 0 : wd;  // AdamW decays p directly (SEM-6.4)
    const size_t n = g.size();
    s.gradient.resize(n);
    s.gradient_sq.resize(n);
    s.update.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      s.gradient[i] = std::fabs(g[i]) + (l2 != 0 ? l2 * std::fabs(old_value[i]) : 0.0);
      s.gradient_sq[i] = s.gradient[i] * s.gradient[i];
    }
    StepScaleOutputs out;
    if (description.step_scales) description.step_scales(StepScaleInputs{groups.front(), groups, *before, p, s.gradient}, out);
    if (out.update.size() == n) s.update = std::move(out.update);
    for (auto& [field, scale] : out.state)
      if (scale.size() == n) s.state[field] = std::move(scale);
    // A parameter the step updates more than once (in two groups, or twice in one, SEM-7.4): every update rounds
    // at the magnitude the parameter has on the way, and the roundings add up.
    if (ctx_.repeated_update_peaks) {
      auto it = ctx_.repeated_update_peaks->find(p.name);
      if (it != ctx_.repeated_update_peaks->end() && it->second.peak.size() == n) {
        const double updates = static_cast<double>(it->second.updates);
        for (size_t i = 0; i < n; ++i) {
          const double update = s.update[i];  // the scale one update's accepted deviation is judged at
          s.update[i] = std::max(s.update[i], it->second.peak[i]) * updates;
          // The moments' later updates read the moved parameter through the L2 term: at its magnitude, and with the
          // deviation its earlier update was allowed (k ULPs of `update`), which a cancelling denominator makes large
          // (centered RMSprop, SEM-14.3: seed 7, index 33597 against PyTorch 2.6's Python lerp). The square's
          // deviation is 2 |g| times the gradient's, to first order.
          const double magnitude = std::max(s.gradient[i], std::fabs(g[i]) + l2 * it->second.peak[i]) * updates;
          const double moved = l2 * update * (updates - 1);
          s.gradient[i] = magnitude + moved;
          s.gradient_sq[i] = magnitude * magnitude + 2 * magnitude * moved;
        }
      }
    }
    return s;
  }

  void compare_state_tensor(const std::string& name, const char* field, Quantity q,
                            const std::optional<TensorValue>& expected, const std::optional<TensorValue>& actual,
                            const std::optional<TensorValue>* previous,
                            const std::optional<TensorValue>* actual_previous, const std::vector<double>* extra) {
    if (expected.has_value() != actual.has_value()) {
      structure(name + " → " + field, defined_text(expected.has_value()), defined_text(actual.has_value()));
      return;
    }
    if (!expected) return;
    const TensorValue* prev = previous && previous->has_value() ? &**previous : nullptr;
    const TensorValue* actual_prev = actual_previous && actual_previous->has_value() ? &**actual_previous : nullptr;
    compare_tensor(name + " → " + field, q, *expected, *actual, prev, actual_prev, extra, k_for(q));
  }

  // An optional field (optional_fields.h): compared exactly where both sides have it, else counted untested.
  void compare_optional_flag(const char* field, const std::string& path, const std::optional<bool>& e,
                             const std::optional<bool>& a) {
    if (e && a && *e != *a) structure(path, bool_text(*e), bool_text(*a));
    if (!ctx_.optional_fields) return;
    OptionalFieldCount& c = (*ctx_.optional_fields)[field];
    if (!a) ++c.not_reported;  // the implementation's absence first: it is what a driver author must see
    else if (!e) ++c.not_expected;
    else ++c.compared;
  }

  void compare_param(const ParamObservation& e, const ParamObservation& a) {
    const std::string& n = e.name;
    const ParamObservation* before = previous_param(n);
    const ParamObservation* actual_before =
        ctx_.actual_previous ? ctx_.actual_previous->state.param(n) : nullptr;
    const StepScales step = step_scales(e);
    compare_optional_flag("param.same_as_previous", n + " → same_as_previous", e.same_as_previous, a.same_as_previous);
    // In the order the values feed each other (SEMANTICS §8): the grad, the optimizer state the step computes from
    // it, then the value the state moves, so that the first difference reported is the first wrong quantity.

    // Grad: definedness, then flags, then values (SEMANTICS §3, §4).
    if (e.grad.defined != a.grad.defined) {
      structure(n + " → grad.defined", bool_text(e.grad.defined), bool_text(a.grad.defined));
    } else if (e.grad.defined) {
      if (e.grad.requires_grad != a.grad.requires_grad)
        structure(n + " → grad.requires_grad", bool_text(e.grad.requires_grad), bool_text(a.grad.requires_grad));
      if (e.grad.has_grad_fn != a.grad.has_grad_fn)
        structure(n + " → grad.has_grad_fn", bool_text(e.grad.has_grad_fn), bool_text(a.grad.has_grad_fn));
      if (e.grad.same_as_previous != a.grad.same_as_previous)
        structure(n + " → grad.same_as_previous", bool_text(e.grad.same_as_previous),
                  bool_text(a.grad.same_as_previous));
      const TensorValue* prev_grad = before && before->grad.defined ? &before->grad.value : nullptr;
      const TensorValue* actual_prev_grad =
          actual_before && actual_before->grad.defined ? &actual_before->grad.value : nullptr;
      compare_tensor(n + " → grad", Quantity::Grad, e.grad.value, a.grad.value, prev_grad, actual_prev_grad,
                     grad_scale(n), k_for(Quantity::Grad, n + " → grad"));
    }

    // Optimizer state (SEMANTICS §5.3, §6.2).
    const OptimizerStateObservation& es = e.state;
    const OptimizerStateObservation& as = a.state;
    const std::vector<double> moved_scale = moved_scale_of(n, e.value, Quantity::Param);
    const std::vector<double>* value_scale =
        !moved_scale.empty() ? &moved_scale : step.update.empty() ? nullptr : &step.update;
    auto compare_value = [&] {
      compare_tensor(n + " → value", Quantity::Param, e.value, a.value, before ? &before->value : nullptr,
                     actual_before ? &actual_before->value : nullptr, value_scale, k_for(Quantity::Param));
    };
    if (es.exists != as.exists) {
      structure(n + " → state.exists", bool_text(es.exists), bool_text(as.exists));
      compare_value();
      return;
    }
    if (es.step != as.step)
      structure(n + " → state.step", es.step ? std::to_string(*es.step) : "unset",
                as.step ? std::to_string(*as.step) : "unset");
    for (const StateCountDescription& c : all_state_counts())  // L-BFGS's func_evals, n_iter (SEM-16.2)
      if (es.*c.field != as.*c.field)
        structure(n + " → state." + c.name, (es.*c.field) ? std::to_string(*(es.*c.field)) : "unset",
                  (as.*c.field) ? std::to_string(*(as.*c.field)) : "unset");
    const OptimizerStateObservation* ps = before ? &before->state : nullptr;
    const OptimizerStateObservation* aps = actual_before ? &actual_before->state : nullptr;
    const std::vector<double>* g = step.gradient.empty() ? nullptr : &step.gradient;
    const std::vector<double>* g2 = step.gradient_sq.empty() ? nullptr : &step.gradient_sq;
    // Every state tensor of every optimizer (optimizer_descriptions.h), each its own quantity (tolerance.h), at
    // the scale the program's optimizer describes; none for a tensor it does not keep.
    const std::vector<StateTensorDescription>* own_state = ctx_.optimizer ? &describe(*ctx_.optimizer).state : nullptr;
    for (const StateTensorDescription& t : all_state_tensors()) {
      const std::string field = t.name;
      const std::vector<double>* scale = nullptr;
      for (const StateTensorDescription& mine : own_state ? *own_state : std::vector<StateTensorDescription>{}) {
        if (field != mine.name) continue;
        if (mine.scale == StateScale::Gradient) scale = g;
        if (mine.scale == StateScale::GradientSquared) scale = g2;
        auto own = step.state.find(field);
        if (mine.scale == StateScale::Own && own != step.state.end()) scale = &own->second;
      }
      const Quantity q = Quantity::state(field);
      compare_state_tensor(n, t.name, q, es.*t.field, as.*t.field, ps ? &(ps->*t.field) : nullptr,
                           aps ? &(aps->*t.field) : nullptr, scale);
    }
    compare_value();
  }

  void compare_params() {
    const auto& expected = e_.state.params;
    const auto& actual = a_.state.params;
    for (const ParamObservation& e : expected) {
      const ParamObservation* a = a_.state.param(e.name);
      if (!a) {
        structure(e.name, "present", "missing");
        continue;
      }
      compare_param(e, *a);
    }
    for (const ParamObservation& a : actual)
      if (!e_.state.param(a.name)) structure(a.name, "missing", "present");
  }

  void compare_handles() {
    for (const HandleObservation& e : e_.state.handles) {
      const std::string prefix = "handle " + e.name;
      const HandleObservation* a = a_.state.handle(e.name);
      if (!a) {
        structure(prefix, "present", "missing");
        continue;
      }
      if (e.defined != a->defined) {
        structure(prefix + " → defined", bool_text(e.defined), bool_text(a->defined));
        continue;
      }
      if (!e.defined) continue;
      const HandleObservation* before = prev_ ? prev_->state.handle(e.name) : nullptr;
      const std::vector<double>* extra = nullptr;
      auto it = ctx_.handle_param.find(e.name);
      if (it != ctx_.handle_param.end()) extra = grad_scale(it->second);
      const HandleObservation* actual_before =
          ctx_.actual_previous ? ctx_.actual_previous->state.handle(e.name) : nullptr;
      const TensorValue* previous = before && before->defined ? &before->value : nullptr;
      const TensorValue* actual_previous = actual_before && actual_before->defined ? &actual_before->value : nullptr;
      // hold_grad takes a handle to the grad as it is: its operand is that grad (produced earlier).
      if (is_action("hold_grad") && it != ctx_.handle_param.end() && !(previous && *previous == e.value)) {
        const ParamObservation* p = previous_param(it->second);
        const ParamObservation* ap = ctx_.actual_previous ? ctx_.actual_previous->state.param(it->second) : nullptr;
        previous = p && p->grad.defined ? &p->grad.value : nullptr;
        actual_previous = ap && ap->grad.defined ? &ap->grad.value : nullptr;
      }
      compare_tensor(prefix + " → value", Quantity::Handle, e.value, a->value, previous, actual_previous, extra,
                     k_for(Quantity::Handle, prefix + " → value"));
    }
    for (const HandleObservation& a : a_.state.handles)
      if (!e_.state.handle(a.name)) structure("handle " + a.name, "missing", "present");
  }

  void compare_option(const std::string& prefix, const std::string& field, const std::optional<double>& e,
                      const std::optional<double>& a) {
    // Options are set, not computed: compared exactly (bitwise equal values, NaN equal to NaN).
    const bool same = e.has_value() == a.has_value() &&
                      (!e || *e == *a || (std::isnan(*e) && std::isnan(*a)));
    if (!same) structure(prefix + field, optional_number_text(e), optional_number_text(a));
  }

  void compare_option(const std::string& prefix, const std::string& field, const std::optional<bool>& e,
                      const std::optional<bool>& a) {
    if (e != a) structure(prefix + field, e ? bool_text(*e) : "unset", a ? bool_text(*a) : "unset");
  }

  void compare_groups() {
    const auto& eg = e_.state.groups;
    const auto& ag = a_.state.groups;
    if (eg.size() != ag.size()) structure("groups.count", std::to_string(eg.size()), std::to_string(ag.size()));
    for (size_t i = 0; i < std::min(eg.size(), ag.size()); ++i) {
      const std::string prefix = fmt::format("group {} → ", i);
      if (eg[i].params != ag[i].params)
        structure(prefix + "params", fmt::format("[{}]", fmt::join(eg[i].params, ", ")),
                  fmt::format("[{}]", fmt::join(ag[i].params, ", ")));
      const OptimizerOptions& e = eg[i].options;
      const OptimizerOptions& a = ag[i].options;
      // Every option of every optimizer (optimizer_descriptions.h): an option of another kind is unset on both.
      for (const std::string& name : all_option_names()) {
        const OptionDescription& d = any_option(name);
        switch (d.type) {  // by the option's type: every type names its own field (an unlisted one does not compile)
          case OptionType::Number: compare_option(prefix, d.name, e.*d.number, a.*d.number); break;
          case OptionType::Flag: compare_option(prefix, d.name, e.*d.flag, a.*d.flag); break;
          case OptionType::Text: {  // L-BFGS's line_search_fn: compared exactly
            const std::optional<std::string>& et = e.*d.text;
            const std::optional<std::string>& at = a.*d.text;
            if (et != at) structure(prefix + d.name, et ? *et : "unset", at ? *at : "unset");
            break;
          }
          case OptionType::Pair: {
            const std::optional<std::pair<double, double>>& ep = e.*d.pair;
            const std::optional<std::pair<double, double>>& ap = a.*d.pair;
            auto part = [](const std::optional<std::pair<double, double>>& b, int k) -> std::optional<double> {
              if (!b) return std::nullopt;
              return k == 0 ? b->first : b->second;
            };
            if (ep.has_value() != ap.has_value()) {
              structure(prefix + d.name, ep ? "set" : "unset", ap ? "set" : "unset");
            } else {
              compare_option(prefix, (std::string(d.name) + "[0]").c_str(), part(ep, 0), part(ap, 0));
              compare_option(prefix, (std::string(d.name) + "[1]").c_str(), part(ep, 1), part(ap, 1));
            }
            break;
          }
        }
      }
    }
  }

  // A move between closure calls of parameter `name` (CompareContext::moved, an L-BFGS step): its bound, as a scale
  // at k ULPs of `quantity` for `value`; empty where it did not move.
  std::vector<double> moved_scale_of(const std::string& name, const TensorValue& value, Quantity quantity) const {
    std::vector<double> scale;
    if (!ctx_.moved) return scale;
    auto it = ctx_.moved->find(name);
    if (it == ctx_.moved->end() || it->second.magnitude.size() != value.data.size() ||
        it->second.bound.size() != value.data.size())
      return scale;
    const double per_ulp = k_for(quantity) * unit_roundoff(value.dtype);
    scale.resize(value.data.size());
    for (size_t i = 0; i < scale.size(); ++i)
      // Finite, however large: a bound beyond the doubles still judges the value (and is counted imprecise).
      scale[i] = std::min(std::numeric_limits<double>::max(), std::max(it->second.magnitude[i], it->second.bound[i] / per_ulp));
    return scale;
  }

  // SEMANTICS §18.1: what a clip_grad_norm returned, its total norm, at its own magnitude (a sum of magnitudes does
  // not cancel) with the reduction's k (k_for).
  void compare_total_norm() {
    if (!is_action("clip_grad_norm")) return;
    if (e_.returned.has_value() != a_.returned.has_value()) {
      structure("returned", e_.returned ? "a total norm" : "none", a_.returned ? "a total norm" : "none");
      return;
    }
    if (!e_.returned) return;
    compare_tensor("returned", Quantity::Grad, *e_.returned, *a_.returned, nullptr, nullptr, nullptr,
                   k_for(Quantity::Grad, "returned"));
  }

  void compare_output() {
    const auto& e = e_.state.output;
    const auto& a = a_.state.output;
    if (e.has_value() != a.has_value()) {
      structure("output", e ? "present" : "absent", a ? "present" : "absent");
      return;
    }
    if (!e) return;
    if (e->requires_grad != a->requires_grad)
      structure("output → requires_grad", bool_text(e->requires_grad), bool_text(a->requires_grad));
    if (e->has_grad_fn != a->has_grad_fn)
      structure("output → has_grad_fn", bool_text(e->has_grad_fn), bool_text(a->has_grad_fn));
    const TensorValue* before = prev_ && prev_->state.output ? &prev_->state.output->value : nullptr;
    const TensorValue* actual_before = ctx_.actual_previous && ctx_.actual_previous->state.output
                                           ? &ctx_.actual_previous->state.output->value
                                           : nullptr;
    // A forward computes a fresh output: its operands are the scales, not the previous output.
    if (is_action("forward")) before = actual_before = nullptr;
    const std::vector<double>* extra =
        ctx_.scales && is_action("forward") ? &ctx_.scales->output : nullptr;
    // The output of a forward of a bare parameter is that parameter: a step moves it at the step's scale, a move
    // between closure calls at the move's bound (SEMANTICS §16.5), wherever the move shows first.
    // The output is a parameter where it holds that parameter's values on both sides (a trace carries no identity);
    // of several such, a moved one.
    const ParamObservation* alias = nullptr;
    for (const ParamObservation& p : e_.state.params) {
      const ParamObservation* pa = a_.state.param(p.name);
      if (!(p.value == e->value) || !pa || !(pa->value == a->value)) continue;
      const bool moved_here = ctx_.moved && ctx_.moved->count(p.name) > 0;
      if (!alias || moved_here) alias = &p;
      if (moved_here) break;
    }
    StepScales aliased;
    std::vector<double> moved = alias ? moved_scale_of(alias->name, e->value, Quantity::Output) : std::vector<double>{};
    if (!moved.empty()) {
      if (extra && extra->size() == moved.size())  // a forward right after the move: its operands' scale as well
        for (size_t i = 0; i < moved.size(); ++i) moved[i] = std::max(moved[i], (*extra)[i]);
      extra = &moved;
    } else if (alias && is_action("step")) {
      aliased = step_scales(*alias);
      if (!aliased.update.empty()) extra = &aliased.update;
    }
    compare_tensor("output → value", Quantity::Output, e->value, a->value, before, actual_before, extra,
                   k_for(Quantity::Output));
  }
};

}  // namespace

std::vector<Difference> summarise_long_tensors(std::vector<Difference> differences) {
  std::vector<Difference> out;
  std::map<std::string, size_t> listed, more;  // per tensor field
  std::vector<std::string> order;
  for (Difference& d : differences) {
    if (d.kind != DifferenceKind::Numeric || d.omitted > 0 || d.field.empty()) {
      out.push_back(std::move(d));
      continue;
    }
    if (listed[d.field]++ < static_cast<size_t>(kMaxElementsPerTensor)) {
      out.push_back(std::move(d));
    } else {
      if (more[d.field]++ == 0) order.push_back(d.field);
    }
  }
  for (const std::string& field : order) {
    Difference d;
    d.kind = DifferenceKind::Numeric;
    d.path = field + "[...]";
    d.field = field;
    d.expected_text = fmt::format("{} more elements out of tolerance", more[field]);
    d.bound = "as above";
    d.omitted = more[field];
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<Difference> compare_records(const Record& expected, const Record& actual,
                                        const Record* expected_previous, const CompareContext& context,
                                        ErrorStats* stats) {
  return Comparer(expected, actual, expected_previous, context, stats).run();
}

}  // namespace lockstep
