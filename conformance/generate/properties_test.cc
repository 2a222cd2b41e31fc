// Property tests over random programs: well-formedness, lockstep agreement of impl with LibTorch, the
// micro-batch accumulation law (SEM-3.5) on both engines, and shrinking of a planted bug to a small case.
//
// Sizes: RapidCheck runs 100 cases per property by default (RC_PARAMS="max_success=N" changes it); the
// lockstep property takes a few seconds. A failing lockstep case prints the program JSON and the first
// difference; RapidCheck then shrinks it with shrink.h's program shrinks.
#include <functional>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "conformance/generate/generators.h"
#include "conformance/run/interpreter.h"
#include "conformance/run/lockstep_runner.h"
#include "conformance/program/program_json.h"
#include "conformance/generate/shrink.h"
#include "impl/engine_adapter.h"
#include "oracle/torch_engine.h"

namespace lockstep {
namespace {

std::string dump(const Program& p) { return program_to_json(p).dump(); }

std::string num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// (a) Every generated program, and every one of its first shrinks, passes validate().
RC_GTEST_PROP(Properties, GeneratedProgramsAreValid, ()) {
  GenOptions options;
  options.special_values = *rc::gen::arbitrary<bool>();
  const rc::Shrinkable<Program> s = gen_program(options)(rc::Random(*rc::gen::arbitrary<uint64_t>()), 100);
  validate(s.value());  // throws ProgramError (a failure) when not
  auto shrinks = s.shrinks();
  for (int i = 0; i < 20; ++i) {
    auto c = shrinks.next();
    if (!c) break;
    validate(c->value());
  }
}

// (b) SEM-9: the clean-room implementation agrees with LibTorch, action by action, on random programs.
RC_GTEST_PROP(Properties, ImplAgreesWithOracleInLockstep, ()) {
  const Program program = *gen_program(GenOptions{});
  auto oracle = make_torch_engine();
  auto impl = make_impl_engine();
  const LockstepResult result = run_lockstep(program, *oracle, *impl);
  if (!result.passed) RC_FAIL(result.failure_summary() + "\nprogram: " + dump(program));
}

// ---------------------------------------------------------------------------------------------------------
// (c) SEM-3.5: backward of loss_k / K over K micro-batches, then one step, gives the same grads and
// parameters as one backward of the mean loss over the whole batch, then one step.
//
// The loss is mse_loss(linear(x, W, b), y) or cross_entropy(linear(x, W, b), t) with x, y, t constants;
// each micro-batch is a row slice of x (and of y or t) of equal size m, scaled by mul_scalar(1/K). Both
// programs run on the same engine; the test only compares the engine's own results.
//
// Tolerances (stated):
//  - grads: every grad element is a sum over the N samples of per-sample contributions bounded by C (a
//    priori, from the values: mse 2*|x|max*R/(out) with R the largest |residual| bound, CE 2*|x|max, bias
//    terms with |x|max replaced by 1); two summation orders of N terms, each rounded, differ by at most
//    about 2*N*eps*C plus the 1/K scaling, so we allow 8*(N+K)*eps*C, eps the dtype's machine epsilon.
//  - parameters after the step: |pA - pB| <= L*|gA - gB| + 4*ulp(|p| + lr*U), with L the step's Lipschitz
//    constant in the gradient at this first step (SGD: lr*(1+momentum); Adam/AdamW: the update is
//    lr*g/(|g|+eps) at step 1, so L = lr/(eps + min(|gA|,|gB|)), never more than 2*lr in total) and U the
//    largest update magnitude (SGD: |d|*(1+momentum), Adam: 1).

struct MicroBatchCase {
  DType dtype = DType::Float64;
  bool cross_entropy = false;
  int k = 2;           // micro-batches
  int m = 1;           // rows per micro-batch
  int in = 2, out = 2;
  bool bias = true;
  TensorValue x, y;    // y: mse targets (N, out)
  std::vector<int64_t> targets;  // CE classes (N)
  ParamSpec w, b;
  OptimizerSpec optimizer;
};

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

TensorValue rows(const TensorValue& t, int64_t from, int64_t count) {
  TensorValue r;
  r.dtype = t.dtype;
  r.shape = {count, t.shape[1]};
  r.data.assign(t.data.begin() + from * t.shape[1], t.data.begin() + (from + count) * t.shape[1]);
  return r;
}

ExprPtr batch_loss(const MicroBatchCase& c, int64_t from, int64_t count) {
  ExprPtr logits = linear(constant(rows(c.x, from, count)), param("W"), c.bias ? param("b") : nullptr);
  if (c.cross_entropy)
    return cross_entropy(logits, std::vector<int64_t>(c.targets.begin() + from, c.targets.begin() + from + count));
  return binary(Op::MseLoss, logits, constant(rows(c.y, from, count)));
}

Program micro_batched(const MicroBatchCase& c) {
  Program p;
  p.params = {c.w};
  if (c.bias) p.params.push_back(c.b);
  p.optimizer = c.optimizer;
  for (int i = 0; i < c.k; ++i) {
    Action f;
    f.kind = ActionKind::Forward;
    f.loss = mul_scalar(batch_loss(c, int64_t{i} * c.m, c.m), 1.0 / c.k);
    p.actions.push_back(f);
    Action b;
    b.kind = ActionKind::Backward;
    p.actions.push_back(b);
  }
  Action s;
  s.kind = ActionKind::Step;
  p.actions.push_back(s);
  return p;
}

Program full_batch(const MicroBatchCase& c) {
  Program p;
  p.params = {c.w};
  if (c.bias) p.params.push_back(c.b);
  p.optimizer = c.optimizer;
  p.loss = batch_loss(c, 0, int64_t{c.k} * c.m);
  p.actions = {Action::forward(), Action::backward(), Action::step()};
  return p;
}

// Values in [-4, 4] in quarters: a small, exactly representable range.
rc::Gen<double> gen_quarter() {
  return rc::gen::map(rc::gen::inRange(0, 33), [](int k) { return (k % 2 ? (k + 1) / 2 : -(k / 2)) / 4.0; });
}

rc::Gen<MicroBatchCase> gen_micro_batch_case() {
  return rc::gen::exec([] {
    MicroBatchCase c;
    c.dtype = *gen_dtype();
    c.cross_entropy = *rc::gen::arbitrary<bool>();
    c.k = *rc::gen::inRange(1, 5);
    c.m = *rc::gen::inRange(1, 4);
    c.in = *rc::gen::inRange(1, 5);
    c.out = *rc::gen::inRange(1, 5);
    c.bias = *rc::gen::arbitrary<bool>();
    const int64_t n = int64_t{c.k} * c.m;
    auto tensor = [&](Shape shape) {
      TensorValue t;
      t.dtype = c.dtype;
      t.shape = shape;
      t.data = *rc::gen::container<std::vector<double>>(static_cast<size_t>(numel(shape)), gen_quarter());
      return t;
    };
    c.x = tensor({n, c.in});
    c.y = tensor({n, c.out});
    for (int64_t i = 0; i < n; ++i) c.targets.push_back(*rc::gen::inRange(0, c.out));
    TensorValue w = tensor({c.out, c.in}), b = tensor({c.out});
    c.w = {"W", c.dtype, w.shape, w.data};
    c.b = {"b", c.dtype, b.shape, b.data};
    c.optimizer.kind = *rc::gen::element(OptimizerKind::SGD, OptimizerKind::Adam, OptimizerKind::AdamW);
    // Valid options only: the law is about the gradients, not the constructor (SEM-5.2, SEM-6.1).
    GenOptions valid_only;
    valid_only.error_cases = false;
    c.optimizer.defaults = *gen_optimizer_options(c.optimizer.kind, true, valid_only);
    c.optimizer.groups = {{c.bias ? std::vector<std::string>{"W", "b"} : std::vector<std::string>{"W"}, std::nullopt}};
    return c;
  });
}

// SEM-9: NaN equals NaN, equal infinities are equal, else within the tolerance.
bool agree_within(double a, double b, double tolerance) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b || std::fabs(a - b) <= tolerance;
}

double machine_epsilon(DType d) {
  return d == DType::Float32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
}

double ulp_of(double x, DType d) {
  const double a = std::fabs(x);
  return d == DType::Float32 ? std::nextafter(static_cast<float>(a), INFINITY) - static_cast<float>(a)
                             : std::nextafter(a, INFINITY) - a;
}

// Runs both programs on a fresh engine each and checks the law; returns "" or the first violation.
template <typename MakeEngine>
std::string check_micro_batch_law(const MicroBatchCase& c, MakeEngine make_engine) {
  const Program a = micro_batched(c), b = full_batch(c);
  validate(a);
  validate(b);
  auto engine_a = make_engine();
  auto engine_b = make_engine();
  const Trace ta = run_program(a, *engine_a);
  const Trace tb = run_program(b, *engine_b);
  for (const Trace* t : {&ta, &tb}) {
    if (t->init.error) return "setup failed: " + t->init.error->message;
    for (const auto& r : t->records)
      if (r.error) return r.action + " failed: " + r.error->message;
  }
  const int64_t n = int64_t{c.k} * c.m;
  const double eps = machine_epsilon(c.dtype);
  const double x_max = std::max(1.0, max_abs(c.x.data));
  double residual = 1;  // CE: |softmax - onehot| <= 1
  if (!c.cross_entropy)
    residual = x_max * max_abs(c.w.values) * c.in + (c.bias ? max_abs(c.b.values) : 0) + max_abs(c.y.data);
  const double per_sample = 2 * x_max * std::max(1.0, residual);
  const double grad_tolerance = 8.0 * static_cast<double>(n + c.k) * eps * per_sample;

  const Record& after_backward_a = ta.records[ta.records.size() - 2];
  const Record& after_backward_b = tb.records[tb.records.size() - 2];
  const Record& after_step_a = ta.records.back();
  const Record& after_step_b = tb.records.back();
  const OptimizerOptions& o = c.optimizer.defaults;
  for (const auto& spec : after_backward_b.state.params) {
    const ParamObservation* ga = after_backward_a.state.param(spec.name);
    const ParamObservation* gb = &spec;
    if (!ga || !ga->grad.defined || !gb->grad.defined) return spec.name + ": grad undefined";
    const ParamObservation* pa = after_step_a.state.param(spec.name);
    const ParamObservation* pb = after_step_b.state.param(spec.name);
    for (size_t i = 0; i < gb->grad.value.data.size(); ++i) {
      const double x = ga->grad.value.data[i], y = gb->grad.value.data[i];
      if (!agree_within(x, y, grad_tolerance))
        return spec.name + ".grad[" + std::to_string(i) + "]: micro-batched " + num(x) + " vs full " +
               num(y) + " (tolerance " + num(grad_tolerance) + ")";
      // Step: Lipschitz bound in the gradient difference plus rounding of the update.
      const double old_value = after_backward_b.state.param(spec.name)->value.data[i];
      const double wd = o.weight_decay.value_or(c.optimizer.kind == OptimizerKind::AdamW ? 1e-2 : 0);
      double lipschitz = 0, update = 0;
      if (c.optimizer.kind == OptimizerKind::SGD) {
        const double lr = o.lr.value_or(0), mom = o.momentum.value_or(0);
        lipschitz = lr * (1 + mom);
        update = lr * (1 + mom) * (std::fabs(y) + wd * std::fabs(old_value));
      } else {
        // Step 1: u = lr * g' / (|g'| + eps), g' = g + wd*p for Adam's L2 term (SEM-6.3), g for AdamW.
        const double lr = o.lr.value_or(1e-3), adam_eps = o.eps.value_or(1e-8);
        const double l2 = c.optimizer.kind == OptimizerKind::Adam ? wd * old_value : 0;
        const double smallest = std::min(std::fabs(x + l2), std::fabs(y + l2));
        lipschitz = std::min(2 * lr / std::max(std::fabs(x - y), 1e-300), lr / (adam_eps + smallest));
        update = lr * (1 + wd);
      }
      const double step_tolerance = lipschitz * std::fabs(x - y) + 4 * ulp_of(std::fabs(old_value) + update, c.dtype);
      const double va = pa->value.data[i], vb = pb->value.data[i];
      if (!agree_within(va, vb, step_tolerance))
        return spec.name + "[" + std::to_string(i) + "] after step: micro-batched " + num(va) +
               " vs full " + num(vb) + " (tolerance " + num(step_tolerance) + ")";
      // step() never changes p.grad (SEM-5.3).
      if (!agree_within(pa->grad.value.data[i], x, 0) || !agree_within(pb->grad.value.data[i], y, 0))
        return spec.name + ": step changed the grad";
    }
  }
  return "";
}

void micro_batch_property(const std::function<std::unique_ptr<Engine>()>& make_engine) {
  const MicroBatchCase c = *gen_micro_batch_case();
  const std::string violation = check_micro_batch_law(c, make_engine);
  if (!violation.empty())
    RC_FAIL(violation + "\nmicro-batched: " + dump(micro_batched(c)) + "\nfull batch: " + dump(full_batch(c)));
}

RC_GTEST_PROP(Properties, MicroBatchAccumulationEqualsFullBatchOnTorch, ()) {  // SEM-3.5
  micro_batch_property(&make_torch_engine);
}

RC_GTEST_PROP(Properties, MicroBatchAccumulationEqualsFullBatchOnImpl, ()) {  // SEM-3.5
  micro_batch_property([] { return make_impl_engine(); });
}

// The law is a real check: a wrong scaling (no 1/K) breaks it whenever K > 1 and the grads are not zero.
TEST(Properties, MicroBatchLawDetectsAMissingScale) {
  MicroBatchCase c;
  c.k = 2;
  c.m = 1;
  c.in = 1;
  c.out = 1;
  c.bias = false;
  c.x = {DType::Float64, {2, 1}, {1, 2}};
  c.y = {DType::Float64, {2, 1}, {0, 0}};
  c.w = {"W", DType::Float64, {1, 1}, {1}};
  c.optimizer.kind = OptimizerKind::SGD;
  c.optimizer.defaults.lr = 0.1;
  c.optimizer.groups = {{{"W"}, std::nullopt}};
  EXPECT_EQ(check_micro_batch_law(c, &make_torch_engine), "");
  EXPECT_EQ(check_micro_batch_law(c, [] { return make_impl_engine(); }), "");
  // Grads of the two programs with a K-times-too-large micro-batch loss differ: simulate by K = 2 and
  // comparing the micro-batched program against a full batch of only the first row.
  Program wrong = micro_batched(c);
  for (auto& a : wrong.actions)
    if (a.kind == ActionKind::Forward) a.loss = mul_scalar(a.loss, 2.0);  // loss_k instead of loss_k / K
  auto engine = make_torch_engine();
  const Trace t = run_program(wrong, *engine);
  auto reference = make_torch_engine();
  const Trace r = run_program(full_batch(c), *reference);
  // d/dW mean((W x)^2) over x = {1, 2} at W = 1: (2*1*1 + 2*2*2) / 2 = 5; without 1/K: 10.
  EXPECT_DOUBLE_EQ(r.records[1].state.param("W")->grad.value.data[0], 5.0);
  EXPECT_DOUBLE_EQ(t.records[3].state.param("W")->grad.value.data[0], 10.0);
}

// ---------------------------------------------------------------------------------------------------------
// (d) Shrinking a planted bug: an engine under test that, once a zero_grad(set_to_none) has run, steps twice
// per step() when the optimizer has momentum. A random program that exposes it shrinks to <= 5 actions
// within 10 s.

class PlantedBugEngine : public Engine {
 public:
  explicit PlantedBugEngine(std::unique_ptr<Engine> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return "planted-bug(" + inner_->name() + ")"; }
  void add_parameter(const ParamSpec& spec) override { inner_->add_parameter(spec); }
  void make_optimizer(const OptimizerSpec& spec) override {
    inner_->make_optimizer(spec);
    momentum_ = spec.kind == OptimizerKind::SGD && spec.defaults.momentum.value_or(0) > 0;
    for (const auto& g : spec.groups)
      if (g.options && g.options->momentum.value_or(0) > 0) momentum_ = true;
  }
  void forward(const Expr& loss, bool no_grad) override { inner_->forward(loss, no_grad); }
  void backward(const BackwardArgs& args) override { inner_->backward(args); }
  void zero_grad(std::optional<bool> set_to_none) override {
    inner_->zero_grad(set_to_none);
    if (set_to_none.value_or(false)) armed_ = true;
  }
  bool zero_grad_sets_to_none_by_default() const override { return inner_->zero_grad_sets_to_none_by_default(); }
  void set_grad_none(const std::string& p) override { inner_->set_grad_none(p); }
  void hold_grad(const std::string& p, const std::string& h) override { inner_->hold_grad(p, h); }
  void step() override {
    inner_->step();
    if (armed_ && momentum_) inner_->step();  // the planted bug
  }
  void set_group_options(int group, const OptimizerOptions& changes) override {
    inner_->set_group_options(group, changes);
    if (changes.momentum && *changes.momentum > 0) momentum_ = true;
  }
  void add_param_group(const ParamGroupSpec& group) override { inner_->add_param_group(group); }
  TensorValue clip_grad_norm(const std::vector<std::string>& params, double max_norm, double norm_type,
                             bool error_if_nonfinite) override {
    return inner_->clip_grad_norm(params, max_norm, norm_type, error_if_nonfinite);
  }
  void clip_grad_value(const std::vector<std::string>& params, double clip_value) override {
    inner_->clip_grad_value(params, clip_value);
  }
  // A load may restore other options (2.x, SEM-19.2): the bug's arming by momentum stays as it was.
  void state_dict(const std::string& checkpoint) override { inner_->state_dict(checkpoint); }
  void load_state_dict(const std::string& checkpoint, bool fresh) override { inner_->load_state_dict(checkpoint, fresh); }
  EngineState observe() override { return inner_->observe(); }
  void synchronise(const EngineState& target) override { inner_->synchronise(target); }

 private:
  std::unique_ptr<Engine> inner_;
  bool armed_ = false;
  bool momentum_ = false;
};

bool agrees(const Program& p, std::unique_ptr<Engine> under_test) {
  auto oracle = make_torch_engine();
  return run_lockstep(p, *oracle, *under_test).passed;
}

// Fails when the planted engine disagrees with the oracle and the plain implementation does not: the
// failure is the planted bug's, not some other difference.
bool planted_bug_shows(const Program& p) {
  if (agrees(p, std::make_unique<PlantedBugEngine>(make_impl_engine()))) return false;
  return agrees(p, make_impl_engine());
}

TEST(Properties, PlantedBugShrinksToAFewActions) {
  GenOptions options;
  options.optimizer = OptimizerKind::SGD;
  options.max_size = 60;
  RandomPrograms programs(2718, options);
  int found = 0;
  for (uint64_t i = 0; i < 400 && found < 2; ++i) {
    const rc::Shrinkable<Program> s = programs.at(i);
    if (!planted_bug_shows(s.value())) continue;
    ++found;
    const ProgramSize before = program_size(s.value());
    ShrinkStats stats;
    const Program small = shrink_failure(s, planted_bug_shows, &stats, std::chrono::seconds(10));
    const ProgramSize after = program_size(small);
    std::cout << "planted bug: " << describe(before) << " -> " << describe(after) << " in " << stats.steps
              << " steps, " << stats.tries << " tries, " << stats.time.count() << " ms\n"
              << dump(small) << "\n";
    EXPECT_TRUE(planted_bug_shows(small));
    EXPECT_LE(small.actions.size(), 5u) << dump(small);
    EXPECT_LE(stats.time.count(), 10500);
  }
  EXPECT_EQ(found, 2) << "no random program exposed the planted bug";
}

}  // namespace
}  // namespace lockstep
