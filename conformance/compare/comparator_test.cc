// Tests of the comparator (SEMANTICS §8, §9): every structural field exactly, numbers within ULP bounds.
#include "conformance/compare/comparator.h"

#include "conformance/program/optimizer_descriptions.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TensorValue f64(Shape shape, std::vector<double> data) { return TensorValue{DType::Float64, std::move(shape), std::move(data)}; }
TensorValue f32(Shape shape, std::vector<double> data) { return TensorValue{DType::Float32, std::move(shape), std::move(data)}; }

ParamObservation param_obs(const std::string& name, TensorValue value) {
  ParamObservation p;
  p.name = name;
  p.value = std::move(value);
  return p;
}

Record record(const std::string& action, std::vector<ParamObservation> params) {
  Record r;
  r.action = action;
  r.state.params = std::move(params);
  return r;
}

// A rich record: a param with a grad, Adam state, a handle, a group and an output.
Record rich_record() {
  ParamObservation w = param_obs("w", f32({2, 2}, {1, 2, 3, 4}));
  w.grad.defined = true;
  w.grad.value = f32({2, 2}, {0.5, 0.25, 0.125, 1});
  w.grad.same_as_previous = true;
  w.state.exists = true;
  w.state.step = 3;
  w.state.exp_avg = f32({2, 2}, {0.1f, 0.2f, 0.3f, 0.4f});
  w.state.exp_avg_sq = f32({2, 2}, {0.01f, 0.02f, 0.03f, 0.04f});
  Record r = record("step", {w});
  r.state.handles.push_back(HandleObservation{"g0", true, f32({2, 2}, {0.5, 0.25, 0.125, 1})});
  GroupObservation g;
  g.params = {"w"};
  g.options.lr = 0.001;
  g.options.betas = std::make_pair(0.9, 0.999);
  g.options.eps = 1e-8;
  g.options.weight_decay = 0;
  g.options.amsgrad = false;
  r.state.groups.push_back(g);
  r.state.output = OutputObservation{f32({}, {2.5}), true, true};
  return r;
}

std::vector<Difference> compare(const Record& e, const Record& a, const Record* prev = nullptr) {
  return compare_records(e, a, prev, CompareContext{});
}

// Exactly one structural difference at `path`.
void expect_structure(const Record& e, const Record& a, const std::string& path) {
  std::vector<Difference> d = compare(e, a);
  ASSERT_FALSE(d.empty()) << path;
  EXPECT_EQ(d.front().path, path);
  EXPECT_EQ(d.front().kind, DifferenceKind::Structure) << path;
  EXPECT_TRUE(has_structural_difference(d));
}

TEST(Sem8Comparator, IdenticalRecordsAgree) {
  Record r = rich_record();
  EXPECT_TRUE(compare(r, r).empty());
  EXPECT_TRUE(compare(r, r, &r).empty());
}

TEST(Sem8Comparator, EveryStructuralFieldIsComparedExactly) {
  const Record e = rich_record();
  auto changed = [&](auto&& mutate, const std::string& path) {
    Record a = e;
    mutate(a);
    expect_structure(e, a, path);
  };
  changed([](Record& a) { a.action = "backward"; }, "action");
  changed([](Record& a) { a.error = ErrorObservation{error_kind::kInvalidOption, "x"}; }, "error.kind");
  changed([](Record& a) { a.state.params[0].grad.defined = false; }, "w → grad.defined");
  changed([](Record& a) { a.state.params[0].grad.requires_grad = true; }, "w → grad.requires_grad");
  changed([](Record& a) { a.state.params[0].grad.has_grad_fn = true; }, "w → grad.has_grad_fn");
  changed([](Record& a) { a.state.params[0].grad.same_as_previous = false; }, "w → grad.same_as_previous");
  changed([](Record& a) { a.state.params[0].grad.value.shape = {4}; }, "w → grad.shape");
  changed([](Record& a) { a.state.params[0].value.dtype = DType::Float64; }, "w → value.dtype");
  changed([](Record& a) { a.state.params[0].state.exists = false; }, "w → state.exists");
  changed([](Record& a) { a.state.params[0].state.step = 4; }, "w → state.step");
  changed([](Record& a) { a.state.params[0].state.step.reset(); }, "w → state.step");
  changed([](Record& a) { a.state.params[0].state.max_exp_avg_sq = f32({2, 2}, {0, 0, 0, 0}); },
          "w → max_exp_avg_sq");
  changed([](Record& a) { a.state.params[0].state.exp_avg.reset(); }, "w → exp_avg");
  changed([](Record& a) { a.state.params[0].state.momentum_buffer = f32({2, 2}, {0, 0, 0, 0}); },
          "w → momentum_buffer");
  changed([](Record& a) { a.state.params[0].name = "v"; }, "w");
  changed([](Record& a) { a.state.handles[0].defined = false; }, "handle g0 → defined");
  changed([](Record& a) { a.state.handles[0].name = "g1"; }, "handle g0");
  changed([](Record& a) { a.state.groups[0].params = {"w", "w"}; }, "group 0 → params");
  changed([](Record& a) { a.state.groups[0].options.lr = 0.01; }, "group 0 → lr");
  changed([](Record& a) { a.state.groups[0].options.betas = std::make_pair(0.9, 0.99); }, "group 0 → betas[1]");
  changed([](Record& a) { a.state.groups[0].options.amsgrad = true; }, "group 0 → amsgrad");
  changed([](Record& a) { a.state.groups[0].options.momentum = 0.0; }, "group 0 → momentum");
  // RMSprop's and Adagrad's options too (a group's initial_accumulator_value changes no number, SEM-15.2).
  changed([](Record& a) { a.state.groups[0].options.alpha = 0.9; }, "group 0 → alpha");
  changed([](Record& a) { a.state.groups[0].options.centered = false; }, "group 0 → centered");
  changed([](Record& a) { a.state.groups[0].options.lr_decay = 0.5; }, "group 0 → lr_decay");
  changed([](Record& a) { a.state.groups[0].options.initial_accumulator_value = 0.25; },
          "group 0 → initial_accumulator_value");
  changed([](Record& a) { a.state.groups.clear(); }, "groups.count");
  changed([](Record& a) { a.state.output.reset(); }, "output");
  changed([](Record& a) { a.state.output->requires_grad = false; }, "output → requires_grad");
  changed([](Record& a) { a.state.output->has_grad_fn = false; }, "output → has_grad_fn");
  changed([](Record& a) { a.state.output->value.shape = {1}; }, "output → value.shape");
}

// Every option of every optimizer's description is compared (optimizer_descriptions.h), whatever the kind.
TEST(Sem8Comparator, EveryDescribedOptionIsCompared) {
  for (const std::string& name : all_option_names()) {
    Record e = rich_record();
    e.state.groups[0].options = OptimizerOptions{};
    const OptionDescription& d = any_option(name);
    set_default(d, e.state.groups[0].options);
    Record a = e;
    OptimizerOptions& changed = a.state.groups[0].options;
    switch (d.type) {
      case OptionType::Number: changed.*d.number = *(changed.*d.number) + 1; break;
      case OptionType::Flag: changed.*d.flag = !(changed.*d.flag).value_or(d.default_flag); break;  // maximize: unset
      case OptionType::Pair: changed.*d.pair = std::make_pair(0.5, 0.25); break;
      case OptionType::Text: changed.*d.text = "strong_wolfe"; break;  // its default is no value
    }
    const std::vector<Difference> diff = compare(e, a);
    ASSERT_FALSE(diff.empty()) << name;
    EXPECT_EQ(diff.front().path.rfind("group 0 → " + name, 0), 0u) << name << ": " << diff.front().path;
  }
}

// An optional field (optional_fields.h): compared where both sides report it, counted untested where one does not,
// never a difference for being absent.
TEST(Sem8Comparator, OptionalParamIdentityComparedWhereReportedElseUntested) {
  Record e = rich_record();
  e.state.params[0].same_as_previous = true;
  Record a = e;
  a.state.params[0].same_as_previous = false;
  expect_structure(e, a, "w → same_as_previous");

  OptionalFieldCounts counts;
  CompareContext ctx;
  ctx.optional_fields = &counts;
  EXPECT_TRUE(compare_records(e, e, nullptr, ctx).empty());
  a.state.params[0].same_as_previous.reset();  // not reported by the implementation
  EXPECT_TRUE(compare_records(e, a, nullptr, ctx).empty());
  Record old = e;  // an expected trace recorded before the field
  old.state.params[0].same_as_previous.reset();
  EXPECT_TRUE(compare_records(old, e, nullptr, ctx).empty());
  const OptionalFieldCount& n = counts["param.same_as_previous"];
  EXPECT_EQ(n.compared, 1);
  EXPECT_EQ(n.not_reported, 1);
  EXPECT_EQ(n.not_expected, 1);
}

TEST(Sem8Comparator, ErrorMessagesAreNotCompared) {
  Record e = rich_record();
  e.error = ErrorObservation{error_kind::kNoGradFn, "element 0 of tensors does not require grad"};
  Record a = e;
  a.error->message = "a different wording";
  EXPECT_TRUE(compare(e, a).empty());
}

// A different error kind shows the implementation's own message (not compared): why its action failed.
TEST(Sem8Comparator, AnErrorKindDifferenceShowsTheImplementationsMessage) {
  Record e = rich_record();
  Record a = e;
  a.error = ErrorObservation{error_kind::kOther, "math range error in fsum"};
  std::vector<Difference> d = compare(e, a);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].actual_text, "other");  // expectations match the kind alone
  EXPECT_EQ(difference_text(d[0]),
            "error.kind: expected none, actual other (exact; the implementation's message: math range error in fsum)");
  a.error->message.clear();
  EXPECT_EQ(difference_text(compare(e, a)[0]), "error.kind: expected none, actual other (exact)");
}

TEST(Sem9Comparator, ExactlyAtTheBoundPassesOneUlpBeyondFails) {
  const double u = std::ldexp(1.0, -52);  // ulp(1) in float64
  Record e = record("forward", {param_obs("w", f64({2, 2}, {1, 1, 1, 1}))});
  Record a = e;
  a.state.params[0].value.data[2] = 1 + 4 * u;  // k = 4
  EXPECT_TRUE(compare(e, a).empty());
  a.state.params[0].value.data[2] = 1 + 5 * u;
  std::vector<Difference> d = compare(e, a);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "w → value[1,0]");
  EXPECT_EQ(d[0].kind, DifferenceKind::Numeric);
  EXPECT_EQ(d[0].quantity, Quantity::Param);
  EXPECT_EQ(d[0].ulp_error, 5);
  EXPECT_EQ(d[0].absolute_error, 5 * u);
  EXPECT_EQ(d[0].relative_error, 5 * u);
  EXPECT_EQ(d[0].scale, 1);
  EXPECT_EQ(d[0].bound, "4 ulp of 1 (float64)");
  EXPECT_EQ(d[0].expected_text, "1");
  EXPECT_EQ(std::stod(d[0].actual_text), 1 + 5 * u);  // shortest round-trip text
  // Below the value: ulp of 1 is the gap above it, so 4 ulps below is also 4 * 2^-52.
  a.state.params[0].value.data[2] = 1 - 4 * u;
  EXPECT_TRUE(compare(e, a).empty());
}

TEST(Sem9Comparator, Float32UlpsAreFloat32s) {
  const double one_float_ulp = std::ldexp(1.0, -23);
  Record e32 = record("step", {param_obs("w", f32({1}, {1}))});
  Record a32 = e32;
  a32.state.params[0].value.data[0] = 1 + 4 * one_float_ulp;
  EXPECT_TRUE(compare(e32, a32).empty());
  a32.state.params[0].value.data[0] = 1 + 5 * one_float_ulp;
  ASSERT_EQ(compare(e32, a32).size(), 1u);
  EXPECT_EQ(compare(e32, a32)[0].bound, "4 ulp of 1 (float32)");
  // The same difference in a float64 tensor is 2^29 ULPs.
  Record e64 = record("step", {param_obs("w", f64({1}, {1}))});
  Record a64 = e64;
  a64.state.params[0].value.data[0] = 1 + one_float_ulp;
  std::vector<Difference> d = compare(e64, a64);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].ulp_error, std::ldexp(1.0, 29));
}

TEST(Sem9Comparator, DenormalsAndZeroUseTheSmallestDenormal) {
  const double denorm = std::numeric_limits<float>::denorm_min();
  const double tiny = static_cast<float>(1e-40);  // a float32 denormal
  Record e = record("step", {param_obs("w", f32({3}, {0, tiny, -0.0}))});
  Record a = e;
  a.state.params[0].value.data = {4 * denorm, tiny + 4 * denorm, -4 * denorm};
  EXPECT_TRUE(compare(e, a).empty());
  a.state.params[0].value.data[1] = tiny + 5 * denorm;
  std::vector<Difference> d = compare(e, a);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "w → value[1]");
  EXPECT_EQ(d[0].ulp_error, 5);
}

TEST(Sem9Comparator, NaNAndInfinityRules) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Record e = record("step", {param_obs("w", f32({3}, {nan, inf, -inf}))});
  Record a = e;
  EXPECT_TRUE(compare(e, a).empty());  // NaN equals NaN at the same position
  auto differs = [&](int i, double v, const char* bound) {
    Record b = e;
    b.state.params[0].value.data[i] = v;
    std::vector<Difference> d = compare(e, b);
    ASSERT_EQ(d.size(), 1u) << i << " " << v;
    EXPECT_EQ(d[0].bound, bound);
    EXPECT_EQ(d[0].kind, DifferenceKind::Numeric);
  };
  differs(0, 1.0, "NaN must match NaN");
  differs(1, -inf, "inf must match exactly");
  differs(1, std::numeric_limits<float>::max(), "inf must match exactly");
  differs(2, nan, "NaN must match NaN");
  // A finite expected value against NaN or inf.
  Record finite = record("step", {param_obs("w", f32({1}, {1}))});
  Record b = finite;
  b.state.params[0].value.data[0] = nan;
  EXPECT_EQ(compare(finite, b).size(), 1u);
  b.state.params[0].value.data[0] = inf;
  EXPECT_EQ(compare(finite, b).size(), 1u);
}

TEST(Sem9Comparator, CancelledUpdateIsJudgedAtTheOperandsScale) {
  // A step takes w from 1000 to 0.001 (update ~ -1000): the result is not held to ulp(0.001).
  Record prev = record("zero_grad", {param_obs("w", f32({1}, {1000}))});
  Record e = record("step", {param_obs("w", f32({1}, {static_cast<float>(0.001)}))});
  Record a = e;
  const double result = e.state.params[0].value.data[0];
  a.state.params[0].value.data[0] = static_cast<float>(result + 2e-5);  // ~ 1/3 ulp(1000), ~ 170000 ulp(0.001)
  EXPECT_TRUE(compare_records(e, a, &prev, CompareContext{}).empty());
  // Without the previous record the only operand known is the result itself.
  EXPECT_EQ(compare(e, a).size(), 1u);
  // And well beyond the operands' scale it fails.
  a.state.params[0].value.data[0] = static_cast<float>(result + 1e-3);
  std::vector<Difference> d = compare_records(e, a, &prev, CompareContext{});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].scale, 1000);
}

TEST(Sem9Comparator, ForwardOutputUsesOperandScalesAndReductionFactor) {
  // loss = sum(x) with x = [1000, -999.5]: output 0.5 with scale 1999.5 (tolerance.h).
  Record before = record("init", {param_obs("x", f32({2}, {1000, -999.5}))});
  Record e = before;
  e.action = "forward";
  e.state.output = OutputObservation{f32({}, {0.5}), true, true};
  Record a = e;
  a.state.output->value.data[0] = 0.5 + 3 * std::ldexp(1.0, -13);  // 3 ulp of 1999.5 (float32: 2^-13)
  EXPECT_EQ(compare_records(e, a, &before, CompareContext{}).size(), 1u);  // without scales: ulp(0.5)
  CompareContext ctx;
  ctx.scales = operand_scales(*sum(param("x")), before.state, nullptr);
  EXPECT_TRUE(compare_records(e, a, &before, ctx).empty());
  a.state.output->value.data[0] = 0.5 + 5 * std::ldexp(1.0, -13);  // n = 2: factor 1, so 5 ulp fails
  std::vector<Difference> d = compare_records(e, a, &before, ctx);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "output → value");
  EXPECT_EQ(d[0].bound, "4 ulp of 1999.5 (float32)");
}

TEST(Sem9Comparator, BackwardGradUsesPerElementScales) {
  // loss = sum(w * c), c = [1000, 0.001]: grads [1000, 0.001]; each element at its own scale.
  Record before = record("forward", {param_obs("w", f64({2}, {1, 1}))});
  Record e = before;
  e.action = "backward";
  e.state.params[0].grad.defined = true;
  e.state.params[0].grad.value = f64({2}, {1000, 0.001});
  CompareContext ctx;
  auto loss = sum(mul(param("w"), constant(f64({2}, {1000, 0.001}))));
  ctx.scales = operand_scales(*loss, before.state, nullptr);
  Record a = e;
  a.state.params[0].grad.value.data[1] = 0.001 + 1e-15;  // far less than ulp(1000), far more than ulp(0.001)
  std::vector<Difference> d = compare_records(e, a, &before, ctx);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "w → grad[1]");
  EXPECT_EQ(d[0].quantity, Quantity::Grad);
}

TEST(Sem9Comparator, StepScalesCoverACancellingWeightDecayTerm) {
  // SGD with momentum and weight decay: d = g + wd*p = 1000 - 1000 = 0 (SEM-5.3); the buffer is judged at
  // the scale of the gradient operands, not of its zero result.
  ParamObservation before_w = param_obs("w", f32({1}, {1000}));
  before_w.grad.defined = true;
  before_w.grad.value = f32({1}, {-1000});
  Record prev = record("backward", {before_w});
  GroupObservation g;
  g.params = {"w"};
  g.options.lr = 0.1;
  g.options.momentum = 0.9;
  g.options.dampening = 0;
  g.options.weight_decay = 1;
  g.options.nesterov = false;
  prev.state.groups.push_back(g);
  Record e = prev;
  e.action = "step";
  e.state.params[0].grad.same_as_previous = true;
  e.state.params[0].state.exists = true;
  e.state.params[0].state.momentum_buffer = f32({1}, {0});
  Record a = e;
  a.state.params[0].state.momentum_buffer->data[0] = 1e-4;  // < 4 ulp(2000) = 4.9e-4
  CompareContext ctx;
  ctx.optimizer = OptimizerKind::SGD;
  EXPECT_TRUE(compare_records(e, a, &prev, ctx).empty());
  a.state.params[0].state.momentum_buffer->data[0] = 1e-3;
  std::vector<Difference> d = compare_records(e, a, &prev, ctx);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "w → momentum_buffer[0]");
  EXPECT_EQ(d[0].scale, 2000);
}

TEST(Sem9Comparator, FreeRunningDoesNotRejudgeCarriedDrift) {
  // The output was produced (and judged with its forward's scales) earlier; a backward leaves it as it was.
  Record e = record("backward", {param_obs("x", f32({1}, {1}))});
  e.state.output = OutputObservation{f32({}, {0.5}), true, true};
  Record a = e;
  a.state.output->value.data[0] = 0.5 + 100 * std::ldexp(1.0, -24);  // 100 ulp of 0.5
  Record expected_previous = e, actual_previous = a;
  expected_previous.action = actual_previous.action = "forward";
  CompareContext ctx;
  ErrorStats stats;
  EXPECT_EQ(compare_records(e, a, &expected_previous, ctx).size(), 1u);  // lockstep: judged
  ctx.actual_previous = &actual_previous;
  EXPECT_TRUE(compare_records(e, a, &expected_previous, ctx, &stats).empty());  // free-running: carried
  EXPECT_EQ(stats[Quantity::Output], -1);  // counted when it was produced, not again
  EXPECT_EQ(stats[Quantity::Param], -1);
  // A value the engine under test changed in this action is judged.
  actual_previous.state.output->value.data[0] = 0.5;
  EXPECT_EQ(compare_records(e, a, &expected_previous, ctx).size(), 1u);
}

TEST(Sem9Comparator, FreeRunningNewHandleCarriesItsGradsDrift) {
  // hold_grad copies no number: a new handle to a drifted grad is not judged again.
  ParamObservation w = param_obs("w", f32({1}, {1}));
  w.grad.defined = true;
  w.grad.value = f32({1}, {0.5});
  Record expected_previous = record("backward", {w});
  Record actual_previous = expected_previous;
  actual_previous.state.params[0].grad.value.data[0] = 0.5 + 100 * std::ldexp(1.0, -24);
  Record e = expected_previous, a = actual_previous;
  e.action = a.action = "hold_grad";
  e.state.handles.push_back(HandleObservation{"h", true, e.state.params[0].grad.value});
  a.state.handles.push_back(HandleObservation{"h", true, a.state.params[0].grad.value});
  CompareContext ctx;
  ctx.handle_param["h"] = "w";
  EXPECT_EQ(compare_records(e, a, &expected_previous, ctx).size(), 2u);  // lockstep: grad and handle judged
  ctx.actual_previous = &actual_previous;
  EXPECT_TRUE(compare_records(e, a, &expected_previous, ctx).empty());
}

TEST(Sem9Comparator, FirstDifferenceFirstAndLongTensorsAreSummarised) {
  Record e = record("step", {param_obs("a", f64({20}, std::vector<double>(20, 1.0))),
                             param_obs("b", f64({1}, {1}))});
  Record a = e;
  for (double& v : a.state.params[0].value.data) v = 2;
  a.state.params[1].grad.defined = true;  // a structural difference after the numeric ones
  std::vector<Difference> d = compare(e, a);
  ASSERT_EQ(d.size(), 10u);  // 8 elements, one summary, one structural
  EXPECT_EQ(d[0].path, "a → value[0]");
  EXPECT_EQ(d[7].path, "a → value[7]");
  EXPECT_EQ(d[8].path, "a → value[...]");
  EXPECT_EQ(d[8].omitted, 12u);
  EXPECT_EQ(d[9].path, "b → grad.defined");
}

TEST(Sem9Comparator, StatsRecordTheLargestUlpErrorPerQuantity) {
  Record e = rich_record();
  Record a = e;
  a.state.params[0].value.data[3] = 4 + 2 * std::ldexp(1.0, -21);   // 2 ulp (float32, 4 <= x < 8)
  a.state.params[0].state.exp_avg_sq->data[0] += 3 * ulp(e.state.params[0].state.exp_avg_sq->data[0], DType::Float32);
  ErrorStats stats;
  EXPECT_TRUE(compare_records(e, a, nullptr, CompareContext{}, &stats).empty());
  EXPECT_EQ(stats[Quantity::Param], 2);
  EXPECT_EQ(stats[Quantity::state("exp_avg_sq")], 3);
  EXPECT_EQ(stats[Quantity::Grad], 0);
  EXPECT_EQ(stats[Quantity::state("momentum_buffer")], -1);  // none compared
}

TEST(Sem9Comparator, NumberTextIsShortestRoundTrip) {
  EXPECT_EQ(number_text(static_cast<float>(0.1), DType::Float32), "0.1");
  EXPECT_EQ(number_text(0.1, DType::Float64), "0.1");
  EXPECT_EQ(number_text(std::numeric_limits<double>::quiet_NaN(), DType::Float32), "NaN");
  EXPECT_EQ(number_text(-std::numeric_limits<double>::infinity(), DType::Float64), "-inf");
  EXPECT_EQ(describe_bound(8, 3.5, DType::Float32), "8 ulp of 3.5 (float32)");
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// Issue 28: the first difference of a record is the first wrong quantity: the state a step computes, then the value
// it moves (a velocity-form SGD has a wrong momentum buffer and a value that looks right).
TEST(Sem8Comparator, StateIsReportedBeforeTheValueItFeeds) {
  Record e = rich_record(), a = rich_record();
  a.state.params[0].state.exp_avg->data[0] = 0.7;
  a.state.params[0].value.data[0] = 9;
  const std::vector<Difference> d = compare(e, a);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].path, "w → exp_avg[0,0]");
  EXPECT_EQ(d[1].path, "w → value[0,0]");
}

// The centre of the bound is the expected value at the implementation's inputs (expected + carried); the error is
// measured from it and the line says so, with the bound that was applied.
TEST(Sem9Comparator, ACarriedDeviationMovesTheCentreAndTheLineShowsErrorAndBound) {
  Record e = record("step", {param_obs("w", f32({}, {0.5}))});
  Record a = e;
  ErrorBudget budget;
  budget.fields["w → value"] = {0.25};
  CompareContext ctx;
  ctx.budget = &budget;
  const std::vector<Difference> d = compare_records(e, a, nullptr, ctx);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_DOUBLE_EQ(d[0].centre, 0.75);
  EXPECT_DOUBLE_EQ(d[0].absolute_error, 0.25);
  EXPECT_GT(d[0].bound_value, 0);
  EXPECT_LT(d[0].bound_value, 1e-6);
  const std::string line = difference_text(d[0]);
  EXPECT_NE(line.find("expected 0.5 (0.75 at its own inputs, +0.25 carried), actual 0.5: error 0.25 > bound"),
            std::string::npos)
      << line;
  // Within the bound of the centre: no difference.
  a.state.params[0].value.data[0] = 0.75;
  EXPECT_TRUE(compare_records(e, a, nullptr, ctx).empty());
}

// SEMANTICS §9.5: the sign of a zero whose operands were all zero is compared; a zero that rounding or cancellation
// made of non-zero operands may have either sign.
TEST(Sem9Comparator, TheSignOfZeroIsComparedWhereEveryOperandWasZero) {
  Record e = record("step", {param_obs("w", f64({2}, {-0.0, 0.0}))});
  Record a = record("step", {param_obs("w", f64({2}, {0.0, 0.0}))});
  std::vector<Difference> d = compare(e, a);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "w → value[0]");
  EXPECT_EQ(d[0].bound, "the sign of zero must match");
  // The same zero moved from 1 (an operand that was not zero): either sign.
  Record before = record("init", {param_obs("w", f64({2}, {1.0, 1.0}))});
  EXPECT_TRUE(compare(e, a, &before).empty());
}

// SEMANTICS §9.6: a tensor none of whose values exceeds its bound is imprecise; one resolved value is enough.
TEST(Sem9Comparator, ATensorWhoseBoundExceedsEveryValueIsImprecise) {
  Record before = record("init", {param_obs("w", f32({2}, {1e8f, 1e8f}))});
  Record e = record("step", {param_obs("w", f32({2}, {3, 4}))});
  Imprecision im;
  CompareContext ctx;
  ctx.imprecision = &im;
  EXPECT_TRUE(compare_records(e, e, &before, ctx).empty());
  EXPECT_EQ(im.values, 1);
  EXPECT_NE(im.first.find("w → value[1]"), std::string::npos) << im.first;
  Imprecision resolved;
  ctx.imprecision = &resolved;
  Record before2 = record("init", {param_obs("w", f32({2}, {1e8f, 0}))});
  Record e2 = record("step", {param_obs("w", f32({2}, {3, 4}))});
  EXPECT_TRUE(compare_records(e2, e2, &before2, ctx).empty());
  EXPECT_EQ(resolved.values, 0);
}

}  // namespace
}  // namespace lockstep
