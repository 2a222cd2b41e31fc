// Tests of the variant catalogue (variants.h): each variant really computes different numbers from impl's,
// keeps impl's structure (definedness, identities, step counts, errors) exactly, and passes the suite
// against LibTorch, on hand-written programs and on a seeded stream of random ones.
#include "tools/variants/variants.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "conformance/compare/tolerance.h"
#include "conformance/generate/generators.h"
#include "conformance/generate/shrink.h"
#include "conformance/program/file_system.h"
#include "conformance/program/program_json.h"
#include "conformance/program/trace_json.h"
#include "conformance/run/interpreter.h"
#include "tools/mutants/mutants.h"
#include "conformance/run/lockstep_runner.h"
#include "impl/engine_adapter.h"
#include "oracle/torch_engine.h"

namespace lockstep {
namespace {

// ---------------------------------------------------------------------------------------------------------
// Programs.

// Deterministic values in [-2, 2), exactly representable in `dtype`.
std::vector<double> values(DType dtype, int64_t n, uint64_t seed) {
  std::vector<double> v;
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    double u = static_cast<double>(x >> 11) / 9007199254740992.0 * 4 - 2;
    v.push_back(dtype == DType::Float32 ? static_cast<double>(static_cast<float>(u)) : u);
  }
  return v;
}

ParamSpec param_spec(const std::string& name, DType dtype, Shape shape, uint64_t seed) {
  return {name, dtype, shape, values(dtype, numel(shape), seed)};
}

ExprPtr const_tensor(DType dtype, Shape shape, uint64_t seed) {
  TensorValue t;
  t.dtype = dtype;
  t.shape = shape;
  t.data = values(dtype, numel(shape), seed);
  return constant(t);
}

Action act(ActionKind kind) {
  Action a;
  a.kind = kind;
  return a;
}

Action zero_grad(bool set_to_none = false) {
  Action a = act(ActionKind::ZeroGrad);
  a.set_to_none = set_to_none;
  return a;
}

// `steps` rounds of forward, backward, step, zero_grad.
std::vector<Action> training_loop(int steps) {
  std::vector<Action> actions;
  for (int i = 0; i < steps; ++i) {
    for (ActionKind k : {ActionKind::Forward, ActionKind::Backward, ActionKind::Step})
      actions.push_back(act(k));
    actions.push_back(zero_grad());
  }
  return actions;
}

// A small regression: mse_loss(linear(X, W, B), Y).
Program regression(DType dtype) {
  Program p;
  p.params = {param_spec("W", dtype, {3, 4}, 1), param_spec("B", dtype, {3}, 2)};
  p.loss = binary(Op::MseLoss, linear(const_tensor(dtype, {6, 4}, 3), param("W"), param("B")),
                  const_tensor(dtype, {6, 3}, 4));
  return p;
}

// SGD with momentum, dampening and weight decay in one group, nesterov in another (SEM-5.3).
Program sgd_program(DType dtype) {
  Program p = regression(dtype);
  OptimizerSpec o;
  o.kind = OptimizerKind::SGD;
  o.defaults.lr = 0.1;
  o.defaults.momentum = 0.9;
  o.defaults.dampening = 0.1;
  o.defaults.weight_decay = 0.01;
  OptimizerOptions nesterov;
  nesterov.lr = 0.05;
  nesterov.momentum = 0.8;
  nesterov.nesterov = true;
  nesterov.weight_decay = 0.001;
  o.groups = {ParamGroupSpec{{"W"}, std::nullopt}, ParamGroupSpec{{"B"}, nesterov}};
  p.optimizer = o;
  p.actions = training_loop(4);
  return p;
}

// Adam or AdamW with weight decay, optionally amsgrad (SEM-6.3, SEM-6.4).
Program adam_program(OptimizerKind kind, DType dtype, bool amsgrad) {
  Program p = regression(dtype);
  OptimizerSpec o;
  o.kind = kind;
  o.defaults.lr = 0.3;  // updates of the parameters' magnitude: their rounding shows in p - update
  o.defaults.weight_decay = 0.02;
  o.defaults.amsgrad = amsgrad;
  o.defaults.betas = std::make_pair(0.8, 0.99);
  o.groups = {ParamGroupSpec{{"W", "B"}, std::nullopt}};
  p.optimizer = o;
  p.actions = training_loop(4);
  return p;
}

// A parameter twice in one group and in two groups (SEM-7.4); a grad set to None before a step (SEM-4.3);
// a group option changed between steps (SEM-7.5).
Program duplicates_program(OptimizerKind kind, DType dtype) {
  Program p = regression(dtype);
  OptimizerSpec o;
  o.kind = kind;
  o.defaults.lr = 0.3;
  if (kind == OptimizerKind::SGD) o.defaults.momentum = 0.5;
  o.defaults.weight_decay = 0.01;
  OptimizerOptions second;
  second.lr = 0.2;
  if (kind == OptimizerKind::SGD) {
    second.momentum = 0.7;
  } else {
    second.betas = std::make_pair(0.5, 0.9);
    second.eps = 1e-3;
  }
  o.groups = {ParamGroupSpec{{"W", "W"}, std::nullopt}, ParamGroupSpec{{"B", "W"}, second}};
  p.optimizer = o;
  p.actions = training_loop(2);
  p.actions.push_back(act(ActionKind::Forward));
  p.actions.push_back(act(ActionKind::Backward));
  Action none = act(ActionKind::SetGradNone);
  none.param = "B";
  p.actions.push_back(none);
  p.actions.push_back(act(ActionKind::Step));
  Action lr = act(ActionKind::SetOptions);
  lr.group = 1;
  lr.options.lr = 0.5;
  p.actions.push_back(lr);
  p.actions.push_back(act(ActionKind::Forward));
  p.actions.push_back(act(ActionKind::Backward));
  p.actions.push_back(act(ActionKind::Step));
  return p;
}

// amsgrad turned on after the first steps: Adam's state has no max_exp_avg_sq, so every later step fails
// after counting the step, AdamW's decay and the moments (impl/adam.cc, black-box LibTorch 1.13).
Program amsgrad_late_program(OptimizerKind kind, DType dtype) {
  Program p = adam_program(kind, dtype, false);
  p.actions = training_loop(2);
  Action on = act(ActionKind::SetOptions);
  on.options.amsgrad = true;
  p.actions.push_back(on);
  for (const Action& a : training_loop(2)) p.actions.push_back(a);
  return p;
}

// Grad handles, accumulation in place and out of place, retained graphs and a freed one, zero_grad both
// ways (SEM-3, SEM-4): structure the variants must keep.
Program handles_program(DType dtype) {
  Program p = regression(dtype);
  OptimizerSpec o;
  o.kind = OptimizerKind::Adam;
  o.defaults.lr = 0.1;
  o.groups = {ParamGroupSpec{{"W", "B"}, std::nullopt}};
  p.optimizer = o;
  Action retain = act(ActionKind::Backward);
  retain.retain_graph = true;
  Action create = act(ActionKind::Backward);
  create.create_graph = true;
  Action hold = act(ActionKind::HoldGrad);
  hold.param = "W";
  hold.handle = "gW";
  Action hold_b = hold;
  hold_b.param = "B";
  hold_b.handle = "gB";
  p.actions = {act(ActionKind::Forward),
               retain,
               hold,
               hold_b,
               retain,
               act(ActionKind::Backward),
               act(ActionKind::Backward),  // through the freed graph: fails
               act(ActionKind::Step),
               zero_grad(),
               act(ActionKind::Forward),
               create,
               hold,
               create,
               act(ActionKind::Step),
               zero_grad(true),
               act(ActionKind::Forward),
               act(ActionKind::Backward),
               act(ActionKind::Step)};
  return p;
}

// Long reductions and transcendental ops in float32, with tied weights (SEM-2.6): where float64 forward and
// backward round differently from float32 ones.
Program reductions_program() {
  const DType f = DType::Float32;
  Program p;
  p.params = {param_spec("A", f, {16, 32}, 11), param_spec("E", f, {10, 32}, 12),
              param_spec("c", f, {32}, 13)};
  ExprPtr h =
      unary(Op::Tanh, binary(Op::Matmul, param("A"),
                             binary(Op::Matmul, const_tensor(f, {32, 8}, 14), const_tensor(f, {8, 32}, 15))));
  ExprPtr emb = embedding(param("E"), {0, 3, 3, 7, 9, 1, 0, 0, 5, 2, 3, 8, 6, 4, 3, 9});
  ExprPtr logits = add(mul(h, emb), mul(param("A"), param("A")));
  ExprPtr ce = cross_entropy(logits, {0, 5, 7, 31, 2, 2, 9, 30, 1, 0, 4, 4, 17, 18, 3, 21});
  ExprPtr extra = mean(unary(Op::Sigmoid, mul(param("c"), param("c"))));
  p.loss = add(ce, add(extra, sum(unary(Op::Exp, mul_scalar(param("E"), 0.3)))));
  OptimizerSpec o;
  o.kind = OptimizerKind::SGD;
  o.defaults.lr = 0.01;
  o.groups = {ParamGroupSpec{{"A", "E", "c"}, std::nullopt}};
  p.optimizer = o;
  p.actions = training_loop(3);
  return p;
}

struct Named {
  std::string name;
  Program program;
};

std::vector<Named> hand_programs() {
  std::vector<Named> ps;
  for (DType d : {DType::Float32, DType::Float64}) {
    const std::string t = d == DType::Float32 ? "f32" : "f64";
    ps.push_back({"sgd-" + t, sgd_program(d)});
    ps.push_back({"adam-" + t, adam_program(OptimizerKind::Adam, d, false)});
    ps.push_back({"adam-amsgrad-" + t, adam_program(OptimizerKind::Adam, d, true)});
    ps.push_back({"adamw-" + t, adam_program(OptimizerKind::AdamW, d, false)});
    ps.push_back({"adamw-amsgrad-" + t, adam_program(OptimizerKind::AdamW, d, true)});
    ps.push_back({"duplicates-sgd-" + t, duplicates_program(OptimizerKind::SGD, d)});
    ps.push_back({"duplicates-adam-" + t, duplicates_program(OptimizerKind::Adam, d)});
    ps.push_back({"duplicates-adamw-" + t, duplicates_program(OptimizerKind::AdamW, d)});
    ps.push_back({"handles-" + t, handles_program(d)});
    ps.push_back({"amsgrad-late-adam-" + t, amsgrad_late_program(OptimizerKind::Adam, d)});
    ps.push_back({"amsgrad-late-adamw-" + t, amsgrad_late_program(OptimizerKind::AdamW, d)});
  }
  ps.push_back({"reductions-f32", reductions_program()});
  return ps;
}

// The hand-written programs on which a variant must compute at least one number differently from impl.
std::vector<std::string> should_differ_on(const std::string& variant) {
  if (variant == "unfused")
    return {"sgd-f32", "sgd-f64", "adam-f32", "adamw-amsgrad-f64", "amsgrad-late-adam-f32"};
  if (variant == "reciprocal") return {"sgd-f32", "adam-f32", "adam-f64", "adamw-f32"};
  if (variant == "sqrt-ratio") return {"adam-f32", "adam-amsgrad-f64", "adamw-f32"};
  if (variant == "ulp-noise") return {"sgd-f64", "adam-f32", "handles-f32", "reductions-f32"};
  if (variant == "double-accumulate") return {"reductions-f32"};
  return {};
}

const Program& hand_program(const std::string& name) {
  static const std::vector<Named> programs = hand_programs();
  for (const Named& n : programs)
    if (n.name == name) return n.program;
  throw std::runtime_error("no hand program " + name);
}

// ---------------------------------------------------------------------------------------------------------
// Trace comparisons.

// Calls f(x, y, dtype) for every number of `r` and its counterpart in `s` (tensors of the same size only).
template <class F>
void each_number_pair(const EngineState& r, const EngineState& s, F&& f) {
  auto tensor = [&f](const TensorValue& x, const TensorValue& y) {
    if (x.data.size() != y.data.size()) return;
    for (size_t i = 0; i < x.data.size(); ++i) f(x.data[i], y.data[i], x.dtype);
  };
  auto optional = [&](const std::optional<TensorValue>& x, const std::optional<TensorValue>& y) {
    if (x && y) tensor(*x, *y);
  };
  for (size_t i = 0; i < r.params.size() && i < s.params.size(); ++i) {
    const ParamObservation &p = r.params[i], &q = s.params[i];
    tensor(p.value, q.value);
    if (p.grad.defined && q.grad.defined) tensor(p.grad.value, q.grad.value);
    optional(p.state.momentum_buffer, q.state.momentum_buffer);
    optional(p.state.exp_avg, q.state.exp_avg);
    optional(p.state.exp_avg_sq, q.state.exp_avg_sq);
    optional(p.state.max_exp_avg_sq, q.state.max_exp_avg_sq);
  }
  for (size_t i = 0; i < r.handles.size() && i < s.handles.size(); ++i)
    if (r.handles[i].defined && s.handles[i].defined) tensor(r.handles[i].value, s.handles[i].value);
  if (r.output && s.output) tensor(r.output->value, s.output->value);
}

bool same_number(double x, double y) {
  return (std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, sizeof(double)) == 0;
}

// How many numbers differ (bitwise; NaN equals NaN) between two traces of the same program.
size_t numbers_differing(const Trace& a, const Trace& b) {
  size_t n = 0;
  auto count = [&n](double x, double y, DType) { n += !same_number(x, y); };
  each_number_pair(a.init.state, b.init.state, count);
  for (size_t i = 0; i < a.records.size() && i < b.records.size(); ++i)
    each_number_pair(a.records[i].state, b.records[i].state, count);
  return n;
}

// Everything but the numbers (and error messages): one failure line per difference.
std::vector<std::string> structure_differences(const Trace& a, const Trace& b) {
  std::vector<std::string> out;
  auto check = [&out](bool same, const std::string& where) {
    if (!same) out.push_back(where);
  };
  auto layout = [&](const TensorValue& x, const TensorValue& y, const std::string& where) {
    check(x.dtype == y.dtype && x.shape == y.shape && x.data.size() == y.data.size(), where + " layout");
    if (x.data.size() != y.data.size()) return;
    for (size_t i = 0; i < x.data.size(); ++i) {  // NaN and infinities where impl has them, and only there
      const double u = x.data[i], v = y.data[i];
      check(std::isnan(u) == std::isnan(v) &&
                (std::isfinite(u) || std::isnan(u) ? std::isfinite(v) == std::isfinite(u) : u == v),
            where + "[" + std::to_string(i) + "] finiteness");
    }
  };
  auto optional = [&](const std::optional<TensorValue>& x, const std::optional<TensorValue>& y,
                      const std::string& w) {
    check(x.has_value() == y.has_value(), w + " presence");
    if (x && y) layout(*x, *y, w);
  };
  auto record = [&](const Record& r, const Record& s, const std::string& at) {
    check(r.action == s.action, at + " action");
    check(r.error.has_value() == s.error.has_value(), at + " error presence");
    if (r.error && s.error) check(r.error->kind == s.error->kind, at + " error kind");
    check(r.state.params.size() == s.state.params.size(), at + " parameter count");
    for (size_t i = 0; i < r.state.params.size() && i < s.state.params.size(); ++i) {
      const ParamObservation &p = r.state.params[i], &q = s.state.params[i];
      const std::string w = at + " " + p.name;
      check(p.name == q.name, w + " name");
      layout(p.value, q.value, w + " value");
      check(p.grad.defined == q.grad.defined, w + " grad.defined");
      check(p.grad.requires_grad == q.grad.requires_grad, w + " grad.requires_grad");
      check(p.grad.has_grad_fn == q.grad.has_grad_fn, w + " grad.has_grad_fn");
      check(p.grad.same_as_previous == q.grad.same_as_previous, w + " grad.same_as_previous");
      if (p.grad.defined && q.grad.defined) layout(p.grad.value, q.grad.value, w + " grad");
      check(p.state.exists == q.state.exists, w + " state.exists");
      check(p.state.step == q.state.step, w + " state.step");
      optional(p.state.momentum_buffer, q.state.momentum_buffer, w + " momentum_buffer");
      optional(p.state.exp_avg, q.state.exp_avg, w + " exp_avg");
      optional(p.state.exp_avg_sq, q.state.exp_avg_sq, w + " exp_avg_sq");
      optional(p.state.max_exp_avg_sq, q.state.max_exp_avg_sq, w + " max_exp_avg_sq");
    }
    check(r.state.handles.size() == s.state.handles.size(), at + " handle count");
    for (size_t i = 0; i < r.state.handles.size() && i < s.state.handles.size(); ++i) {
      const HandleObservation &h = r.state.handles[i], &k = s.state.handles[i];
      check(h.name == k.name && h.defined == k.defined, at + " handle " + h.name);
      if (h.defined && k.defined) layout(h.value, k.value, at + " handle " + h.name);
    }
    check(r.state.groups.size() == s.state.groups.size(), at + " group count");
    for (size_t i = 0; i < r.state.groups.size() && i < s.state.groups.size(); ++i)
      check(r.state.groups[i].params == s.state.groups[i].params &&
                r.state.groups[i].options == s.state.groups[i].options,
            at + " group " + std::to_string(i));
    check(r.state.output.has_value() == s.state.output.has_value(), at + " output presence");
    if (r.state.output && s.state.output) {
      check(r.state.output->requires_grad == s.state.output->requires_grad &&
                r.state.output->has_grad_fn == s.state.output->has_grad_fn,
            at + " output flags");
      layout(r.state.output->value, s.state.output->value, at + " output");
    }
  };
  record(a.init, b.init, "init");
  check(a.records.size() == b.records.size(), "record count");
  for (size_t i = 0; i < a.records.size() && i < b.records.size(); ++i)
    record(a.records[i], b.records[i], "action " + std::to_string(i));
  return out;
}

std::string joined(const std::vector<std::string>& lines, size_t at_most = 10) {
  std::string s;
  for (size_t i = 0; i < lines.size() && i < at_most; ++i) s += "\n  " + lines[i];
  if (lines.size() > at_most) s += "\n  ... " + std::to_string(lines.size() - at_most) + " more";
  return s;
}

Trace run_on(const Program& p, const std::string& variant) {
  std::unique_ptr<Engine> engine = variant.empty() ? make_impl_engine() : make_variant_engine(variant);
  return run_program(p, *engine);
}

LockstepResult lockstep_against_oracle(const Program& p, const std::string& variant, RunMode mode) {
  auto oracle = make_torch_engine();
  auto engine = make_variant_engine(variant);
  LockstepOptions options;
  options.mode = mode;
  return run_lockstep(p, *oracle, *engine, options);
}

// ---------------------------------------------------------------------------------------------------------
// The catalogue.

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const VariantInfo& v : variant_catalogue()) names.push_back(v.name);
  return names;
}

TEST(VariantCatalogue, NamesAreUniqueAndEnginesNamedAfterThem) {
  std::vector<std::string> names = variant_names();
  ASSERT_GE(names.size(), 4u);
  for (size_t i = 0; i < names.size(); ++i) {
    for (size_t j = i + 1; j < names.size(); ++j) EXPECT_NE(names[i], names[j]);
    EXPECT_FALSE(variant_catalogue()[i].description.empty()) << names[i];
    EXPECT_EQ(make_variant_engine(names[i])->name(), "impl~" + names[i]);
  }
}

TEST(VariantCatalogue, UnknownNameListsTheKnownOnes) {
  try {
    make_variant_engine("fused-everything");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("fused-everything"), std::string::npos) << message;
    for (const std::string& name : variant_names())
      EXPECT_NE(message.find(name), std::string::npos) << message;
  }
}

TEST(VariantPrograms, HandProgramsAreValidAndRunOnImplWithoutSurprises) {
  for (const Named& n : hand_programs()) {
    SCOPED_TRACE(n.name);
    ASSERT_NO_THROW(validate(n.program));
    Trace t = run_on(n.program, "");
    size_t errors = 0;
    for (const Record& r : t.records) errors += r.error.has_value();
    // Failures on purpose: one backward through a freed graph; the two steps after amsgrad was turned on.
    const bool handles = n.name.rfind("handles-", 0) == 0, late = n.name.rfind("amsgrad-late-", 0) == 0;
    EXPECT_EQ(errors, handles ? 1u : late ? 2u : 0u);
  }
}

// The comparison helpers can fail: impl against an impl mutant differs in numbers and in structure.
TEST(VariantPrograms, HelpersSeeDifferences) {
  const Program& p = hand_program("sgd-f32");
  auto mutant = make_mutant_engine("sgd_dampening_first_step");
  Trace a = run_on(p, ""), b = run_program(p, *mutant);
  EXPECT_GT(numbers_differing(a, b), 0u);
  EXPECT_EQ(numbers_differing(a, a), 0u);
  auto zero_grad_new = make_mutant_engine("zero_grad_new_tensor");
  Trace c = run_program(p, *zero_grad_new);
  EXPECT_FALSE(structure_differences(a, c).empty());
  EXPECT_TRUE(structure_differences(a, a).empty());
}

// ---------------------------------------------------------------------------------------------------------
// Each variant.

class VariantTest : public testing::TestWithParam<std::string> {};

// (a) A real variant: different numbers from impl's where its arithmetic differs.
TEST_P(VariantTest, ComputesOtherNumbersThanImpl) {
  const std::vector<std::string> programs = should_differ_on(GetParam());
  ASSERT_FALSE(programs.empty());
  for (const std::string& name : programs) {
    const Program& p = hand_program(name);
    const size_t n = numbers_differing(run_on(p, ""), run_on(p, GetParam()));
    EXPECT_GT(n, 0u) << GetParam() << " computes every number of " << name << " as impl does";
  }
}

// (b) Accepted by the suite: lockstep and free-running against LibTorch.
TEST_P(VariantTest, PassesLockstepAgainstTheOracle) {
  for (const Named& n : hand_programs()) {
    LockstepResult r = lockstep_against_oracle(n.program, GetParam(), RunMode::Lockstep);
    EXPECT_TRUE(r.passed) << n.name << " on " << r.under_test_engine << ": " << r.failure_summary();
  }
}

TEST_P(VariantTest, PassesFreeRunningAgainstTheOracle) {
  for (const Named& n : hand_programs()) {
    LockstepResult r = lockstep_against_oracle(n.program, GetParam(), RunMode::FreeRunning);
    EXPECT_TRUE(r.passed) << n.name << " on " << r.under_test_engine << ": " << r.failure_summary();
  }
}

// (c) Structure as impl's: definedness, identities, step counts, errors, groups, NaN/inf positions.
TEST_P(VariantTest, KeepsImplsStructure) {
  for (const Named& n : hand_programs()) {
    std::vector<std::string> d = structure_differences(run_on(n.program, ""), run_on(n.program, GetParam()));
    EXPECT_TRUE(d.empty()) << n.name << ":" << joined(d);
  }
}

// Random programs (conformance/generate): structure as impl's, and lockstep against LibTorch passes.
// LOCKSTEP_VARIANT_PROGRAMS sets how many (default 60).
TEST_P(VariantTest, RandomProgramsKeepStructureAndPassLockstep) {
  const char* env = std::getenv("LOCKSTEP_VARIANT_PROGRAMS");
  const uint64_t count = env ? std::stoull(env) : 60;
  for (bool special : {false, true}) {
    GenOptions options;
    options.special_values = special;
    RandomPrograms programs(special ? 7 : 20261121, options);
    for (uint64_t i = 0; i < count; ++i) {
      const Program p = programs.at(i).value();
      const std::string where =
          std::string(special ? "special-values " : "") + "program " + std::to_string(i);
      std::vector<std::string> d = structure_differences(run_on(p, ""), run_on(p, GetParam()));
      EXPECT_TRUE(d.empty()) << where << ":" << joined(d, 3);
      LockstepResult r = lockstep_against_oracle(p, GetParam(), RunMode::Lockstep);
      EXPECT_TRUE(r.passed) << where << " on " << r.under_test_engine << ": " << r.failure_summary();
    }
  }
}

// ulp-noise moves only what an action computed: zero_grad's zeros stay exact, an action that computes no
// number (hold_grad, set_options) changes none, and every number it moves is one ULP from impl's.
TEST(UlpNoise, MovesComputedNumbersOnlyAndByOneUlp) {
  Program p = hand_program("handles-f32");
  Action lr = act(ActionKind::SetOptions);
  lr.options.lr = 0.5;
  p.actions.insert(p.actions.begin() + 8, lr);
  auto noisy = make_variant_engine("ulp-noise");
  auto reference = make_impl_engine();
  ProgramRunner a(p, *reference), b(p, *noisy);
  Record ra = a.setup(), rb = b.setup();
  size_t moved = 0;
  for (size_t i = 0; i < p.actions.size(); ++i) {
    reference->synchronise(rb.state);  // the same inputs, as in lockstep mode
    ra = a.run_action(i);
    rb = b.run_action(i);
    SCOPED_TRACE("action " + std::to_string(i) + " (" + rb.action + ")");
    each_number_pair(ra.state, rb.state, [&](double x, double y, DType dtype) {
      if (same_number(x, y)) return;
      ++moved;
      EXPECT_EQ(std::fabs(x - y), ulp(std::min(std::fabs(x), std::fabs(y)), dtype)) << x << " vs " << y;
    });
    const ActionKind kind = p.actions[i].kind;
    if (kind == ActionKind::HoldGrad || kind == ActionKind::SetOptions) {
      EXPECT_EQ(numbers_differing(Trace{"", ra, {}}, Trace{"", rb, {}}), 0u);
    }
    if (kind == ActionKind::ZeroGrad) {
      for (const ParamObservation& q : rb.state.params) {
        if (!q.grad.defined) continue;
        for (double g : q.grad.value.data) EXPECT_EQ(g, 0.0);
      }
    }
  }
  EXPECT_GT(moved, 20u);
}

INSTANTIATE_TEST_SUITE_P(Catalogue, VariantTest, testing::ValuesIn(variant_names()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// How far each variant's numbers are from impl's, action by action (the variant re-synchronised to impl's
// state after each action, as lockstep mode does): a table on stdout, nothing asserted. Run with
//   variants_tests --gtest_also_run_disabled_tests --gtest_filter='*DistanceFromImpl*'
TEST(VariantStatistics, DISABLED_DistanceFromImpl) {
  const char* env = std::getenv("LOCKSTEP_VARIANT_PROGRAMS");
  const uint64_t count = env ? std::stoull(env) : 200;
  std::vector<Named> programs = hand_programs();
  RandomPrograms random(20261121, GenOptions{});
  for (uint64_t i = 0; i < count; ++i)
    programs.push_back({"random " + std::to_string(i), random.at(i).value()});
  // ULPs of the larger of the two numbers themselves (not of the tolerance model's operand scale, so a
  // cancelled or subnormal result shows large counts).
  std::printf("%-18s %9s %9s %7s %8s %8s %11s  %s\n", "variant", "numbers", "differing", "share", ">1 ulp",
              ">4 ulps", "max ulps", "programs differing");
  for (const std::string& variant : variant_names()) {
    size_t compared = 0, differing = 0, beyond_one = 0, beyond_four = 0, programs_differing = 0;
    double max_ulps = 0;
    for (const Named& n : programs) {
      auto reference = make_impl_engine();
      auto engine = make_variant_engine(variant);
      ProgramRunner a(n.program, *reference), b(n.program, *engine);
      const size_t before = differing;
      auto count_pair = [&](double x, double y, DType dtype) {
        ++compared;
        if (same_number(x, y)) return;
        ++differing;
        if (!std::isfinite(x) || !std::isfinite(y)) return;
        const double ulps = std::fabs(x - y) / ulp(std::max(std::fabs(x), std::fabs(y)), dtype);
        max_ulps = std::max(max_ulps, ulps);
        beyond_one += ulps > 1;
        beyond_four += ulps > 4;
      };
      Record ra = a.setup(), rb = b.setup();
      each_number_pair(ra.state, rb.state, count_pair);
      for (size_t i = 0; i < n.program.actions.size(); ++i) {
        engine->synchronise(ra.state);
        ra = a.run_action(i);
        rb = b.run_action(i);
        each_number_pair(ra.state, rb.state, count_pair);
      }
      programs_differing += differing > before;
    }
    std::printf("%-18s %9zu %9zu %6.2f%% %8zu %8zu %11.4g  %zu of %zu\n", variant.c_str(), compared,
                differing, 100.0 * differing / std::max<size_t>(compared, 1), beyond_one, beyond_four,
                max_ulps, programs_differing, programs.size());
  }
}

// A bigger seeded sweep against LibTorch, every variant: failures counted, the first few shrunk
// (conformance/generate/shrink.h) and printed as program JSON. Nothing asserted: run it to look for false
// positives of the tolerance model beyond the programs the tests above pin down.
//   LOCKSTEP_VARIANT_PROGRAMS=4000 LOCKSTEP_VARIANT_SEED=1 LOCKSTEP_VARIANT_MAX_SIZE=60 (default 50)
//   LOCKSTEP_VARIANT_SPECIAL=1 (NaN and infinities) LOCKSTEP_VARIANT_MODE=free-running (default lockstep)
//   variants_tests --gtest_also_run_disabled_tests --gtest_filter='*Sweep*'
TEST(VariantStatistics, DISABLED_Sweep) {
  auto env = [](const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return std::string(v ? v : fallback);
  };
  const uint64_t count = std::stoull(env("LOCKSTEP_VARIANT_PROGRAMS", "1000"));
  GenOptions options;
  options.max_size = std::stoi(env("LOCKSTEP_VARIANT_MAX_SIZE", "50"));
  options.special_values = env("LOCKSTEP_VARIANT_SPECIAL", "") == "1";
  const std::optional<RunMode> mode = run_mode_from_name(env("LOCKSTEP_VARIANT_MODE", "lockstep"));
  ASSERT_TRUE(mode.has_value());
  RandomPrograms random(std::stoull(env("LOCKSTEP_VARIANT_SEED", "20261121")), options);
  for (const std::string& variant : variant_names()) {
    size_t failed = 0;
    for (uint64_t i = 0; i < count; ++i) {
      const rc::Shrinkable<Program> program = random.at(i);
      auto fails = [&](const Program& p) { return !lockstep_against_oracle(p, variant, *mode).passed; };
      if (!fails(program.value())) continue;
      if (++failed > 4) continue;
      const Program small = shrink_failure(program, fails, nullptr, std::chrono::seconds(5));
      std::printf("%s, program %llu: %s\n  shrunk: %s\n  %s\n", variant.c_str(),
                  static_cast<unsigned long long>(i),
                  lockstep_against_oracle(program.value(), variant, *mode).failure_summary().c_str(),
                  lockstep_against_oracle(small, variant, *mode).failure_summary().c_str(),
                  program_to_json(small).dump().c_str());
    }
    std::printf("%s: %zu of %llu programs fail\n", variant.c_str(), failed,
                static_cast<unsigned long long>(count));
  }
}

// ---------------------------------------------------------------------------------------------------------
// Findings: legitimate roundings that the suite rejects today (false positives of the tolerance model),
// found by the sweep above and shrunk. Each test expects the variant to pass, so it fails until the
// tolerance model covers the case; they are DISABLED_ so that the suite stays green meanwhile:
//   variants_tests --gtest_also_run_disabled_tests --gtest_filter='VariantFindings.*'

void expect_accepted(const std::string& variant, const std::string& program_json) {
  const Program p = program_from_text(program_json, "finding");
  EXPECT_GT(numbers_differing(run_on(p, ""), run_on(p, variant)), 0u) << "not a rounding difference any more";
  LockstepResult r = lockstep_against_oracle(p, variant, RunMode::Lockstep);
  EXPECT_TRUE(r.passed) << r.under_test_engine << ": " << r.failure_summary();
}

// Adam's p - ((lr / bc1) * exp_avg) / denom: with exp_avg near the bottom of the normal range,
// (lr / bc1) * exp_avg is subnormal (few significant bits) and denom = eps scales its rounding error up by
// 1e8. Computing exp_avg / denom first (reciprocal, sqrt-ratio) is exact to a few ULPs and the oracle is
// not: here about 500 ULPs of the result apart (float64). In float32 (random program 449 of seed
// 20261121) the oracle's update underflows to 0 and leaves p = -3.38e-38; the exact update gives -1.28e-38.
TEST(VariantFindings, AdamUpdateWithSubnormalIntermediate) {
  const char* program = R"({"params":[{"name":"p0","dtype":"float64","shape":[1,3],
    "values":[0.0,0.0,1.1125369292536007e-308]}],
    "optimizer":{"type":"adam","defaults":{"weight_decay":1.0},"params":["p0"]},
    "actions":[{"action":"forward","loss":{"op":"param","name":"p0"}},
               {"action":"backward","gradient":[0.0,0.0,0.0]},{"action":"step"}]})";
  expect_accepted("reciprocal", program);
  expect_accepted("sqrt-ratio", program);
}

// A parameter in two groups is updated twice in one step (SEM-7.4): the second update starts from the
// first one's rounding (here p ~ 1 after the first update, 0.43 after the second), but the step's scale is
// taken from the values before (0) and after (0.43) only, and one update's k ULPs. 6 ULPs apart (float32).
TEST(VariantFindings, ParameterTwiceInOneStep) {
  const char* program = R"({"params":[{"name":"p0","dtype":"float32","shape":[4,4],
    "values":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}],
    "loss":{"op":"cross_entropy","args":[{"op":"param","name":"p0"}],"targets":[0,0,0,0]},
    "optimizer":{"type":"adam","defaults":{"lr":1.0,"weight_decay":1.0},
                 "groups":[{"params":["p0"]},{"params":["p0"]}]},
    "actions":[{"action":"forward"},{"action":"backward"},{"action":"step"}]})";
  expect_accepted("reciprocal", program);
  expect_accepted("sqrt-ratio", program);
}

// cross_entropy of logits [0, 0, -inf, 22.93], target 3: log(1 + 2 e^-22.93) - 0 = 2.2e-10, which float32
// absorbs (22.93 + 2.2e-10 - 22.93 = 0) and float64 does not. The -inf logit (its exp is exactly 0) makes
// the output's operand scale non-finite, so it falls back to the result's own ULP (tolerance.h) instead of
// the logits' (22.93); the same logits without the -inf pass (control test below).
TEST(VariantFindings, CrossEntropyWithInfiniteLogit) {
  expect_accepted("double-accumulate", R"({"params":[],"actions":[{"action":"forward","loss":{
    "op":"cross_entropy","targets":[3],"args":[{"op":"linear","args":[
      {"op":"const","dtype":"float32","shape":[1,2],"values":[-2.0,-7.3535156]},
      {"op":"const","dtype":"float32","shape":[4,2],"values":[0,0,0,0,"Infinity",0,0,-3.118164]}]}]}}]})");
}

TEST(VariantFindings, CrossEntropyWithFiniteLogitsIsJudgedAtTheLogitsScale) {
  expect_accepted("double-accumulate", R"({"params":[],"actions":[{"action":"forward","loss":{
    "op":"cross_entropy","targets":[3],"args":[{"op":"linear","args":[
      {"op":"const","dtype":"float32","shape":[1,2],"values":[-2.0,-7.3535156]},
      {"op":"const","dtype":"float32","shape":[4,2],"values":[0,0,0,0,0,0,0,-3.118164]}]}]}}]})");
}

// ---------------------------------------------------------------------------------------------------------
// The impl driver's --variant option (fixtures/PROTOCOL.md).

#ifdef LOCKSTEP_IMPL_DRIVER
std::string run_driver(const std::string& arguments, const std::string& input, int* status) {
  const std::string in_path = files::process_temp_dir() + "/variants_driver_in.jsonl";
  std::ofstream(in_path) << input;
  const std::string command = std::string(LOCKSTEP_IMPL_DRIVER) + " " + arguments + " < " + in_path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed");
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  int raw = pclose(pipe);
  *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return out;
}

TEST(ImplDriverVariant, AnswersWithTheVariantsTrace) {
  const Program& p = hand_program("adam-f32");
  nlohmann::ordered_json request;
  request["id"] = "v1";
  request["program"] = program_to_json(p);
  int status = -1;
  std::string out = run_driver("--variant reciprocal", request.dump() + "\n", &status);
  ASSERT_EQ(status, 0) << out;
  nlohmann::ordered_json answer = nlohmann::ordered_json::parse(out);
  ASSERT_TRUE(answer.contains("trace")) << out;
  Trace driven = trace_from_json(answer["trace"]);
  Trace direct = run_on(p, "reciprocal");
  EXPECT_EQ(numbers_differing(driven, direct), 0u);
  EXPECT_TRUE(structure_differences(driven, direct).empty());
  EXPECT_GT(numbers_differing(driven, run_on(p, "")), 0u);  // not impl's trace
}

TEST(ImplDriverVariant, UnknownVariantIsAUsageError) {
  int status = -1;
  std::string out = run_driver("--variant nope", "", &status);
  EXPECT_EQ(status, 2);
  EXPECT_NE(out.find("nope"), std::string::npos) << out;
  EXPECT_NE(out.find("ulp-noise"), std::string::npos) << out;
}
#endif

}  // namespace
}  // namespace lockstep
