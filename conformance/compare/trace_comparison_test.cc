// Tests of the record-by-record comparison every path shares (trace_comparison.h) and of the error budget
// (error_budget.h): first appearances are judged where they are produced, a carried deviation is accepted only
// as far as the specification's own mathematics carries it, and with equal inputs the budget is zero.
#include "conformance/compare/trace_comparison.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "conformance/compare/error_budget.h"
#include "conformance/run/interpreter.h"
#include "impl/engine_adapter.h"

namespace lockstep {
namespace {

Action act(ActionKind k) {
  Action a;
  a.kind = k;
  return a;
}

// w (float64, [2]) through sum(w * w), SGD with momentum: forward, backward, step, forward, backward, step.
Program sgd_program() {
  Program p;
  p.params.push_back({"w", DType::Float64, {2}, {0.5, -1.5}});
  p.loss = sum(mul(param("w"), param("w")));
  OptimizerSpec o;
  o.kind = OptimizerKind::SGD;
  o.defaults.lr = 0.5;
  o.defaults.momentum = 0.9;
  o.groups = {{{"w"}, std::nullopt}};
  p.optimizer = o;
  p.actions = {act(ActionKind::Forward), act(ActionKind::Backward), act(ActionKind::Step),
               act(ActionKind::Forward), act(ActionKind::Backward), act(ActionKind::Step)};
  validate(p);
  return p;
}

Trace trace_of(const Program& p) {
  auto engine = make_impl_engine();
  return run_program(p, *engine);
}

// The first record with a difference, or -1 (setup: -2).
struct FirstDifference {
  int record = -1;
  std::string path;                // the first difference's
  std::vector<std::string> paths;  // every difference of that record
  bool has(const std::string& p) const { return std::find(paths.begin(), paths.end(), p) != paths.end(); }
};
FirstDifference first_difference(const Program& p, const Trace& expected, const Trace& actual) {
  TraceComparison cmp(p, Tolerance{});
  std::vector<Difference> d = cmp.compare_init(expected.init, actual.init);
  auto found = [&](int record) {
    FirstDifference f{record, d.front().path, {}};
    for (const Difference& x : d) f.paths.push_back(x.path);
    return f;
  };
  if (!d.empty()) return found(-2);
  for (size_t i = 0; i < p.actions.size(); ++i) {
    d = cmp.compare_action(i, expected.records[i], actual.records[i]);
    if (!d.empty()) return found(static_cast<int>(i));
  }
  return {};
}

TEST(TraceComparison, IdenticalTracesAgree) {
  Program p = sgd_program();
  Trace t = trace_of(p);
  EXPECT_EQ(first_difference(p, t, t).record, -1);
}

// The replay path once hid these: a value going from absent to present moved only a structural path.
TEST(TraceComparison, AFirstGradIsJudgedWhereItAppears) {
  Program p = sgd_program();
  Trace expected = trace_of(p);
  Trace actual = expected;
  actual.records[1].state.params[0].grad.value.data[0] *= -3;  // the first grad, at the first backward
  FirstDifference f = first_difference(p, expected, actual);
  EXPECT_EQ(f.record, 1);
  EXPECT_EQ(f.path, "w → grad[0]");
}

TEST(TraceComparison, AFirstMomentumBufferAndAFirstOutputAreJudgedWhereTheyAppear) {
  Program p = sgd_program();
  Trace expected = trace_of(p);
  Trace buffer = expected;
  buffer.records[2].state.params[0].state.momentum_buffer->data[1] += 1;
  FirstDifference f = first_difference(p, expected, buffer);
  EXPECT_EQ(f.record, 2);
  EXPECT_TRUE(f.has("w → momentum_buffer[1]")) << f.path;
  // The parameter did not move as its (wrong) buffer says it must (SEM-5.3): reported too, at the same step.
  EXPECT_TRUE(f.has("w → value[1]")) << f.path;
  Trace output = expected;
  output.records[0].state.output->value.data[0] *= -3;
  EXPECT_EQ(first_difference(p, expected, output).record, 0);
  EXPECT_EQ(first_difference(p, expected, output).path, "output → value");
}

TEST(TraceComparison, AValueNeitherSideChangedIsNotJudgedAgain) {
  Program p = sgd_program();
  Trace expected = trace_of(p);
  Trace actual = expected;
  // The grad differs by 1 ULP-ish at its backward (accepted there) and stays so through the step.
  const double g = expected.records[1].state.params[0].grad.value.data[0];
  actual.records[1].state.params[0].grad.value.data[0] = std::nextafter(g, 10.0);
  actual.records[2].state.params[0].grad.value.data[0] = std::nextafter(g, 10.0);
  FirstDifference f = first_difference(p, expected, actual);
  EXPECT_EQ(f.record, -1) << f.path;
}

// --- the error budget ----------------------------------------------------------------------------------------

TEST(ErrorBudget, ZeroWhenBothSidesHaveTheSameInputs) {
  Program p = sgd_program();
  Trace t = trace_of(p);
  ErrorBudget b = step_budget(OptimizerKind::SGD, t.records[1], t.records[1], t.records[2], t.records[2]);
  ASSERT_NE(b.find("w → value"), nullptr);
  for (double x : *b.find("w → value")) EXPECT_EQ(x, 0);
  for (double x : *b.find("w → momentum_buffer")) EXPECT_EQ(x, 0);
  ErrorBudget f = forward_budget(*p.loss, t.records[2].state, t.records[2].state);
  for (double x : *f.find("output → value")) EXPECT_EQ(x, 0);
}

TEST(ErrorBudget, StepCarriesTheGradientsDeviationByTheSpecification) {
  Program p = sgd_program();
  Trace t = trace_of(p);
  Record actual_before = t.records[1];
  const double delta = 1e-6;
  actual_before.state.params[0].grad.value.data[0] += delta;
  ErrorBudget b = step_budget(OptimizerKind::SGD, t.records[1], actual_before, t.records[2], t.records[2]);
  // SEM-5.3, first step: buf = g (a copy), p -= lr * buf. The parameter reads each side's own new buffer,
  // which is the same here, so its budget is 0; the buffer carries delta.
  EXPECT_NEAR((*b.find("w → momentum_buffer"))[0], delta, 1e-15);
  EXPECT_EQ((*b.find("w → momentum_buffer"))[1], 0);
  Record actual_after = t.records[2];
  actual_after.state.params[0].state.momentum_buffer->data[0] += delta;
  ErrorBudget b2 = step_budget(OptimizerKind::SGD, t.records[1], actual_before, t.records[2], actual_after);
  EXPECT_NEAR((*b2.find("w → value"))[0], -0.5 * delta, 1e-15);  // signed: actual minus expected
}

TEST(ErrorBudget, ForwardAndBackwardCarryTheParametersDeviation) {
  Program p = sgd_program();
  Trace t = trace_of(p);
  EngineState deviated = t.init.state;
  const double delta = 1e-6;
  deviated.params[0].value.data[1] += delta;  // w[1] = -1.5 + delta
  // output = sum(w * w): d output = 2 * w[1] * delta (to first order); grad = 2w: d grad[1] = 2 * delta.
  ErrorBudget f = forward_budget(*p.loss, t.init.state, deviated);
  EXPECT_NEAR((*f.find("output → value"))[0], -3 * delta, 1e-11);  // 2 * (-1.5) * delta
  ErrorBudget b = backward_budget(*p.loss, t.init.state, deviated, nullptr, t.records[0], t.records[0], {});
  EXPECT_NEAR((*b.find("w → grad"))[1], 2 * delta, 1e-15);
  EXPECT_EQ((*b.find("w → grad"))[0], 0);
}

}  // namespace
}  // namespace lockstep
