#include "conformance/run/fixture.h"
#include "conformance/program/data_dir.h"

#include <iostream>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "conformance/program/features.h"
#include "conformance/program/file_system.h"

#include "conformance/program/json_number.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/op_descriptions.h"
#include "conformance/program/optimizer_descriptions.h"
#include "conformance/program/program_json.h"
#include "conformance/program/pytorch_version.h"
#include "conformance/program/trace_json.h"

namespace lockstep {

namespace {

using json = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------------------------
// Feature tags.

const std::vector<FeatureTagInfo> kNonOpTags = {
    {"float32", "a float32 parameter"},
    {"float64", "a float64 parameter"},
    {"scalar_param", "a 0-d parameter"},
    {"nonfinite", "NaN or an infinity among parameter values, constants or explicit gradients (SEM-9)"},
    {"no_optimizer", "no optimizer: autograd and grad accumulation only"},
};

// Options that are off unless set: those some optimizer describes with the default 0 or false (momentum, nesterov,
// weight_decay, ...). Each is a tag where a program's options turn it on.
bool off_by_default_somewhere(const std::string& option) {
  for (const OptimizerDescription& d : optimizer_descriptions())
    if (const OptionDescription* o = find_option(d.kind, option))
      if ((o->type == OptionType::Number && o->default_number == 0) || (o->type == OptionType::Flag && !o->default_flag))
        return true;
  return false;
}

bool turned_on(const OptionDescription& o, const OptimizerOptions& options) {
  if (!is_set(o, options)) return false;
  if (o.type == OptionType::Number) return options.*o.number != 0;
  if (o.type == OptionType::Flag) return *(options.*o.flag);
  return false;
}

// One tag per optimizer and per option that is off by default (optimizer_descriptions.h).
std::vector<FeatureTagInfo> optimizer_tags() {
  std::vector<FeatureTagInfo> tags;
  for (const OptimizerDescription& d : optimizer_descriptions())
    tags.push_back({d.name, fmt::format("{} ({})", d.name, d.semantics)});
  for (const std::string& option : all_option_names()) {
    if (option == "lr" || !off_by_default_somewhere(option)) continue;
    std::vector<std::string> where;
    for (const OptimizerDescription& d : optimizer_descriptions())
      if (find_option(d.kind, option)) where.push_back(fmt::format("{} {}", d.name, d.semantics));
    const bool flag = any_option(option).type == OptionType::Flag;
    tags.push_back({option, fmt::format("{}{} ({})", option, flag ? " on" : " != 0", fmt::join(where, ", ")),
                    any_option(option).not_in_cpp_api});
  }
  return tags;
}

const std::vector<FeatureTagInfo> kStructureTags = {
    {"param_groups", "more than one parameter group (SEM-7)"},
    {"add_param_group", "add_param_group after construction (SEM-7.4)"},
    {"duplicate_param", "a parameter listed twice among the groups (SEM-7.4)"},
    {"lr_change", "set_options changes a group's lr between steps (SEM-5.4, SEM-7.5)"},
    {"set_options", "set_options changes a group's options (SEM-7.5)"},
    {"zero_grad", "zero_grad() detaching and zeroing in place (SEM-4.1)"},
    {"set_to_none", "zero_grad(set_to_none=True) or p.grad = None (SEM-4.2)"},
    {"grad_none_skip", "a step while a parameter of the optimizer has no grad: it is skipped (SEM-4.3)"},
    {"accumulation", "two backward passes without clearing the grads in between (SEM-3.2, SEM-3.4)"},
    {"retain_graph", "backward with retain_graph=True (SEM-2.5)"},
    {"create_graph", "backward with create_graph=True (SEM-3.3)"},
    {"explicit_gradient", "backward with an explicit gradient (SEM-2.4, SEM-3.1)"},
    {"gradient_fed", "gradients given directly: a forward of a bare parameter, then backward(gradient)"},
    {"hold_grad", "a handle to a grad is held and observed (SEM-3.2, SEM-4.1, SEM-4.2)"},
    {"closure", "a step with a closure: the step runs its actions and returns its loss (SEM-17)"},
    {"clipping", "clip_grad_norm or clip_grad_value between backward and step (SEM-18)"},
    {"checkpoint", "optimizer.state_dict() and load_state_dict(): a saved state loaded later (SEM-19)"},
    {"no_grad", "a forward under no_grad (SEM-2.3)"},
    {"weight_tying", "a parameter used more than once in one loss (SEM-2.6)"},
    {"errors", "an action (or the setup) fails; the error kind is part of the trace (SEM-8)"},
};

// The tags above (the optimizers' and their options' between the first list and the rest), then one per loss op
// (op_descriptions.h).
const std::vector<FeatureTagInfo> kTags = [] {
  std::vector<FeatureTagInfo> tags = kNonOpTags;
  for (FeatureTagInfo& t : optimizer_tags()) tags.push_back(std::move(t));
  tags.insert(tags.end(), kStructureTags.begin(), kStructureTags.end());
  for (const OpDescription& d : op_descriptions())
    if (d.op != Op::Param && d.op != Op::Const) tags.push_back({std::string("op:") + d.name, std::string("loss op ") + d.name});
  return tags;
}();

}  // namespace

const std::vector<FeatureTagInfo>& all_feature_tags() { return kTags; }

std::vector<std::string> feature_tags(const Program& program, const Trace* trace) {
  std::set<std::string> tags;
  for (const ParamSpec& p : program.params) {
    tags.insert(p.dtype == DType::Float32 ? "float32" : "float64");
    if (p.shape.empty()) tags.insert("scalar_param");
    if (any_nonfinite(p.values)) tags.insert("nonfinite");
  }

  // Expressions: ops, constants, weight tying.
  auto scan_loss = [&](const Expr& loss) {
    std::map<std::string, int> uses;
    walk_expr(loss, [&](const Expr& e) {
      if (e.op == Op::Param) ++uses[e.name];
      else if (e.op == Op::Const) {
        if (any_nonfinite(e.constant.data)) tags.insert("nonfinite");
      } else {
        tags.insert(std::string("op:") + op_name(e.op));
      }
    });
    for (const auto& [name, n] : uses)
      if (n > 1) tags.insert("weight_tying");
  };
  if (program.loss) scan_loss(*program.loss);
  for (const Action& a : actions_as_run(program))  // a closure's forwards too (SEMANTICS §17)
    if (a.kind == ActionKind::Forward && a.loss) scan_loss(*a.loss);

  // The optimizer and every set of options it sees: the defaults and groups' options resolved (AdamW decays unless
  // told not to, SEM-6.4), set_options' changes as given.
  std::vector<OptimizerOptions> option_sets;
  if (!program.optimizer) {
    tags.insert("no_optimizer");
  } else {
    const OptimizerSpec& o = *program.optimizer;
    tags.insert(optimizer_name(o.kind));
    option_sets.push_back(resolved_options(o.kind, o.defaults));
    std::map<std::string, int> listed;
    size_t groups = o.groups.size();
    for (const ParamGroupSpec& g : o.groups) {
      if (g.options) option_sets.push_back(resolved_options(o.kind, *g.options));
      for (const std::string& n : g.params) ++listed[n];
    }
    for (const Action& a : program.actions) {
      if (a.kind == ActionKind::AddParamGroup) {
        ++groups;
        tags.insert("add_param_group");
        if (a.new_group.options) option_sets.push_back(resolved_options(o.kind, *a.new_group.options));
        for (const std::string& n : a.new_group.params) ++listed[n];
      }
    }
    if (groups > 1) tags.insert("param_groups");
    for (const auto& [name, n] : listed)
      if (n > 1) tags.insert("duplicate_param");
  }
  for (const Action& a : program.actions) {
    if (a.kind == ActionKind::SetOptions) {
      tags.insert("set_options");
      if (a.options.lr) tags.insert("lr_change");
      option_sets.push_back(a.options);
    }
  }
  for (const OptimizerOptions& o : option_sets)
    for (const std::string& option : all_option_names())
      if (option != "lr" && off_by_default_somewhere(option) && turned_on(any_option(option), o)) tags.insert(option);

  // Actions.
  std::set<std::string> grads_maybe_held;  // parameters a backward reached since their grads were cleared
  bool all_backward_fed = true, any_backward = false;
  const Expr* held_loss = nullptr;
  std::set<std::string> reached;
  bool step_seen = false, cleared_before_step = false;
  // The actions in the order they run: a step's closure before its update (SEM-17.1).
  std::function<void(const Action&)> tag_action = [&](const Action& a) {
    switch (a.kind) {
      case ActionKind::Forward:
        held_loss = a.loss ? a.loss.get() : program.loss.get();
        if (a.no_grad) tags.insert("no_grad");
        break;
      case ActionKind::Backward:
        any_backward = true;
        if (a.retain_graph && *a.retain_graph) tags.insert("retain_graph");
        if (a.create_graph) tags.insert("create_graph");
        if (a.gradient) {
          tags.insert("explicit_gradient");
          if (any_nonfinite(*a.gradient)) tags.insert("nonfinite");
        }
        if (!a.gradient || !held_loss || held_loss->op != Op::Param) all_backward_fed = false;
        if (held_loss) {
          walk_expr(*held_loss, [&](const Expr& e) {
            if (e.op != Op::Param) return;
            if (grads_maybe_held.count(e.name)) tags.insert("accumulation");
            reached.insert(e.name);
          });
          grads_maybe_held.insert(reached.begin(), reached.end());
          reached.clear();
        }
        break;
      case ActionKind::ZeroGrad:
        // A default zero_grad() is tagged as what the recording oracle did (SEM-12.1); fixtures record it.
        tags.insert(a.set_to_none.value_or(false) ? "set_to_none" : "zero_grad");
        grads_maybe_held.clear();
        if (!step_seen) cleared_before_step = cleared_before_step || a.set_to_none.value_or(false);
        break;
      case ActionKind::SetGradNone:
        tags.insert("set_to_none");
        grads_maybe_held.erase(a.param);
        if (!step_seen) cleared_before_step = true;
        break;
      case ActionKind::HoldGrad: tags.insert("hold_grad"); break;
      case ActionKind::ClipGradNorm:
      case ActionKind::ClipGradValue: tags.insert("clipping"); break;  // SEMANTICS §18
      case ActionKind::StateDict:
      case ActionKind::LoadStateDict: tags.insert("checkpoint"); break;  // SEMANTICS §19
      case ActionKind::Step:
        if (a.closure) {
          tags.insert("closure");
          for (const Action& c : *a.closure) tag_action(c);
        }
        step_seen = true;
        break;
      default: break;
    }
  };
  for (const Action& a : program.actions) tag_action(a);
  if (any_backward && all_backward_fed) tags.insert("gradient_fed");

  if (trace) {
    auto failed = [](const Record& r) { return r.error.has_value(); };
    if (failed(trace->init) || std::any_of(trace->records.begin(), trace->records.end(), failed))
      tags.insert("errors");
    // A step that ran while a parameter of the optimizer had no grad (SEM-4.3).
    for (size_t i = 0; i < trace->records.size() && i < program.actions.size(); ++i) {
      if (program.actions[i].kind != ActionKind::Step || trace->records[i].error) continue;
      // The state the update read: after the closure's last call (SEM-17.1), else before the step.
      const Record& r = trace->records[i];
      const Record& before = !r.calls.empty() && !r.calls.back().records.empty() ? r.calls.back().records.back()
                             : i == 0                                             ? trace->init
                                                                                  : trace->records[i - 1];
      for (const GroupObservation& g : before.state.groups)
        for (const std::string& n : g.params)
          if (const ParamObservation* p = before.state.param(n); p && !p->grad.defined)
            tags.insert("grad_none_skip");
    }
  } else if (step_seen && program.optimizer && cleared_before_step) {
    tags.insert("grad_none_skip");
  }

  std::vector<std::string> out;
  for (const FeatureTagInfo& t : kTags)
    if (tags.count(t.tag)) out.push_back(t.tag);
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// JSON.

bool fixture_applies(const Fixture& f, const std::string& pytorch_version) {
  return f.when_pytorch.empty() || version_condition_holds(f.when_pytorch, pytorch_version);
}

json fixture_to_json(const Fixture& f) {
  json j;
  j["id"] = f.id;
  j["description"] = f.description;
  j["semantics"] = f.semantics;
  j["tags"] = f.tags;
  if (!f.when_pytorch.empty()) j["when"] = json{{"pytorch", f.when_pytorch}};
  j["program"] = f.program_json.is_null() ? program_to_json(f.program) : f.program_json;
  j["expected"] = trace_to_json(f.expected);
  json p;
  p["oracle"] = f.provenance.oracle;
  p["oracle_version"] = f.provenance.oracle_version;
  p["schema_version"] = f.provenance.schema_version;
  p["generator"] = f.provenance.generator;
  if (!f.provenance.source.empty()) p["source"] = f.provenance.source;
  if (f.provenance.seed) p["seed"] = *f.provenance.seed;
  if (f.provenance.index) p["index"] = *f.provenance.index;
  if (f.provenance.special_values) p["special_values"] = true;
  j["provenance"] = p;
  return j;
}

namespace {

bool valid_id(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  auto ok_first = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!ok_first(id[0])) return false;
  return std::all_of(id.begin(), id.end(), [&](char c) { return ok_first(c) || c == '-' || c == '_' || c == '.'; });
}

bool valid_tag(const std::string& t) {
  return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
  });
}

std::vector<std::string> string_list(const json& j, const std::string& pointer,
                                     const std::function<bool(const std::string&)>& ok, const char* what) {
  std::vector<std::string> out = strings_from_json(j, pointer);
  for (size_t i = 0; i < out.size(); ++i)
    if (!ok(out[i])) throw JsonError(json_pointer_append(pointer, i), fmt::format("not a valid {}: '{}'", what, out[i]));
  return out;
}

bool valid_semantics(const std::string& s) {
  // "SEM-3", "SEM-3.4"
  if (s.rfind("SEM-", 0) != 0 || s.size() == 4) return false;
  bool digit_before = false;
  for (size_t i = 4; i < s.size(); ++i) {
    char c = s[i];
    if (c >= '0' && c <= '9') digit_before = true;
    else if (c == '.' && digit_before && i + 1 < s.size()) digit_before = false;
    else return false;
  }
  return digit_before;
}

}  // namespace

Fixture fixture_from_json(const json& doc, const std::string& file) {
  Fixture f;
  f.file = file;
  try {
    JsonObjectReader r(doc, "", "a fixture");
    f.id = r.string("id");
    if (!valid_id(f.id))
      throw JsonError("/id", "an id is 1-128 characters of a-z 0-9 - _ . starting with a letter or digit");
    f.description = r.string("description");
    f.semantics = string_list(r.required("semantics"), "/semantics", valid_semantics, "SEMANTICS section (SEM-3.4)");
    f.tags = string_list(r.required("tags"), "/tags", valid_tag, "tag (a-z 0-9 _ :)");
    if (const json* when = r.optional("when")) {
      JsonObjectReader w(*when, "/when", "the fixture's version condition");
      f.when_pytorch = w.string("pytorch");
      try {
        version_condition_holds(f.when_pytorch, "1.0");  // readable?
      } catch (const std::invalid_argument& e) {
        throw JsonError("/when/pytorch", e.what());
      }
      w.finish(/*allow_comment=*/false);
    }
    f.program_json = r.required("program");
    try {
      f.program = program_from_json(f.program_json);
    } catch (const ProgramError& e) {
      throw JsonError("/program" + e.path(), e.what());
    } catch (const JsonError& e) {
      throw JsonError("/program" + e.pointer(), e.message());
    }
    try {
      f.expected = trace_from_json(r.required("expected"));
    } catch (const JsonError& e) {
      throw JsonError("/expected" + e.pointer(), e.message());
    }
    if (f.expected.records.size() != f.program.actions.size())
      throw JsonError("/expected/records", fmt::format("{} records for a program of {} actions",
                                                       f.expected.records.size(), f.program.actions.size()));
    for (size_t i = 0; i < f.expected.records.size(); ++i) {
      const char* want = action_name(f.program.actions[i].kind);
      if (f.expected.records[i].action != want)
        throw JsonError(json_pointer_append(json_pointer_append("/expected/records", i), "action"),
                        fmt::format("record {} is '{}' but action {} of the program is '{}'", i,
                                    f.expected.records[i].action, i, want));
    }
    JsonObjectReader p(r.required("provenance"), "/provenance", "the provenance");
    f.provenance.oracle = p.string("oracle");
    f.provenance.oracle_version = p.string("oracle_version");
    // Compared before narrowing: 4294967297 is not version 1.
    const int64_t version = int_from_json(p.required("schema_version"), "/provenance/schema_version");
    if (version != kFixtureSchemaVersion)
      throw JsonError("/provenance/schema_version",
                      fmt::format("schema version {} is not supported (this build reads version {})", version,
                                  kFixtureSchemaVersion));
    f.provenance.schema_version = kFixtureSchemaVersion;
    f.provenance.generator = p.string("generator");
    if (f.provenance.generator != "named_case" && f.provenance.generator != "random" &&
        f.provenance.generator != "gradient_fed" && f.provenance.generator != "op_edge" &&
        f.provenance.generator != "default_run")
      throw JsonError("/provenance/generator",
                      "expected \"named_case\", \"random\", \"gradient_fed\", \"op_edge\" or \"default_run\"");
    if (p.has("source")) f.provenance.source = p.string("source");
    if (const json* s = p.optional("seed"))
      f.provenance.seed = static_cast<uint64_t>(index_from_json(*s, "/provenance/seed"));
    if (const json* s = p.optional("index"))
      f.provenance.index = static_cast<uint64_t>(index_from_json(*s, "/provenance/index"));
    if (const auto flag = p.optional_bool("special_values")) f.provenance.special_values = *flag;
    if ((f.provenance.generator == "random" || f.provenance.generator == "default_run") &&
        !(f.provenance.seed && f.provenance.index))
      throw JsonError("/provenance", "a " + f.provenance.generator + " fixture records its \"seed\" and \"index\"");
    p.finish(false);
    r.finish(false);
  } catch (const JsonError& e) {
    throw InputError(file, e.pointer(), e.message());
  }
  return f;
}

Fixture read_fixture_file(const std::string& path) {
  const std::string text = read_text_file(path);
  json doc;
  try {
    doc = parse_json_text(text, 256);
  } catch (const JsonError& e) {
    throw InputError(path, e.pointer(), e.message());
  }
  return fixture_from_json(doc, path);
}

namespace {

std::vector<Fixture> load_fixture_files(const std::string& dir, bool index_only) {
  if (!files::is_directory(dir)) throw InputError(dir, "", "not a directory of fixtures");
  std::vector<std::string> paths, skipped;
  try {
    paths = files::list_files(dir, {".json"}, /*recursive=*/true, /*skip_dirs=*/{"schema"}, &skipped);
  } catch (const std::runtime_error& e) {
    throw InputError(dir, "", e.what());
  }
  for (const std::string& s : skipped) std::cerr << "lockstep: skipped " << s << "\n";  // said, never silent
  if (paths.empty()) throw InputError(dir, "", "no *.json fixture files in it");
  std::sort(paths.begin(), paths.end());
  std::vector<Fixture> out;
  std::map<std::string, std::string> seen;
  for (const std::string& file : paths) {
    Fixture f = read_fixture_file(file);
    if (index_only) {
      f.expected.init = Record{};
      f.expected.records = {};
      f.program_json = nullptr;
    }
    auto [it, inserted] = seen.emplace(f.id, file);
    if (!inserted) throw InputError(file, "/id", fmt::format("id '{}' is also used by {}", f.id, it->second));
    out.push_back(std::move(f));
  }
  std::sort(out.begin(), out.end(), [](const Fixture& a, const Fixture& b) { return a.id < b.id; });
  return out;
}

}  // namespace

std::vector<Fixture> load_fixtures(const std::string& dir) { return load_fixture_files(dir, false); }
std::vector<Fixture> load_fixture_index(const std::string& dir) { return load_fixture_files(dir, true); }

std::string default_fixtures_dir() { return data_dir() + "/fixtures/corpus"; }

// ---------------------------------------------------------------------------------------------------------

namespace {

// One line, with ", " and ": " separators.
void format_one_line(const json& j, std::string& out) {
  if (j.is_object()) {
    out += "{";
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += json(it.key()).dump();
      out += ": ";
      format_one_line(it.value(), out);
    }
    out += "}";
  } else if (j.is_array()) {
    out += "[";
    bool first = true;
    for (const json& e : j) {
      if (!first) out += ", ";
      first = false;
      format_one_line(e, out);
    }
    out += "]";
  } else {
    out += j.dump();
  }
}

constexpr size_t kLineWidth = 110;

// Containers that fit in the line width (after the indentation) and arrays of scalars go on one line;
// others are broken, one member per line.
void format_value(const json& j, size_t indent, std::string& out) {
  if (!j.is_structured() || j.empty()) {
    format_one_line(j, out);
    return;
  }
  std::string line;
  format_one_line(j, line);
  const bool scalars = j.is_array() && std::all_of(j.begin(), j.end(), [](const json& e) { return e.is_primitive(); });
  if (scalars || indent + line.size() <= kLineWidth) {
    out += line;
    return;
  }
  const std::string pad(indent + 2, ' ');
  out += j.is_object() ? "{\n" : "[\n";
  bool first = true;
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += ",\n";
      first = false;
      out += pad + json(it.key()).dump() + ": ";
      format_value(it.value(), indent + 2, out);
    }
  } else {
    for (const json& e : j) {
      if (!first) out += ",\n";
      first = false;
      out += pad;
      format_value(e, indent + 2, out);
    }
  }
  out += "\n" + std::string(indent, ' ') + (j.is_object() ? "}" : "]");
}

}  // namespace

std::string format_fixture_json(const json& doc) {
  std::string out;
  format_value(doc, 0, out);
  out += "\n";
  return out;
}

std::string content_id(const std::string& prefix, const json& program_json) {
  const std::string text = program_json.dump();
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("{}-{:012x}", prefix, h & 0xffffffffffffULL);
}

}  // namespace lockstep
