// Tests of how a gradient clipping is compared (SEMANTICS §18, trace_comparison.h, clip_budget.cc): wrong clips are
// rejected on the total norm, the grads and the handles that alias them; a legitimately different rounding is
// accepted; and without re-synchronisation each side's clip in double carries its inputs' deviation.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "conformance/compare/error_budget.h"
#include "conformance/compare/tolerance.h"
#include "conformance/compare/trace_comparison.h"
#include "conformance/program/program_json.h"
#include "conformance/run/interpreter.h"
#include "impl/engine_adapter.h"

namespace lockstep {
namespace {

// w [1.5] and b [2.0] (float32) through sum(w^2) + sum(b^2): grads [3] and [4]; a handle on w's grad; then
// clip_grad_norm([w, b], 1) and clip_grad_value([w, b], 0.5).
Program clip_program() {
  Program p = program_from_json(nlohmann::ordered_json::parse(R"({
    "params": [{"name": "w", "dtype": "float32", "shape": [1], "values": [1.5]},
               {"name": "b", "dtype": "float32", "shape": [1], "values": [2.0]}],
    "loss": {"op": "add", "args": [{"op": "sum", "args": [{"op": "square", "args": [{"op": "param", "name": "w"}]}]},
                                   {"op": "sum", "args": [{"op": "square", "args": [{"op": "param", "name": "b"}]}]}]},
    "actions": [{"action": "forward"}, {"action": "backward"}, {"action": "hold_grad", "param": "w", "handle": "h"},
                {"action": "clip_grad_norm", "params": ["w", "b"], "max_norm": 1.0},
                {"action": "clip_grad_value", "params": ["w", "b"], "clip_value": 0.5}]})"));
  validate(p);
  return p;
}

Trace trace_of(const Program& p) {
  auto engine = make_impl_engine();
  return run_program(p, *engine);
}

// The first difference's path, or "" when the traces agree (free-running: the budget is carried).
std::string first_difference(const Program& p, const Trace& expected, const Trace& actual) {
  TraceComparison cmp(p, Tolerance{});
  std::vector<Difference> d = cmp.compare_init(expected.init, actual.init);
  for (size_t i = 0; d.empty() && i < p.actions.size(); ++i) d = cmp.compare_action(i, expected.records[i], actual.records[i]);
  return d.empty() ? "" : d.front().path;
}

double next_float(double x, int ulps) {
  float f = static_cast<float>(x);
  for (int i = 0; i < ulps; ++i) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

TEST(ClipComparison, ATraceAgreesWithItself) {
  const Program p = clip_program();
  const Trace t = trace_of(p);
  ASSERT_TRUE(t.records[3].returned);
  EXPECT_EQ(t.records[3].returned->data, std::vector<double>{5});
  EXPECT_EQ(t.records[3].returned->dtype, DType::Float32);
  EXPECT_EQ(first_difference(p, t, t), "");
}

TEST(ClipComparison, WrongClipsAreRejected) {
  const Program p = clip_program();
  const Trace t = trace_of(p);
  // Each grad clipped by its own norm: 1 and 1 instead of 0.6 and 0.8.
  Trace per_tensor = t;
  per_tensor.records[3].state.params[0].grad.value.data[0] = 1;
  per_tensor.records[3].state.params[1].grad.value.data[0] = 1;
  EXPECT_EQ(first_difference(p, t, per_tensor), "w → grad[0]");
  // A wrong total, or none.
  Trace total = t;
  total.records[3].returned->data[0] = 5.5;
  EXPECT_EQ(first_difference(p, t, total), "returned");
  Trace none = t;
  none.records[3].returned.reset();
  EXPECT_EQ(first_difference(p, t, none), "returned");
  // The total as float64 where every counted grad is float32 (SEM-18.1).
  Trace wide = t;
  wide.records[3].returned->dtype = DType::Float64;
  EXPECT_EQ(first_difference(p, t, wide), "returned.dtype");
  // The handle on w's grad not scaled with it (a new grad tensor instead of in place).
  Trace handle = t;
  handle.records[3].state.handles[0].value = t.records[2].state.handles[0].value;
  EXPECT_EQ(first_difference(p, t, handle), "handle h → value[0]");
  // A clamped value a thousand ULPs off.
  Trace clamp = t;
  clamp.records[4].state.params[1].grad.value.data[0] = next_float(0.5, 1000);
  EXPECT_EQ(first_difference(p, t, clamp), "b → grad[0]");
  // A returned value after clip_grad_value, which returns nothing.
  Trace value_returns = t;
  value_returns.records[4].returned = t.records[3].returned;
  EXPECT_EQ(first_difference(p, t, value_returns), "returned");
}

TEST(ClipComparison, ADifferentRoundingIsAccepted) {
  const Program p = clip_program();
  const Trace t = trace_of(p);
  // One ulp off in the total (another summation order) and in the coefficient's product.
  Trace rounded = t;
  rounded.records[3].returned->data[0] = next_float(5, 1);
  for (ParamObservation& q : rounded.records[3].state.params)
    q.grad.value.data[0] = next_float(q.grad.value.data[0], 1);
  rounded.records[3].state.handles[0].value.data[0] = rounded.records[3].state.params[0].grad.value.data[0];
  EXPECT_EQ(first_difference(p, t, rounded), "");
}

// Float32 and float64 grads together: the float64 total is the norm of a float32 norm and a float64 one (SEM-18.1), so a
// float32 norm rounded the other way (LibTorch against impl, found by 100,000 random programs) moves it by a float32 ULP.
TEST(ClipComparison, MixedDtypesAreJudgedInFloat32Ulps) {
  Program p = program_from_json(nlohmann::ordered_json::parse(R"({
    "params": [{"name": "w", "dtype": "float64", "shape": [], "values": [0.0]},
               {"name": "b", "dtype": "float32", "shape": [3], "values": [0.0, 0.0, 0.0]}],
    "actions": [{"action": "forward", "loss": {"op": "mean", "args": [{"op": "param", "name": "b"}]}}, {"action": "backward"},
                {"action": "forward", "loss": {"op": "param", "name": "w"}}, {"action": "backward"},
                {"action": "clip_grad_norm", "params": ["w", "b"], "max_norm": 1.0}]})"));
  validate(p);
  const Trace t = trace_of(p);
  ASSERT_EQ(t.records[4].returned->dtype, DType::Float64);
  const double total = t.records[4].returned->data[0];
  Trace other = t;  // b's float32 norm one float32 ULP higher
  const double nb = std::nextafter(static_cast<float>(std::sqrt(total * total - 1)), 1.0f);
  const double c = 1 / (std::sqrt(1 + nb * nb) + 1e-6);
  other.records[4].returned->data[0] = std::sqrt(1 + nb * nb);
  other.records[4].state.params[0].grad.value.data[0] = c;
  EXPECT_EQ(first_difference(p, t, other), "");
  Trace wrong = t;  // a thousand float32 ULPs off is not a rounding
  wrong.records[4].returned->data[0] = total * (1 + 1000 * 6e-8);
  EXPECT_EQ(first_difference(p, t, wrong), "returned");
}

// clip_budget: each side's clip in double at its own grads before; a grad listed twice is scaled twice.
TEST(ClipComparison, TheBudgetIsEachSidesClipInDouble) {
  Record eb, ab, ea;
  auto grad = [](const char* name, double v) {
    ParamObservation o;
    o.name = name;
    o.value = {DType::Float64, {1}, {0}};
    o.grad.defined = true;
    o.grad.value = {DType::Float64, {1}, {v}};
    return o;
  };
  eb.state.params = {grad("w", 3), grad("b", 4)};
  ab.state.params = {grad("w", 3.1), grad("b", 4)};
  Action a;
  a.kind = ActionKind::ClipGradNorm;
  a.params = {"w", "b", "w"};
  a.max_norm = 1;
  const double te = std::sqrt(9.0 + 16 + 9), ta = std::sqrt(3.1 * 3.1 + 16 + 3.1 * 3.1);
  const double ce = 1 / (te + 1e-6), ca = 1 / (ta + 1e-6);
  ea.state.params = {grad("w", 3 * ce * ce), grad("b", 4 * ce)};  // the oracle's own change tells how often
  const ErrorBudget b = clip_budget(a, eb, ab, ea);
  // Differences of nearly equal products: within a few ULPs of the products (a compiler may contract to an FMA).
  ASSERT_TRUE(b.find("returned"));
  EXPECT_NEAR(b.find("returned")->at(0), ta - te, 1e-14);
  ASSERT_TRUE(b.find("w → grad"));
  EXPECT_NEAR(b.find("w → grad")->at(0), 3.1 * ca * ca - 3 * ce * ce, 1e-15);
  EXPECT_NEAR(b.find("b → grad")->at(0), 4 * ca - 4 * ce, 1e-15);
  EXPECT_GT(std::fabs(b.find("w → grad")->at(0)), 1e-4);  // the shift is there, far above that slack
  // clip_grad_value: a clamp on both sides.
  a.kind = ActionKind::ClipGradValue;
  a.params = {"w"};
  a.clip_value = 3.05;
  ea.state.params = {grad("w", 3), grad("b", 4)};
  const ErrorBudget v = clip_budget(a, eb, ab, ea);
  EXPECT_DOUBLE_EQ(v.find("w → grad")->at(0), 3.05 - 3);
  EXPECT_DOUBLE_EQ(v.find("b → grad")->at(0), 0);
}

// Free-running: an implementation whose grad deviated (accepted: w's grad is a cancelling sum, 1e8 w - (1e8 - 3) w,
// judged at the scale of its operands) is held to the clip of its own inputs: the deviation, far above the clip's own
// rounding, is carried by the budget; the clip of the oracle's inputs instead is rejected.
TEST(ClipComparison, ADeviationBeforeTheClipIsCarried) {
  Program p = program_from_json(nlohmann::ordered_json::parse(R"({
    "params": [{"name": "w", "dtype": "float64", "shape": [1], "values": [1.5]},
               {"name": "b", "dtype": "float64", "shape": [1], "values": [2.0]}],
    "loss": {"op": "add", "args": [
      {"op": "sum", "args": [{"op": "sub", "args": [
        {"op": "mul_scalar", "args": [{"op": "param", "name": "w"}], "scalar": 1e8},
        {"op": "mul_scalar", "args": [{"op": "param", "name": "w"}], "scalar": 99999997.0}]}]},
      {"op": "sum", "args": [{"op": "square", "args": [{"op": "param", "name": "b"}]}]}]},
    "actions": [{"action": "forward"}, {"action": "backward"}, {"action": "hold_grad", "param": "w", "handle": "h"},
                {"action": "clip_grad_norm", "params": ["w", "b"], "max_norm": 1.0}]})"));
  validate(p);
  const Trace t = trace_of(p);
  ASSERT_EQ(t.records[1].state.params[0].grad.value.data[0], 3);
  Trace drifted = t;
  const double g = 3 + 1e-8;  // within the backward's bound at operand scale 2e8
  drifted.records[1].state.params[0].grad.value.data[0] = g;
  drifted.records[2].state.params[0].grad.value.data[0] = g;
  drifted.records[2].state.handles[0].value.data[0] = g;
  const double total = std::sqrt(g * g + 16), c = 1 / (total + 1e-6);
  drifted.records[3].returned->data[0] = total;
  drifted.records[3].state.params[0].grad.value.data[0] = g * c;
  drifted.records[3].state.params[1].grad.value.data[0] = 4 * c;
  drifted.records[3].state.handles[0].value.data[0] = g * c;
  EXPECT_EQ(first_difference(p, t, drifted), "");
  // The same implementation reporting the clip of the oracle's grads, not of its own.
  Trace stale = drifted;
  stale.records[3].state.params[0].grad.value.data[0] = t.records[3].state.params[0].grad.value.data[0];
  EXPECT_EQ(first_difference(p, t, stale), "w → grad[0]");
}

}  // namespace
}  // namespace lockstep
