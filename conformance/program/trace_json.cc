// The JSON form of a trace (see trace_json.h).
#include "conformance/program/trace_json.h"

#include "conformance/program/json_number.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/optimizer_descriptions.h"
#include "conformance/program/program_json.h"

namespace lockstep {

const std::vector<const char*>& all_error_kinds() {
  static const std::vector<const char*> kinds = {
      error_kind::kInvalidOption,     error_kind::kBackwardThroughFreedGraph, error_kind::kNoGradFn,
      error_kind::kNonscalarBackward, error_kind::kNonLeafParameter,          error_kind::kDuplicateParameter,
      error_kind::kGradientShape,     error_kind::kInplaceModified,           error_kind::kNoOptimizer,
      error_kind::kNoOutput,          error_kind::kNoSuchGroup,               error_kind::kNonfiniteNorm,
      error_kind::kStateDictMismatch, error_kind::kOther};
  return kinds;
}


using nlohmann::ordered_json;

namespace {

ordered_json full_tensor_to_json(const TensorValue& v) {
  ordered_json out = ordered_json::object();
  out["dtype"] = dtype_name(v.dtype);
  out["shape"] = shape_to_json(v.shape);
  out["values"] = values_to_json(v.data, v.dtype);
  return out;
}

// A tensor's values fill its shape exactly (a driver's answer is read with this; the comparator may index by shape).
void check_values_fill_shape(const TensorValue& v, const std::string& values_pointer) {
  uint64_t n = 1;
  for (int64_t d : v.shape) {
    if (d < 0 || (d > 0 && n > (uint64_t{1} << 62) / static_cast<uint64_t>(d))) {
      n = ~uint64_t{0};
      break;
    }
    n *= static_cast<uint64_t>(d);
  }
  if (n != v.data.size())
    throw JsonError(values_pointer, std::to_string(v.data.size()) + " values for shape " + shape_to_json(v.shape).dump() +
                                        (n == ~uint64_t{0} ? " (too large)" : ", which holds " + std::to_string(n)));
}

TensorValue full_tensor_from_json(JsonObjectReader& r) {
  TensorValue v;
  v.dtype = dtype_from_json(r.required("dtype"), r.pointer("dtype"));
  v.shape = shape_from_json(r.required("shape"), r.pointer("shape"));
  v.data = values_from_json(r.required("values"), r.pointer("values"), v.dtype);
  check_values_fill_shape(v, r.pointer("values"));
  return v;
}

bool fits(const TensorValue& v, const TensorValue& param) {
  return v.dtype == param.dtype && v.shape == param.shape;
}

// A state tensor: a bare array when it is shaped and typed like its parameter, else a full tensor object.
ordered_json state_tensor_to_json(const TensorValue& v, const TensorValue& param) {
  return fits(v, param) ? values_to_json(v.data, v.dtype) : full_tensor_to_json(v);
}

TensorValue state_tensor_from_json(const ordered_json& j, const std::string& pointer, const TensorValue& param) {
  if (j.is_array()) {
    TensorValue v{param.dtype, param.shape, values_from_json(j, pointer, param.dtype)};
    check_values_fill_shape(v, pointer);
    return v;
  }
  JsonObjectReader r(j, pointer, "a state tensor (an array of values, or an object with dtype, shape, values)");
  TensorValue v = full_tensor_from_json(r);
  r.finish(false);
  return v;
}

ordered_json grad_to_json(const GradObservation& g, const TensorValue& param) {
  ordered_json out = ordered_json::object();
  out["defined"] = g.defined;
  if (!g.defined) return out;
  if (!fits(g.value, param)) {
    out["dtype"] = dtype_name(g.value.dtype);
    out["shape"] = shape_to_json(g.value.shape);
  }
  out["values"] = values_to_json(g.value.data, g.value.dtype);
  out["requires_grad"] = g.requires_grad;
  out["has_grad_fn"] = g.has_grad_fn;
  out["same_as_previous"] = g.same_as_previous;
  return out;
}

GradObservation grad_from_json(const ordered_json& j, const std::string& pointer, const TensorValue& param) {
  JsonObjectReader r(j, pointer, "a grad");
  GradObservation g;
  g.defined = bool_from_json(r.required("defined"), r.pointer("defined"));
  if (g.defined) {
    const ordered_json* dt = r.optional("dtype");
    const ordered_json* sh = r.optional("shape");
    g.value.dtype = dt ? dtype_from_json(*dt, r.pointer("dtype")) : param.dtype;
    g.value.shape = sh ? shape_from_json(*sh, r.pointer("shape")) : param.shape;
    g.value.data = values_from_json(r.required("values"), r.pointer("values"), g.value.dtype);
    check_values_fill_shape(g.value, r.pointer("values"));
    g.requires_grad = bool_from_json(r.required("requires_grad"), r.pointer("requires_grad"));
    g.has_grad_fn = bool_from_json(r.required("has_grad_fn"), r.pointer("has_grad_fn"));
    g.same_as_previous = bool_from_json(r.required("same_as_previous"), r.pointer("same_as_previous"));
  }
  r.finish(false);
  return g;
}

ordered_json optimizer_state_to_json(const OptimizerStateObservation& s, const TensorValue& param) {
  ordered_json out = ordered_json::object();
  if (s.step) out["step"] = *s.step;
  for (const StateCountDescription& c : all_state_counts())
    if (const std::optional<int64_t>& v = s.*c.field) out[c.name] = *v;
  for (const StateTensorDescription& t : all_state_tensors())  // optimizer_descriptions.h
    if (const std::optional<TensorValue>& v = s.*t.field) out[t.name] = state_tensor_to_json(*v, param);
  if (s.exists != !out.empty()) out["exists"] = s.exists;  // only when the fields do not tell
  return out;
}

OptimizerStateObservation optimizer_state_from_json(const ordered_json& j, const std::string& pointer,
                                                    const TensorValue& param) {
  JsonObjectReader r(j, pointer, "an optimizer state");
  OptimizerStateObservation s;
  bool any = false;
  if (const ordered_json* v = r.optional("step")) {
    s.step = int_from_json(*v, r.pointer("step"));
    any = true;
  }
  for (const StateCountDescription& c : all_state_counts()) {
    if (const ordered_json* v = r.optional(c.name)) {
      s.*c.field = int_from_json(*v, r.pointer(c.name));
      any = true;
    }
  }
  for (const StateTensorDescription& t : all_state_tensors()) {  // optimizer_descriptions.h
    if (const ordered_json* v = r.optional(t.name)) {
      s.*t.field = state_tensor_from_json(*v, r.pointer(t.name), param);
      any = true;
    }
  }
  const ordered_json* exists = r.optional("exists");
  s.exists = exists ? bool_from_json(*exists, r.pointer("exists")) : any;
  r.finish(false);
  return s;
}

ordered_json error_to_json(const ErrorObservation& e) {
  ordered_json out = ordered_json::object();
  out["kind"] = e.kind;
  out["message"] = e.message;
  return out;
}

ErrorObservation error_from_json(const ordered_json& j, const std::string& pointer) {
  JsonObjectReader r(j, pointer, "an error");
  ErrorObservation e;
  e.kind = r.string("kind");
  e.message = r.string("message");
  r.finish(false);
  return e;
}

void write_state(const EngineState& s, ordered_json& out) {
  ordered_json params = ordered_json::object();
  for (const auto& p : s.params) {
    ordered_json j = full_tensor_to_json(p.value);
    if (p.same_as_previous) j["same_as_previous"] = *p.same_as_previous;  // optional_fields.h
    j["grad"] = grad_to_json(p.grad, p.value);
    j["state"] = optimizer_state_to_json(p.state, p.value);
    params[p.name] = std::move(j);
  }
  out["params"] = std::move(params);

  ordered_json handles = ordered_json::object();
  for (const auto& h : s.handles) {
    ordered_json j = ordered_json::object();
    j["defined"] = h.defined;
    if (h.defined) {
      j["dtype"] = dtype_name(h.value.dtype);
      j["shape"] = shape_to_json(h.value.shape);
      j["values"] = values_to_json(h.value.data, h.value.dtype);
    }
    handles[h.name] = std::move(j);
  }
  out["handles"] = std::move(handles);

  ordered_json groups = ordered_json::array();
  for (const auto& g : s.groups) {
    ordered_json j = ordered_json::object();
    j["params"] = g.params;
    j["options"] = options_to_json(g.options);
    groups.push_back(std::move(j));
  }
  out["groups"] = std::move(groups);

  if (s.output) {
    ordered_json j = full_tensor_to_json(s.output->value);
    j["requires_grad"] = s.output->requires_grad;
    j["has_grad_fn"] = s.output->has_grad_fn;
    out["output"] = std::move(j);
  }
}

}  // namespace

const std::vector<std::string>& param_observation_keys() {
  static const std::vector<std::string> keys = {"dtype", "shape", "values", "same_as_previous", "grad", "state"};
  return keys;
}

namespace {

// Reads the state fields through `r` (a record's or a state's reader); the caller finishes `r`.
EngineState read_state(JsonObjectReader& r) {
  EngineState s;
  const std::string pp = r.pointer("params");
  const ordered_json& params = r.required("params");
  if (!params.is_object())
    throw JsonError(pp, std::string("expected an object keyed by parameter name, got ") + json_type_name(params));
  for (auto it = params.begin(); it != params.end(); ++it) {
    JsonObjectReader pr(it.value(), json_pointer_append(pp, it.key()), "a param observation");
    ParamObservation p;
    p.name = it.key();
    p.value = full_tensor_from_json(pr);
    if (const ordered_json* same = pr.optional("same_as_previous"))  // optional_fields.h
      p.same_as_previous = bool_from_json(*same, pr.pointer("same_as_previous"));
    p.grad = grad_from_json(pr.required("grad"), pr.pointer("grad"), p.value);
    p.state = optimizer_state_from_json(pr.required("state"), pr.pointer("state"), p.value);
    pr.finish(false);
    s.params.push_back(std::move(p));
  }

  const std::string hp = r.pointer("handles");
  const ordered_json& handles = r.required("handles");
  if (!handles.is_object())
    throw JsonError(hp, std::string("expected an object keyed by handle name, got ") + json_type_name(handles));
  for (auto it = handles.begin(); it != handles.end(); ++it) {
    JsonObjectReader hr(it.value(), json_pointer_append(hp, it.key()), "a handle observation");
    HandleObservation h;
    h.name = it.key();
    h.defined = bool_from_json(hr.required("defined"), hr.pointer("defined"));
    if (h.defined) h.value = full_tensor_from_json(hr);
    hr.finish(false);
    s.handles.push_back(std::move(h));
  }

  const std::string gp = r.pointer("groups");
  const ordered_json& groups = array_from_json(r.required("groups"), gp);
  for (size_t i = 0; i < groups.size(); ++i) {
    JsonObjectReader gr(groups[i], json_pointer_append(gp, i), "a group observation");
    GroupObservation g;
    g.params = strings_from_json(gr.required("params"), gr.pointer("params"));
    g.options = options_from_json(gr.required("options"), gr.pointer("options"));
    gr.finish(false);
    s.groups.push_back(std::move(g));
  }

  if (const ordered_json* o = r.optional("output")) {
    JsonObjectReader orr(*o, r.pointer("output"), "an output observation");
    OutputObservation out;
    out.value = full_tensor_from_json(orr);
    out.requires_grad = bool_from_json(orr.required("requires_grad"), orr.pointer("requires_grad"));
    out.has_grad_fn = bool_from_json(orr.required("has_grad_fn"), orr.pointer("has_grad_fn"));
    orr.finish(false);
    s.output = std::move(out);
  }
  return s;
}

}  // namespace

ordered_json state_to_json(const EngineState& s) {
  ordered_json out = ordered_json::object();
  write_state(s, out);
  return out;
}

ordered_json record_to_json(const Record& r) {
  ordered_json out = ordered_json::object();
  out["action"] = r.action;
  if (r.error) out["error"] = error_to_json(*r.error);
  write_state(r.state, out);
  // A step with a closure (SEMANTICS §17.3).
  if (!r.calls.empty()) {
    ordered_json calls = ordered_json::array();
    for (const ClosureCall& c : r.calls) {
      ordered_json call = ordered_json::array();
      for (const Record& sub : c.records) call.push_back(record_to_json(sub));
      calls.push_back(std::move(call));
    }
    out["calls"] = std::move(calls);
  }
  if (r.returned) out["returned"] = full_tensor_to_json(*r.returned);
  return out;
}

ordered_json trace_to_json(const Trace& t) {
  ordered_json out = ordered_json::object();
  out["engine"] = t.engine;
  out["init"] = record_to_json(t.init);
  ordered_json records = ordered_json::array();
  for (const auto& r : t.records) records.push_back(record_to_json(r));
  out["records"] = std::move(records);
  return out;
}

EngineState state_from_json(const ordered_json& j, const std::string& pointer) {
  JsonObjectReader r(j, pointer, "an engine state");
  EngineState s = read_state(r);
  r.finish(false);
  return s;
}

namespace {

// `in_call`: the record of a closure's action, which has no calls of its own (closures do not nest, §17.2).
Record read_record(const ordered_json& j, const std::string& pointer, bool in_call) {
  JsonObjectReader r(j, pointer, "a record");
  Record rec;
  rec.action = r.string("action");
  if (const ordered_json* e = r.optional("error")) rec.error = error_from_json(*e, r.pointer("error"));
  rec.state = read_state(r);
  if (const ordered_json* c = r.optional("calls")) {
    const std::string cp = r.pointer("calls");
    if (in_call) throw JsonError(cp, "a closure's record cannot hold calls: closures do not nest (SEMANTICS §17.2)");
    const ordered_json& calls = array_from_json(*c, cp);
    for (size_t i = 0; i < calls.size(); ++i) {
      const std::string callp = json_pointer_append(cp, i);
      const ordered_json& records = array_from_json(calls[i], callp);
      ClosureCall call;
      for (size_t k = 0; k < records.size(); ++k)
        call.records.push_back(read_record(records[k], json_pointer_append(callp, k), true));
      rec.calls.push_back(std::move(call));
    }
  }
  if (const ordered_json* ret = r.optional("returned")) {
    JsonObjectReader rr(*ret, r.pointer("returned"), "a returned value");
    rec.returned = full_tensor_from_json(rr);
    rr.finish(false);
  }
  r.finish(false);
  return rec;
}

}  // namespace

Record record_from_json(const ordered_json& j, const std::string& pointer) { return read_record(j, pointer, false); }

Trace trace_from_json(const ordered_json& j) {
  JsonObjectReader r(j, "", "a trace");
  Trace t;
  t.engine = r.string("engine");
  t.init = record_from_json(r.required("init"), r.pointer("init"));
  const std::string rp = r.pointer("records");
  const ordered_json& records = array_from_json(r.required("records"), rp);
  for (size_t i = 0; i < records.size(); ++i) t.records.push_back(record_from_json(records[i], json_pointer_append(rp, i)));
  r.finish(false);
  return t;
}

}  // namespace lockstep
