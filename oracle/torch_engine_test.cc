// Black-box tests of the LibTorch oracle engine through the Engine interface: these assert what LibTorch
// 1.13 actually does (SEMANTICS.md sections in the test names), so a wrong mapping in the oracle, or a
// LibTorch that behaves differently from the specification, fails here.
#include "oracle/torch_engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "conformance/program/optimizer_descriptions.h"
#include "conformance/program/program.h"
#include "conformance/program/pytorch_version.h"
#include "conformance/program/trace.h"
#include "oracle/torch_bench.h"

namespace lockstep {
namespace {

// The error kind `action` throws as EngineError; "" when it succeeds. Any other exception fails the test.
std::string kind_of(const std::function<void()>& action, std::string* message = nullptr) {
  try {
    action();
  } catch (const EngineError& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  return "";
}

ParamObservation find_param(const EngineState& s, const std::string& name) {
  for (const auto& p : s.params) {
    if (p.name == name) return p;
  }
  ADD_FAILURE() << "no parameter " << name;
  return {};
}

HandleObservation find_handle(const EngineState& s, const std::string& name) {
  for (const auto& h : s.handles) {
    if (h.name == name) return h;
  }
  ADD_FAILURE() << "no handle " << name;
  return {};
}

std::unique_ptr<Engine> engine_with(std::vector<ParamSpec> params) {
  auto engine = make_torch_engine();
  for (const auto& p : params) engine->add_parameter(p);
  return engine;
}

ParamSpec vec3(const std::string& name = "x", DType dtype = DType::Float64) {
  return {name, dtype, {3}, {1, 2, 3}};
}

ExprPtr x() { return param("x"); }

TensorValue const3(DType dtype = DType::Float64) { return {dtype, {3}, {0.5, -1, 2}}; }

OptimizerSpec sgd(OptimizerOptions defaults, std::vector<ParamGroupSpec> groups = {{{"x"}, std::nullopt}}) {
  return {OptimizerKind::SGD, defaults, std::move(groups)};
}

OptimizerOptions lr(double value) {
  OptimizerOptions o;
  o.lr = value;
  return o;
}

std::vector<double> grad_of(Engine& engine, const std::string& name = "x") {
  ParamObservation p = find_param(engine.observe(), name);
  EXPECT_TRUE(p.grad.defined) << name;
  return p.grad.value.data;
}

// The name is the version of the LibTorch linked, as CMake's find_package(Torch) found it (LOCKSTEP_ORACLE_VERSION):
// "libtorch-1.13.0" on Debian 12, "libtorch-2.6.0" on Debian 13.
TEST(TorchEngine, NameIsLibtorchVersion) {
  EXPECT_EQ(make_torch_engine()->name(), torch_version_string());
  EXPECT_EQ(torch_version_string(), std::string("libtorch-") + LOCKSTEP_ORACLE_VERSION);
}

// SEM-2.8, SEM-12.5 (black-box): 1.13's embedding saves its weight, 2.x's only the indices. A retained graph through
// embedding(w), an Adam step of w (which bumps w's version, SEM-2.9), a second backward: 1.13 refuses it as
// inplace_modified, 2.x runs it. impl follows the same switch (impl/engine_adapter_test.cc).
TEST(TorchEngine, Sem12_5_EmbeddingSavesItsWeightOn1xOnly) {
  auto engine = engine_with({{"w", DType::Float32, {3, 2}, {1, 2, 3, 4, 5, 6}}});
  OptimizerOptions o;
  o.lr = 0.1;
  engine->make_optimizer({OptimizerKind::Adam, o, {{{"w"}, std::nullopt}}});
  engine->forward(*sum(embedding(param("w"), {2, 0, 2})), false);
  BackwardArgs retain;
  retain.retain_graph = true;
  engine->backward(retain);
  engine->step();
  const std::string kind = kind_of([&] { engine->backward({}); });
  const bool v1 = parse_pytorch_version(torch_version_string())->first < 2;
  EXPECT_EQ(kind, v1 ? error_kind::kInplaceModified : "") << torch_version_string();
}

TEST(TorchEngine, Sem2_1_NewParameterIsLeafWithUndefinedGrad) {
  auto engine = engine_with({vec3("x", DType::Float32), {"s", DType::Float64, {}, {0.25}}});
  EngineState s = engine->observe();
  ASSERT_EQ(s.params.size(), 2u);
  EXPECT_EQ(s.params[0].name, "x");
  EXPECT_EQ(s.params[0].value.dtype, DType::Float32);
  EXPECT_EQ(s.params[0].value.shape, Shape{3});
  EXPECT_EQ(s.params[0].value.data, (std::vector<double>{1, 2, 3}));
  EXPECT_FALSE(s.params[0].grad.defined);
  EXPECT_EQ(s.params[1].value.shape, Shape{});
  EXPECT_EQ(s.params[1].value.data, std::vector<double>{0.25});
  EXPECT_TRUE(s.groups.empty());
  EXPECT_FALSE(s.output.has_value());
}

TEST(TorchEngine, Float32ValuesAreRoundedOnce) {
  auto engine = engine_with({{"x", DType::Float32, {1}, {0.1}}});
  EXPECT_EQ(find_param(engine->observe(), "x").value.data[0], static_cast<double>(0.1f));
}

// SEM-3.4: grads 2x, 4x, ... and SEM-3.2: accumulation in place keeps the identity.
TEST(TorchEngine, Sem3_4_RepeatedBackwardAccumulates) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    auto engine = engine_with({vec3("x", dtype)});
    for (int k = 1; k <= 5; ++k) {
      engine->forward(*sum(mul(x(), x())), false);
      engine->backward({});
      ParamObservation p = find_param(engine->observe(), "x");
      ASSERT_TRUE(p.grad.defined);
      EXPECT_EQ(p.grad.value.data, (std::vector<double>{2.0 * k, 4.0 * k, 6.0 * k}));
      EXPECT_EQ(p.grad.value.dtype, dtype);
      EXPECT_EQ(p.grad.same_as_previous, k > 1) << k;  // first: new tensor; then in place (SEM-3.2)
      EXPECT_FALSE(p.grad.requires_grad);
      EXPECT_FALSE(p.grad.has_grad_fn);
    }
  }
}

TEST(TorchEngine, OutputIsObserved) {
  auto engine = engine_with({vec3()});
  engine->forward(*sum(mul(x(), x())), false);
  EngineState s = engine->observe();
  ASSERT_TRUE(s.output.has_value());
  EXPECT_EQ(s.output->value.data, std::vector<double>{14});
  EXPECT_EQ(s.output->value.shape, Shape{});
  EXPECT_TRUE(s.output->requires_grad);
  EXPECT_TRUE(s.output->has_grad_fn);
}

// SEM-2.5: a second backward without retain_graph, op by op.
struct SecondBackwardCase {
  const char* name;
  std::function<ExprPtr()> loss;
  bool second_succeeds;
};

TEST(TorchEngine, Sem2_5_SecondBackwardWithoutRetainGraph) {
  TensorValue c = const3();
  std::vector<SecondBackwardCase> cases = {
      {"sum", [] { return sum(x()); }, true},
      {"mean", [] { return mean(x()); }, true},
      {"add", [] { return sum(add(x(), x())); }, true},
      {"sub", [] { return sum(binary(Op::Sub, x(), x())); }, true},
      {"neg", [] { return sum(unary(Op::Neg, x())); }, true},
      {"mul_scalar", [] { return sum(mul_scalar(x(), 3)); }, true},
      {"mul", [] { return sum(mul(x(), x())); }, false},
      {"mul_const", [c] { return sum(mul(x(), constant(c))); }, false},
      {"div", [c] { return sum(binary(Op::Div, x(), constant(c))); }, false},
      {"pow", [] { return sum(pow_scalar(x(), 3)); }, false},
      {"square", [] { return sum(unary(Op::Square, x())); }, false},
      {"exp", [] { return sum(unary(Op::Exp, x())); }, false},
      {"log", [] { return sum(unary(Op::Log, x())); }, false},
      {"tanh", [] { return sum(unary(Op::Tanh, x())); }, false},
      {"sigmoid", [] { return sum(unary(Op::Sigmoid, x())); }, false},
      {"relu", [] { return sum(unary(Op::Relu, x())); }, false},
      {"abs", [] { return sum(unary(Op::Abs, x())); }, false},
      {"softplus", [] { return sum(unary(Op::Softplus, x())); }, false},  // saves its input (SEM-2.12)
      {"mse_loss", [c] { return binary(Op::MseLoss, x(), constant(c)); }, false},
  };
  for (const auto& test : cases) {
    SCOPED_TRACE(test.name);
    auto engine = engine_with({vec3()});
    engine->forward(*test.loss(), false);
    engine->backward({});
    std::vector<double> first = grad_of(*engine);
    std::string message;
    std::string kind = kind_of([&] { engine->backward({}); }, &message);
    if (test.second_succeeds) {
      EXPECT_EQ(kind, "");
      std::vector<double> second = grad_of(*engine);
      for (size_t i = 0; i < first.size(); ++i) EXPECT_DOUBLE_EQ(second[i], 2 * first[i]);
    } else {
      EXPECT_EQ(kind, error_kind::kBackwardThroughFreedGraph) << message;
      EXPECT_NE(message.find("Trying to backward through the graph a second time"), std::string::npos);
      EXPECT_EQ(grad_of(*engine), first);  // the failed backward changed nothing
    }
  }
}

TEST(TorchEngine, Sem2_5_MatmulAndCrossEntropyFreeTheirGraph) {
  auto engine = engine_with({{"w", DType::Float32, {2, 2}, {1, 2, 3, 4}}, {"v", DType::Float32, {2, 1}, {1, -1}}});
  engine->forward(*sum(binary(Op::Matmul, param("w"), param("v"))), false);
  engine->backward({});
  EXPECT_EQ(kind_of([&] { engine->backward({}); }), error_kind::kBackwardThroughFreedGraph);

  engine->forward(*cross_entropy(param("w"), {0, 1}), false);
  engine->backward({});
  EXPECT_EQ(kind_of([&] { engine->backward({}); }), error_kind::kBackwardThroughFreedGraph);
}

TEST(TorchEngine, Sem2_5_RetainGraphAllowsSecondBackward) {
  auto engine = engine_with({vec3()});
  engine->forward(*sum(mul(x(), x())), false);
  BackwardArgs retain;
  retain.retain_graph = true;
  engine->backward(retain);
  EXPECT_EQ(kind_of([&] { engine->backward({}); }), "");
  EXPECT_EQ(grad_of(*engine), (std::vector<double>{4, 8, 12}));
  // the second backward (retain_graph unset = create_graph = false) freed it
  EXPECT_EQ(kind_of([&] { engine->backward({}); }), error_kind::kBackwardThroughFreedGraph);
}

TEST(TorchEngine, Sem2_5_LinearWithOnlyTheBiasRequiringGradSavesNothing) {
  auto engine = engine_with({{"b", DType::Float64, {1}, {0}}});
  TensorValue zero{DType::Float64, {1, 1}, {0}};
  engine->forward(*sum(linear(constant(zero), constant(zero), param("b"))), false);
  engine->backward({});
  EXPECT_EQ(kind_of([&] { engine->backward({}); }), "");
  EXPECT_EQ(grad_of(*engine, "b"), (std::vector<double>{2}));
}

// A retained graph, one step, a second backward: the kind it fails with ("" for none). SGD updates p
// without moving its version (the retained graph then sees the new values); Adam and AdamW move it, and a
// node that saved p fails ("one of the variables needed for gradient computation has been modified by an
// inplace operation"); a node that saved only a constant or its own output does not.
std::string kind_after_step(OptimizerKind kind, const std::function<ExprPtr()>& loss, std::string* message = nullptr) {
  auto engine = engine_with({vec3()});
  OptimizerOptions o;
  o.lr = 0.1;
  engine->make_optimizer({kind, o, {{{"x"}, std::nullopt}}});
  engine->forward(*loss(), false);
  BackwardArgs retain;
  retain.retain_graph = true;
  engine->backward(retain);
  engine->step();
  return kind_of([&] { engine->backward({}); }, message);
}

// SEM-1.6: every optimizer's step updates the parameter in place: the same tensor at every observation (the
// optional field param.same_as_previous), its values moved.
TEST(TorchEngine, Sem1_6_StepKeepsTheParameterTensor) {
  for (OptimizerKind kind : {OptimizerKind::SGD, OptimizerKind::Adam, OptimizerKind::AdamW, OptimizerKind::RMSprop,
                             OptimizerKind::Adagrad}) {
    auto engine = engine_with({vec3()});
    OptimizerOptions o;
    o.lr = 0.1;
    engine->make_optimizer({kind, o, {{{"x"}, std::nullopt}}});
    EXPECT_EQ(find_param(engine->observe(), "x").same_as_previous, std::optional<bool>(true));
    for (int k = 0; k < 2; ++k) {
      engine->forward(*sum(mul(x(), x())), false);
      engine->backward({});
      engine->step();
      const ParamObservation p = find_param(engine->observe(), "x");
      EXPECT_EQ(p.same_as_previous, std::optional<bool>(true)) << optimizer_name(kind);
    }
  }
}

// The descriptions' flags hold on the oracle (optimizer_descriptions.h): state from construction, step counts,
// the state tensors of a first step with the options' defaults.
TEST(TorchEngine, DescriptionsMatchTheOracle) {
  for (const OptimizerDescription& d : optimizer_descriptions()) {
    auto engine = engine_with({vec3()});
    OptimizerOptions o;
    o.lr = 0.1;
    engine->make_optimizer({d.kind, o, {{{"x"}, std::nullopt}}});
    EXPECT_EQ(find_param(engine->observe(), "x").state.exists, d.state_from_construction) << d.name;
    if (d.needs_closure) {
      // SEM-16.2: no step without a closure; with one, the closure is called (here: to the optimum in a few calls).
      EXPECT_EQ(kind_of([&] { engine->step(); }), error_kind::kOther) << d.name;
      struct Evaluate : StepClosure {
        Engine* engine;
        int calls = 0;
        std::optional<TensorValue> call() override {
          ++calls;
          engine->zero_grad(false);
          engine->forward(*sum(mul(x(), x())), false);
          engine->backward({});
          return engine->observe().output->value;
        }
      } closure;
      closure.engine = engine.get();
      EXPECT_TRUE(engine->step_with_closure(closure).has_value()) << d.name;
      EXPECT_GT(closure.calls, 1) << d.name;
    } else {
      engine->forward(*sum(mul(x(), x())), false);
      engine->backward({});
      engine->step();
    }
    const OptimizerStateObservation s = find_param(engine->observe(), "x").state;
    for (const StateCountDescription& c : all_state_counts()) {
      bool own = false;
      for (const StateCountDescription& mine : d.state_counts) own = own || std::string(mine.name) == c.name;
      EXPECT_EQ((s.*c.field).has_value(), own) << d.name << " " << c.name;
    }
    EXPECT_EQ(s.step.has_value(), d.counts_steps) << d.name;
    if (d.counts_steps) {
      EXPECT_EQ(*s.step, 1) << d.name;
    }
    for (const StateTensorDescription& t : all_state_tensors()) {
      bool own = false;
      for (const StateTensorDescription& mine : d.state) own = own || std::string(mine.name) == t.name;
      if (!own) {
        EXPECT_FALSE((s.*t.field).has_value()) << d.name << " has " << t.name;
      }
    }
  }
}

TEST(TorchEngine, Sem2_5_AdamStepOfASavedParameterFailsTheRetainedGraph) {
  TensorValue c = const3();
  auto square_x = [] { return sum(unary(Op::Square, x())); };
  std::string message;
  EXPECT_EQ(kind_after_step(OptimizerKind::Adam, square_x, &message), error_kind::kInplaceModified);
  EXPECT_NE(message.find("modified by an inplace operation"), std::string::npos) << message;
  EXPECT_EQ(kind_after_step(OptimizerKind::AdamW, square_x), error_kind::kInplaceModified);
  EXPECT_EQ(kind_after_step(OptimizerKind::SGD, square_x), "");
  EXPECT_EQ(kind_after_step(OptimizerKind::Adam, [] { return sum(mul(x(), x())); }), error_kind::kInplaceModified);
  EXPECT_EQ(kind_after_step(OptimizerKind::Adam, [c] { return sum(mul(x(), constant(c))); }), "");
  EXPECT_EQ(kind_after_step(OptimizerKind::Adam, [c] { return sum(mul(constant(c), x())); }), "");
  EXPECT_EQ(kind_after_step(OptimizerKind::Adam, [c] { return sum(binary(Op::Div, x(), constant(c))); }), "");
  EXPECT_EQ(kind_after_step(OptimizerKind::Adam, [c] { return sum(binary(Op::Div, constant(c), x())); }),
            error_kind::kInplaceModified);
  EXPECT_EQ(kind_after_step(OptimizerKind::Adam, [] { return sum(unary(Op::Exp, x())); }), "");
}

TEST(TorchEngine, Sem2_3_NoGradForwardThenBackward) {
  auto engine = engine_with({vec3()});
  engine->forward(*sum(mul(x(), x())), true);
  EngineState s = engine->observe();
  ASSERT_TRUE(s.output.has_value());
  EXPECT_EQ(s.output->value.data, std::vector<double>{14});
  EXPECT_FALSE(s.output->requires_grad);
  EXPECT_FALSE(s.output->has_grad_fn);
  std::string message;
  EXPECT_EQ(kind_of([&] { engine->backward({}); }, &message), error_kind::kNoGradFn);
  EXPECT_NE(message.find("element 0 of tensors does not require grad and does not have a grad_fn"),
            std::string::npos)
      << message;
  EXPECT_FALSE(find_param(engine->observe(), "x").grad.defined);
}

TEST(TorchEngine, Sem2_4_NonscalarBackward) {
  auto engine = engine_with({vec3()});
  engine->forward(*mul(x(), x()), false);
  std::string message;
  EXPECT_EQ(kind_of([&] { engine->backward({}); }, &message), error_kind::kNonscalarBackward) << message;
  EXPECT_FALSE(find_param(engine->observe(), "x").grad.defined);
}

TEST(TorchEngine, BackwardWithoutForwardIsNoOutput) {
  auto engine = engine_with({vec3()});
  EXPECT_EQ(kind_of([&] { engine->backward({}); }), error_kind::kNoOutput);
}

TEST(TorchEngine, ExplicitGradientOnNonscalarOutput) {
  auto engine = engine_with({vec3()});
  engine->forward(*mul(x(), x()), false);
  std::vector<double> g = {1, 0.5, -1};
  BackwardArgs args;
  args.gradient = &g;
  engine->backward(args);
  EXPECT_EQ(grad_of(*engine), (std::vector<double>{2, 2, -6}));
}

TEST(TorchEngine, ExplicitGradientOfWrongSizeIsGradientShape) {
  auto engine = engine_with({vec3()});
  engine->forward(*mul(x(), x()), false);
  std::vector<double> g = {1, 2};
  BackwardArgs args;
  args.gradient = &g;
  std::string message;
  EXPECT_EQ(kind_of([&] { engine->backward(args); }, &message), error_kind::kGradientShape) << message;
}

TEST(TorchEngine, ExplicitGradientCountMustMatchOutput) {
  // LibTorch alone would sum 3 values into a 0-d output's gradient; the engine refuses the mismatch.
  auto engine = engine_with({vec3()});
  engine->forward(*sum(x()), false);
  std::vector<double> g = {1, 2, 3};
  BackwardArgs args;
  args.gradient = &g;
  EXPECT_EQ(kind_of([&] { engine->backward(args); }), error_kind::kGradientShape);
  EXPECT_FALSE(find_param(engine->observe(), "x").grad.defined);
}

// SEM-2.3 edge: a Param output is the leaf itself, so even under no_grad it requires grad and backward works.
TEST(TorchEngine, Sem2_3_NoGradParamOutputIsTheLeaf) {
  auto engine = engine_with({{"s", DType::Float64, {}, {4}}});
  engine->forward(*param("s"), true);
  EngineState s = engine->observe();
  EXPECT_TRUE(s.output->requires_grad);
  EXPECT_EQ(kind_of([&] { engine->backward({}); }), "");
  EXPECT_EQ(grad_of(*engine, "s"), std::vector<double>{1});
}

// SEM-1.3: a scalar factor is converted to the tensor's dtype and the product is computed in float32.
TEST(TorchEngine, Sem1_3_MulScalarComputesInTensorDtype) {
  const double factor = 0.1;
  std::vector<double> values;
  for (int i = 1; i <= 2000; ++i) values.push_back(static_cast<double>(static_cast<float>(i / 7.0)));
  auto engine = engine_with({{"x", DType::Float32, {static_cast<int64_t>(values.size())}, values}});
  engine->forward(*mul_scalar(x(), factor), false);
  std::vector<double> out = engine->observe().output->value.data;
  int differing = 0, as_float = 0, as_double = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    double in_float = static_cast<float>(static_cast<float>(values[i]) * static_cast<float>(factor));
    double in_double = static_cast<float>(values[i] * factor);
    if (in_float == in_double) continue;
    ++differing;
    as_float += out[i] == in_float;
    as_double += out[i] == in_double;
  }
  ASSERT_GT(differing, 0);
  EXPECT_EQ(as_float, differing) << "as_double " << as_double;
}

// Gradient-fed programs: the output is the parameter itself and backward(g) accumulates g into its grad.
TEST(TorchEngine, ExplicitGradientOnParamOutputAccumulates) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    auto engine = engine_with({vec3("x", dtype)});
    engine->forward(*x(), false);
    EngineState s = engine->observe();
    ASSERT_TRUE(s.output.has_value());
    EXPECT_TRUE(s.output->requires_grad);
    EXPECT_FALSE(s.output->has_grad_fn);  // a leaf
    std::vector<double> g = {0.5, -1, 2};
    BackwardArgs args;
    args.gradient = &g;
    engine->backward(args);
    g = {1, 1, 1};  // SEM-3.1: the grad is a copy, not the caller's tensor
    EXPECT_EQ(grad_of(*engine), (std::vector<double>{0.5, -1, 2}));
    engine->backward(args);  // a leaf saves nothing: backward again works
    ParamObservation p = find_param(engine->observe(), "x");
    EXPECT_EQ(p.grad.value.data, (std::vector<double>{1.5, 0, 3}));
    EXPECT_TRUE(p.grad.same_as_previous);
    EXPECT_EQ(p.value.data, (std::vector<double>{1, 2, 3}));
  }
}

// SEM-3.3: create_graph accumulates out of place; a held handle keeps the old values.
TEST(TorchEngine, Sem3_3_CreateGraphGivesNewIdentity) {
  auto engine = engine_with({vec3()});
  engine->forward(*sum(mul(x(), x())), false);
  engine->backward({});
  engine->hold_grad("x", "h");
  engine->observe();
  BackwardArgs create;
  create.create_graph = true;
  engine->forward(*sum(mul(x(), x())), false);
  engine->backward(create);
  EngineState s = engine->observe();
  ParamObservation p = find_param(s, "x");
  EXPECT_EQ(p.grad.value.data, (std::vector<double>{4, 8, 12}));
  EXPECT_FALSE(p.grad.same_as_previous);
  EXPECT_TRUE(p.grad.requires_grad);
  EXPECT_TRUE(p.grad.has_grad_fn);
  HandleObservation h = find_handle(s, "h");
  EXPECT_TRUE(h.defined);
  EXPECT_EQ(h.value.data, (std::vector<double>{2, 4, 6}));
}

TEST(TorchEngine, Sem3_3_CreateGraphFirstContribution) {
  auto engine = engine_with({vec3()});
  engine->forward(*sum(mul(x(), x())), false);
  BackwardArgs create;
  create.create_graph = true;
  engine->backward(create);
  ParamObservation p = find_param(engine->observe(), "x");
  EXPECT_EQ(p.grad.value.data, (std::vector<double>{2, 4, 6}));
  EXPECT_TRUE(p.grad.requires_grad);
  EXPECT_TRUE(p.grad.has_grad_fn);
  // retain_graph defaulted to create_graph: a second backward works
  EXPECT_EQ(kind_of([&] { engine->backward({}); }), "");
}

TEST(TorchEngine, Sem3_2_HandleSeesInPlaceAccumulation) {
  auto engine = engine_with({vec3()});
  engine->hold_grad("x", "before");  // undefined at the time
  engine->forward(*sum(mul(x(), x())), false);
  engine->backward({});
  engine->hold_grad("x", "h");
  engine->forward(*sum(mul(x(), x())), false);
  engine->backward({});
  EngineState s = engine->observe();
  EXPECT_FALSE(find_handle(s, "before").defined);
  EXPECT_EQ(find_handle(s, "h").value.data, (std::vector<double>{4, 8, 12}));
  ASSERT_EQ(s.handles.size(), 2u);
  EXPECT_EQ(s.handles[0].name, "before");
}

// SEM-4.1: zero_grad detaches and zeroes in place; the grad and its handles keep their identity.
TEST(TorchEngine, Sem4_1_ZeroGradInPlace) {
  auto engine = engine_with({vec3(), {"unused", DType::Float64, {1}, {5}}});
  engine->make_optimizer(sgd(lr(0.1), {{{"x", "unused"}, std::nullopt}}));
  engine->forward(*sum(mul(x(), x())), false);
  BackwardArgs create;
  create.create_graph = true;
  engine->backward(create);
  engine->hold_grad("x", "h");
  engine->observe();
  engine->zero_grad(false);
  EngineState s = engine->observe();
  ParamObservation p = find_param(s, "x");
  ASSERT_TRUE(p.grad.defined);
  EXPECT_EQ(p.grad.value.data, (std::vector<double>{0, 0, 0}));
  EXPECT_TRUE(p.grad.same_as_previous);
  EXPECT_FALSE(p.grad.requires_grad);
  EXPECT_FALSE(p.grad.has_grad_fn);
  EXPECT_EQ(find_handle(s, "h").value.data, (std::vector<double>{0, 0, 0}));
  EXPECT_FALSE(find_param(s, "unused").grad.defined);  // undefined stays undefined
}

// SEM-4.2: set_to_none leaves the grad undefined; handles keep their values; the next grad is new.
TEST(TorchEngine, Sem4_2_ZeroGradSetToNone) {
  auto engine = engine_with({vec3()});
  engine->make_optimizer(sgd(lr(0.1)));
  engine->forward(*sum(mul(x(), x())), false);
  engine->backward({});
  engine->hold_grad("x", "h");
  engine->zero_grad(true);
  EngineState s = engine->observe();
  EXPECT_FALSE(find_param(s, "x").grad.defined);
  EXPECT_FALSE(find_param(s, "x").grad.same_as_previous);
  EXPECT_EQ(find_handle(s, "h").value.data, (std::vector<double>{2, 4, 6}));
  engine->forward(*sum(mul(x(), x())), false);
  engine->backward({});
  s = engine->observe();
  EXPECT_EQ(find_param(s, "x").grad.value.data, (std::vector<double>{2, 4, 6}));
  EXPECT_FALSE(find_param(s, "x").grad.same_as_previous);
  // SEM-4.3: a parameter whose grad is undefined is skipped by step
  engine->set_grad_none("x");
  engine->step();
  EXPECT_EQ(find_param(engine->observe(), "x").value.data, (std::vector<double>{1, 2, 3}));
}

TEST(TorchEngine, OptimizerActionsWithoutOptimizer) {
  auto engine = engine_with({vec3()});
  EXPECT_EQ(kind_of([&] { engine->zero_grad(false); }), error_kind::kNoOptimizer);
  EXPECT_EQ(kind_of([&] { engine->zero_grad(true); }), error_kind::kNoOptimizer);
  EXPECT_EQ(kind_of([&] { engine->step(); }), error_kind::kNoOptimizer);
  EXPECT_EQ(kind_of([&] { engine->set_group_options(0, lr(1)); }), error_kind::kNoOptimizer);
  EXPECT_EQ(kind_of([&] { engine->add_param_group({{"x"}, std::nullopt}); }), error_kind::kNoOptimizer);
}

// SEM-5.2, SEM-6.1: the constructor validates the defaults.
TEST(TorchEngine, Sem5_2_InvalidDefaultsAreInvalidOption) {
  struct Case {
    OptimizerKind kind;
    std::function<void(OptimizerOptions&)> set;
    const char* message_start;
  };
  std::vector<Case> cases = {
      {OptimizerKind::SGD, [](OptimizerOptions& o) { o.lr = -0.1; }, "Invalid learning rate: "},
      {OptimizerKind::SGD, [](OptimizerOptions& o) { o.momentum = -1; }, "Invalid momentum value: "},
      {OptimizerKind::SGD, [](OptimizerOptions& o) { o.weight_decay = -1; }, "Invalid weight_decay value: "},
      {OptimizerKind::SGD, [](OptimizerOptions& o) { o.nesterov = true; },
       "Nesterov momentum requires a momentum and zero dampening"},
      {OptimizerKind::SGD,
       [](OptimizerOptions& o) {
         o.nesterov = true;
         o.momentum = 0.9;
         o.dampening = 0.1;
       },
       "Nesterov momentum requires a momentum and zero dampening"},
      {OptimizerKind::Adam, [](OptimizerOptions& o) { o.lr = -1; }, "Invalid learning rate: "},
      {OptimizerKind::Adam, [](OptimizerOptions& o) { o.eps = -1; }, "Invalid epsilon value: "},
      {OptimizerKind::Adam, [](OptimizerOptions& o) { o.betas = {1.0, 0.999}; },
       "Invalid beta parameter at index 0: "},
      {OptimizerKind::Adam, [](OptimizerOptions& o) { o.betas = {0.9, -0.1}; },
       "Invalid beta parameter at index 1: "},
      {OptimizerKind::Adam, [](OptimizerOptions& o) { o.weight_decay = -1; }, "Invalid weight_decay value: "},
      {OptimizerKind::AdamW, [](OptimizerOptions& o) { o.betas = {0.9, 1.0}; },
       "Invalid beta parameter at index 1: "},
      {OptimizerKind::AdamW, [](OptimizerOptions& o) { o.eps = -1e-8; }, "Invalid epsilon value: "},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    auto engine = engine_with({vec3()});
    OptimizerSpec spec{cases[i].kind, {}, {{{"x"}, std::nullopt}}};
    if (cases[i].kind == OptimizerKind::SGD) spec.defaults.lr = 0.1;
    cases[i].set(spec.defaults);
    std::string message;
    EXPECT_EQ(kind_of([&] { engine->make_optimizer(spec); }, &message), error_kind::kInvalidOption);
    EXPECT_EQ(message.rfind(cases[i].message_start, 0), 0u) << message;
    EXPECT_TRUE(engine->observe().groups.empty());  // no optimizer was made
  }
}

TEST(TorchEngine, SgdWithoutLrOrForeignOptionIsInvalidOption) {
  auto engine = engine_with({vec3()});
  EXPECT_EQ(kind_of([&] { engine->make_optimizer(sgd({})); }), error_kind::kInvalidOption);
  OptimizerOptions o = lr(0.1);
  o.betas = std::make_pair(0.9, 0.99);
  EXPECT_EQ(kind_of([&] { engine->make_optimizer(sgd(o)); }), error_kind::kInvalidOption);
  OptimizerSpec adam{OptimizerKind::Adam, {}, {{{"x"}, std::nullopt}}};
  adam.defaults.momentum = 0.9;
  EXPECT_EQ(kind_of([&] { engine->make_optimizer(adam); }), error_kind::kInvalidOption);
}

// SEM-5.2: options given for a single group are not validated.
TEST(TorchEngine, Sem5_2_GroupOptionsAreNotValidated) {
  auto engine = engine_with({vec3()});
  OptimizerOptions group = lr(-1);
  group.nesterov = true;  // without momentum: simply steps without nesterov
  engine->make_optimizer(sgd(lr(0.1), {{{"x"}, group}}));
  engine->forward(*sum(x()), false);
  engine->backward({});
  engine->step();
  EngineState s = engine->observe();
  EXPECT_EQ(find_param(s, "x").value.data, (std::vector<double>{2, 3, 4}));  // p - (-1) * 1
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(*s.groups[0].options.lr, -1);
  EXPECT_TRUE(*s.groups[0].options.nesterov);
}

// SEM-7.1 [1.13]: a group with options takes the option type's defaults, not the optimizer's.
TEST(TorchEngine, Sem7_1_GroupOptionsUseOptionTypeDefaults) {
  auto engine = engine_with({vec3(), {"y", DType::Float64, {1}, {1}}});
  OptimizerSpec spec{OptimizerKind::Adam, {}, {}};
  spec.defaults.lr = 0.5;
  spec.defaults.betas = std::make_pair(0.8, 0.9);
  OptimizerOptions group;
  group.weight_decay = 0.1;
  spec.groups = {{{"x"}, group}, {{"y"}, std::nullopt}};
  engine->make_optimizer(spec);
  EngineState s = engine->observe();
  ASSERT_EQ(s.groups.size(), 2u);
  EXPECT_EQ(s.groups[0].params, std::vector<std::string>{"x"});
  EXPECT_EQ(*s.groups[0].options.lr, 1e-3);
  EXPECT_EQ(*s.groups[0].options.betas, std::make_pair(0.9, 0.999));
  EXPECT_EQ(*s.groups[0].options.weight_decay, 0.1);
  EXPECT_EQ(*s.groups[0].options.eps, 1e-8);
  EXPECT_FALSE(*s.groups[0].options.amsgrad);
  EXPECT_FALSE(s.groups[0].options.momentum.has_value());
  EXPECT_EQ(*s.groups[1].options.lr, 0.5);
  EXPECT_EQ(*s.groups[1].options.betas, std::make_pair(0.8, 0.9));
}

TEST(TorchEngine, Sem6_4_AdamWDefaultWeightDecay) {
  auto engine = engine_with({vec3()});
  engine->make_optimizer({OptimizerKind::AdamW, {}, {{{"x"}, std::nullopt}}});
  EngineState s = engine->observe();
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(*s.groups[0].options.weight_decay, 1e-2);
  EXPECT_EQ(*s.groups[0].options.lr, 1e-3);
}

// SEM-5.3: first momentum step copies the grad (no dampening), then buf = buf*m + (1-d)*g.
TEST(TorchEngine, Sem5_3_SgdMomentumBuffer) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto engine = engine_with({{"x", dtype, {2}, {1, -2}}, {"idle", dtype, {1}, {7}}});
    OptimizerOptions o = lr(0.5);
    o.momentum = 0.5;
    o.dampening = 0.5;
    engine->make_optimizer(sgd(o, {{{"x", "idle"}, std::nullopt}}));
    std::vector<double> g = {2, 4};
    BackwardArgs args;
    args.gradient = &g;
    engine->forward(*x(), false);
    engine->backward(args);
    engine->step();
    EngineState s = engine->observe();
    ParamObservation p = find_param(s, "x");
    ASSERT_TRUE(p.state.exists);
    ASSERT_TRUE(p.state.momentum_buffer.has_value());
    EXPECT_EQ(p.state.momentum_buffer->data, (std::vector<double>{2, 4}));
    EXPECT_EQ(p.state.momentum_buffer->dtype, dtype);
    EXPECT_EQ(p.value.data, (std::vector<double>{0, -4}));
    EXPECT_EQ(p.grad.value.data, (std::vector<double>{2, 4}));  // step never modifies the grad
    EXPECT_FALSE(find_param(s, "idle").state.exists);           // undefined grad: no state (SEM-4.3)
    engine->step();                                               // same grad again
    p = find_param(engine->observe(), "x");
    EXPECT_EQ(p.state.momentum_buffer->data, (std::vector<double>{2, 4}));  // 2*0.5 + 0.5*2
    EXPECT_EQ(p.value.data, (std::vector<double>{-1, -6}));
  }
}

TEST(TorchEngine, Sem5_3_SgdWithoutMomentumHasNoState) {
  auto engine = engine_with({vec3()});
  engine->make_optimizer(sgd(lr(1)));
  engine->forward(*sum(x()), false);
  engine->backward({});
  engine->step();
  ParamObservation p = find_param(engine->observe(), "x");
  EXPECT_FALSE(p.state.exists);
  EXPECT_EQ(p.value.data, (std::vector<double>{0, 1, 2}));
}

// SEM-6.2, SEM-6.3: Adam's state after one step.
TEST(TorchEngine, Sem6_3_AdamFirstStep) {
  for (bool amsgrad : {false, true}) {
    SCOPED_TRACE(amsgrad);
    auto engine = engine_with({{"x", DType::Float64, {2}, {1, 1}}, {"idle", DType::Float64, {1}, {7}}});
    OptimizerSpec spec{OptimizerKind::Adam, {}, {{{"x", "idle"}, std::nullopt}}};
    spec.defaults.lr = 0.1;
    spec.defaults.amsgrad = amsgrad;
    engine->make_optimizer(spec);
    std::vector<double> g = {2, -4};
    BackwardArgs args;
    args.gradient = &g;
    engine->forward(*x(), false);
    engine->backward(args);
    engine->step();
    EngineState s = engine->observe();
    ParamObservation p = find_param(s, "x");
    ASSERT_TRUE(p.state.exists);
    EXPECT_EQ(p.state.step, 1);
    ASSERT_TRUE(p.state.exp_avg && p.state.exp_avg_sq);
    EXPECT_NEAR(p.state.exp_avg->data[0], 0.2, 1e-15);
    EXPECT_NEAR(p.state.exp_avg_sq->data[1], 0.016, 1e-15);
    EXPECT_EQ(p.state.max_exp_avg_sq.has_value(), amsgrad);
    EXPECT_FALSE(p.state.momentum_buffer.has_value());
    // first step moves by lr * sign(g) (up to eps)
    EXPECT_NEAR(p.value.data[0], 0.9, 1e-8);
    EXPECT_NEAR(p.value.data[1], 1.1, 1e-8);
    EXPECT_FALSE(find_param(s, "idle").state.exists);
    // SEM-4.3: a zeroed grad still counts the step
    engine->zero_grad(false);
    engine->step();
    EXPECT_EQ(find_param(engine->observe(), "x").state.step, 2);
  }
}

// SEM-7.4 [1.13 C++]: duplicates.
TEST(TorchEngine, Sem7_4_Duplicates) {
  auto engine = engine_with({vec3(), {"y", DType::Float64, {1}, {1}}});
  engine->make_optimizer(sgd(lr(1), {{{"x", "x"}, std::nullopt}, {{"y"}, std::nullopt}}));
  // before any step, a parameter in two groups is accepted
  EXPECT_EQ(kind_of([&] { engine->add_param_group({{"y"}, std::nullopt}); }), "");
  EngineState s = engine->observe();
  ASSERT_EQ(s.groups.size(), 3u);
  EXPECT_EQ(s.groups[0].params, (std::vector<std::string>{"x", "x"}));
  EXPECT_EQ(s.groups[2].params, std::vector<std::string>{"y"});
  // twice in one group: updated twice per step
  engine->forward(*sum(x()), false);
  engine->backward({});
  engine->step();
  EXPECT_EQ(find_param(engine->observe(), "x").value.data, (std::vector<double>{-1, 0, 1}));
}

// SEM-7.4: the duplicate check looks at optimizer state; SGD without momentum never has any.
TEST(TorchEngine, Sem7_4_AddParamGroupWithoutStateIsAccepted) {
  auto engine = engine_with({vec3()});
  engine->make_optimizer(sgd(lr(1)));
  engine->forward(*sum(x()), false);
  engine->backward({});
  engine->step();
  EXPECT_EQ(kind_of([&] { engine->add_param_group({{"x"}, std::nullopt}); }), "");
  engine->step();  // x sits in two groups now: updated once per group
  EXPECT_EQ(find_param(engine->observe(), "x").value.data, (std::vector<double>{-2, -1, 0}));
}

// SEM-7.4: twice in one Adam group: both updates share one state, so the step counts twice.
TEST(TorchEngine, Sem7_4_AdamParamTwiceInOneGroupCountsTwice) {
  auto engine = engine_with({vec3()});
  engine->make_optimizer({OptimizerKind::Adam, {}, {{{"x", "x"}, std::nullopt}}});
  engine->forward(*sum(x()), false);
  engine->backward({});
  engine->step();
  EXPECT_EQ(find_param(engine->observe(), "x").state.step, 2);
}

TEST(TorchEngine, Sem7_4_AddParamGroupWithStateIsDuplicate) {
  auto engine = engine_with({vec3(), {"y", DType::Float64, {1}, {1}}});
  OptimizerOptions o = lr(0.1);
  o.momentum = 0.9;
  engine->make_optimizer(sgd(o));
  engine->forward(*sum(x()), false);
  engine->backward({});
  engine->step();
  std::string message;
  EXPECT_EQ(kind_of([&] { engine->add_param_group({{"y", "x"}, std::nullopt}); }, &message),
            error_kind::kDuplicateParameter)
      << message;
  EXPECT_NE(message.find("some parameters appear in more than one parameter group"), std::string::npos);
  EXPECT_EQ(engine->observe().groups.size(), 1u);
  // a parameter without state may be added, with its own options (option-type defaults, SEM-7.1)
  OptimizerOptions group = lr(0.25);
  EXPECT_EQ(kind_of([&] { engine->add_param_group({{"y"}, group}); }), "");
  EngineState s = engine->observe();
  ASSERT_EQ(s.groups.size(), 2u);
  EXPECT_EQ(*s.groups[1].options.lr, 0.25);
  EXPECT_EQ(*s.groups[1].options.momentum, 0);
}

// SEM-5.4, SEM-7.5: a changed lr applies from the next step.
TEST(TorchEngine, Sem7_5_SetGroupOptions) {
  auto engine = engine_with({vec3()});
  engine->make_optimizer(sgd(lr(1)));
  engine->forward(*sum(x()), false);
  engine->backward({});
  OptimizerOptions change;
  change.lr = 0.5;
  change.momentum = 0.9;
  engine->set_group_options(0, change);
  EngineState s = engine->observe();
  EXPECT_EQ(*s.groups[0].options.lr, 0.5);
  EXPECT_EQ(*s.groups[0].options.momentum, 0.9);
  EXPECT_EQ(*s.groups[0].options.dampening, 0);
  engine->step();
  ParamObservation p = find_param(engine->observe(), "x");
  EXPECT_EQ(p.value.data, (std::vector<double>{0.5, 1.5, 2.5}));
  EXPECT_TRUE(p.state.exists);
  EXPECT_EQ(kind_of([&] { engine->set_group_options(1, change); }), error_kind::kNoSuchGroup);
  EXPECT_EQ(kind_of([&] { engine->set_group_options(-1, change); }), error_kind::kNoSuchGroup);
  OptimizerOptions foreign;
  foreign.eps = 1e-6;
  EXPECT_EQ(kind_of([&] { engine->set_group_options(0, foreign); }), error_kind::kInvalidOption);
}

TEST(TorchEngine, Sem2_6_SeveralPathsAreSummed) {
  // weight tying through embedding: repeated rows accumulate
  auto engine = engine_with({{"w", DType::Float32, {3, 2}, {1, 2, 3, 4, 5, 6}}});
  engine->forward(*sum(embedding(param("w"), {2, 0, 2})), false);
  engine->backward({});
  EXPECT_EQ(grad_of(*engine, "w"), (std::vector<double>{1, 1, 0, 0, 2, 2}));
}

TEST(TorchEngine, LinearWithAndWithoutBias) {
  auto engine = engine_with({{"in", DType::Float64, {1, 2}, {1, 2}},
                             {"w", DType::Float64, {2, 2}, {1, 0, 0, 2}},
                             {"b", DType::Float64, {2}, {10, 20}}});
  engine->forward(*linear(param("in"), param("w"), param("b")), false);
  EXPECT_EQ(engine->observe().output->value.data, (std::vector<double>{11, 24}));
  EXPECT_EQ(engine->observe().output->value.shape, (Shape{1, 2}));
  engine->forward(*linear(param("in"), param("w")), false);
  EXPECT_EQ(engine->observe().output->value.data, (std::vector<double>{1, 4}));
}

TEST(TorchEngine, CrossEntropyMatchesHandComputation) {
  auto engine = engine_with({{"logits", DType::Float64, {2, 2}, {0, 0, 1, 3}}});
  engine->forward(*cross_entropy(param("logits"), {1, 0}), false);
  double expected = (std::log(2.0) + (std::log(std::exp(1.0) + std::exp(3.0)) - 1)) / 2;
  EXPECT_NEAR(engine->observe().output->value.data[0], expected, 1e-14);
}

TEST(TorchEngine, UnknownParameterIsAnErrorNotACrash) {
  auto engine = engine_with({vec3()});
  EXPECT_EQ(kind_of([&] { engine->forward(*param("nope"), false); }), error_kind::kOther);
  EXPECT_EQ(kind_of([&] { engine->set_grad_none("nope"); }), error_kind::kOther);
}

TEST(TorchBench, StepsChangeNothingVisibleButRun) {
  torch_set_num_threads(1);
  auto sgd_bench = make_torch_sgd_bench(1000, 0.1, 0.9);
  auto adam_bench = make_torch_adam_bench(1000, 1e-3);
  for (int i = 0; i < 3; ++i) {
    sgd_bench->step();
    adam_bench->step();
  }
  SUCCEED();
}

}  // namespace
}  // namespace lockstep
