// Coverage cells (coverage_cells.h): a forward evaluation for the op edge classes, and scans of the actions
// and the optimizer for the other tables.
#include "conformance/program/coverage_cells.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <optional>

#include "conformance/program/checkpoint_timeline.h"
#include "conformance/program/features.h"
#include "conformance/program/op_evaluator.h"
#include "conformance/program/optimizer_descriptions.h"

namespace lockstep {
namespace {

const std::vector<std::string> kEdges = {"any",   "zero",      "negative",       "tiny",
                                         "large", "nonfinite", "repeated_index", "broadcast"};

// The ops table's rows: every op but param and const, pow split by exponent.
std::vector<std::string> op_row_names() {
  std::vector<std::string> names;
  for (const OpDescription& d : op_descriptions()) {
    if (d.op == Op::Param || d.op == Op::Const) continue;
    if (d.op == Op::Pow) {
      for (const char* e : {"pow^0", "pow^1", "pow^2", "pow^3", "pow^other"}) names.push_back(e);
    } else {
      names.push_back(d.name);
    }
  }
  return names;
}

// The description of a row's op ("pow^2" is pow's).
const OpDescription& row_op(const std::string& row) {
  const std::optional<Op> op = op_from_name(row.substr(0, row.find('^')));
  return describe(op ? *op : Op::Const);
}

// Which edge classes an op's inputs can be generated in (gen_program.cc): the structural classes where they
// apply; log, fractional and negative powers get positive inputs by construction (SEMANTICS keeps them
// finite), exp bounded ones (tanh/sigmoid or a leaf), so negative and large inputs there come only with
// special values or not at all.
bool edge_applies(const std::string& op, const std::string& edge) {
  if (edge == "repeated_index") return row_op(op).repeated_index_cell;
  if (edge == "broadcast") return row_op(op).broadcasts;
  if (op == "log" || op == "pow^other") return edge != "negative" && edge != "large";
  if (op == "exp") return edge != "large";
  return true;
}

const std::vector<std::string> kActionRows = {"start",    "forward",     "backward",    "zero_grad", "set_grad_none",
                                              "hold_grad", "step", "set_options", "add_param_group",
                                              "clip_grad_norm", "clip_grad_value"};

const std::vector<std::string> kOptionColumns = {"lr 0",     "lr > 0",    "weight_decay 0", "weight_decay > 0",
                                                 "momentum 0", "momentum > 0", "dampening",  "nesterov",
                                                 "amsgrad",  "beta1 0",   "beta2 0",        "eps 0",
                                                 "alpha",    "centered",  "lr_decay",       "initial_accumulator_value",
                                                 "invalid"};

// A column applies to the optimizers that have its option (optimizer_descriptions.h); the last four are
// "at a value other than the option type's default".
bool option_applies(const std::string& optimizer, const std::string& column) {
  const std::optional<OptimizerKind> kind = optimizer_from_name(optimizer);
  if (!kind) return false;
  const std::string option = column.substr(0, column.find(' '));
  if (option == "lr") return true;
  if (option == "invalid") return describe(*kind).rejects != nullptr;  // L-BFGS validates nothing (SEM-16.1)
  if (option == "beta1" || option == "beta2") return find_option(*kind, "betas") != nullptr;
  return find_option(*kind, option) != nullptr;
}

const std::vector<std::string> kGroupColumns = {
    "one list",          "several groups",      "group options",  "partial group options",
    "some not optimized", "duplicate in group", "param in two groups", "empty list",
    "lr change",         "other option change", "change of a missing group", "add_param_group",
    "added param already grouped", "change with several groups", "invalid in one of several groups",
    "same-shape params with state"};

// The structures of several groups, a parameter listed twice or none, for an optimizer of one group only (L-BFGS,
// SEM-16.1: another group fails its steps) are error cases the generator draws as "several groups" alone.
bool group_applies(const std::string& optimizer, const std::string& column) {
  const std::optional<OptimizerKind> kind = optimizer_from_name(optimizer);
  if (!kind) return false;
  if (!describe(*kind).one_group) return true;
  return column != "duplicate in group" && column != "param in two groups" && column != "empty list" &&
         column != "invalid in one of several groups";
}

const std::vector<std::string> kSituationColumns = {
    "weight tying",
    "unused param",
    "no_grad forward",
    "explicit gradient",
    "retain_graph",
    "create_graph",
    "held across zero_grad",
    "held across set_to_none",
    "held across create_graph",
    "0-d grads sharing storage, accumulated again",
    "retained graph stepped, backward again",
    "activation of a param, stepped, backward again",
    "zero_grad between backwards",
    "backward after step, no new forward",
    "backward after create_graph",
    "param used twice, grad defined",
    "param used twice, grad held",
    "param used twice, 0-d grad aliased",
    "backward through a freed graph",
    "step before any backward",
    // SEMANTICS §18: what gradient clipping meets.
    "clip, a listed grad undefined",
    "clip, a param listed twice",
    "clip, a held grad",
    "clip, a 0-d grad aliased",
    "clip, a create_graph grad",
    "clip, max_norm or clip_value <= 0",
    "clip_grad_norm, norm_type 1",
    "clip_grad_norm, norm_type inf",
    "clip_grad_norm, error_if_nonfinite",
    // SEMANTICS §19: what a checkpoint meets.
    "checkpoint saved before any step",
    "load after steps since the save",
    "load into a fresh optimizer",
    "load, groups differ",
    "load, options differ",
};

CoverageTable make_table(std::string name, std::string meaning, std::vector<std::string> rows,
                         std::vector<std::string> columns, bool (*applies)(const std::string&, const std::string&)) {
  CoverageTable t{std::move(name), std::move(meaning), std::move(rows), std::move(columns), {}};
  for (const std::string& r : t.rows) {
    std::vector<bool> row;
    for (const std::string& c : t.columns) row.push_back(applies ? applies(r, c) : true);
    t.applies.push_back(std::move(row));
  }
  return t;
}

// ---------------------------------------------------------------------------------------------------------
// Forward evaluation in the dtype's precision, for the edge classes of each op's inputs.

// x in the dtype's precision; beyond float's range it is +-inf (a cast would be undefined behaviour).
double in_dtype(double x, DType d) {
  if (d != DType::Float32 || !std::isfinite(x)) return x;
  if (std::fabs(x) > static_cast<double>(FLT_MAX)) return x > 0 ? HUGE_VAL : -HUGE_VAL;
  return static_cast<double>(static_cast<float>(x));
}

// The op cells of one expression: each op node visited with its operands' values (op_evaluator.h), every value
// rounded to its dtype as the engines hold it.
struct OpCellVisitor {
  const std::map<std::string, const ParamSpec*>& params;
  std::set<std::string>& cells;

  // "large": |x| >= 2^20, or for the ops that exponentiate their input, beyond where exp overflows (88 in
  // float32, 709 in float64): where a naive sigmoid or softmax turns into inf / inf.
  void classify(const std::string& row, const EvalNode& v, bool exponentiates) {
    const double tiny = (v.dtype == DType::Float32 ? FLT_MIN : DBL_MIN) * 256;
    const double large = exponentiates ? (v.dtype == DType::Float32 ? 88.0 : 709.0) : 1048576.0;
    for (double x : v.v) {
      if (std::isnan(x) || std::isinf(x)) cells.insert(coverage_cell_key("ops", row, "nonfinite"));
      else if (x == 0) cells.insert(coverage_cell_key("ops", row, "zero"));
      else {
        if (x < 0) cells.insert(coverage_cell_key("ops", row, "negative"));
        if (std::abs(x) < tiny) cells.insert(coverage_cell_key("ops", row, "tiny"));
        if (std::abs(x) >= large) cells.insert(coverage_cell_key("ops", row, "large"));
      }
    }
  }

  static bool repeats(const std::vector<int64_t>& v) {
    std::set<int64_t> seen;
    for (int64_t i : v)
      if (!seen.insert(i).second) return true;
    return false;
  }

  void visit(const OpCall& call) {
    const Expr& e = call.expr;
    const OpDescription& d = describe(e.op);
    std::string row = d.name;
    if (e.op == Op::Pow) {
      const double p = e.scalar;
      row = (p == 0 || p == 1 || p == 2 || p == 3) ? "pow^" + std::to_string(static_cast<int>(p)) : "pow^other";
    }
    row += std::string(" ") + dtype_name(call.arg(0).dtype);
    cells.insert(coverage_cell_key("ops", row, "any"));
    for (const EvalNode* v : call.operands) classify(row, *v, d.exponentiates);
    if (d.broadcasts && call.operands.size() == 2 && call.arg(0).shape != call.arg(1).shape)
      cells.insert(coverage_cell_key("ops", row, "broadcast"));
    if (d.repeated_index_cell && repeats(e.indices)) cells.insert(coverage_cell_key("ops", row, "repeated_index"));
  }

  // Evaluates `e`, visiting every op on the way; throws on a malformed node (the cells so far stay).
  void eval(const Expr& e) {
    ForwardPass pass;
    pass.leaf = [&](const Expr& leaf, EvalNode& n) {
      if (leaf.op == Op::Const) {
        n.dtype = leaf.constant.dtype;
        n.shape = leaf.constant.shape;
        n.v = leaf.constant.data;
        return;
      }
      auto it = params.find(leaf.name);
      if (it == params.end()) throw CannotEvaluate{};
      n.dtype = it->second->dtype;
      n.shape = it->second->shape;
      n.v = it->second->values;
      for (double& x : n.v) x = in_dtype(x, n.dtype);
    };
    pass.before_op = [&](const OpCall& call) { visit(call); };
    pass.after_node = [](OpCall& call) {
      if (call.expr.op == Op::Param || call.expr.op == Op::Const) return;
      for (double& x : call.out.v) x = in_dtype(x, call.out.dtype);
    };
    evaluate_forward(e, pass);
  }
};

// ---------------------------------------------------------------------------------------------------------
// Optimizer options: the option type's defaults (SEMANTICS §5.1, §6.1, §6.4).

// The option classes of `o` (complete: unset fields are the type's defaults; else only the fields given).
void option_cells(OptimizerKind kind, const OptimizerOptions& o, bool complete, std::set<std::string>& cells) {
  const std::string row = optimizer_name(kind);
  auto add = [&](const char* column) { cells.insert(coverage_cell_key("options", row, column)); };
  const OptimizerDescription& d = describe(kind);
  const OptimizerOptions e = resolved_options(kind, o);  // SGD's lr stays unset when not given
  auto given = [&](const auto& field) { return complete || field.has_value(); };
  auto has = [&](const char* option) { return find_option(kind, option) != nullptr; };
  if (given(o.lr) && e.lr) add(*e.lr == 0 ? "lr 0" : "lr > 0");
  if (given(o.weight_decay)) add(e.weight_decay.value_or(0) == 0 ? "weight_decay 0" : "weight_decay > 0");
  if (has("momentum") && given(o.momentum)) add(e.momentum.value_or(0) == 0 ? "momentum 0" : "momentum > 0");
  if (has("dampening") && e.dampening.value_or(0) != 0) add("dampening");
  if (has("nesterov") && e.nesterov.value_or(false)) add("nesterov");
  if (has("amsgrad") && e.amsgrad.value_or(false)) add("amsgrad");
  if (has("betas") && given(o.betas) && e.betas->first == 0) add("beta1 0");
  if (has("betas") && given(o.betas) && e.betas->second == 0) add("beta2 0");
  if (has("eps") && given(o.eps) && e.eps.value_or(1) == 0) add("eps 0");
  for (const char* option : {"alpha", "centered", "lr_decay", "initial_accumulator_value"})
    if (const OptionDescription* od = find_option(kind, option))
      if (is_set(*od, e) && !is_default(*od, e)) add(option);
  if (d.rejects && d.rejects(e)) add("invalid");
}

// Whether a group's own options leave unset an option that has a default (SEM-7.1).
bool partial(const OptimizerOptions& o, OptimizerKind kind) {
  for (const OptionDescription& d : describe(kind).options)
    if (d.has_default && !is_set(d, o)) return true;
  return false;
}

void group_cells(const Program& p, std::set<std::string>& cells) {
  if (!p.optimizer) return;
  const OptimizerSpec& spec = *p.optimizer;
  const std::string row = optimizer_name(spec.kind);
  auto add = [&](const char* column) { cells.insert(coverage_cell_key("groups", row, column)); };
  option_cells(spec.kind, spec.defaults, true, cells);
  std::map<std::string, int> listed;
  if (spec.groups.empty()) add("empty list");
  else if (spec.groups.size() == 1 && !spec.groups[0].options) add("one list");
  else if (spec.groups.size() > 1) add("several groups");
  for (const ParamGroupSpec& g : spec.groups) {
    std::set<std::string> in_group;
    for (const std::string& n : g.params) {
      if (!in_group.insert(n).second) add("duplicate in group");
      ++listed[n];
    }
    if (g.options) {
      add("group options");
      if (partial(*g.options, spec.kind)) add("partial group options");
      option_cells(spec.kind, *g.options, true, cells);
      const OptimizerDescription& d = describe(spec.kind);
      if (spec.groups.size() > 1 && d.rejects && d.rejects(resolved_options(spec.kind, *g.options)))
        add("invalid in one of several groups");
    }
  }
  // Two optimized parameters of one shape and dtype, each with its own state (SGD: with momentum): state keyed
  // by anything but the parameter mixes them up.
  std::map<std::pair<DType, Shape>, std::string> stateful_shapes;  // -> the first parameter of that shape
  bool same_shape = false;
  for (const ParamGroupSpec& g : spec.groups) {
    const OptimizerOptions o = resolved_options(spec.kind, g.options ? *g.options : spec.defaults);
    if (spec.kind == OptimizerKind::SGD && o.momentum.value_or(0) == 0) continue;
    for (const std::string& n : g.params) {
      auto it = std::find_if(p.params.begin(), p.params.end(), [&](const ParamSpec& ps) { return ps.name == n; });
      if (it == p.params.end()) continue;
      const auto first = stateful_shapes.emplace(std::make_pair(it->dtype, it->shape), n).first;
      if (first->second != n) same_shape = true;  // another parameter, not the same one listed again
    }
  }
  if (same_shape) add("same-shape params with state");
  for (const auto& entry : listed) {
    const std::string& name = entry.first;  // not a structured binding: C++17 lambdas cannot capture one
    const auto count = entry.second;
    if (count > 1 && !std::any_of(spec.groups.begin(), spec.groups.end(), [&](const ParamGroupSpec& g) {
          return std::count(g.params.begin(), g.params.end(), name) == count;
        }))
      add("param in two groups");
  }
  for (const ParamSpec& param : p.params)
    if (!listed.count(param.name)) {
      add("some not optimized");
      break;
    }
  int groups = static_cast<int>(spec.groups.size());
  for (const Action& a : p.actions) {
    if (a.kind == ActionKind::SetOptions) {
      if (a.group >= groups) add("change of a missing group");
      else if (groups > 1) add("change with several groups");
      if (a.options.lr) add("lr change");
      OptimizerOptions others = a.options;
      others.lr.reset();
      if (!(others == OptimizerOptions{})) add("other option change");
      option_cells(spec.kind, a.options, false, cells);
    } else if (a.kind == ActionKind::AddParamGroup) {
      add("add_param_group");
      for (const std::string& n : a.new_group.params)
        if (listed.count(n)) add("added param already grouped");
      for (const std::string& n : a.new_group.params) ++listed[n];
      if (a.new_group.options) option_cells(spec.kind, *a.new_group.options, true, cells);
      ++groups;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Sequences and aliasing.

bool applies_activation_to_a_param(const Expr& e) {
  bool found = false;
  walk_expr(e, [&](const Expr& n) {
    if ((n.op == Op::Exp || n.op == Op::Tanh || n.op == Op::Sigmoid || n.op == Op::Relu) && !n.args.empty() &&
        n.args[0] && n.args[0]->op == Op::Param)
      found = true;
  });
  return found;
}

// add(sum(P), sum(Q)) of two different 0-d parameters: their grads share one storage (SEMANTICS §3.7).
std::optional<std::pair<std::string, std::string>> sums_two_0d_params(
    const Expr& e, const std::map<std::string, const ParamSpec*>& params) {
  auto scalar_param_under_sum = [&](const ExprPtr& s) -> std::string {
    if (!s || s->op != Op::Sum || s->args.empty() || !s->args[0] || s->args[0]->op != Op::Param) return "";
    auto it = params.find(s->args[0]->name);
    return it != params.end() && it->second->shape.empty() ? it->first : "";
  };
  std::optional<std::pair<std::string, std::string>> found;
  walk_expr(e, [&](const Expr& n) {
    if (n.op != Op::Add || n.args.size() != 2) return;
    const std::string a = scalar_param_under_sum(n.args[0]), b = scalar_param_under_sum(n.args[1]);
    if (!a.empty() && !b.empty() && a != b) found = std::make_pair(a, b);
  });
  return found;
}

bool uses(const Expr& e, const std::string& param) {
  bool found = false;
  walk_expr(e, [&](const Expr& n) {
    if (n.op == Op::Param && n.name == param) found = true;
  });
  return found;
}

std::vector<std::string> params_used_twice(const Expr& e) {
  std::map<std::string, int> uses;
  walk_expr(e, [&](const Expr& n) {
    if (n.op == Op::Param) ++uses[n.name];
  });
  std::vector<std::string> out;
  for (const auto& [name, n] : uses)
    if (n > 1) out.push_back(name);
  return out;
}

bool uses_a_param_twice(const Expr& e) { return !params_used_twice(e).empty(); }

void situation_cells(const Program& p, const std::map<std::string, const ParamSpec*>& params,
                     std::set<std::string>& cells) {
  const std::string row = p.params.empty() ? "float32" : dtype_name(p.params.front().dtype);
  auto add = [&](const char* column) { cells.insert(coverage_cell_key("situations", row, column)); };
  std::set<std::string> used;
  const Expr* output = nullptr;    // the held output's expression
  bool output_retained = false;    // its graph survived the last backward
  bool backward_since_forward = false, freed_since_forward = false;
  bool stepped_since_backward = false, zeroed_since_backward = false, any_backward = false;
  std::optional<std::pair<std::string, std::string>> shared_0d;  // two 0-d params whose grads share storage
  std::set<std::string> defined;                                 // params whose grad is (probably) defined
  bool stepped_since_forward = false, any_create_graph = false;
  std::set<std::string> held, held_zeroed, held_none;
  CheckpointTimeline checkpoints(p);  // SEMANTICS §19
  for (const Action& a : p.actions) {
    const int steps_before = checkpoints.steps();
    const CheckpointTimeline::Load load = checkpoints.apply(a);
    switch (a.kind) {
      case ActionKind::StateDict:
        if (steps_before == 0) add("checkpoint saved before any step");
        break;
      case ActionKind::LoadStateDict:
        if (a.fresh) add("load into a fresh optimizer");
        if (!load.saved) break;
        if (load.steps_since_save) add("load after steps since the save");
        if (load.groups_differ) add("load, groups differ");
        if (load.options_differ) add("load, options differ");
        break;
      case ActionKind::Forward: {
        output = a.loss ? a.loss.get() : p.loss.get();
        if (a.no_grad) add("no_grad forward");
        if (output) {
          walk_expr(*output, [&](const Expr& n) {
            if (n.op == Op::Param) used.insert(n.name);
          });
          if (uses_a_param_twice(*output)) add("weight tying");
        }
        backward_since_forward = freed_since_forward = stepped_since_forward = false;
        break;
      }
      case ActionKind::Backward: {
        if (a.gradient) add("explicit gradient");
        const bool retain = a.retain_graph.value_or(a.create_graph);
        if (retain) add("retain_graph");
        if (a.create_graph) {
          add("create_graph");
          if (!held.empty()) add("held across create_graph");
        }
        if (stepped_since_forward) add("backward after step, no new forward");
        if (any_create_graph) add("backward after create_graph");
        // A parameter reached by several edges of the loss while its grad exists: the edges' sum is added to the
        // grad once (SEM-3.2), which an accumulation per edge gets wrong in the last bits or, with a held handle
        // or an aliased 0-d grad, in the storage it writes.
        if (output)
          for (const std::string& twice : params_used_twice(*output)) {
            if (!defined.count(twice)) continue;
            add("param used twice, grad defined");
            if (held.count(twice) && !a.create_graph) add("param used twice, grad held");  // else out of place
            if (!a.create_graph && shared_0d && (shared_0d->first == twice || shared_0d->second == twice))
              add("param used twice, 0-d grad aliased");
          }
        any_create_graph = any_create_graph || a.create_graph;
        if (backward_since_forward) {
          if (freed_since_forward) add("backward through a freed graph");
          if (stepped_since_backward) {
            if (output_retained) {
              add("retained graph stepped, backward again");
              if (output && applies_activation_to_a_param(*output)) add("activation of a param, stepped, backward again");
            }
          }
          if (zeroed_since_backward) add("zero_grad between backwards");
        }
        // SEM-3.7: the grads share storage when both were undefined at a backward of add(sum(P), sum(Q))
        // without create_graph; a later backward reaching either (without create_graph) accumulates into both.
        if (a.create_graph) shared_0d.reset();
        if (shared_0d && output && (uses(*output, shared_0d->first) || uses(*output, shared_0d->second)))
          add("0-d grads sharing storage, accumulated again");
        if (!a.create_graph && output)
          if (auto pair = sums_two_0d_params(*output, params); pair && !defined.count(pair->first) && !defined.count(pair->second))
            shared_0d = pair;
        if (output)
          walk_expr(*output, [&](const Expr& n) {
            if (n.op == Op::Param) defined.insert(n.name);
          });
        output_retained = retain;
        if (!retain) freed_since_forward = true;
        backward_since_forward = any_backward = true;
        stepped_since_backward = zeroed_since_backward = false;
        if (!held_zeroed.empty()) add("held across zero_grad");
        if (!held_none.empty()) add("held across set_to_none");
        held_zeroed.clear();
        held_none.clear();
        break;
      }
      case ActionKind::ZeroGrad:  // unset: the 1.13 default, zeroing in place (SEM-12.1)
        zeroed_since_backward = true;
        any_create_graph = false;  // the grads are detached or gone (SEM-4.1, SEM-4.2)
        if (a.set_to_none.value_or(false)) {
          held_none.insert(held.begin(), held.end());
          held.clear();  // the handles no longer alias the grads
          shared_0d.reset();
          defined.clear();
        } else {
          held_zeroed.insert(held.begin(), held.end());
        }
        break;
      case ActionKind::SetGradNone:
        if (held.erase(a.param)) held_none.insert(a.param);
        if (shared_0d && (shared_0d->first == a.param || shared_0d->second == a.param)) shared_0d.reset();
        defined.erase(a.param);
        break;
      case ActionKind::HoldGrad: held.insert(a.param); break;
      case ActionKind::ClipGradNorm:
      case ActionKind::ClipGradValue: {  // SEMANTICS §18
        std::set<std::string> listed;
        for (const std::string& name : a.params) {
          if (!listed.insert(name).second) add("clip, a param listed twice");
          if (!defined.count(name)) add("clip, a listed grad undefined");
          if (held.count(name) && defined.count(name)) add("clip, a held grad");
          if (shared_0d && (shared_0d->first == name || shared_0d->second == name)) add("clip, a 0-d grad aliased");
          if (any_create_graph && defined.count(name)) add("clip, a create_graph grad");
        }
        if (a.kind == ActionKind::ClipGradNorm) {
          if (!(a.max_norm > 0)) add("clip, max_norm or clip_value <= 0");
          if (a.norm_type == 1) add("clip_grad_norm, norm_type 1");
          if (std::isinf(a.norm_type)) add("clip_grad_norm, norm_type inf");
          if (a.error_if_nonfinite) add("clip_grad_norm, error_if_nonfinite");
        } else if (!(a.clip_value > 0)) {
          add("clip, max_norm or clip_value <= 0");
        }
        break;
      }
      case ActionKind::Step:
        if (!any_backward) add("step before any backward");
        stepped_since_backward = true;
        stepped_since_forward = true;
        break;
      default: break;
    }
  }
  for (const ParamSpec& param : p.params)
    if (!used.count(param.name)) {
      add("unused param");
      break;
    }
}

}  // namespace

std::string coverage_cell_key(const std::string& table, const std::string& row, const std::string& column) {
  return table + "|" + row + "|" + column;
}

const std::vector<CoverageTable>& coverage_tables() {
  static const std::vector<CoverageTable> tables = [] {
    std::vector<CoverageTable> t;
    std::vector<std::string> op_rows;
    for (const std::string& op : op_row_names())
      for (const char* d : {"float32", "float64"}) op_rows.push_back(op + " " + d);
    t.push_back(make_table("ops", "programs with the op (row) whose inputs held a value of the class (column) at "
                           "the parameters' initial values", op_rows, kEdges,
                           [](const std::string& r, const std::string& c) {
                             return edge_applies(r.substr(0, r.rfind(' ')), c);
                           }));
    std::vector<std::string> action_columns(kActionRows.begin() + 1, kActionRows.end());
    t.push_back(make_table("actions", "programs with the action (column) right after the action (row)", kActionRows,
                           action_columns, nullptr));
    std::vector<std::string> optimizers;  // one row per optimizer (optimizer_descriptions.h)
    for (const OptimizerDescription& d : optimizer_descriptions()) optimizers.push_back(d.name);
    t.push_back(make_table("options", "programs whose optimizer (row) was given an option of the class (column): "
                           "defaults, groups, set_options, added groups", optimizers, kOptionColumns,
                           option_applies));
    t.push_back(make_table("groups", "programs whose optimizer (row) has the group structure (column)",
                           optimizers, kGroupColumns, group_applies));
    t.push_back(make_table("situations", "programs (by the first parameter's dtype) with the situation (column)",
                           {"float32", "float64"}, kSituationColumns, nullptr));
    return t;
  }();
  return tables;
}

std::set<std::string> coverage_cells(const Program& program_with_closures) {
  // A closure's actions count where they run, before their step (SEMANTICS §17.1).
  Program program = program_with_closures;
  program.actions = actions_as_run(program_with_closures);
  std::set<std::string> cells;
  std::map<std::string, const ParamSpec*> params;
  for (const ParamSpec& p : program.params) params[p.name] = &p;

  // ops: each distinct expression once
  OpCellVisitor evaluator{params, cells};
  std::set<const Expr*> seen;
  auto evaluate = [&](const ExprPtr& e) {
    if (!e || !seen.insert(e.get()).second) return;
    try {
      evaluator.eval(*e);
    } catch (const std::exception&) {
      // a malformed expression (validate() would reject it): no op cells beyond those already counted
    }
  };
  bool program_loss_used = false;
  for (const Action& a : program.actions)
    if (a.kind == ActionKind::Forward) {
      if (a.loss) evaluate(a.loss);
      else program_loss_used = true;
    }
  if (program_loss_used) evaluate(program.loss);

  // actions (a checkpoint's own actions are no rows or columns: what they meet is in the situations, SEMANTICS §19;
  // the actions around them count as neighbours)
  std::string previous = "start";
  for (const Action& a : program.actions) {
    if (a.kind == ActionKind::StateDict || a.kind == ActionKind::LoadStateDict) continue;
    const std::string name = action_name(a.kind);
    cells.insert(coverage_cell_key("actions", previous, name));
    previous = name;
  }
  group_cells(program, cells);
  situation_cells(program, params, cells);
  return cells;
}

}  // namespace lockstep
