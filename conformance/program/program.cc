// The program model: names, builders, shape inference and static validation (see program.h).
#include "conformance/program/program.h"

#include "conformance/program/checkpoint_timeline.h"
#include "conformance/program/op_descriptions.h"

#include "conformance/program/optimizer_descriptions.h"
#include "conformance/program/program_cost.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace lockstep {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
  }
  return "?";
}

double unit_roundoff(DType d) { return d == DType::Float32 ? 0x1p-24 : 0x1p-53; }

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool TensorValue::operator==(const TensorValue& o) const {
  if (dtype != o.dtype || shape != o.shape || data.size() != o.data.size()) return false;
  // Bitwise, except that every NaN equals every NaN (engines produce NaNs of either sign and any payload,
  // and JSON keeps neither): -0 != +0, 0.1 != 0.1f.
  for (size_t i = 0; i < data.size(); ++i) {
    if (std::isnan(data[i]) && std::isnan(o.data[i])) continue;
    if (std::memcmp(&data[i], &o.data[i], sizeof(double)) != 0) return false;
  }
  return true;
}

namespace {

struct ActionNameEntry {
  ActionKind kind;
  const char* name;
};

constexpr ActionNameEntry kActionNames[] = {
    {ActionKind::Forward, "forward"},         {ActionKind::Backward, "backward"},
    {ActionKind::ZeroGrad, "zero_grad"},      {ActionKind::SetGradNone, "set_grad_none"},
    {ActionKind::HoldGrad, "hold_grad"},      {ActionKind::Step, "step"},
    {ActionKind::SetOptions, "set_options"},  {ActionKind::AddParamGroup, "add_param_group"},
    {ActionKind::ClipGradNorm, "clip_grad_norm"}, {ActionKind::ClipGradValue, "clip_grad_value"},
    {ActionKind::StateDict, "state_dict"},    {ActionKind::LoadStateDict, "load_state_dict"},
};

std::shared_ptr<Expr> make(Op op, std::vector<ExprPtr> args) {
  auto e = std::make_shared<Expr>();
  e->op = op;
  e->args = std::move(args);
  return e;
}

}  // namespace

const char* action_name(ActionKind k) {
  for (const auto& entry : kActionNames)
    if (entry.kind == k) return entry.name;
  return "?";
}

std::optional<ActionKind> action_from_name(const std::string& name) {
  for (const auto& entry : kActionNames)
    if (name == entry.name) return entry.kind;
  return std::nullopt;
}

bool OptimizerOptions::operator==(const OptimizerOptions& o) const {
  // Numbers compare bitwise, except that NaN equals NaN (as TensorValue::operator==); every field of every
  // optimizer (optimizer_descriptions.h).
  auto same = [](double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof(double)) == 0;
  };
  for (const std::string& name : all_option_names()) {
    const OptionDescription* d = &any_option(name);
    if (is_set(*d, *this) != is_set(*d, o)) return false;
    if (!is_set(*d, o)) continue;
    switch (d->type) {
      case OptionType::Number:
        if (!same(*(this->*d->number), *(o.*d->number))) return false;
        break;
      case OptionType::Flag:
        if (*(this->*d->flag) != *(o.*d->flag)) return false;
        break;
      case OptionType::Pair:
        if (!same((this->*d->pair)->first, (o.*d->pair)->first) || !same((this->*d->pair)->second, (o.*d->pair)->second))
          return false;
        break;
      case OptionType::Text:
        if (*(this->*d->text) != *(o.*d->text)) return false;
        break;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------------
// Builders.

ExprPtr param(const std::string& name) {
  auto e = make(Op::Param, {});
  e->name = name;
  return e;
}

ExprPtr constant(TensorValue value) {
  auto e = make(Op::Const, {});
  e->constant = std::move(value);
  return e;
}

ExprPtr unary(Op op, ExprPtr a) { return make(op, {std::move(a)}); }

ExprPtr binary(Op op, ExprPtr a, ExprPtr b) { return make(op, {std::move(a), std::move(b)}); }

ExprPtr mul_scalar(ExprPtr a, double s) {
  auto e = make(Op::MulScalar, {std::move(a)});
  e->scalar = s;
  return e;
}

ExprPtr pow_scalar(ExprPtr a, double exponent) {
  auto e = make(Op::Pow, {std::move(a)});
  e->scalar = exponent;
  return e;
}

ExprPtr sum(ExprPtr a) { return unary(Op::Sum, std::move(a)); }
ExprPtr mean(ExprPtr a) { return unary(Op::Mean, std::move(a)); }
ExprPtr mul(ExprPtr a, ExprPtr b) { return binary(Op::Mul, std::move(a), std::move(b)); }
ExprPtr add(ExprPtr a, ExprPtr b) { return binary(Op::Add, std::move(a), std::move(b)); }

ExprPtr cross_entropy(ExprPtr logits, std::vector<int64_t> targets) {
  auto e = make(Op::CrossEntropy, {std::move(logits)});
  e->indices = std::move(targets);
  return e;
}

ExprPtr linear(ExprPtr x, ExprPtr w, ExprPtr b) {
  std::vector<ExprPtr> args{std::move(x), std::move(w)};
  if (b) args.push_back(std::move(b));
  return make(Op::Linear, std::move(args));
}

ExprPtr embedding(ExprPtr w, std::vector<int64_t> indices) {
  auto e = make(Op::Embedding, {std::move(w)});
  e->indices = std::move(indices);
  return e;
}

// ---------------------------------------------------------------------------------------------------------
// Static checks.

std::string shape_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string typed_string(const TypedShape& t) {
  return std::string(dtype_name(t.dtype)) + " " + shape_string(t.shape);
}


namespace {

// numel(shape) when every dim is >= 0 and the count stays <= limit; -1 otherwise (no overflow).
int64_t bounded_numel(const Shape& shape, int64_t limit) {
  for (int64_t d : shape)
    if (d < 0) return -1;
  for (int64_t d : shape)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d > limit || n > limit / d) return -1;
    n *= d;
  }
  return n;
}

// "1 value", "3 values".
std::string values_count(int64_t n) { return std::to_string(n) + (n == 1 ? " value" : " values"); }

// Checks a declared shape (a parameter's or a constant's) and returns its element count.
int64_t check_declared_shape(const Shape& shape, const std::string& path, const ProgramLimits& limits) {
  if (static_cast<int>(shape.size()) > limits.max_rank)
    throw ProgramError(path, "rank " + std::to_string(shape.size()) + " exceeds the limit of " +
                                 std::to_string(limits.max_rank));
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < 0)
      throw ProgramError(path + "/" + std::to_string(i), "negative dimension " + std::to_string(shape[i]));
  int64_t n = bounded_numel(shape, limits.max_elements_per_tensor);
  if (n < 0)
    throw ProgramError(path, "shape " + shape_string(shape) + " has more than the limit of " +
                                 std::to_string(limits.max_elements_per_tensor) + " elements");
  return n;
}

void check_name_length(const std::string& name, const std::string& path, const ProgramLimits& limits) {
  if (static_cast<int64_t>(name.size()) > limits.max_name_length)
    throw ProgramError(path, "a name of " + std::to_string(name.size()) + " bytes exceeds the limit of " +
                                 std::to_string(limits.max_name_length));
}

void check_result_size(const TypedShape& t, const std::string& path, const ProgramLimits& limits) {
  if (bounded_numel(t.shape, limits.max_elements_per_tensor) < 0)
    throw ProgramError(path, "result shape " + shape_string(t.shape) + " has more than the limit of " +
                                 std::to_string(limits.max_elements_per_tensor) + " elements");
}

void expect_args(const Expr& e, size_t min, size_t max, const std::string& path) {
  if (e.args.size() < min || e.args.size() > max) {
    std::string want = min == max ? std::to_string(min) : std::to_string(min) + " or " + std::to_string(max);
    throw ProgramError(path + "/args", std::string(op_name(e.op)) + " takes " + want + " operand" +
                                           (max == 1 ? "" : "s") + ", got " + std::to_string(e.args.size()));
  }
  for (size_t i = 0; i < e.args.size(); ++i)
    if (!e.args[i]) throw ProgramError(path + "/args/" + std::to_string(i), "missing operand");
}

void expect_same_dtype(const Expr& e, const std::vector<TypedShape>& in, const std::string& path) {
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].dtype != in[0].dtype)
      throw ProgramError(path, std::string(op_name(e.op)) + ": operand dtypes differ (" + typed_string(in[0]) +
                                   " vs " + typed_string(in[i]) + ")");
}

TypedShape infer(const Expr& e, const std::vector<ParamSpec>& params, const std::string& path,
                 const ProgramLimits& limits, int depth) {
  if (depth > limits.max_expr_depth)
    throw ProgramError(path, "expression nesting exceeds the depth limit of " +
                                 std::to_string(limits.max_expr_depth));
  // Leaves.
  if (e.op == Op::Param) {
    if (!e.args.empty()) throw ProgramError(path + "/args", "param takes no operands");
    for (const auto& p : params)
      if (p.name == e.name) return {p.dtype, p.shape};
    throw ProgramError(path + "/name", "unknown parameter '" + e.name + "'");
  }
  if (e.op == Op::Const) {
    if (!e.args.empty()) throw ProgramError(path + "/args", "const takes no operands");
    int64_t n = check_declared_shape(e.constant.shape, path + "/shape", limits);
    if (static_cast<int64_t>(e.constant.data.size()) != n)
      throw ProgramError(path + "/values", "const of shape " + shape_string(e.constant.shape) + " needs " +
                                               values_count(n) + ", got " + std::to_string(e.constant.data.size()));
    return {e.constant.dtype, e.constant.shape};
  }

  // Operators: operands first, then the op's own shape rule (op_descriptions.h).
  const OpDescription& op = describe(e.op);
  expect_args(e, op.min_operands, op.max_operands, path);
  std::vector<TypedShape> in;
  for (size_t i = 0; i < e.args.size(); ++i)
    in.push_back(infer(*e.args[i], params, path + "/args/" + std::to_string(i), limits, depth + 1));
  expect_same_dtype(e, in, path);
  const TypedShape out{in[0].dtype, op.result_shape(e, in, path)};
  check_result_size(out, path, limits);
  return out;
}

bool param_exists(const std::vector<ParamSpec>& params, const std::string& name) {
  for (const auto& p : params)
    if (p.name == name) return true;
  return false;
}

// Options fields must belong to the optimizer kind (optimizer_descriptions.h).
void check_options_kind(const OptimizerOptions& o, OptimizerKind kind, const std::string& path) {
  const std::vector<std::string> foreign = foreign_options(kind, o);
  if (!foreign.empty())
    throw ProgramError(path + "/" + foreign.front(), "option '" + foreign.front() + "' does not apply to " +
                                                        optimizer_name(kind));
  const OptimizerDescription& d = describe(kind);
  for (const OptionDescription& option : d.options) {
    if (!option.integer || !is_set(option, o)) continue;
    const double v = *(o.*option.number);
    if (!(std::fabs(v) <= 9007199254740992.0) || v != std::trunc(v))
      throw ProgramError(path + "/" + option.name, std::string("option '") + option.name + "' must be a whole number, got " +
                                                       [v] {
                                                         std::ostringstream t;
                                                         t << v;
                                                         return t.str();
                                                       }());
  }
  if (d.program_refuses)
    if (const std::optional<std::pair<std::string, std::string>> refused = d.program_refuses(o))
      throw ProgramError(path + "/" + refused->first, refused->second);
}

// An option without a default (SGD's lr, SEMANTICS §5.1) must be given in a full options set (defaults, a
// group's options).
void check_full_options(const OptimizerOptions& o, OptimizerKind kind, const std::string& path) {
  check_options_kind(o, kind, path);
  for (const OptionDescription& d : describe(kind).options)
    if (!d.has_default && !is_set(d, o))
      throw ProgramError(path, std::string(optimizer_name(kind)) + " options need '" + d.name + "' (" +
                                   optimizer_name(kind) + " has no default " + d.name + ", " +
                                   describe(kind).semantics + ")");
}

// A number as a program's JSON spells it, for messages: 2, 0.5, "NaN", "-Infinity".
std::string json_like_number(double v) {
  if (std::isnan(v)) return "\"NaN\"";
  if (std::isinf(v)) return v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

void check_param_names(const std::vector<std::string>& names, const std::vector<ParamSpec>& params,
                       const std::string& path) {
  for (size_t i = 0; i < names.size(); ++i)
    if (!param_exists(params, names[i]))
      throw ProgramError(path + "/" + std::to_string(i), "unknown parameter '" + names[i] + "'");
}

}  // namespace

TypedShape infer_shape(const Expr& e, const std::vector<ParamSpec>& params, const std::string& path,
                       const ProgramLimits& limits) {
  return infer(e, params, path, limits, 1);
}

// Checks one action at `path`; `output` tracks the output of the most recent forward statically. A step's closure
// (SEMANTICS §17.2) is checked action by action, in the order they run.
static void check_action(const Program& p, const Action& a, const std::string& path,
                  const std::optional<TypedShape>& program_loss, const ProgramLimits& limits,
                  std::optional<TypedShape>& output) {
  if (a.closure && a.kind != ActionKind::Step)
    throw ProgramError(path + "/closure", std::string("only a step takes a closure, not ") + action_name(a.kind));
  switch (a.kind) {
    case ActionKind::Forward:
      if (a.loss) output = infer_shape(*a.loss, p.params, path + "/loss", limits);
      else if (program_loss) output = program_loss;
      else throw ProgramError(path, "forward has no loss and the program declares none");
      break;
    case ActionKind::Backward:
      // A backward before any forward is a run-time error (no_output), not a static one.
      if (a.gradient && output) {
        int64_t n = numel(output->shape);
        if (static_cast<int64_t>(a.gradient->size()) != n)
          throw ProgramError(path + "/gradient", "the output of the preceding forward is " +
                                                     typed_string(*output) + ": the gradient needs " +
                                                     values_count(n) + ", got " +
                                                     std::to_string(a.gradient->size()));
      }
      break;
    case ActionKind::ZeroGrad:
      break;  // without an optimizer: a run-time error (no_optimizer)
    case ActionKind::Step:
      if (a.closure) {
        const std::string cpath = path + "/closure";
        if (a.closure->empty()) throw ProgramError(cpath, "a closure needs at least one action, a forward among them");
        bool forward = false;
        for (size_t j = 0; j < a.closure->size(); ++j) {
          const Action& c = (*a.closure)[j];
          const std::string apath = cpath + "/" + std::to_string(j);
          if (c.kind == ActionKind::Step || c.kind == ActionKind::SetOptions || c.kind == ActionKind::AddParamGroup ||
              c.kind == ActionKind::ClipGradNorm || c.kind == ActionKind::ClipGradValue ||
              c.kind == ActionKind::StateDict || c.kind == ActionKind::LoadStateDict)
            throw ProgramError(apath + "/action", std::string("a closure cannot hold ") + action_name(c.kind) +
                                                      " (only forward, backward, zero_grad, set_grad_none and "
                                                      "hold_grad: SEMANTICS §17.2)");
          forward |= c.kind == ActionKind::Forward;
          check_action(p, c, apath, program_loss, limits, output);
        }
        if (!forward) throw ProgramError(cpath, "a closure needs a forward: its loss is what a call returns");
      }
      break;
    case ActionKind::SetGradNone:
    case ActionKind::HoldGrad:
      if (!param_exists(p.params, a.param))
        throw ProgramError(path + "/param", "unknown parameter '" + a.param + "'");
      if (a.kind == ActionKind::HoldGrad && a.handle.empty())
        throw ProgramError(path + "/handle", "hold_grad needs a non-empty handle name");
      if (a.kind == ActionKind::HoldGrad) check_name_length(a.handle, path + "/handle", limits);
      break;
    case ActionKind::SetOptions:
      if (!p.optimizer) throw ProgramError(path, "set_options needs an optimizer; the program has none");
      if (a.group < 0)
        throw ProgramError(path + "/group", "group index " + std::to_string(a.group) + " is negative");
      check_options_kind(a.options, p.optimizer->kind, path + "/options");
      break;
    case ActionKind::AddParamGroup:
      if (!p.optimizer)
        throw ProgramError(path, "add_param_group needs an optimizer; the program has none");
      check_param_names(a.new_group.params, p.params, path + "/params");
      if (a.new_group.options) check_full_options(*a.new_group.options, p.optimizer->kind, path + "/options");
      break;
    case ActionKind::ClipGradNorm:
    case ActionKind::ClipGradValue:
      // SEMANTICS §18: no optimizer needed; an empty list is allowed (the total is 0).
      if (static_cast<int64_t>(a.params.size()) > limits.max_group_entries)
        throw ProgramError(path + "/params", std::to_string(a.params.size()) + " parameters exceed the limit of " +
                                                 std::to_string(limits.max_group_entries));
      check_param_names(a.params, p.params, path + "/params");
      if (a.kind == ActionKind::ClipGradNorm && !(a.norm_type == 1 || a.norm_type == 2 || a.norm_type == INFINITY))
        throw ProgramError(path + "/norm_type", "norm_type " + json_like_number(a.norm_type) +
                                                    " is not one lockstep models (1, 2 or \"Infinity\", SEMANTICS §18.1)");
      break;
    case ActionKind::StateDict:
    case ActionKind::LoadStateDict:
      // SEMANTICS §19.5. Without an optimizer: a run-time error (no_optimizer), as for step. That a load names a
      // checkpoint saved earlier is checked by validate(), which sees the actions in order.
      if (a.checkpoint.empty())
        throw ProgramError(path + "/checkpoint", std::string(action_name(a.kind)) + " needs a non-empty checkpoint name");
      check_name_length(a.checkpoint, path + "/checkpoint", limits);
      break;
  }
}

bool lists_a_param_twice(const Program& p) {
  std::set<std::string> seen;
  size_t listed = 0;
  auto add = [&](const std::vector<std::string>& names) {
    seen.insert(names.begin(), names.end());
    listed += names.size();
  };
  if (p.optimizer)
    for (const ParamGroupSpec& g : p.optimizer->groups) add(g.params);
  for (const Action& a : p.actions)
    if (a.kind == ActionKind::AddParamGroup) add(a.new_group.params);
  return seen.size() != listed;
}

void check_checkpoints(const Program& p) {
  // Checkpoints (SEMANTICS §19.5): the optimizer's groups as parameter lists, as add_param_group and fresh loads change
  // them (an add taken to succeed: one that fails lists a parameter twice, refused below anyway), and at each save.
  CheckpointTimeline checkpoints(p);
  const bool listed_twice = lists_a_param_twice(p);
  bool added_under_adagrad = false;
  for (size_t i = 0; i < p.actions.size(); ++i) {
    const std::string path = "/actions/" + std::to_string(i);
    const Action& a = p.actions[i];
    const CheckpointTimeline::Load load = checkpoints.apply(a);
    if (a.kind == ActionKind::AddParamGroup) added_under_adagrad = p.optimizer && p.optimizer->kind == OptimizerKind::Adagrad;
    if (a.kind != ActionKind::StateDict && a.kind != ActionKind::LoadStateDict) continue;
    if (p.optimizer && p.optimizer->kind == OptimizerKind::LBFGS)
      throw ProgramError(path, std::string(action_name(a.kind)) +
                                   " of L-BFGS is not modelled: LibTorch 1.13's archive fails on the state a step leaves "
                                   "when it ends before its first direction, and PyTorch's load casts L-BFGS's history "
                                   "to the first parameter's dtype (SEM-19.3)");
    if (a.kind == ActionKind::StateDict) {
      if (added_under_adagrad)
        throw ProgramError(path, "state_dict of Adagrad after add_param_group: LibTorch 1.13's Adagrad leaves an added "
                                 "parameter a null state at its step (SEM-15.2) and torch::save crashes on it (SEM-19.3), "
                                 "so lockstep does not run it");
      continue;
    }
    if (!load.saved)
      throw ProgramError(path + "/checkpoint", "no earlier state_dict saved checkpoint '" + a.checkpoint + "'");
    if (listed_twice)
      throw ProgramError(path, "load_state_dict where the groups list a parameter twice: LibTorch 1.13's load leaves that "
                               "parameter a null state and its next step crashes (SEM-19.3), so lockstep does not run it");
    if (a.fresh) added_under_adagrad = false;
    // Groups of the saved sizes holding other parameters: the load gives a parameter the state saved for another
    // (positions, SEM-19.3), which may not fit it. Not modelled.
    const CheckpointTimeline::Groups& saved = load.saved->groups;
    const CheckpointTimeline::Groups& groups = checkpoints.groups();
    bool same_sizes = saved.size() == groups.size();
    for (size_t g = 0; same_sizes && g < groups.size(); ++g) same_sizes = saved[g].size() == groups[g].size();
    if (same_sizes && saved != groups)
      throw ProgramError(path, "load_state_dict into groups that list other parameters than the saved ones at the same "
                               "positions: the load would give a parameter the state saved for another (SEM-19.3), "
                               "which lockstep does not model");
  }
}

void validate(const Program& p, const ProgramLimits& limits) {
  // Parameters.
  if (static_cast<int64_t>(p.params.size()) > limits.max_params)
    throw ProgramError("/params", std::to_string(p.params.size()) + " parameters exceed the limit of " +
                                      std::to_string(limits.max_params));
  std::set<std::string> names;
  for (size_t i = 0; i < p.params.size(); ++i) {
    const ParamSpec& ps = p.params[i];
    const std::string path = "/params/" + std::to_string(i);
    if (ps.name.empty()) throw ProgramError(path + "/name", "parameter name is empty");
    check_name_length(ps.name, path + "/name", limits);
    if (!names.insert(ps.name).second)
      throw ProgramError(path + "/name", "duplicate parameter name '" + ps.name + "'");
    int64_t n = check_declared_shape(ps.shape, path + "/shape", limits);
    if (static_cast<int64_t>(ps.values.size()) != n)
      throw ProgramError(path + "/values", "parameter '" + ps.name + "' of shape " + shape_string(ps.shape) +
                                               " needs " + values_count(n) + ", got " +
                                               std::to_string(ps.values.size()));
  }

  // The program's loss.
  std::optional<TypedShape> program_loss;
  if (p.loss) program_loss = infer_shape(*p.loss, p.params, "/loss", limits);

  // The optimizer (SEMANTICS §7.1).
  if (p.optimizer) {
    const OptimizerSpec& o = *p.optimizer;
    check_full_options(o.defaults, o.kind, "/optimizer/defaults");
    for (size_t g = 0; g < o.groups.size(); ++g) {
      const std::string path = "/optimizer/groups/" + std::to_string(g);
      check_param_names(o.groups[g].params, p.params, path + "/params");
      if (o.groups[g].options) check_full_options(*o.groups[g].options, o.kind, path + "/options");
    }
    if (describe(o.kind).spec_refuses)
      if (const auto refused = describe(o.kind).spec_refuses(o))
        throw ProgramError("/optimizer" + refused->first, refused->second);
  }

  // Actions.
  size_t action_count = p.actions.size();  // a closure's actions count too
  for (const Action& a : p.actions)
    if (a.closure) action_count += a.closure->size();
  if (static_cast<int64_t>(action_count) > limits.max_actions)
    throw ProgramError("/actions", std::to_string(action_count) + " actions (closures' included) exceed the limit of " +
                                       std::to_string(limits.max_actions));
  std::optional<TypedShape> output;  // the output of the most recent forward, tracked statically
  for (size_t i = 0; i < p.actions.size(); ++i)
    check_action(p, p.actions[i], "/actions/" + std::to_string(i), program_loss, limits, output);
  check_checkpoints(p);

  // What running it would take, as a whole (program_cost.h).
  check_program_cost(p, limits);
}

std::vector<Action> actions_as_run(const Program& p) {
  std::vector<Action> out;
  out.reserve(p.actions.size());
  for (const Action& a : p.actions) {
    if (a.closure) out.insert(out.end(), a.closure->begin(), a.closure->end());
    out.push_back(a);
    out.back().closure.reset();
  }
  return out;
}

}  // namespace lockstep
