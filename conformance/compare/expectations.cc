// Expectations: the file format, validation and matching (see expectations.h).
#include "conformance/compare/expectations.h"

#include "conformance/program/optimizer_descriptions.h"
#include "conformance/program/pytorch_version.h"
#include "conformance/program/data_dir.h"

#include <functional>
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>

#include <fmt/format.h>

#include "conformance/compare/formula_variants.h"
#include "conformance/compare/tolerance.h"
#include "conformance/program/features.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/trace.h"
#include "conformance/program/program_json.h"

namespace lockstep {

const std::vector<std::string>& expectation_categories() {
  static const std::vector<std::string> c = {"api_difference", "implementation_bug", "not_implemented",
                                             "precision", "protocol"};
  return c;
}


namespace {
bool all_match(const std::vector<std::string>& globs, const std::set<std::string>* features) {
  if (globs.empty()) return true;
  if (!features) return false;
  for (const std::string& g : globs)
    if (std::none_of(features->begin(), features->end(), [&](const std::string& f) { return glob_match(g, f); }))
      return false;
  return true;
}
bool none_match(const std::vector<std::string>& globs, const std::set<std::string>* features) {
  if (globs.empty()) return true;
  if (!features) return false;
  for (const std::string& g : globs)
    if (std::any_of(features->begin(), features->end(), [&](const std::string& f) { return glob_match(g, f); }))
      return false;
  return true;
}
bool applies(const Expectation& e, const std::string& case_id, const std::set<std::string>* features) {
  return glob_match(e.id, case_id) && all_match(e.features, features) && none_match(e.without_features, features);
}

void params_of(const Expr& e, std::set<std::string>& out) {
  walk_expr(e, [&](const Expr& node) {
    if (node.op == Op::Param) out.insert(node.name);
  });
}
}  // namespace

const std::vector<std::string>& value_classes() {
  static const std::vector<std::string> c = {"nan", "inf", "+inf", "-inf", "finite", "zero", "+0", "-0", "nonzero"};
  return c;
}

bool value_in_class(double v, const std::string& c) {
  if (c == "nan") return std::isnan(v);
  if (c == "inf") return std::isinf(v);
  if (c == "+inf") return std::isinf(v) && v > 0;
  if (c == "-inf") return std::isinf(v) && v < 0;
  if (c == "finite") return std::isfinite(v);
  if (c == "zero") return v == 0;
  if (c == "+0") return v == 0 && !std::signbit(v);
  if (c == "-0") return v == 0 && std::signbit(v);
  if (c == "nonzero") return std::isfinite(v) && v != 0;
  return false;
}

namespace {
std::vector<std::string> split_parts(const std::string& s) {
  static const std::string arrow = " → ";
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t at; (at = s.find(arrow, start)) != std::string::npos; start = at + arrow.size())
    out.push_back(s.substr(start, at - start));
  out.push_back(s.substr(start));
  return out;
}
bool names_a_subject_kind(const std::string& part) {
  return part == "output" || part.rfind("output*", 0) == 0 || part.rfind("handle ", 0) == 0 ||
         part.rfind("group ", 0) == 0;
}
}  // namespace

bool field_glob_match(const std::string& glob, const std::string& path) {
  const std::vector<std::string> g = split_parts(glob), p = split_parts(path);
  if (g.size() != p.size()) return false;
  // The subject: "output", "handle g0", "group 1" only by a glob that names that kind; "*" names parameters.
  if (g.size() > 1 && names_a_subject_kind(p[0]) && !names_a_subject_kind(g[0])) return false;
  for (size_t i = 0; i < g.size(); ++i)
    if (!glob_match(g[i], p[i])) return false;
  return true;
}

namespace {
// Paths of every kind of number a trace holds (comparator.h): a field glob that matches one of them masks numbers.
std::vector<std::string> numeric_sample_paths() {
  std::vector<std::string> out = {"p → value", "p → value[0]", "p → grad", "p → grad[0]", "handle h → value",
                                  "handle h → value[0]", "output → value", "output → value[0]"};
  for (const StateTensorDescription& t : all_state_tensors()) {  // every optimizer's state (optimizer_descriptions.h)
    out.push_back(std::string("p → ") + t.name);
    out.push_back(std::string("p → ") + t.name + "[0]");
  }
  return out;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }

bool accepts(const Acceptance& a, const Difference& d, const VariantEvaluator* variant) {
  auto in_classes = [](double v, const std::vector<std::string>& classes) {
    return classes.empty() ||
           std::any_of(classes.begin(), classes.end(), [&](const std::string& c) { return value_in_class(v, c); });
  };
  if (!a.expected_classes.empty() || !a.actual_classes.empty())
    return in_classes(d.expected, a.expected_classes) && in_classes(d.actual, a.actual_classes);
  if (a.unchanged) return d.has_actual_before && same_bits(d.actual, d.actual_before);
  if (!a.variant.empty() && variant) {
    const std::optional<double> v = (*variant)(a.variant, d);
    if (!v) return false;
    // A non-finite variant value is matched exactly (NaN by NaN), a finite one within the comparator's bound (or,
    // where the comparator judged a rule, at the value's own ULPs) and the rounding of the variant's own result.
    if (!std::isfinite(*v) || !std::isfinite(d.actual)) return same_bits(*v, d.actual) || (*v == d.actual);
    const double k = std::isnan(d.allowed_ulps) ? 4 : d.allowed_ulps;
    const double allowed = std::max(std::isnan(d.bound_value) ? 0.0 : d.bound_value, k * ulp(*v, d.dtype));
    return std::fabs(d.actual - *v) <= allowed;
  }
  if (!std::isfinite(d.actual) || std::isnan(d.centre)) return false;  // rules (NaN, inf, the sign of zero): exact
  if (a.ulps > 0) {
    const DType dtype = a.ulps_dtype.value_or(d.dtype);
    return std::fabs(d.actual - d.centre) <= a.ulps * ulp(d.scale, dtype);
  }
  return false;
}
}  // namespace

const std::vector<std::pair<std::string, std::string>>& record_situations() {
  static const std::vector<std::pair<std::string, std::string>> s = {
      {"repeated_backward", "a backward of an output an earlier backward already backpropagated"},
      {"step_without_grad", "a step while a parameter of the optimizer's groups has no grad"},
  };
  return s;
}

std::optional<size_t> first_action_in_situation(const Program& program, const std::string& name) {
  // A step's closure actions run before its update (SEMANTICS §17.1): a situation found among them is the step's.
  auto first_index = [&](const std::function<bool(const Action&)>& reaches) -> std::optional<size_t> {
    for (size_t i = 0; i < program.actions.size(); ++i) {
      if (program.actions[i].closure)
        for (const Action& c : *program.actions[i].closure)
          if (reaches(c)) return i;
      if (reaches(program.actions[i])) return i;
    }
    return std::nullopt;
  };
  if (name == "repeated_backward") {
    bool held = false, backpropagated = false;
    return first_index([&](const Action& a) {
      if (a.kind == ActionKind::Forward) {
        held = !a.no_grad;  // a no_grad output cannot be backpropagated (no_grad_fn): never "already" either
        backpropagated = false;
      } else if (a.kind == ActionKind::Backward && held) {
        if (backpropagated) return true;
        backpropagated = true;
      }
      return false;
    });
  }
  if (name == "step_without_grad") {
    if (!program.optimizer) return std::nullopt;
    std::set<std::string> grouped, defined, held;
    for (const ParamGroupSpec& g : program.optimizer->groups) grouped.insert(g.params.begin(), g.params.end());
    return first_index([&](const Action& a) {
      switch (a.kind) {
        case ActionKind::Forward: {
          held.clear();
          const Expr* loss = a.loss ? a.loss.get() : program.loss.get();
          if (loss && !a.no_grad) params_of(*loss, held);
          break;
        }
        case ActionKind::Backward:
          defined.insert(held.begin(), held.end());
          break;
        case ActionKind::ZeroGrad:
          // zero_grad() without set_to_none is taken as the 1.13 default, zeroing (SEM-12.1): for an implementation
          // whose default is none the situation may start later than this finds, so such a mask covers less, never
          // more.
          if (a.set_to_none && *a.set_to_none) defined.clear();
          break;
        case ActionKind::SetGradNone:
          defined.erase(a.param);
          break;
        case ActionKind::AddParamGroup:
          grouped.insert(a.new_group.params.begin(), a.new_group.params.end());
          break;
        case ActionKind::Step:
          for (const std::string& p : grouped)
            if (!defined.count(p)) return true;
          break;
        default:
          break;
      }
      return false;
    });
  }
  return std::nullopt;
}

const Expectation* FieldMask::match(const std::string& path, const std::vector<std::string>& error_kinds,
                                    const std::string& expected_text, const std::string& actual_text,
                                    std::optional<size_t> record) const {
  Difference d;
  d.kind = DifferenceKind::Structure;
  d.path = path;
  d.expected_text = expected_text;
  d.actual_text = actual_text;
  return match(d, error_kinds, record, nullptr);
}

const Expectation* FieldMask::match(const Difference& d, const std::vector<std::string>& error_kinds,
                                    std::optional<size_t> record, const VariantEvaluator* variant) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Expectation* e = entries_[i];
    if (!e->from.empty() && !(from_[i] && record && *record >= *from_[i])) continue;
    if (!glob_match(e->expected_value, d.expected_text) || !glob_match(e->actual_value, d.actual_text)) continue;
    if (!e->errors.empty()) {
      bool raised = false;
      for (const std::string& g : e->errors)
        for (const std::string& k : error_kinds) raised = raised || glob_match(g, k);
      if (!raised) continue;
    }
    // An entry with "accept" judges numbers only; one without, structure only (its globs cannot name numbers).
    if (d.kind == DifferenceKind::Numeric && (!e->accept.given || d.omitted > 0 || !accepts(e->accept, d, variant)))
      continue;
    if (d.kind == DifferenceKind::Structure && e->accept.given) continue;
    for (const std::string& f : e->fields)
      if (field_glob_match(f, d.path)) {
        ++e->uses;
        return e;
      }
  }
  return nullptr;
}

FieldMask Expectations::mask_for(const std::string& case_id, const std::set<std::string>* features,
                                 const Program* program) const {
  FieldMask m;
  for (const Expectation& e : entries) {
    if (e.fields.empty() || !applies(e, case_id, features)) continue;
    if (!e.from.empty() && !program) continue;
    m.entries_.push_back(&e);
    m.from_.push_back(e.from.empty() ? std::optional<size_t>(0) : first_action_in_situation(*program, e.from));
  }
  return m;
}

const Expectation* Expectations::whole_case(const std::string& case_id, const std::set<std::string>* features,
                                            const Program* program, std::optional<size_t> failed_action) const {
  // An entry that names the case comes before a rule (an entry with "features") that also matches it.
  for (const bool rules : {false, true})
    for (const Expectation& e : entries) {
      if (!e.fields.empty() || e.features.empty() != !rules || !applies(e, case_id, features)) continue;
      if (!e.from.empty()) {
        const std::optional<size_t> first = program ? first_action_in_situation(*program, e.from) : std::nullopt;
        if (!first || !failed_action || *failed_action < *first) continue;
      }
      return &e;
    }
  return nullptr;
}

std::vector<const Expectation*> Expectations::unused_entries() const {
  std::vector<const Expectation*> out;
  for (const Expectation& e : entries)
    if (e.uses == 0) out.push_back(&e);
  return out;
}

std::vector<std::string> Expectations::stale(const std::vector<std::string>& case_ids) const {
  std::vector<std::string> out;
  for (const Expectation& e : entries)
    if (std::none_of(case_ids.begin(), case_ids.end(), [&](const std::string& id) { return glob_match(e.id, id); }))
      out.push_back(e.id);
  return out;
}

size_t Expectations::keep_for_version(const std::string& pytorch_version) {
  const auto applies = [&](const Expectation& e) {
    return e.when_pytorch.empty() || version_condition_holds(e.when_pytorch, pytorch_version);
  };
  std::vector<Expectation> kept;
  for (Expectation& e : entries) (applies(e) ? kept : for_other_versions).push_back(std::move(e));
  const size_t dropped = entries.size() - kept.size();
  entries = std::move(kept);
  return dropped;
}

void Expectations::append(const Expectations& more) {
  entries.insert(entries.end(), more.entries.begin(), more.entries.end());
}

Expectations turned_around(const Expectations& oracle_side, const std::string& oracle_version) {
  Expectations turned = oracle_side;
  turned.keep_for_version(oracle_version);
  turned.for_other_versions.clear();
  for (Expectation& e : turned.entries) {
    if (e.accept.unchanged || !e.accept.variant.empty()) {
      std::string which = "'" + e.id + "'";
      for (size_t f = 0; f < e.features.size(); ++f) which += (f ? ", " : " with features ") + e.features[f];
      throw InputError(e.source, "",
                       fmt::format("the entry {} accepts {}, judged at the implementation's inputs: it cannot be "
                                   "turned around for the oracle (SEMANTICS 20.4)",
                                   which, e.accept.unchanged ? std::string("\"unchanged\"") : "the variant " + e.accept.variant));
    }
    std::swap(e.expected_value, e.actual_value);
    std::swap(e.accept.expected_classes, e.accept.actual_classes);
    e.when_pytorch.clear();  // decided above, for the oracle
    e.source += ", the oracle's, turned around";
  }
  return turned;
}

namespace {

std::string nonempty_string(JsonObjectReader& r, const std::string& key) {
  std::string s = r.string(key);
  if (s.empty()) throw JsonError(r.pointer(key), "must not be empty");
  return s;
}

Acceptance acceptance_from_json(const nlohmann::ordered_json& j, const std::string& pointer) {
  JsonObjectReader r(j, pointer, "an \"accept\" predicate");
  Acceptance a;
  a.given = true;
  int forms = 0;
  auto classes = [&](const char* key) {
    std::vector<std::string> out;
    const nlohmann::ordered_json* v = r.optional(key);
    if (!v) return out;
    const std::string p = r.pointer(key);
    if (v->is_string()) out.push_back(v->get<std::string>());
    else if (v->is_array() && !v->empty())
      for (size_t i = 0; i < v->size(); ++i) {
        if (!(*v)[i].is_string()) throw JsonError(json_pointer_append(p, i), "expected a value class");
        out.push_back((*v)[i].get<std::string>());
      }
    else throw JsonError(p, "expected a value class or a non-empty list of them");
    const auto& known = value_classes();
    for (const std::string& c : out)
      if (std::find(known.begin(), known.end(), c) == known.end())
        throw JsonError(p, fmt::format("unknown value class '{}' (known: {})", c, fmt::join(known, ", ")));
    return out;
  };
  a.expected_classes = classes("expected");
  a.actual_classes = classes("actual");
  if (!a.expected_classes.empty() || !a.actual_classes.empty()) {
    ++forms;
    // Both sides, and no value in a class of both: a predicate that held for equal classes ("finite" and "finite")
    // would accept any wrong number.
    if (a.expected_classes.empty() || a.actual_classes.empty())
      throw JsonError(pointer, "value classes need both sides, \"expected\" and \"actual\"");
    static const double samples[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                                     -std::numeric_limits<double>::infinity(), 0.0, -0.0, 1.5, -2.5};
    for (double v : samples) {
      auto in = [v](const std::vector<std::string>& cs) {
        return std::any_of(cs.begin(), cs.end(), [v](const std::string& c) { return value_in_class(v, c); });
      };
      if (in(a.expected_classes) && in(a.actual_classes))
        throw JsonError(pointer, fmt::format("the classes of \"expected\" and \"actual\" overlap (both hold {}): they "
                                             "would accept a wrong value of the same class", v));
    }
  }
  if (const nlohmann::ordered_json* u = r.optional("ulps")) {
    // At most 2^16 ULPs: 2^16 ulp(m) is a relative 2^-7 of the scale in float32, so no factor or sign passes.
    if (!u->is_number() || !(u->get<double>() > 0) || u->get<double>() > 65536)
      throw JsonError(r.pointer("ulps"), "expected a number of ULPs above 0 and at most 65536 (a precision, not a factor)");
    a.ulps = u->get<double>();
    ++forms;
    if (r.has("dtype")) {
      const std::string d = r.string("dtype");
      if (d == "float32") a.ulps_dtype = DType::Float32;
      else if (d == "float64") a.ulps_dtype = DType::Float64;
      else throw JsonError(r.pointer("dtype"), "expected \"float32\" or \"float64\"");
    }
  } else if (r.has("dtype")) {
    throw JsonError(r.pointer("dtype"), "\"dtype\" goes with \"ulps\"");
  }
  if (const nlohmann::ordered_json* u = r.optional("unchanged")) {
    if (!u->is_boolean() || !u->get<bool>()) throw JsonError(r.pointer("unchanged"), "expected true");
    a.unchanged = true;
    ++forms;
  }
  if (r.has("variant")) {
    a.variant = r.string("variant");
    const auto& known = formula_variants();
    if (std::none_of(known.begin(), known.end(), [&](const FormulaVariantInfo& v) { return v.name == a.variant; })) {
      std::vector<std::string> names;
      for (const FormulaVariantInfo& v : known) names.push_back(v.name);
      throw JsonError(r.pointer("variant"), fmt::format("unknown variant '{}' (known: {})", a.variant, fmt::join(names, ", ")));
    }
    ++forms;
  }
  if (forms != 1)
    throw JsonError(pointer, "give exactly one predicate: value classes (\"expected\"/\"actual\"), \"ulps\", "
                             "\"unchanged\" or \"variant\"");
  r.finish(/*allow_comment=*/true);
  return a;
}

Expectation entry_from_json(const nlohmann::ordered_json& j, const std::string& pointer) {
  JsonObjectReader r(j, pointer, "an expectation");
  Expectation e;
  if (r.has("id")) e.id = nonempty_string(r, "id");
  if (r.has("field") && r.has("fields"))
    throw JsonError(r.pointer("field"), "give \"fields\" (a list of globs) or \"field\", not both");
  if (r.has("field")) {
    e.fields.push_back(nonempty_string(r, "field"));
  } else if (const nlohmann::ordered_json* fields = r.optional("fields")) {
    const std::string fp = r.pointer("fields");
    if (!fields->is_array() || fields->empty())
      throw JsonError(fp, "expected a non-empty array of field globs (omit \"fields\" to expect the whole case to fail)");
    for (size_t i = 0; i < fields->size(); ++i) {
      const nlohmann::ordered_json& f = (*fields)[i];
      if (!f.is_string() || f.get<std::string>().empty())
        throw JsonError(json_pointer_append(fp, i), "expected a non-empty string (a glob on field paths)");
      e.fields.push_back(f.get<std::string>());
    }
  }
  auto globs = [&](const char* key, const char* what) {
    std::vector<std::string> out;
    const nlohmann::ordered_json* list = r.optional(key);
    if (!list) return out;
    const std::string lp = r.pointer(key);
    if (!list->is_array() || list->empty()) throw JsonError(lp, std::string("expected a non-empty array of ") + what);
    for (size_t i = 0; i < list->size(); ++i) {
      const nlohmann::ordered_json& g = (*list)[i];
      if (!g.is_string() || g.get<std::string>().empty())
        throw JsonError(json_pointer_append(lp, i), std::string("expected a non-empty string (") + what + ")");
      out.push_back(g.get<std::string>());
    }
    return out;
  };
  e.features = globs("features", "globs on feature names, conformance/program/features.h");
  e.errors = globs("errors", "globs on error kinds");
  e.without_features = globs("without_features", "globs on feature names, conformance/program/features.h");
  for (const std::string& f : e.without_features)
    if (!matches_some_feature(f))
      throw JsonError(r.pointer("without_features"), "'" + f + "' matches no feature (`lockstep features` lists them)");
  if (r.has("from")) {
    e.from = r.string("from");
    const auto& known = record_situations();
    if (std::none_of(known.begin(), known.end(), [&](const auto& s) { return s.first == e.from; }))
    {
      std::vector<std::string> names;
      for (const auto& s : known) names.push_back(s.first);
      throw JsonError(r.pointer("from"), fmt::format("unknown situation '{}' (known: {})", e.from, fmt::join(names, ", ")));
    }
    if (e.fields.empty() && e.features.empty())
      throw JsonError(r.pointer("from"), "\"from\" narrows a mask or a rule: give \"fields\" or \"features\" too");
  }
  for (const char* key : {"expected", "actual"}) {
    if (!r.has(key)) continue;
    if (e.fields.empty()) throw JsonError(r.pointer(key), std::string("\"") + key + "\" narrows a mask: give \"fields\" too");
    (std::string(key) == "expected" ? e.expected_value : e.actual_value) = r.string(key);
  }
  for (const std::string& f : e.features)
    if (!matches_some_feature(f))
      throw JsonError(r.pointer("features"), "'" + f + "' matches no feature (`lockstep features` lists them)");
  for (const std::string& k : e.errors) {
    bool known = false;
    for (const char* kind : all_error_kinds()) known = known || glob_match(k, kind);
    if (!known) throw JsonError(r.pointer("errors"), "'" + k + "' matches no error kind (conformance/program/trace.h)");
  }
  if (!e.errors.empty() && e.fields.empty())
    throw JsonError(r.pointer("errors"), "\"errors\" narrows a mask: give \"fields\" too");
  if (!r.has("id") && e.features.empty())
    throw JsonError(pointer, "an expectation needs an \"id\" glob or \"features\" (a rule for every case would hide everything)");
  if (const nlohmann::ordered_json* when = r.optional("when")) {
    JsonObjectReader w(*when, r.pointer("when"), "an expectation's condition");
    e.when_pytorch = w.string("pytorch");
    try {
      version_condition_holds(e.when_pytorch, "1.0");  // readable?
    } catch (const std::invalid_argument& x) {
      throw JsonError(w.pointer("pytorch"), x.what());
    }
    w.finish(/*allow_comment=*/false);
  }
  if (const nlohmann::ordered_json* accept = r.optional("accept")) {
    if (e.fields.empty()) throw JsonError(r.pointer("accept"), "\"accept\" narrows a mask: give \"fields\" too");
    e.accept = acceptance_from_json(*accept, r.pointer("accept"));
  }
  if (!e.accept.given) {
    static const std::vector<std::string> numeric = numeric_sample_paths();
    for (size_t i = 0; i < e.fields.size(); ++i)
      for (const std::string& path : numeric)
        if (field_glob_match(e.fields[i], path))
          throw JsonError(json_pointer_append(r.pointer("fields"), i),
                          fmt::format("'{}' masks numbers ('{}') but the entry has no \"accept\": say what it accepts "
                                      "(value classes, ulps, unchanged or a variant; conformance/compare/expectations.h)",
                                      e.fields[i], path));
  }
  if (const nlohmann::ordered_json* guard = r.optional("guard")) {
    const std::string gp = r.pointer("guard");
    if (guard->is_string()) e.guards.push_back(guard->get<std::string>());
    else if (guard->is_array())
      for (size_t i = 0; i < guard->size(); ++i) {
        if (!(*guard)[i].is_string() || (*guard)[i].get<std::string>().empty())
          throw JsonError(json_pointer_append(gp, i), "expected a mutant's name");
        e.guards.push_back((*guard)[i].get<std::string>());
      }
    if (e.guards.empty() || e.guards.front().empty()) throw JsonError(gp, "expected a mutant's name or a list of them");
  }
  e.reason = nonempty_string(r, "reason");
  if (r.has("category")) {
    e.category = r.string("category");
    const auto& cats = expectation_categories();
    if (std::find(cats.begin(), cats.end(), e.category) == cats.end())
      throw JsonError(r.pointer("category"),
                      fmt::format("unknown category '{}' (known: {})", e.category, fmt::join(cats, ", ")));
  }
  r.finish(/*allow_comment=*/true);
  return e;
}

}  // namespace

Expectations expectations_from_json(const nlohmann::ordered_json& doc, const std::string& file) {
  Expectations out;
  try {
    const nlohmann::ordered_json* list = &doc;
    std::string base;
    if (doc.is_object()) {
      JsonObjectReader top(doc, "", "an expectations file");
      const char* key = top.has("expected_failures") && !top.has("expectations") ? "expected_failures" : "expectations";
      list = &top.required(key);
      base = std::string("/") + key;
      top.finish(true);
    }
    if (!list->is_array())
      throw JsonError(base, std::string("expected an array of expectations, found ") + json_type_name(*list));
    for (size_t i = 0; i < list->size(); ++i)
      out.entries.push_back(entry_from_json((*list)[i], json_pointer_append(base, i)));
    for (Expectation& e : out.entries) e.source = file;
  } catch (const JsonError& e) {
    throw InputError(file, e.pointer(), e.message());
  }
  return out;
}

Expectations load_expectations(const std::string& path) {
  const std::string text = read_text_file(path);
  nlohmann::ordered_json doc;
  try {
    doc = parse_json_text(text, 16);
  } catch (const JsonError& e) {
    throw InputError(path, e.pointer(), e.message());
  }
  return expectations_from_json(doc, path);
}

std::string default_expectations_file() {
  return data_dir() + "/conformance/compare/expectations.json";
}

}  // namespace lockstep
