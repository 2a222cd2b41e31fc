// Tests of the trace JSON format (trace_json.h): exact round trips and strict reading with JSON pointers.
#include "conformance/program/trace_json.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include <gtest/gtest.h>

#include "conformance/program/json_reader.h"
#include "conformance/program/optional_fields.h"

namespace lockstep {
namespace {

using nlohmann::ordered_json;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Field-by-field equality, bitwise on numbers (TensorValue::operator==, OptimizerOptions::operator==).
void expect_same(const EngineState& a, const EngineState& b) {
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    const ParamObservation &p = a.params[i], &q = b.params[i];
    SCOPED_TRACE(p.name);
    EXPECT_EQ(p.name, q.name);
    EXPECT_EQ(p.value, q.value);
    EXPECT_EQ(p.grad.defined, q.grad.defined);
    if (p.grad.defined) {
      EXPECT_EQ(p.grad.value, q.grad.value);
      EXPECT_EQ(p.grad.requires_grad, q.grad.requires_grad);
      EXPECT_EQ(p.grad.has_grad_fn, q.grad.has_grad_fn);
      EXPECT_EQ(p.grad.same_as_previous, q.grad.same_as_previous);
    }
    EXPECT_EQ(p.state.exists, q.state.exists);
    EXPECT_EQ(p.state.step, q.state.step);
    EXPECT_EQ(p.state.momentum_buffer, q.state.momentum_buffer);
    EXPECT_EQ(p.state.exp_avg, q.state.exp_avg);
    EXPECT_EQ(p.state.exp_avg_sq, q.state.exp_avg_sq);
    EXPECT_EQ(p.state.max_exp_avg_sq, q.state.max_exp_avg_sq);
  }
  ASSERT_EQ(a.handles.size(), b.handles.size());
  for (size_t i = 0; i < a.handles.size(); ++i) {
    EXPECT_EQ(a.handles[i].name, b.handles[i].name);
    EXPECT_EQ(a.handles[i].defined, b.handles[i].defined);
    if (a.handles[i].defined) {
      EXPECT_EQ(a.handles[i].value, b.handles[i].value);
    }
  }
  ASSERT_EQ(a.groups.size(), b.groups.size());
  for (size_t i = 0; i < a.groups.size(); ++i) {
    EXPECT_EQ(a.groups[i].params, b.groups[i].params);
    EXPECT_EQ(a.groups[i].options, b.groups[i].options);
  }
  ASSERT_EQ(a.output.has_value(), b.output.has_value());
  if (a.output) {
    EXPECT_EQ(a.output->value, b.output->value);
    EXPECT_EQ(a.output->requires_grad, b.output->requires_grad);
    EXPECT_EQ(a.output->has_grad_fn, b.output->has_grad_fn);
  }
}

void expect_same(const Record& a, const Record& b) {
  EXPECT_EQ(a.action, b.action);
  ASSERT_EQ(a.error.has_value(), b.error.has_value());
  if (a.error) {
    EXPECT_EQ(a.error->kind, b.error->kind);
    EXPECT_EQ(a.error->message, b.error->message);
  }
  expect_same(a.state, b.state);
}

Trace rich_trace() {
  Trace t;
  t.engine = "test-engine";
  EngineState s;
  ParamObservation x;
  x.name = "x";
  x.value = {DType::Float32, {3}, {0.1f, -0.0, 1e-45f}};
  x.grad.defined = true;
  x.grad.value = {DType::Float32, {3}, {kNaN, kInf, -kInf}};
  x.grad.same_as_previous = true;
  x.state.exists = true;
  x.state.step = 3;
  x.state.exp_avg = TensorValue{DType::Float32, {3}, {0.3f, 0, 1}};
  x.state.exp_avg_sq = TensorValue{DType::Float32, {3}, {-0.0, 2, 1e-40f}};
  x.state.max_exp_avg_sq = TensorValue{DType::Float32, {3}, {0.5, 2, 3}};
  ParamObservation w;
  w.name = "w/1";  // a name needing pointer escapes
  w.value = {DType::Float64, {2, 2}, {0.1, 4.9e-324, -1e308, 1.0 / 3}};
  w.grad.defined = true;
  w.grad.value = {DType::Float64, {2, 2}, {1, 2, 3, 4}};
  w.grad.requires_grad = true;
  w.grad.has_grad_fn = true;
  w.state.exists = true;
  w.state.momentum_buffer = TensorValue{DType::Float64, {2, 2}, {0.1, 0.2, 0.3, 0.4}};
  ParamObservation s0;
  s0.name = "s";
  s0.value = {DType::Float64, {}, {2}};
  s.params = {x, w, s0};
  HandleObservation g0{"g0", true, {DType::Float64, {2, 2}, {1, 2, 3, -0.0}}};
  HandleObservation g1{"g1", false, {}};
  s.handles = {g0, g1};
  GroupObservation grp;
  grp.params = {"x", "x"};
  grp.options.lr = 1e-3;
  grp.options.betas = std::make_pair(0.9, 0.999);
  grp.options.eps = 1e-8;
  grp.options.weight_decay = 0.0;
  grp.options.amsgrad = true;
  s.groups = {grp};
  s.output = OutputObservation{{DType::Float32, {}, {0.1f}}, true, true};

  t.init.action = "init";
  t.init.state.params = {s0};
  Record r1;
  r1.action = "backward";
  r1.error = ErrorObservation{"no_grad_fn", "element 0 of tensors does not require grad"};
  r1.state = s;
  Record r2;
  r2.action = "step";
  r2.state = s;
  r2.state.output.reset();
  // A step with a closure (SEMANTICS §17.3): two calls, the second ended by a failed backward.
  Record c0;
  c0.action = "forward";
  c0.state = s;
  r2.calls = {ClosureCall{{c0}}, ClosureCall{{c0, r1}}};
  r2.returned = TensorValue{DType::Float32, {}, {0.1f}};
  t.records = {r1, r2};
  return t;
}

TEST(TraceJson, RoundTripIsExact) {
  const Trace t = rich_trace();
  const std::string text = trace_to_json(t).dump(2);
  const Trace back = trace_from_json(ordered_json::parse(text));
  EXPECT_EQ(back.engine, t.engine);
  expect_same(back.init, t.init);
  ASSERT_EQ(back.records.size(), t.records.size());
  for (size_t i = 0; i < t.records.size(); ++i) expect_same(back.records[i], t.records[i]);
  EXPECT_EQ(trace_to_json(back).dump(2), text);
}

TEST(TraceJson, AStepsCallsAndReturnedValue) {  // SEMANTICS §17.3
  const Trace t = rich_trace();
  const ordered_json r = record_to_json(t.records[1]);
  ASSERT_EQ(r["calls"].size(), 2u);
  EXPECT_EQ(r["calls"][1].size(), 2u);
  EXPECT_EQ(r["calls"][1][1]["error"]["kind"], "no_grad_fn");
  EXPECT_EQ(r["returned"].dump(), R"({"dtype":"float32","shape":[],"values":[0.1]})");
  EXPECT_FALSE(record_to_json(t.records[0]).contains("calls"));  // only a step with a closure has them
  EXPECT_FALSE(record_to_json(t.records[0]).contains("returned"));
  const Record back = record_from_json(r, "/records/1");
  ASSERT_EQ(back.calls.size(), 2u);
  ASSERT_EQ(back.calls[1].records.size(), 2u);
  EXPECT_EQ(back.calls[1].records[1].error->kind, "no_grad_fn");
  EXPECT_EQ(back.returned, t.records[1].returned);
}

TEST(TraceJson, CompactForm) {
  const Trace t = rich_trace();
  const ordered_json r = record_to_json(t.records[0]);
  EXPECT_EQ(r["action"], "backward");
  EXPECT_EQ(r["error"]["kind"], "no_grad_fn");
  EXPECT_FALSE(record_to_json(t.records[1]).contains("error"));
  EXPECT_FALSE(record_to_json(t.records[1]).contains("output"));
  const ordered_json& x = r["params"]["x"];
  EXPECT_EQ(x["values"].dump(), "[0.1,-0.0,1e-45]");  // float32 shortest forms
  EXPECT_EQ(x["grad"].dump(),
            R"({"defined":true,"values":["NaN","Infinity","-Infinity"],"requires_grad":false,"has_grad_fn":false,"same_as_previous":true})");
  EXPECT_EQ(x["state"].dump(), R"({"step":3,"exp_avg":[0.3,0.0,1.0],"exp_avg_sq":[-0.0,2.0,1e-40],"max_exp_avg_sq":[0.5,2.0,3.0]})");
  EXPECT_EQ(r["params"]["s"]["grad"].dump(), R"({"defined":false})");
  EXPECT_EQ(r["params"]["s"]["state"].dump(), "{}");
  EXPECT_EQ(r["handles"]["g1"].dump(), R"({"defined":false})");
  EXPECT_EQ(r["groups"][0]["options"].dump(),
            R"({"lr":0.001,"weight_decay":0.0,"betas":[0.9,0.999],"eps":1e-08,"amsgrad":true})");
  // Params in program order (not sorted).
  std::vector<std::string> keys;
  for (auto it = r["params"].begin(); it != r["params"].end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"x", "w/1", "s"}));
  EXPECT_EQ(state_from_json(state_to_json(t.records[0].state)).params.size(), 3u);
}

TEST(TraceJson, UnusualShapesAndStatesAreKept) {
  Record r;
  r.action = "step";
  ParamObservation p;
  p.name = "p";
  p.value = {DType::Float32, {2}, {1, 2}};
  p.grad.defined = true;
  p.grad.value = {DType::Float64, {1, 2}, {0.1, 0.2}};  // an engine bug must survive the trip
  p.state.exists = true;                                 // exists, but no field (SGD without momentum)
  ParamObservation q = p;
  q.name = "q";
  q.grad.defined = false;
  q.state.exists = false;
  q.state.momentum_buffer = TensorValue{DType::Float64, {3}, {1, 2, 3}};  // fields without exists
  r.state.params = {p, q};
  const ordered_json j = ordered_json::parse(record_to_json(r).dump());
  EXPECT_EQ(j["params"]["p"]["grad"]["dtype"], "float64");
  EXPECT_EQ(j["params"]["p"]["state"].dump(), R"({"exists":true})");
  EXPECT_TRUE(j["params"]["q"]["state"]["momentum_buffer"].is_object());
  const Record back = record_from_json(j);
  expect_same(back, r);
}

struct BadTrace {
  std::string name;
  std::function<void(ordered_json&)> damage;
  std::string pointer, fragment;
};

TEST(TraceJson, StrictReadingNamesThePointer) {
  const std::vector<BadTrace> cases = {
      {"missing_engine", [](ordered_json& j) { j.erase("engine"); }, "", "needs the field 'engine'"},
      {"calls_not_array", [](ordered_json& j) { j["records"][1]["calls"] = 1; }, "/records/1/calls", "expected an array"},
      {"call_not_array", [](ordered_json& j) { j["records"][1]["calls"][0] = ordered_json::object(); },
       "/records/1/calls/0", "expected an array"},
      {"calls_nest", [](ordered_json& j) { j["records"][1]["calls"][0][0]["calls"] = ordered_json::array(); },
       "/records/1/calls/0/0/calls", "closures do not nest"},
      {"call_record_unknown_field", [](ordered_json& j) { j["records"][1]["calls"][1][0]["extra"] = 1; },
       "/records/1/calls/1/0/extra", "unknown field"},
      {"returned_short", [](ordered_json& j) { j["records"][1]["returned"]["shape"] = {2}; },
       "/records/1/returned/values", "1 values for shape [2]"},
      {"unknown_top", [](ordered_json& j) { j["extra"] = 1; }, "/extra", "unknown field"},
      {"records_type", [](ordered_json& j) { j["records"] = 3; }, "/records", "expected an array"},
      {"unknown_grad_field", [](ordered_json& j) { j["records"][0]["params"]["x"]["grad"]["valuez"] = 1; },
       "/records/0/params/x/grad/valuez", "unknown field 'valuez'"},
      {"grad_value_type", [](ordered_json& j) { j["records"][0]["params"]["x"]["grad"]["values"][1] = "inf"; },
       "/records/0/params/x/grad/values/1", "expected a number"},
      {"grad_missing_flag", [](ordered_json& j) { j["records"][1]["params"]["w/1"]["grad"].erase("has_grad_fn"); },
       "/records/1/params/w~11/grad", "needs the field 'has_grad_fn'"},
      {"step_not_integer", [](ordered_json& j) { j["records"][0]["params"]["x"]["state"]["step"] = 1.5; },
       "/records/0/params/x/state/step", "expected an integer"},
      {"params_not_object", [](ordered_json& j) { j["init"]["params"] = ordered_json::array(); }, "/init/params",
       "expected an object"},
      {"handle_defined_type", [](ordered_json& j) { j["records"][0]["handles"]["g0"]["defined"] = 1; },
       "/records/0/handles/g0/defined", "expected true or false"},
      {"group_option", [](ordered_json& j) { j["records"][0]["groups"][0]["options"]["beta1"] = 0.9; },
       "/records/0/groups/0/options/beta1", "unknown field"},
      {"error_kind", [](ordered_json& j) { j["records"][0]["error"].erase("kind"); }, "/records/0/error",
       "needs the field 'kind'"},
      {"output_dtype", [](ordered_json& j) { j["records"][0]["output"]["dtype"] = "half"; },
       "/records/0/output/dtype", "unknown dtype"},
      {"state_tensor", [](ordered_json& j) { j["records"][0]["params"]["x"]["state"]["exp_avg"] = "x"; },
       "/records/0/params/x/state/exp_avg", "expected an object"},
      // Values that do not fill their shape (issue 14, found by reading for the fuzz targets): read as they came.
      {"grad_values_short", [](ordered_json& j) { j["records"][0]["params"]["x"]["grad"]["values"].erase(0); },
       "/records/0/params/x/grad/values", "values for shape"},
      {"param_values_long", [](ordered_json& j) { j["records"][0]["params"]["x"]["values"].push_back(1.0); },
       "/records/0/params/x/values", "values for shape"},
      {"state_values_short", [](ordered_json& j) { j["records"][0]["params"]["x"]["state"]["exp_avg"] = {1.0}; },
       "/records/0/params/x/state/exp_avg", "values for shape"},
      {"output_shape_overflow",
       [](ordered_json& j) { j["records"][0]["output"]["shape"] = {int64_t{1} << 40, int64_t{1} << 40}; },
       "/records/0/output/values", "too large"},
  };
  const ordered_json good = trace_to_json(rich_trace());
  ASSERT_NO_THROW(trace_from_json(good));
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ordered_json j = good;
    c.damage(j);
    try {
      trace_from_json(j);
      ADD_FAILURE() << "accepted";
    } catch (const JsonError& e) {
      EXPECT_EQ(e.pointer(), c.pointer) << e.what();
      EXPECT_NE(e.message().find(c.fragment), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// The optional field param.same_as_previous (optional_fields.h): written only when reported, read when present,
// absent is not an error, a wrong type is one naming its pointer.
TEST(TraceJson, OptionalParamIdentity) {
  Trace t;
  t.engine = "e";
  ParamObservation w;
  w.name = "w";
  w.value = {DType::Float32, {1}, {1}};
  t.init.action = "init";
  t.init.state.params = {w};
  Record step = t.init;
  step.action = "step";
  step.state.params[0].same_as_previous = false;
  t.records = {step};
  const nlohmann::ordered_json j = trace_to_json(t);
  EXPECT_FALSE(j["init"]["params"]["w"].contains("same_as_previous"));
  EXPECT_EQ(j["records"][0]["params"]["w"]["same_as_previous"], false);
  const Trace back = trace_from_json(j);
  EXPECT_FALSE(back.init.state.params[0].same_as_previous.has_value());
  ASSERT_TRUE(back.records[0].state.params[0].same_as_previous.has_value());
  EXPECT_FALSE(*back.records[0].state.params[0].same_as_previous);
  EXPECT_EQ(first_missing(back, "param.same_as_previous"), std::optional<std::string>("/init/params/w"));

  nlohmann::ordered_json bad = j;
  bad["records"][0]["params"]["w"]["same_as_previous"] = "yes";
  try {
    trace_from_json(bad);
    FAIL() << "a string same_as_previous was read";
  } catch (const JsonError& e) {
    EXPECT_EQ(e.pointer(), "/records/0/params/w/same_as_previous");
  }
  bad["records"][0]["params"]["w"].erase("same_as_previous");
  bad["init"]["params"]["w"]["same_as_previous"] = true;
  EXPECT_EQ(first_missing(trace_from_json(bad), "param.same_as_previous"),
            std::optional<std::string>("/records/0/params/w"));
  bad["records"][0]["params"]["w"]["same_as_previous"] = true;
  EXPECT_EQ(first_missing(trace_from_json(bad), "param.same_as_previous"), std::nullopt);
}

// Every optional field is enforced by first_missing (a field added without its presence test would be announced
// and never required): an observation without any field is missing each.
TEST(TraceJson, EveryOptionalFieldCanBeMissing) {
  Trace t;
  ParamObservation w;
  w.name = "w";
  t.init.state.params = {w};
  for (const OptionalField& f : optional_fields()) {
    EXPECT_EQ(first_missing(t, f.name), std::optional<std::string>("/init/params/w")) << f.name;
    EXPECT_FALSE(param_field_key(f.name).empty()) << f.name << ": only parameter fields are read so far";
  }
}

}  // namespace
}  // namespace lockstep
