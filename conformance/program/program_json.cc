// The JSON form of a program (see program_json.h).
#include "conformance/program/program_json.h"

#include "conformance/program/op_descriptions.h"

#include <cmath>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>

#include "conformance/program/file_system.h"
#include "conformance/program/json_number.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/optimizer_descriptions.h"

namespace lockstep {

using nlohmann::ordered_json;

InputError::InputError(std::string file, std::string pointer, std::string message)
    : std::runtime_error(file + ": " + (pointer.empty() ? "" : pointer + ": ") + message),
      file_(std::move(file)),
      pointer_(std::move(pointer)),
      message_(std::move(message)) {}

// ---------------------------------------------------------------------------------------------------------
// Small pieces.

DType dtype_from_json(const ordered_json& j, const std::string& pointer) {
  std::string s = string_from_json(j, pointer);
  if (s == "float32") return DType::Float32;
  if (s == "float64") return DType::Float64;
  throw JsonError(pointer, "unknown dtype '" + s + "' (expected \"float32\" or \"float64\")");
}

ordered_json shape_to_json(const Shape& s) {
  ordered_json out = ordered_json::array();
  for (int64_t d : s) out.push_back(d);
  return out;
}

Shape shape_from_json(const ordered_json& j, const std::string& pointer) {
  return indices_from_json(j, pointer);  // non-negative integers; rank and size limits: validate()
}

// Every set field, in the order of all_option_names() (optimizer_descriptions.h).
ordered_json options_to_json(const OptimizerOptions& o) {
  ordered_json out = ordered_json::object();
  for (const std::string& name : all_option_names()) {
    const OptionDescription& d = any_option(name);
    if (!is_set(d, o)) continue;
    switch (d.type) {
      case OptionType::Number: {
        const double v = *(o.*d.number);
        if (d.integer && std::fabs(v) <= 9007199254740992.0 && v == std::trunc(v)) out[name] = static_cast<int64_t>(v);
        else out[name] = number_to_json(v);
        break;
      }
      case OptionType::Flag: out[name] = *(o.*d.flag); break;
      case OptionType::Pair:
        out[name] = ordered_json::array({number_to_json((o.*d.pair)->first), number_to_json((o.*d.pair)->second)});
        break;
      case OptionType::Text: out[name] = *(o.*d.text); break;
    }
  }
  return out;
}

nlohmann::ordered_json schema_from_descriptions(nlohmann::ordered_json schema) {
  ordered_json options = ordered_json::object();
  for (const std::string& name : all_option_names()) {
    switch (any_option(name).type) {
      case OptionType::Number:
        if (any_option(name).integer) options[name] = {{"type", "integer"}};
        else options[name] = {{"$ref", "#/$defs/number"}};
        break;
      case OptionType::Flag: options[name] = {{"type", "boolean"}}; break;
      case OptionType::Pair:
        options[name] = {{"type", "array"}, {"items", {{"$ref", "#/$defs/number"}}}, {"minItems", 2}, {"maxItems", 2}};
        break;
      case OptionType::Text: options[name] = {{"type", "string"}, {"maxLength", 64}}; break;
    }
  }
  schema["$defs"]["options"]["properties"] = std::move(options);
  ordered_json names = ordered_json::array();
  for (const OptimizerDescription& d : optimizer_descriptions()) names.push_back(d.name);
  schema["$defs"]["program"]["properties"]["optimizer"]["properties"]["type"]["enum"] = std::move(names);
  ordered_json state = ordered_json::object();
  state["step"] = {{"type", "integer"}};
  for (const StateCountDescription& c : all_state_counts()) state[c.name] = {{"type", "integer"}};
  for (const StateTensorDescription& t : all_state_tensors())
    state[t.name] = {{"anyOf", ordered_json::array({{{"$ref", "#/$defs/values"}}, {{"$ref", "#/$defs/tensor"}}})}};
  state["exists"] = {{"type", "boolean"}};
  schema["$defs"]["record"]["properties"]["params"]["additionalProperties"]["properties"]["state"]["properties"] =
      std::move(state);
  // Ops (op_descriptions.h): every name, and each block of the ops that take only tensors (no scalar, no indices)
  // lists those of its operand count.
  ordered_json& expr = schema["$defs"]["expr"];
  ordered_json op_names = ordered_json::array();
  for (const OpDescription& d : op_descriptions()) op_names.push_back(d.name);
  expr["properties"]["op"]["enum"] = std::move(op_names);
  auto tensors_only = [](const OpDescription& d) { return d.extra == OpExtra::None && d.max_operands > 0; };
  for (ordered_json& block : expr["allOf"]) {
    const ordered_json& listed = block["if"]["properties"]["op"];
    if (!listed.contains("enum") || !block["then"]["properties"]["op"].contains("enum")) continue;
    bool plain = true;
    for (const auto& name : listed["enum"]) {
      const std::optional<Op> op = op_from_name(name.get<std::string>());
      plain = plain && op && tensors_only(describe(*op));
    }
    const ordered_json& args = block["then"]["properties"]["args"];
    if (!plain || !args.contains("minItems") || !args.contains("maxItems")) continue;
    ordered_json same_arity = ordered_json::array();
    for (const OpDescription& d : op_descriptions())
      if (tensors_only(d) && d.min_operands == args["minItems"].get<size_t>() && d.max_operands == args["maxItems"].get<size_t>())
        same_arity.push_back(d.name);
    block["if"]["properties"]["op"]["enum"] = same_arity;
    block["then"]["properties"]["op"]["enum"] = same_arity;
  }
  return schema;
}

// Any option of any optimizer; validate() then checks that it belongs to the program's optimizer.
OptimizerOptions options_from_json(const ordered_json& j, const std::string& pointer) {
  JsonObjectReader r(j, pointer, "optimizer options");
  OptimizerOptions o;
  for (const std::string& name : all_option_names()) {
    const OptionDescription& d = any_option(name);
    const ordered_json* v = r.optional(name);
    if (!v) continue;
    const std::string p = r.pointer(name);
    switch (d.type) {
      case OptionType::Number: o.*d.number = number_from_json(*v, p); break;
      case OptionType::Flag: o.*d.flag = r.optional_bool(name); break;
      case OptionType::Pair: {
        const auto& a = array_from_json(*v, p);
        if (a.size() != 2)
          throw JsonError(p, name + " needs 2 numbers [" + name + "[0], " + name + "[1]], got " + std::to_string(a.size()));
        o.*d.pair = std::make_pair(number_from_json(a[0], p + "/0"), number_from_json(a[1], p + "/1"));
        break;
      }
      case OptionType::Text:
        if (!v->is_string()) throw JsonError(p, name + " must be a string, got " + std::string(v->type_name()));
        if (v->get_ref<const std::string&>().size() > 64)
          throw JsonError(p, name + " is longer than 64 characters");
        o.*d.text = v->get<std::string>();
        break;
    }
  }
  r.finish(false);
  return o;
}

// ---------------------------------------------------------------------------------------------------------
// Expressions.

ordered_json expr_to_json(const Expr& e) {
  ordered_json out = ordered_json::object();
  out["op"] = op_name(e.op);
  switch (e.op) {
    case Op::Param:
      out["name"] = e.name;
      return out;
    case Op::Const:
      out["dtype"] = dtype_name(e.constant.dtype);
      out["shape"] = shape_to_json(e.constant.shape);
      out["values"] = values_to_json(e.constant.data, e.constant.dtype);
      return out;
    default:
      break;
  }
  ordered_json args = ordered_json::array();
  for (const auto& a : e.args) args.push_back(a ? expr_to_json(*a) : ordered_json(nullptr));
  out["args"] = std::move(args);
  const OpDescription& d = describe(e.op);  // the op's scalar or indices, under its own key
  if (d.extra == OpExtra::Scalar) out[d.extra_key] = number_to_json(e.scalar);
  if (d.extra == OpExtra::Indices) out[d.extra_key] = e.indices;
  return out;
}

namespace {

// The dtype an expression has, as far as it can be told without checking it (validate() checks).
DType likely_dtype(const Expr* e, const std::vector<ParamSpec>& params) {
  while (e) {
    if (e->op == Op::Param) {
      for (const auto& p : params)
        if (p.name == e->name) return p.dtype;
      return DType::Float32;
    }
    if (e->op == Op::Const) return e->constant.dtype;
    e = e->args.empty() ? nullptr : e->args[0].get();
  }
  return DType::Float32;
}

void set_const_dtype(Expr& e, DType dtype) {
  e.constant.dtype = dtype;
  if (dtype == DType::Float32)
    for (double& v : e.constant.data) v = static_cast<double>(static_cast<float>(v));
}

class ExprReader {
 public:
  ExprReader(const std::vector<ParamSpec>& params, const ProgramLimits& limits)
      : params_(params), limits_(limits) {}

  // A whole expression (a loss): an untyped constant at the root is float32.
  ExprPtr read_root(const ordered_json& j, const std::string& pointer) {
    bool untyped = false;
    auto e = read(j, pointer, 1, &untyped);
    if (untyped) set_const_dtype(*e, DType::Float32);
    return e;
  }

 private:
  std::shared_ptr<Expr> read(const ordered_json& j, const std::string& pointer, int depth, bool* untyped_const) {
    // Checked before reading the operands, so the recursion is bounded by the limit.
    if (depth > limits_.max_expr_depth)
      throw JsonError(pointer, "expression nesting exceeds the depth limit of " +
                                   std::to_string(limits_.max_expr_depth));
    JsonObjectReader r(j, pointer, "an expression");
    const std::string op_text = r.string("op");
    const std::optional<Op> op = op_from_name(op_text);
    if (!op) throw JsonError(r.pointer("op"), "unknown op '" + op_text + "'");
    auto e = std::make_shared<Expr>();
    e->op = *op;
    *untyped_const = false;

    if (*op == Op::Param) {
      e->name = r.string("name");
    } else if (*op == Op::Const) {
      const ordered_json* dt = r.optional("dtype");
      e->constant.dtype = dt ? dtype_from_json(*dt, r.pointer("dtype")) : DType::Float32;
      e->constant.shape = shape_from_json(r.required("shape"), r.pointer("shape"));
      e->constant.data = values_from_json(r.required("values"), r.pointer("values"), DType::Float64);
      if (dt) set_const_dtype(*e, e->constant.dtype);
      *untyped_const = dt == nullptr;
    } else {
      const std::string args_pointer = r.pointer("args");
      const auto& args = array_from_json(r.required("args"), args_pointer);
      std::vector<bool> untyped(args.size(), false);
      std::vector<std::shared_ptr<Expr>> operands;
      for (size_t i = 0; i < args.size(); ++i) {
        bool u = false;
        operands.push_back(read(args[i], json_pointer_append(args_pointer, i), depth + 1, &u));
        untyped[i] = u;
      }
      // An untyped constant takes the dtype of a typed sibling operand, else float32.
      DType sibling = DType::Float32;
      for (size_t i = 0; i < operands.size(); ++i)
        if (!untyped[i]) {
          sibling = likely_dtype(operands[i].get(), params_);
          break;
        }
      for (size_t i = 0; i < operands.size(); ++i)
        if (untyped[i]) set_const_dtype(*operands[i], sibling);
      e->args.assign(operands.begin(), operands.end());

      const OpDescription& d = describe(*op);
      if (d.extra == OpExtra::Scalar) e->scalar = number_from_json(r.required(d.extra_key), r.pointer(d.extra_key));
      if (d.extra == OpExtra::Indices) e->indices = indices_from_json(r.required(d.extra_key), r.pointer(d.extra_key));
    }
    r.finish(true);
    return e;
  }

  const std::vector<ParamSpec>& params_;
  const ProgramLimits& limits_;
};

ParamGroupSpec group_from_json(const ordered_json& j, const std::string& pointer) {
  JsonObjectReader r(j, pointer, "a param group");
  ParamGroupSpec g;
  g.params = strings_from_json(r.required("params"), r.pointer("params"));
  if (const ordered_json* o = r.optional("options")) g.options = options_from_json(*o, r.pointer("options"));
  r.finish(false);
  return g;
}

ordered_json group_to_json(const ParamGroupSpec& g) {
  ordered_json out = ordered_json::object();
  out["params"] = g.params;
  if (g.options) out["options"] = options_to_json(*g.options);
  return out;
}

Action action_from_json(const ordered_json& j, const std::string& pointer, ExprReader& exprs, const ProgramLimits& limits,
                        bool in_closure = false) {
  JsonObjectReader r(j, pointer, "an action");
  const std::string name = r.string("action");
  const std::optional<ActionKind> kind = action_from_name(name);
  if (!kind)
    throw JsonError(r.pointer("action"),
                    "unknown action '" + name + "' (expected forward, backward, zero_grad, set_grad_none, "
                    "hold_grad, step, set_options, add_param_group, clip_grad_norm, clip_grad_value, state_dict or "
                    "load_state_dict)");
  Action a;
  a.kind = *kind;
  switch (a.kind) {
    case ActionKind::Forward:
      if (const ordered_json* l = r.optional("loss")) a.loss = exprs.read_root(*l, r.pointer("loss"));
      a.no_grad = r.optional_bool("no_grad").value_or(false);
      break;
    case ActionKind::Backward:
      a.retain_graph = r.optional_bool("retain_graph");
      a.create_graph = r.optional_bool("create_graph").value_or(false);
      if (const ordered_json* g = r.optional("gradient"))
        a.gradient = values_from_json(*g, r.pointer("gradient"), DType::Float64);
      break;
    case ActionKind::ZeroGrad:
      a.set_to_none = r.optional_bool("set_to_none");
      break;
    case ActionKind::SetGradNone:
      a.param = r.string("param");
      break;
    case ActionKind::HoldGrad:
      a.param = r.string("param");
      a.handle = r.string("handle");
      break;
    case ActionKind::Step:
      if (const ordered_json* c = r.optional("closure")) {
        // SEMANTICS §17.2; validate() checks what a closure may hold. A step inside a closure is refused here, so
        // that closures do not nest (the reader's recursion stays one level deep).
        if (in_closure)
          throw JsonError(r.pointer("closure"), "a closure cannot hold a step (SEMANTICS §17.2)");
        const std::string cp = r.pointer("closure");
        const auto& actions = array_from_json(*c, cp);
        if (static_cast<int64_t>(actions.size()) > limits.max_actions)
          throw JsonError(cp, std::to_string(actions.size()) + " actions exceed the limit of " +
                                  std::to_string(limits.max_actions));
        a.closure.emplace();
        for (size_t i = 0; i < actions.size(); ++i)
          a.closure->push_back(action_from_json(actions[i], json_pointer_append(cp, i), exprs, limits, true));
      }
      break;
    case ActionKind::SetOptions: {
      int64_t group = index_from_json(r.required("group"), r.pointer("group"));
      if (group > INT_MAX) throw JsonError(r.pointer("group"), "group index " + std::to_string(group) + " is too large");
      a.group = static_cast<int>(group);
      a.options = options_from_json(r.required("options"), r.pointer("options"));
      break;
    }
    case ActionKind::AddParamGroup:
      a.new_group.params = strings_from_json(r.required("params"), r.pointer("params"));
      if (const ordered_json* o = r.optional("options"))
        a.new_group.options = options_from_json(*o, r.pointer("options"));
      break;
    case ActionKind::ClipGradNorm:  // SEMANTICS §18.1: norm_type defaults to 2, error_if_nonfinite to false
      a.params = strings_from_json(r.required("params"), r.pointer("params"));
      a.max_norm = number_from_json(r.required("max_norm"), r.pointer("max_norm"));
      if (const ordered_json* n = r.optional("norm_type")) a.norm_type = number_from_json(*n, r.pointer("norm_type"));
      a.error_if_nonfinite = r.optional_bool("error_if_nonfinite").value_or(false);
      break;
    case ActionKind::ClipGradValue:
      a.params = strings_from_json(r.required("params"), r.pointer("params"));
      a.clip_value = number_from_json(r.required("clip_value"), r.pointer("clip_value"));
      break;
    case ActionKind::StateDict:  // SEMANTICS §19.5
      a.checkpoint = r.string("checkpoint");
      break;
    case ActionKind::LoadStateDict:
      a.checkpoint = r.string("checkpoint");
      a.fresh = r.optional_bool("fresh").value_or(false);
      break;
  }
  r.finish(true);
  return a;
}

ordered_json action_to_json(const Action& a) {
  ordered_json out = ordered_json::object();
  out["action"] = action_name(a.kind);
  switch (a.kind) {
    case ActionKind::Forward:
      if (a.loss) out["loss"] = expr_to_json(*a.loss);
      if (a.no_grad) out["no_grad"] = true;
      break;
    case ActionKind::Backward:
      if (a.retain_graph) out["retain_graph"] = *a.retain_graph;
      if (a.create_graph) out["create_graph"] = true;
      if (a.gradient) out["gradient"] = values_to_json(*a.gradient, DType::Float64);
      break;
    case ActionKind::ZeroGrad:
      if (a.set_to_none) out["set_to_none"] = *a.set_to_none;
      break;
    case ActionKind::SetGradNone:
      out["param"] = a.param;
      break;
    case ActionKind::HoldGrad:
      out["param"] = a.param;
      out["handle"] = a.handle;
      break;
    case ActionKind::Step:
      if (a.closure) {
        ordered_json closure = ordered_json::array();
        for (const Action& c : *a.closure) closure.push_back(action_to_json(c));
        out["closure"] = std::move(closure);
      }
      break;
    case ActionKind::SetOptions:
      out["group"] = a.group;
      out["options"] = options_to_json(a.options);
      break;
    case ActionKind::AddParamGroup:
      out["params"] = a.new_group.params;
      if (a.new_group.options) out["options"] = options_to_json(*a.new_group.options);
      break;
    case ActionKind::ClipGradNorm:
      out["params"] = a.params;
      out["max_norm"] = number_to_json(a.max_norm);
      out["norm_type"] = number_to_json(a.norm_type);
      if (a.error_if_nonfinite) out["error_if_nonfinite"] = true;
      break;
    case ActionKind::ClipGradValue:
      out["params"] = a.params;
      out["clip_value"] = number_to_json(a.clip_value);
      break;
    case ActionKind::StateDict:
      out["checkpoint"] = a.checkpoint;
      break;
    case ActionKind::LoadStateDict:
      out["checkpoint"] = a.checkpoint;
      if (a.fresh) out["fresh"] = true;
      break;
  }
  return out;
}

// Reads the document; `optimizer_shorthand` tells whether the optimizer listed "params" (one group).
Program read_program(const ordered_json& doc, const ProgramLimits& limits, bool* optimizer_shorthand) {
  JsonObjectReader top(doc, "", "a program");
  Program p;

  // Parameters first: an untyped constant in the loss may take a parameter's dtype.
  const std::string params_pointer = top.pointer("params");
  const auto& params = array_from_json(top.required("params"), params_pointer);
  for (size_t i = 0; i < params.size(); ++i) {
    JsonObjectReader r(params[i], json_pointer_append(params_pointer, i), "a param");
    ParamSpec ps;
    ps.name = r.string("name");
    ps.dtype = dtype_from_json(r.required("dtype"), r.pointer("dtype"));
    ps.shape = shape_from_json(r.required("shape"), r.pointer("shape"));
    ps.values = values_from_json(r.required("values"), r.pointer("values"), ps.dtype);
    r.finish(false);
    p.params.push_back(std::move(ps));
  }

  ExprReader exprs(p.params, limits);
  if (const ordered_json* l = top.optional("loss")) p.loss = exprs.read_root(*l, top.pointer("loss"));

  if (const ordered_json* o = top.optional("optimizer")) {
    JsonObjectReader r(*o, top.pointer("optimizer"), "an optimizer");
    OptimizerSpec spec;
    const std::string type = r.string("type");
    const std::optional<OptimizerKind> kind = optimizer_from_name(type);
    if (!kind)
      throw JsonError(r.pointer("type"), "unknown optimizer '" + type + "' (expected " + optimizer_names_joined() + ")");
    spec.kind = *kind;
    if (const ordered_json* d = r.optional("defaults")) spec.defaults = options_from_json(*d, r.pointer("defaults"));
    const bool has_params = r.has("params"), has_groups = r.has("groups");
    if (has_params == has_groups)
      throw JsonError(r.pointer(), "an optimizer needs exactly one of 'params' (one group) and 'groups'");
    if (has_params) {
      spec.groups.push_back({strings_from_json(r.required("params"), r.pointer("params")), std::nullopt});
      *optimizer_shorthand = true;
    } else {
      const std::string gp = r.pointer("groups");
      const auto& groups = array_from_json(r.required("groups"), gp);
      for (size_t i = 0; i < groups.size(); ++i)
        spec.groups.push_back(group_from_json(groups[i], json_pointer_append(gp, i)));
    }
    r.finish(false);
    p.optimizer = std::move(spec);
  }

  const std::string actions_pointer = top.pointer("actions");
  const auto& actions = array_from_json(top.required("actions"), actions_pointer);
  if (static_cast<int64_t>(actions.size()) > limits.max_actions)
    throw JsonError(actions_pointer, std::to_string(actions.size()) + " actions exceed the limit of " +
                                         std::to_string(limits.max_actions));
  for (size_t i = 0; i < actions.size(); ++i)
    p.actions.push_back(action_from_json(actions[i], json_pointer_append(actions_pointer, i), exprs, limits));
  top.finish(true);
  return p;
}

// The raw nesting a program may need: expressions (an object and an "args" array per level) inside an
// action inside the document. Twice that, so that a too-deep expression is reported by the expression
// reader (with its depth limit), while absurdly deep text is stopped before it is built.
int text_depth_limit(const ProgramLimits& limits) { return 4 * limits.max_expr_depth + 16; }

}  // namespace

Program program_from_json(const ordered_json& doc, const ProgramLimits& limits) {
  bool shorthand = false;
  try {
    Program p = read_program(doc, limits, &shorthand);
    validate(p, limits);
    return p;
  } catch (const JsonError& e) {
    throw ProgramError(e.pointer(), e.message());
  } catch (const ProgramError& e) {
    // validate() names groups as "/optimizer/groups/0/..."; the document may have used the shorthand.
    const std::string group0 = "/optimizer/groups/0/params";
    if (shorthand && e.path().compare(0, group0.size(), group0) == 0)
      throw ProgramError("/optimizer/params" + e.path().substr(group0.size()), e.what());
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    throw ProgramError("", std::string("unreadable program: ") + e.what());
  }
}

Program program_from_text(const std::string& text, const std::string& source, const ProgramLimits& limits) {
  ordered_json doc;
  try {
    doc = parse_json_text(text, text_depth_limit(limits));
  } catch (const JsonError& e) {
    throw InputError(source, e.pointer(), e.message());
  }
  try {
    return program_from_json(doc, limits);
  } catch (const ProgramError& e) {
    throw InputError(source, e.path(), e.what());
  }
}

std::string read_text_file(const std::string& path) {
  return read_text_file(path, kMaxInputFileBytes, "program, fixture, case and expectation files");
}

std::string read_text_file(const std::string& path, size_t max_bytes, const std::string& what) {
  if (files::is_directory(path)) throw InputError(path, "", "cannot read the file: it is a directory");
  // Opened without blocking and read only when it is a regular file: a FIFO would wait for a writer for good, a
  // device or a stream (/dev/zero) would be read up to the limit (issue 29).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(path, "", std::string("cannot read the file: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const char* kind = S_ISFIFO(st.st_mode)  ? "a FIFO"
                       : S_ISCHR(st.st_mode) ? "a character device"
                       : S_ISBLK(st.st_mode) ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    ::close(fd);
    throw InputError(path, "", std::string("cannot read the file: it is ") + kind + ", not a regular file");
  }
  auto too_large = [&] {
    ::close(fd);
    return InputError(path, "", "the file is larger than " + std::to_string(max_bytes >> 20) + " MiB, the limit for " +
                                    what);
  };
  if (static_cast<uint64_t>(st.st_size) > max_bytes) throw too_large();
  // Read in chunks up to the limit (a file may grow while it is read).
  std::string text;
  text.reserve(static_cast<size_t>(st.st_size));
  char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw InputError(path, "", std::string("cannot read the file: ") + std::strerror(error));
    }
    if (n == 0) break;
    text.append(chunk, static_cast<size_t>(n));
    if (text.size() > max_bytes) throw too_large();
  }
  ::close(fd);
  return text;
}

Program read_program_file(const std::string& path, const ProgramLimits& limits) {
  return program_from_text(read_text_file(path), path, limits);
}

ordered_json program_to_json(const Program& p) {
  ordered_json out = ordered_json::object();
  ordered_json params = ordered_json::array();
  for (const auto& ps : p.params) {
    ordered_json j = ordered_json::object();
    j["name"] = ps.name;
    j["dtype"] = dtype_name(ps.dtype);
    j["shape"] = shape_to_json(ps.shape);
    j["values"] = values_to_json(ps.values, ps.dtype);
    params.push_back(std::move(j));
  }
  out["params"] = std::move(params);
  if (p.loss) out["loss"] = expr_to_json(*p.loss);
  if (p.optimizer) {
    const OptimizerSpec& o = *p.optimizer;
    ordered_json j = ordered_json::object();
    j["type"] = optimizer_name(o.kind);
    j["defaults"] = options_to_json(o.defaults);
    if (o.groups.size() == 1 && !o.groups[0].options) {
      j["params"] = o.groups[0].params;
    } else {
      ordered_json groups = ordered_json::array();
      for (const auto& g : o.groups) groups.push_back(group_to_json(g));
      j["groups"] = std::move(groups);
    }
    out["optimizer"] = std::move(j);
  }
  ordered_json actions = ordered_json::array();
  for (const auto& a : p.actions) actions.push_back(action_to_json(a));
  out["actions"] = std::move(actions);
  return out;
}

}  // namespace lockstep
