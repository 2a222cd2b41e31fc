// One program's records compared action by action (see trace_comparison.h).
#include "conformance/compare/trace_comparison.h"

#include <algorithm>
#include <set>
#include <cmath>
#include <limits>
#include <utility>

#include "conformance/compare/error_budget.h"
#include "conformance/compare/tolerance.h"
#include "conformance/program/optimizer_descriptions.h"

namespace lockstep {

namespace {

// The held output of a forward of a bare parameter is that parameter (the same tensor): a step moves it, and it
// carries the parameter's budget. Recognised by its values equalling a parameter's on both sides.
void alias_output_budget(const Record& expected, const Record& actual, ErrorBudget& budget) {
  if (!expected.state.output || !actual.state.output) return;
  for (const ParamObservation& pe : expected.state.params) {
    const ParamObservation* pa = actual.state.param(pe.name);
    const std::vector<double>* b = budget.find(pe.name + " → value");
    if (pa && b && pe.value == expected.state.output->value && pa->value == actual.state.output->value) {
      budget.fields["output → value"] = *b;
      if (const auto* evaluation = budget.evaluation(pe.name + " → value"))
        budget.evaluations["output → value"] = *evaluation;
      return;
    }
  }
}

}  // namespace

TraceComparison::TraceComparison(const Program& program, Tolerance tolerance, FieldMask mask)
    : program_(program), tolerance_(tolerance), mask_(std::move(mask)) {}

std::vector<Difference> TraceComparison::apply_mask(std::vector<Difference> d, std::optional<size_t> index,
                                                    const Action* program_action, const std::string& action,
                                                    const Record& expected, const Record& actual) {
  if (mask_.empty() || d.empty()) return d;
  std::vector<std::string> error_kinds;  // for entries with "errors" (expectations.h)
  if (expected.error) error_kinds.push_back(expected.error->kind);
  if (actual.error) error_kinds.push_back(actual.error->kind);
  const VariantEvaluator variant = [&](const std::string& name, const Difference& x) {
    return variant_value(name, x, program_action, actual);
  };
  std::vector<Difference> kept;
  for (Difference& x : d) {
    if (const Expectation* e = mask_.match(x, error_kinds, index, &variant)) {
      if (x.kind == DifferenceKind::Structure) masked_structure_ = true;
      masked_.push_back(MaskedDifference{index, action, std::move(x), e->reason, e->source.rfind("profile ", 0) == 0});
    } else {
      kept.push_back(std::move(x));
    }
  }
  return summarise_long_tensors(std::move(kept));
}

namespace {
// "w → grad" -> ("w", "grad"); "handle g0 → value" -> ("handle g0", "value").
std::pair<std::string, std::string> subject_and_field(const std::string& field) {
  static const std::string arrow = " → ";
  const size_t at = field.find(arrow);
  if (at == std::string::npos) return {field, ""};
  return {field.substr(0, at), field.substr(at + arrow.size())};
}

const GroupObservation* group_of(const Record& r, const std::string& param) {
  for (const GroupObservation& g : r.state.groups)
    if (std::find(g.params.begin(), g.params.end(), param) != g.params.end()) return &g;
  return nullptr;
}

std::optional<double> element(const TensorValue& t, size_t i) {
  if (i >= t.data.size()) return std::nullopt;
  return t.data[i];
}
}  // namespace

std::optional<double> TraceComparison::variant_value(const std::string& name, const Difference& d,
                                                     const Action* action_or_null, const Record& actual) const {
  if (!action_or_null) return std::nullopt;
  const Action& action = *action_or_null;
  auto [subject, field] = subject_and_field(d.field);
  std::string param = subject;
  if (subject.rfind("handle ", 0) == 0) {
    if (field != "value") return std::nullopt;
    auto it = handle_param_.find(subject.substr(7));
    if (it == handle_param_.end()) return std::nullopt;
    param = it->second;
    field = "grad";
  }
  const size_t i = d.element;
  if (const ExpressionVariant* v = expression_variant(name)) {
    // The specification's and the variant's evaluation at the implementation's parameters: the centre (expected +
    // carried, the specification there) moves by their difference.
    if (!held_) return std::nullopt;
    // The centre; a difference judged by a rule (NaN, inf) carried nothing: the expected value.
    const double centre = std::isnan(d.centre) ? d.expected : d.centre;
    // Where either evaluation is not finite the variant's own value stands (no shift can be taken).
    auto moved = [centre](double spec, double var) { return std::isfinite(spec) && std::isfinite(var) ? centre + (var - spec) : var; };
    const bool forward = action.kind == ActionKind::Forward && subject == "output" && field == "value";
    const bool backward = action.kind == ActionKind::Backward && field == "grad";
    if (!forward && !backward) return std::nullopt;
    const std::vector<double>* gradient = backward && action.gradient ? &*action.gradient : nullptr;
    const ExactEvaluation spec = exact_evaluation(*held_->loss, held_->actual_state, gradient);
    const ExactEvaluation var = exact_evaluation(*held_->loss, held_->actual_state, gradient, v);
    if (!spec.ok || !var.ok) return std::nullopt;
    if (forward) {
      if (i >= spec.output.size() || i >= var.output.size()) return std::nullopt;
      return moved(spec.output[i], var.output[i]);
    }
    auto s = spec.grad.find(param), w = var.grad.find(param);
    if (s == spec.grad.end() || w == var.grad.end() || i >= s->second.size() || i >= w->second.size())
      return std::nullopt;
    return moved(s->second[i], w->second[i]);
  }
  if (subject == "output" && action.kind == ActionKind::Step && actual.state.output) {
    // The output of a forward of a bare parameter is that parameter (SEMANTICS §3.8): the step moved it.
    for (const ParamObservation& p : actual.state.params)
      if (p.value == actual.state.output->value) param = p.name;
  }
  const ParamObservation* before = actual_previous_.state.param(param);
  const ParamObservation* after = actual.state.param(param);
  if (!before || !after) return std::nullopt;
  if (name == "grad.accumulated_separately" || name == "backward.seeds_ones") {
    // The grad's own value before plus this backward's gradient at the implementation's parameters (seeded with
    // ones where the action gives no gradient, which exact_evaluation does for any output).
    const bool zero_dim_only = name == "grad.accumulated_separately";
    if (action.kind != ActionKind::Backward || field != "grad" || !held_ || (zero_dim_only && !after->value.shape.empty()))
      return std::nullopt;
    const std::vector<double>* gradient = action.gradient ? &*action.gradient : nullptr;
    const ExactEvaluation spec = exact_evaluation(*held_->loss, held_->actual_state, gradient);
    if (!spec.ok) return std::nullopt;
    auto g = spec.grad.find(param);  // a parameter this backward does not reach gets nothing
    const double own_before = d.has_actual_before ? d.actual_before : 0.0;
    if (g == spec.grad.end()) return own_before;
    if (i >= g->second.size()) return std::nullopt;
    return own_before + g->second[i];
  }
  if (action.kind != ActionKind::Step) return std::nullopt;
  const GroupObservation* group = group_of(actual, param);
  if (!group) return std::nullopt;
  const OptimizerOptions& o = group->options;
  if (name == "step.adds_weight_decay_to_grad") {  // any optimizer with weight decay (foreach steps before 2.0)
    if (field != "grad" || !before->grad.defined) return std::nullopt;
    const auto g = element(before->grad.value, i), p = element(before->value, i);
    if (!g || !p) return std::nullopt;
    return *g + o.weight_decay.value_or(0) * *p;
  }
  // The program's optimizer's own variants (optimizer_descriptions.h).
  if (!program_.optimizer) return std::nullopt;
  for (const StepFormulaVariant& v : describe(program_.optimizer->kind).step_variants)
    if (name == v.name)
      return v.value(StepFormulaInputs{field, i, o, *before, *after, expected_previous_.state.param(param)});
  return std::nullopt;
}

void TraceComparison::note_imprecision(const Imprecision& found, const std::string& where) {
  if (found.values == 0) return;
  if (imprecision_.values == 0) imprecision_.first = where + ": " + found.first;
  imprecision_.values += found.values;
}

std::vector<Difference> TraceComparison::compare_init(Record expected, Record actual, ErrorStats* stats) {
  CompareContext ctx;
  ctx.tolerance = tolerance_;
  ctx.optional_fields = &optional_fields_;
  ctx.list_every_element = !mask_.empty();  // masks judge every element; the list is shortened after them
  Imprecision imprecision;
  ctx.imprecision = &imprecision;
  if (program_.optimizer) ctx.optimizer = program_.optimizer->kind;
  std::vector<Difference> d = apply_mask(compare_records(expected, actual, nullptr, ctx, stats), std::nullopt, nullptr, "init",
                                         expected, actual);
  note_imprecision(imprecision, "setup");
  expected_previous_ = std::move(expected);
  actual_previous_ = std::move(actual);
  synchronised_ = false;
  return d;
}

void TraceComparison::resynchronised() {
  actual_previous_.state = expected_previous_.state;
  // The held forward's graph keeps what each side saved from its own inputs: a re-synchronisation overwrites numbers,
  // not saved tensors (they differ where the forward ran inside an L-BFGS step after a move, SEMANTICS §16.3).
  synchronised_ = true;
}

namespace {

Difference structure(std::string path, std::string expected, std::string actual) {
  Difference d;
  d.kind = DifferenceKind::Structure;
  d.path = std::move(path);
  d.expected_text = std::move(expected);
  d.actual_text = std::move(actual);
  return d;
}

// Where the value a step returned comes from (SEMANTICS §17.3): the first call whose held output after its actions
// equals it (bitwise), else the held output after the step (a forward of a bare parameter holds the parameter
// itself, which the step moved, §3.8). Unset: neither.
struct ReturnedSource {
  std::optional<size_t> call;
  bool after_step = false;
  bool operator==(const ReturnedSource& o) const { return call == o.call && after_step == o.after_step; }
};

std::optional<ReturnedSource> returned_source(const Record& r) {
  if (!r.returned) return std::nullopt;
  for (size_t k = 0; k < r.calls.size(); ++k) {
    const std::vector<Record>& records = r.calls[k].records;
    if (!records.empty() && records.back().state.output && records.back().state.output->value == *r.returned)
      return ReturnedSource{k, false};
  }
  if (r.state.output && r.state.output->value == *r.returned) return ReturnedSource{std::nullopt, true};
  return std::nullopt;
}

std::string source_text(const std::optional<ReturnedSource>& s) {
  if (!s) return "a value that is no call's loss";
  if (s->after_step) return "the held output after the step";
  return "call " + std::to_string(*s->call + 1) + "'s loss";
}

// An engine that returns the held output as observed at the end of its last call (Engine::step_with_closure's default)
// returns a bare parameter before the step moved it, where LibTorch's tensor shows it after: the same tensor.
bool same_tensor_seen_earlier(const ReturnedSource& expected, const ReturnedSource& actual, const Record& actual_record) {
  if (!expected.after_step || !actual.call || *actual.call + 1 != actual_record.calls.size() || !actual_record.state.output)
    return false;
  for (const ParamObservation& p : actual_record.state.params)
    if (p.value == actual_record.state.output->value) return true;
  return false;
}

// SEMANTICS §18.7: the fields a clip produced: its total, every grad it lists or changed (a 0-d grad sharing storage
// with a listed one), every handle that changed or holds a listed grad.
std::set<std::string> clip_fields(const Action& action, const EngineState& before, const EngineState& after) {
  std::set<std::string> fields = {"returned"};
  auto listed = [&](const std::string& name) {
    return std::find(action.params.begin(), action.params.end(), name) != action.params.end();
  };
  for (const ParamObservation& p : after.params) {
    const ParamObservation* b = before.param(p.name);
    if (!b || !b->grad.defined || !p.grad.defined) continue;
    if (listed(p.name) || !(b->grad.value == p.grad.value)) fields.insert(p.name + " → grad");
  }
  for (const HandleObservation& h : after.handles) {
    const HandleObservation* b = before.handle(h.name);
    if (!b || !b->defined || !h.defined) continue;
    bool holds_listed = false;
    for (const ParamObservation& p : before.params)
      holds_listed = holds_listed || (listed(p.name) && p.grad.defined && p.grad.value == b->value);
    if (holds_listed || !(b->value == h.value)) fields.insert("handle " + h.name + " → value");
  }
  return fields;
}

}  // namespace

std::vector<Difference> TraceComparison::compare_action(size_t index, Record expected, Record actual,
                                                        ErrorStats* stats) {
  const Action& action = program_.actions.at(index);
  if (action.closure) {  // SEMANTICS §17.3: the calls first, then the step's own record after the last of them
    std::vector<Difference> d = compare_calls(index, action, expected, actual, stats);
    if (!d.empty() || !ended_at_.empty()) return d;
  } else if (!expected.calls.empty() || !actual.calls.empty() ||
             (action.kind != ActionKind::ClipGradNorm && (expected.returned || actual.returned))) {
    // Only a step with a closure calls one and returns a value (§17.1: step() returns an undefined tensor); a
    // clip_grad_norm returns its total norm (§18.1), compared with the record.
    const bool calls = !expected.calls.empty() || !actual.calls.empty();
    const Record& r = calls ? (expected.calls.empty() ? actual : expected) : (expected.returned ? expected : actual);
    const std::string what = calls ? std::to_string(r.calls.size()) + " closure calls" : "a returned value";
    return {structure(calls ? "closure calls" : "returned", &r == &expected ? what : "none",
                      &r == &actual ? what : "none")};
  }
  return compare_one(index, action, "", std::move(expected), std::move(actual), stats);
}

// After a re-synchronisation the engine's saved tensors that alias its parameters (a leaf saved by the forward) hold
// the re-synchronised numbers, and those it computed (an intermediate) its own: the grad of a backward through such a
// graph is a sum of terms from either (first order), not always between the two centres (x exp(x) with x re-synchronised
// and exp(x) the side's own lies 1.5 times their half-distance from the midpoint). It is judged at their midpoint, its
// scale widened to twice their distance.
void TraceComparison::widen_after_resynchronisation(ErrorBudget& budget, OperandScales& scales) const {
  const std::string suffix = " → grad";
  for (auto& [field, shift] : budget.fields) {
    if (field.size() <= suffix.size() || field.compare(field.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string name = field.substr(0, field.size() - suffix.size());
    auto scale = scales.grad.find(name);
    const ParamObservation* p = expected_previous_.state.param(name);
    if (scale == scales.grad.end() || !p || scale->second.size() != shift.size()) continue;
    const double per_ulp = tolerance_.k(Quantity::Grad) * unit_roundoff(p->value.dtype);
    for (size_t i = 0; i < shift.size(); ++i) {
      const double distance = std::fabs(shift[i]);
      shift[i] /= 2;
      scale->second[i] = std::max(scale->second[i], 2 * distance / per_ulp);
    }
    for (const auto& [handle, param] : handle_param_)
      if (param == name) budget.fields["handle " + handle + " → value"] = shift;
  }
}

std::vector<Difference> TraceComparison::compare_one(size_t index, const Action& action, const std::string& where,
                                                     Record expected, Record actual, ErrorStats* stats) {
  CompareContext ctx;
  ctx.tolerance = tolerance_;
  ctx.optional_fields = &optional_fields_;
  if (program_.optimizer) ctx.optimizer = program_.optimizer->kind;
  ctx.actual_previous = &actual_previous_;
  const bool carry = !synchronised_;
  ErrorBudget budget;
  std::map<std::string, RepeatedUpdate> repeated;
  switch (action.kind) {
    case ActionKind::Forward: {
      // A forward that failed leaves the previous output held.
      const Expr* loss = action.loss ? action.loss.get() : program_.loss.get();
      if (loss && !expected.error) {
        // The parameters the forward read: as its own record shows them (the same as before it, except where a step's
        // move came between, as before the first action of an L-BFGS closure call, SEMANTICS §16.3).
        held_ = HeldForward{loss, expected.state, actual.state};
        ctx.scales = operand_scales(*loss, held_->expected_state, nullptr);
        if (carry) budget = forward_budget(*loss, held_->expected_state, held_->actual_state);
      }
      break;
    }
    case ActionKind::Backward:
      if (held_) {
        const std::vector<double>* gradient = action.gradient ? &*action.gradient : nullptr;
        ctx.scales = operand_scales(*held_->loss, held_->expected_state, gradient);
        // A graph saved at unequal inputs carries their deviation even after a re-synchronisation (a retained graph of
        // an L-BFGS closure call after a move, SEMANTICS §16.3).
        bool inputs_differ = false;
        for (const ParamObservation& p : held_->expected_state.params) {
          const ParamObservation* q = held_->actual_state.param(p.name);
          inputs_differ = inputs_differ || !q || !(q->value == p.value);
        }
        if (carry || inputs_differ)
          budget = backward_budget(*held_->loss, held_->expected_state, held_->actual_state, gradient,
                                   expected_previous_, actual_previous_, handle_param_);
        if (!carry && inputs_differ && ctx.scales) widen_after_resynchronisation(budget, *ctx.scales);
      }
      break;
    case ActionKind::ClipGradNorm:
    case ActionKind::ClipGradValue:
      // SEMANTICS §18: the total norm is a reduction over the counted grads, and every scaled grad carries its
      // rounding (tolerance.h); each side's clip in double carries the inputs' deviation.
      if (action.kind == ActionKind::ClipGradNorm) {
        ctx.clip_reduction_length = clip_reduction_length(action, expected_previous_.state);
        bool float32 = false, float64 = false;
        for (const std::string& name : action.params) {
          const ParamObservation* q = expected_previous_.state.param(name);
          if (!q || !q->grad.defined) continue;
          (q->grad.value.dtype == DType::Float32 ? float32 : float64) = true;
        }
        ctx.clip_float32_norms = float32 && float64;
      }
      ctx.clip_fields = clip_fields(action, expected_previous_.state, expected.state);
      if (carry) budget = clip_budget(action, expected_previous_, actual_previous_, expected);
      break;
    case ActionKind::StateDict:
      checkpoints_[action.checkpoint] = {expected.state, actual.state};
      break;
    case ActionKind::LoadStateDict: {
      auto it = checkpoints_.find(action.checkpoint);
      if (carry && it != checkpoints_.end() && !expected.error) budget = load_budget(it->second.first, it->second.second);
      break;
    }
    case ActionKind::HoldGrad:
      handle_param_[action.handle] = action.param;
      if (carry) budget = hold_grad_budget(action.handle, action.param, expected, actual);
      break;
    case ActionKind::Step: {
      // A step that moves between its closure calls (L-BFGS) is followed by compare_calls; its last move shows here,
      // through pending_moves_ below.
      if (!program_.optimizer || describe(program_.optimizer->kind).closure_step_model) break;
      repeated = repeated_updates(program_.optimizer->kind, expected_previous_, expected.state.groups);
      if (!repeated.empty()) ctx.repeated_update_peaks = &repeated;
      if (carry) {
        budget = step_budget(program_.optimizer->kind, expected_previous_, actual_previous_, expected, actual);
        alias_output_budget(expected, actual, budget);
      }
      break;
    }
    default:
      break;
  }
  Imprecision imprecision;
  std::map<std::string, CompareContext::Moved> moved;
  if (pending_moves_) {
    moves_budget(budget, moved, imprecision);
    alias_output_budget(expected, actual, budget);  // an output that is a moved parameter moved with it
    pending_moves_.reset();
    ctx.moved = &moved;
  }
  ctx.handle_param = handle_param_;
  if (!budget.empty()) ctx.budget = &budget;
  ctx.list_every_element = !mask_.empty();
  ctx.imprecision = &imprecision;
  std::vector<Difference> accepted;
  ctx.accepted = &accepted;
  std::vector<Difference> d = apply_mask(compare_records(expected, actual, &expected_previous_, ctx, stats), index,
                                        &action, action_name(action.kind), expected, actual);
  for (Difference& x : d) x.path = where + x.path;
  // Differences a rule of the comparison accepted (a singularity straddled, SEMANTICS §9.1, §9.2): a pass, listed.
  for (Difference& x : accepted) {
    std::string reason = x.bound;
    if (ended_at_.empty())
      ended_at_ = "action " + std::to_string(index) + " (" + action_name(program_.actions[index].kind) +
                              "): " + where + difference_text(x);
    masked_.push_back(MaskedDifference{index, action_name(action.kind), std::move(x), std::move(reason), true});
  }
  note_imprecision(imprecision, "action " + std::to_string(index) + " (" + action_name(program_.actions[index].kind) +
                                    ")" + (where.empty() ? "" : ", " + where.substr(0, where.size() - 2)));
  expected_previous_ = std::move(expected);
  actual_previous_ = std::move(actual);
  synchronised_ = false;
  return d;
}

std::vector<Difference> TraceComparison::compare_calls(size_t index, const Action& action, const Record& expected,
                                                       const Record& actual, ErrorStats* stats) {
  const std::vector<Action>& closure = *action.closure;
  const size_t calls = std::min(expected.calls.size(), actual.calls.size());
  pending_moves_.reset();
  const OptimizerDescription* moving = nullptr;
  if (program_.optimizer && describe(program_.optimizer->kind).closure_step_model) {
    moving = &describe(program_.optimizer->kind);
    if (!expected_model_) {
      expected_model_ = moving->closure_step_model();
      actual_model_ = moving->closure_step_model();
    }
    // Each side with its one group's options as it reports them (compared exactly).
    auto options = [&](const Record& before) {
      return before.state.groups.empty() ? resolved_options(moving->kind, program_.optimizer->defaults)
                                         : resolved_options(moving->kind, before.state.groups.front().options);
    };
    expected_model_->begin_step(options(expected_previous_));
    actual_model_->begin_step(options(actual_previous_));
  }
  for (size_t k = 0; k < calls; ++k) {
    const std::vector<Record>& e = expected.calls[k].records;
    const std::vector<Record>& a = actual.calls[k].records;
    const std::string call = "call " + std::to_string(k + 1);
    // A call runs the closure's actions, at most all of them (a failed one is its last).
    if (e.size() != a.size() || e.size() > closure.size())
      return {structure(call + ": closure actions run", std::to_string(e.size()), std::to_string(a.size()))};
    for (size_t j = 0; j < e.size(); ++j) {
      const std::string where = call + ", " + action_name(closure[j].kind) + " (closure action " + std::to_string(j) + "): ";
      std::vector<Difference> d = compare_one(index, closure[j], where, e[j], a[j], stats);
      if (!d.empty()) return d;
      if (!ended_at_.empty()) return {};  // every later record follows from it: the comparison ends (§9.2)
    }
    if (moving && !e.empty() && !a.empty() && !follow_call(index, k, e.back(), a.back())) return {};
  }
  // The number of calls is structure (§17.3), reported where one side stopped calling.
  if (expected.calls.size() != actual.calls.size())
    return {structure("closure calls", std::to_string(expected.calls.size()), std::to_string(actual.calls.size()))};
  // What the step returned is one call's loss: the same call's on both sides (its value was judged in that call).
  if (expected.returned.has_value() != actual.returned.has_value())
    return {structure("returned", expected.returned ? "a loss" : "an undefined tensor",
                      actual.returned ? "a loss" : "an undefined tensor")};
  const std::optional<ReturnedSource> se = returned_source(expected);
  const std::optional<ReturnedSource> sa = returned_source(actual);
  if (se && !(sa && (*sa == *se || same_tensor_seen_earlier(*se, *sa, actual))))
    return {structure("returned", source_text(se), source_text(sa))};
  return {};
}

// SEMANTICS §16.3, §16.4: the record after a move is judged at each side's own move in double (the budget's signed
// shift between the sides' centres) within both sides' rounding bounds (the value's scale).
void TraceComparison::moves_budget(ErrorBudget& budget, std::map<std::string, CompareContext::Moved>& moved,
                                   Imprecision& imprecise) const {
  const PendingMoves& m = *pending_moves_;
  for (const auto& [name, move_e] : m.expected.move) {
    auto move_a = m.actual.move.find(name);
    const ParamObservation* pe = expected_previous_.state.param(name);
    const ParamObservation* pa = actual_previous_.state.param(name);
    if (move_a == m.actual.move.end() || !pe || !pa) continue;
    const size_t n = move_e.size();
    if (move_a->second.size() != n || pe->value.data.size() != n || pa->value.data.size() != n) continue;
    std::vector<double>& shift = budget.fields[name + " → value"];
    CompareContext::Moved& scale = moved[name];
    shift.assign(n, 0);
    scale.magnitude.assign(n, 0);
    scale.bound.assign(n, 0);
    const std::vector<double>& error_e = m.expected.error.at(name);
    const std::vector<double>& error_a = m.actual.error.at(name);
    // SEMANTICS §9.6 for the move itself: where no element's move is larger than its bound, the move could not be
    // told from none or from one twice as long: imprecise, never silently passed.
    bool resolved = false, moved_somewhere = false;
    size_t worst = 0;
    for (size_t i = 0; i < n; ++i) {
      const double centre_e = pe->value.data[i] + move_e[i], centre_a = pa->value.data[i] + move_a->second[i];
      const double d = centre_a - centre_e;
      shift[i] = std::isfinite(d) ? d : 0;  // non-finite values are compared exactly (error_budget.h)
      scale.magnitude[i] = std::isfinite(move_e[i]) ? std::fabs(move_e[i]) : 0;
      const double bound = error_e[i] + error_a[i];
      scale.bound[i] = std::isfinite(bound) ? bound : std::numeric_limits<double>::max();
      if (!std::isfinite(move_e[i]) || move_e[i] == 0) continue;
      moved_somewhere = true;
      if (std::fabs(move_e[i]) > scale.bound[i]) resolved = true;
      else worst = i;
    }
    if (moved_somewhere && !resolved && imprecise.values++ == 0)
      imprecise.first = name + " → value[" + std::to_string(worst) + "]: the " + describe(program_.optimizer->kind).name +
                        " move's bound " + number_text(scale.bound[worst], DType::Float64) + " ≥ |move| " +
                        number_text(std::fabs(move_e[worst]), DType::Float64);
  }
}

bool TraceComparison::follow_call(size_t index, size_t k, const Record& expected_last, const Record& actual_last) {
  // A failed call ends the step with its error (SEM-17.2); the models have made no move after it.
  if (expected_last.error || actual_last.error) return true;
  auto seen = [&](const Record& r) -> std::optional<ClosureCallSeen> {
    ClosureCallSeen c;
    if (r.state.groups.empty() || !r.state.output || r.state.output->value.data.size() != 1) return std::nullopt;
    for (const std::string& name : r.state.groups.front().params) {
      const ParamObservation* p = r.state.param(name);
      if (!p) return std::nullopt;
      c.params.push_back(p);
    }
    c.loss = r.state.output->value.data.front();
    return c;
  };
  const std::optional<ClosureCallSeen> ce = seen(expected_last), ca = seen(actual_last);
  if (!ce || !ca) return true;  // the step fails on both sides (a loss of more elements): compared as structure
  const std::string moving_name = describe(program_.optimizer->kind).name;
  const std::string moving_semantics = describe(program_.optimizer->kind).semantics;
  const PlannedMove pe = expected_model_->after_call(*ce);
  const PlannedMove pa = actual_model_->after_call(*ca);
  const std::string why = !pe.undecided.empty()   ? "the oracle's " + pe.undecided
                          : !pa.undecided.empty() ? "the implementation's " + pa.undecided
                          : pe.decisions != pa.decisions ? "each side's own inputs decide differently"
                                                         : "";
  if (!why.empty()) {
    // The sides may legitimately go different ways from here (SEM-16.4): the comparison ends, as a pass, listed.
    Difference d = structure("closure calls", pe.decisions, pa.decisions);
    d.path = "call " + std::to_string(k + 1) + ": " + moving_name + " decisions";
    const std::string reason = "a decision of the " + moving_name + " step within rounding (" + moving_semantics + "): " + why;
    ended_at_ = "action " + std::to_string(index) + " (step): " + d.path + ": " + why;
    ended_why_ = "a decision of the " + moving_name + " step within rounding (" + moving_semantics + ")";
    masked_.push_back(MaskedDifference{index, "step", std::move(d), reason, true});
    return false;
  }
  // Where the oracle's next call is one another API does not make (PlannedMove::api_parting) and the implementation's
  // API profile accepts that field, the sides may part here: the comparison ends, as a pass, listed.
  if (!pe.api_parting.empty() &&
      apply_mask({structure(pe.api_parting, "a call", "none (another API)")}, index, &program_.actions[index], "step",
                 expected_last, actual_last)
          .empty()) {
    ended_at_ = "action " + std::to_string(index) + " (step): call " + std::to_string(k + 1) + ": " + pe.api_parting;
    ended_why_ = "the implementation's API parts from the C++ API here (its profile's rule)";
    return false;
  }
  if (pe.moves && pa.moves) pending_moves_ = PendingMoves{pe, pa};
  return true;
}

}  // namespace lockstep
