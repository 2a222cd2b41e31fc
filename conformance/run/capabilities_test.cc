// Tests of capabilities (capabilities.h): reading a hello, the exclusions of what it does not support, PyTorch
// versions, the zero_grad default they imply, and version conditions of named case checks.
#include "conformance/run/capabilities.h"

#include <stdexcept>
#include <typeinfo>

#include <gtest/gtest.h>

#include "conformance/program/features.h"
#include "conformance/program/json_reader.h"
#include "conformance/run/driver_process.h"

namespace lockstep {
namespace {

using json = nlohmann::ordered_json;

// The example of capabilities.h.
const char* kTfjsHello = R"({"name": "tfjs", "version": "4.22.0", "protocol": 1, "language": "javascript",
  "api_profile": "pytorch-python", "pytorch_version": "2.1.0", "defaults": {"zero_grad": "none"},
  "supports": {"dtypes": ["float32"], "ops": ["add", "mul", "sum", "mean", "matmul"],
               "optimizers": {"sgd": ["lr", "momentum"], "adam": ["lr", "betas", "eps"]},
               "features": ["retain_graph", "hold_grad", "zero_grad"]}})";

TEST(Capabilities, NullHelloSupportsEverything) {
  const Capabilities c = capabilities_from_hello(json());
  EXPECT_FALSE(c.declared_supports);
  EXPECT_FALSE(c.dtypes);
  EXPECT_FALSE(c.ops);
  EXPECT_FALSE(c.features);
  EXPECT_FALSE(c.optimizers);
  EXPECT_FALSE(c.zero_grad_default_none);
  EXPECT_EQ(c.pytorch_version, "");
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_TRUE(c.hello.is_null());
  FeatureScope scope;
  exclude_unsupported(c, scope);
  EXPECT_TRUE(scope.empty());
}

TEST(Capabilities, HelloWithoutSupportsSupportsEverything) {
  const Capabilities c = capabilities_from_hello(json::parse(
      R"({"name": "old", "version": "0.1", "language": "c++", "api_profile": "pytorch-python",
          "pytorch_version": "libtorch-1.13.0", "protocol": 1})"));
  EXPECT_EQ(c.name, "old");
  EXPECT_EQ(c.version, "0.1");
  EXPECT_EQ(c.language, "c++");
  EXPECT_EQ(c.api_profile, "pytorch-python");
  EXPECT_EQ(c.pytorch_version, "libtorch-1.13.0");
  EXPECT_FALSE(c.declared_supports);
  EXPECT_FALSE(c.dtypes);
  EXPECT_FALSE(c.optimizers);
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_EQ(c.hello["name"], "old");
  FeatureScope scope;
  exclude_unsupported(c, scope);
  EXPECT_TRUE(scope.empty());

  // "supports": null is the same as no "supports".
  EXPECT_FALSE(capabilities_from_hello(json::parse(R"({"supports": null})")).declared_supports);
  // An empty "supports" declares nothing per kind: every kind left out is supported in full.
  const Capabilities empty = capabilities_from_hello(json::parse(R"({"supports": {}})"));
  EXPECT_TRUE(empty.declared_supports);
  FeatureScope none;
  exclude_unsupported(empty, none);
  EXPECT_TRUE(none.empty());
}

TEST(Capabilities, ReadsTheDocumentedHello) {
  const Capabilities c = capabilities_from_hello(json::parse(kTfjsHello));
  EXPECT_EQ(c.name, "tfjs");
  EXPECT_EQ(c.language, "javascript");
  EXPECT_EQ(c.pytorch_version, "2.1.0");
  ASSERT_TRUE(c.zero_grad_default_none);
  EXPECT_TRUE(*c.zero_grad_default_none);
  EXPECT_TRUE(c.declared_supports);
  EXPECT_EQ(*c.dtypes, (std::set<std::string>{"float32"}));
  EXPECT_EQ(*c.ops, (std::set<std::string>{"add", "mul", "sum", "mean", "matmul"}));
  EXPECT_EQ(*c.features, (std::set<std::string>{"retain_graph", "hold_grad", "zero_grad"}));
  ASSERT_TRUE(c.optimizers);
  EXPECT_EQ(c.optimizers->size(), 2u);
  EXPECT_EQ(c.optimizers->at("sgd"), (std::set<std::string>{"lr", "momentum"}));
  EXPECT_TRUE(c.warnings.empty());

  const Capabilities zero = capabilities_from_hello(json::parse(R"({"defaults": {"zero_grad": "zero"}})"));
  ASSERT_TRUE(zero.zero_grad_default_none);
  EXPECT_FALSE(*zero.zero_grad_default_none);
  EXPECT_FALSE(capabilities_from_hello(json::parse(R"({"defaults": {}})")).zero_grad_default_none);
}

TEST(Capabilities, ExcludesWhatIsNotDeclared) {
  const Capabilities c = capabilities_from_hello(json::parse(kTfjsHello));
  FeatureScope scope;
  exclude_unsupported(c, scope);
  // dtypes
  EXPECT_TRUE(scope.allows("float32"));
  EXPECT_FALSE(scope.allows("float64"));
  // ops
  for (const char* n : {"op:add", "op:mul", "op:sum", "op:mean", "op:matmul"}) EXPECT_TRUE(scope.allows(n)) << n;
  for (const char* n : {"op:sub", "op:tanh", "op:embedding", "op:cross_entropy"}) EXPECT_FALSE(scope.allows(n)) << n;
  // optimizers
  EXPECT_TRUE(scope.allows("sgd"));
  EXPECT_TRUE(scope.allows("adam"));
  EXPECT_FALSE(scope.allows("adamw"));
  // options: those not listed for a declared optimizer
  for (const char* n : {"sgd.lr", "sgd.momentum", "adam.lr", "adam.betas", "adam.eps"}) EXPECT_TRUE(scope.allows(n)) << n;
  for (const char* n : {"sgd.dampening", "sgd.nesterov", "sgd.weight_decay", "adam.weight_decay", "adam.amsgrad"})
    EXPECT_FALSE(scope.allows(n)) << n;
  // The options of an undeclared optimizer are covered by the optimizer's exclusion.
  for (const std::string& o : optimizer_option_names(OptimizerKind::AdamW))
    EXPECT_EQ(scope.why_not("adamw." + o), nullptr) << o;
  // features
  for (const char* n : {"retain_graph", "hold_grad", "zero_grad"}) EXPECT_TRUE(scope.allows(n)) << n;
  for (const char* n : {"create_graph", "no_grad", "set_to_none", "zero_grad_default", "param_groups", "special_values"})
    EXPECT_FALSE(scope.allows(n)) << n;
  // Situations are never declared: they stay.
  for (const FeatureInfo& f : all_features())
    if (f.category == "situation") {
      EXPECT_TRUE(scope.allows(f.name)) << f.name;
    }

  const FeatureExclusion* x = scope.why_not("float64");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->source, "capabilities");
  EXPECT_NE(x->reason.find("tfjs"), std::string::npos) << x->reason;
  EXPECT_NE(x->reason.find("float64"), std::string::npos) << x->reason;
  EXPECT_NE(scope.why_not("adam.amsgrad")->reason.find("amsgrad"), std::string::npos);
  EXPECT_NE(scope.excluded({"float32", "adamw", "adamw.lr"}), nullptr);
  EXPECT_EQ(scope.excluded({"float32", "sgd", "sgd.lr", "op:sum", "op:mul", "retain_graph"}), nullptr);
  for (const FeatureExclusion& e : scope.exclusions()) {
    EXPECT_EQ(e.when.size(), 1u);
    EXPECT_NE(find_feature(e.when[0]), nullptr) << e.when[0];
  }
}

TEST(Capabilities, OnlyTheDeclaredKindsNarrow) {
  const Capabilities c = capabilities_from_hello(json::parse(R"({"supports": {"optimizers": {"sgd": []}}})"));
  FeatureScope scope;
  exclude_unsupported(c, scope);
  EXPECT_TRUE(scope.allows("sgd"));
  EXPECT_FALSE(scope.allows("adam"));
  EXPECT_FALSE(scope.allows("sgd.momentum"));
  EXPECT_TRUE(scope.allows("float64"));
  EXPECT_TRUE(scope.allows("op:embedding"));
  EXPECT_TRUE(scope.allows("create_graph"));
}

TEST(Capabilities, UnknownNamesAreWarnings) {
  const Capabilities c = capabilities_from_hello(json::parse(
      R"({"name": "new", "defaults": {"zero_grad": "zero", "foreach": true},
          "supports": {"dtypes": ["float32", "bfloat16"], "ops": ["add", "conv2d"],
                       "optimizers": {"sgd": ["lr", "lookahead"], "lion": ["lr"]},
                       "features": ["hold_grad", "checkpointing"], "quantum": 1}})"));
  const std::string all = [&] {
    std::string s;
    for (const std::string& w : c.warnings) s += w + "\n";
    return s;
  }();
  for (const char* n : {"bfloat16", "conv2d", "lion", "checkpointing", "quantum", "foreach"})
    EXPECT_NE(all.find(n), std::string::npos) << n << " not warned about:\n" << all;
  EXPECT_GE(c.warnings.size(), 6u);
  ASSERT_TRUE(c.zero_grad_default_none);
  EXPECT_FALSE(*c.zero_grad_default_none);
  // The known part still narrows.
  FeatureScope scope;
  exclude_unsupported(c, scope);
  EXPECT_FALSE(scope.allows("float64"));
  EXPECT_TRUE(scope.allows("op:add"));
  EXPECT_FALSE(scope.allows("op:mul"));
  EXPECT_FALSE(scope.allows("adam"));
  EXPECT_TRUE(scope.allows("sgd.lr"));
  EXPECT_FALSE(scope.allows("sgd.momentum"));
  EXPECT_FALSE(scope.allows("retain_graph"));
  EXPECT_TRUE(scope.allows("hold_grad"));
}

// Option names are names too: one lockstep does not know is a warning (capabilities.h: "Names lockstep does
// not know are kept as warnings").
TEST(Capabilities, UnknownOptionNamesAreWarnings) {
  const Capabilities c = capabilities_from_hello(
      json::parse(R"({"supports": {"optimizers": {"sgd": ["lr", "lookahead"], "adam": ["lr", "momentum"]}}})"));
  std::string all;
  for (const std::string& w : c.warnings) all += w + "\n";
  EXPECT_NE(all.find("lookahead"), std::string::npos) << "warnings:\n" << all;
  EXPECT_NE(all.find("momentum"), std::string::npos) << "adam has no option momentum; warnings:\n" << all;
}

// "observes": the optional trace fields the driver reports (optional_fields.h); left out, none; a name this
// lockstep does not know is a warning (a newer driver may report more).
TEST(Capabilities, ObservesNamesOptionalFields) {
  EXPECT_TRUE(capabilities_from_hello(json::parse(R"({"name": "old"})")).observes.empty());
  const Capabilities c =
      capabilities_from_hello(json::parse(R"({"name": "d", "observes": ["param.same_as_previous", "param.version"]})"));
  EXPECT_EQ(c.observes, (std::set<std::string>{"param.same_as_previous", "param.version"}));
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("param.version"), std::string::npos) << c.warnings[0];
}

TEST(Capabilities, WrongTypesNameThePointer) {
  struct Bad {
    const char* hello;
    const char* pointer;
  } bad[] = {
      {R"([])", "/hello"},
      {R"({"name": 3})", "/hello/name"},
      {R"({"api_profile": ["pytorch-python"]})", "/hello/api_profile"},
      {R"({"pytorch_version": 2})", "/hello/pytorch_version"},
      {R"({"pytorch_version": "latest"})", "/hello/pytorch_version"},
      {R"({"pytorch_version": "2"})", "/hello/pytorch_version"},
      {R"({"defaults": "none"})", "/hello/defaults"},
      {R"({"defaults": {"zero_grad": "maybe"}})", "/hello/defaults/zero_grad"},
      {R"({"defaults": {"zero_grad": true}})", "/hello/defaults/zero_grad"},
      {R"({"supports": "everything"})", "/hello/supports"},
      {R"({"supports": {"dtypes": "float32"}})", "/hello/supports/dtypes"},
      {R"({"supports": {"dtypes": ["float32", 64]}})", "/hello/supports/dtypes/1"},
      {R"({"supports": {"ops": {"add": true}}})", "/hello/supports/ops"},
      {R"({"supports": {"features": [null]}})", "/hello/supports/features/0"},
      {R"({"supports": {"optimizers": ["sgd"]}})", "/hello/supports/optimizers"},
      {R"({"supports": {"optimizers": {"sgd": "lr"}}})", "/hello/supports/optimizers/sgd"},
      {R"({"supports": {"optimizers": {"adam": ["lr", 1]}}})", "/hello/supports/optimizers/adam/1"},
      {R"({"observes": "param.same_as_previous"})", "/hello/observes"},
      {R"({"observes": [true]})", "/hello/observes/0"},
  };
  for (const Bad& b : bad) {
    try {
      capabilities_from_hello(json::parse(b.hello));
      ADD_FAILURE() << "no error for " << b.hello;
    } catch (const JsonError& e) {
      EXPECT_EQ(e.pointer(), b.pointer) << b.hello << ": " << e.what();
    }
  }
}

TEST(Capabilities, ParsesPytorchVersions) {
  using V = std::optional<std::pair<int, int>>;
  EXPECT_EQ(parse_pytorch_version("2.1.0+cu118"), V(std::make_pair(2, 1)));
  EXPECT_EQ(parse_pytorch_version("libtorch-1.13.0"), V(std::make_pair(1, 13)));
  EXPECT_EQ(parse_pytorch_version("1.13.0a0"), V(std::make_pair(1, 13)));
  EXPECT_EQ(parse_pytorch_version("1.13.0a0+git49444c3"), V(std::make_pair(1, 13)));
  EXPECT_EQ(parse_pytorch_version("2.0"), V(std::make_pair(2, 0)));
  EXPECT_EQ(parse_pytorch_version("10.2.1"), V(std::make_pair(10, 2)));
  EXPECT_EQ(parse_pytorch_version("torch 2.11.0.dev20250101"), V(std::make_pair(2, 11)));
  for (const char* garbage : {"", "garbage", "2", "v", "latest-stable", ".5"})
    EXPECT_EQ(parse_pytorch_version(garbage), std::nullopt) << garbage;
}

TEST(Capabilities, ZeroGradDefaultResolution) {
  auto caps = [](const char* hello) { return capabilities_from_hello(json::parse(hello)); };
  // The declared default wins over the version and the oracle.
  EXPECT_FALSE(resolved_zero_grad_default_none(caps(R"({"pytorch_version": "2.1.0", "defaults": {"zero_grad": "zero"}})"), true));
  EXPECT_TRUE(resolved_zero_grad_default_none(caps(R"({"pytorch_version": "1.13.1", "defaults": {"zero_grad": "none"}})"), false));
  // Then the version: >= 2.0 sets to none.
  EXPECT_TRUE(resolved_zero_grad_default_none(caps(R"({"pytorch_version": "2.0.0"})"), false));
  EXPECT_TRUE(resolved_zero_grad_default_none(caps(R"({"pytorch_version": "2.1.0+cu118"})"), false));
  EXPECT_FALSE(resolved_zero_grad_default_none(caps(R"({"pytorch_version": "1.13.1"})"), true));
  EXPECT_FALSE(resolved_zero_grad_default_none(caps(R"({"pytorch_version": "libtorch-1.9.0"})"), true));
  // Then the oracle's.
  EXPECT_TRUE(resolved_zero_grad_default_none(caps(R"({"name": "x"})"), true));
  EXPECT_FALSE(resolved_zero_grad_default_none(caps(R"({"name": "x"})"), false));
  EXPECT_TRUE(resolved_zero_grad_default_none(capabilities_from_hello(json()), true));
  EXPECT_FALSE(resolved_zero_grad_default_none(capabilities_from_hello(json()), false));
}

TEST(VersionCondition, AtLeastAndBelow) {
  EXPECT_TRUE(version_condition_holds(">=2.0", "2.1.0"));
  EXPECT_TRUE(version_condition_holds(">=2.0", "2.0.0"));
  EXPECT_TRUE(version_condition_holds(">=2.0", "2.0"));
  EXPECT_FALSE(version_condition_holds(">=2.0", "1.13.1"));
  EXPECT_FALSE(version_condition_holds(">=2.0", "libtorch-1.13.0"));
  EXPECT_TRUE(version_condition_holds("<2.0", "libtorch-1.13.0"));
  EXPECT_TRUE(version_condition_holds("<2.0", "1.13"));
  EXPECT_FALSE(version_condition_holds("<2.0", "2.0"));
  EXPECT_FALSE(version_condition_holds("<2.0", "2.1.0+cu118"));
  // Numbers, not text: 1.9 is below 1.13.
  EXPECT_FALSE(version_condition_holds(">=1.13", "1.9.0"));
  EXPECT_TRUE(version_condition_holds("<1.13", "1.9.0"));
  EXPECT_TRUE(version_condition_holds(">=1.13", "10.0"));
  // No version (or an unreadable one): no condition holds.
  for (const char* v : {"", "unknown"}) {
    EXPECT_FALSE(version_condition_holds(">=2.0", v)) << v;
    EXPECT_FALSE(version_condition_holds("<2.0", v)) << v;
  }
}

TEST(VersionCondition, StrictOperators) {
  EXPECT_TRUE(version_condition_holds(">2.0", "2.1.0"));
  EXPECT_FALSE(version_condition_holds(">2.0", "2.0.1"));  // major.minor only: 2.0.1 is 2.0
  EXPECT_TRUE(version_condition_holds("<=2.0", "2.0.0"));
  EXPECT_FALSE(version_condition_holds("<=2.0", "2.1.0"));
}

TEST(VersionCondition, UnreadableConditionsThrow) {
  for (const char* bad : {"2.0", "=2.0", "==2.0", ">=", "<", ">=two", "<2", "~2.0"})
    EXPECT_THROW(version_condition_holds(bad, "2.0.0"), std::invalid_argument) << "'" << bad << "'";
}

// An empty condition is unreadable like any other: std::invalid_argument (which named_case.h turns into a
// read error naming the pointer), not another exception.
TEST(VersionCondition, EmptyConditionThrowsInvalidArgument) {
  try {
    version_condition_holds("", "2.0.0");
    ADD_FAILURE() << "no error for an empty condition";
  } catch (const std::invalid_argument&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << "an empty condition throws " << typeid(e).name() << " (" << e.what() << "), not std::invalid_argument";
  }
}

// "<=2.0" is neither of the documented forms (">=X", "<X"). It must be rejected, or else mean what it says;
// it must not be read as "<2.0" (which is false for 2.0 itself).
TEST(VersionCondition, AtMostIsNotReadAsBelow) {
  bool holds = false;
  try {
    holds = version_condition_holds("<=2.0", "2.0.0");
  } catch (const std::invalid_argument&) {
    return;  // rejected: fine
  }
  EXPECT_TRUE(holds) << "\"<=2.0\" was accepted and read as \"<2.0\"";
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

TEST(Capabilities, HugeVersionNumbersAreNotVersions) {
  EXPECT_FALSE(parse_pytorch_version("99999999999999999999.1"));
  EXPECT_EQ(parse_pytorch_version("123456.7"), std::make_pair(123456, 7));
}

// A version and a default that contradict each other are told at the handshake (SEM-12.2).
TEST(Capabilities, AVersionContradictingTheDeclaredDefaultIsAWarning) {
  const Capabilities c = capabilities_from_hello(
      nlohmann::ordered_json::parse(R"({"name": "x", "pytorch_version": "2.1.0", "defaults": {"zero_grad": "zero"}})"));
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("2.1.0"), std::string::npos);
  EXPECT_TRUE(capabilities_from_hello(nlohmann::ordered_json::parse(
                  R"({"name": "x", "pytorch_version": "2.1.0", "defaults": {"zero_grad": "none"}})"))
                  .warnings.empty());
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// `lockstep features` prints "op:add"; a hello may spell an op either way (issue 30).
TEST(Capabilities, OpsMaySpellTheOpPrefix) {
  const Capabilities c = capabilities_from_hello(nlohmann::ordered_json::parse(
      R"({"name": "x", "version": "1", "protocol": 2, "supports": {"ops": ["op:add", "mul"]}})"));
  ASSERT_TRUE(c.ops);
  EXPECT_EQ(*c.ops, (std::set<std::string>{"add", "mul"}));
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();
  FeatureScope scope;
  exclude_unsupported(c, scope);
  EXPECT_FALSE(scope.allows("op:sub"));
  EXPECT_TRUE(scope.allows("op:add"));
  EXPECT_TRUE(scope.allows("op:mul"));
}

// A protocol-1 driver (no hello, or a hello saying 1) that declares no optimizers is held to SGD, Adam and AdamW
// with every option; protocol 2, or optimizers declared, is taken as declared. An in-process engine: everything.
TEST(Capabilities, ProtocolOneDriversAreHeldToProtocolOnesOptimizers) {
  using json = nlohmann::ordered_json;
  for (const json& hello : {json(), json::parse(R"({"name": "x", "version": "1", "protocol": 1})")}) {
    const Capabilities c = driver_capabilities(hello);
    EXPECT_EQ(c.protocol, 1);
    ASSERT_TRUE(c.optimizers);
    EXPECT_EQ(c.optimizers->size(), 3u);
    EXPECT_EQ(c.optimizers->at("sgd"), (std::set<std::string>{"lr", "momentum", "dampening", "weight_decay", "nesterov"}));
    EXPECT_EQ(c.optimizers->at("adamw").count("amsgrad"), 1u);
    EXPECT_NE(c.protocol_note.find("protocol 2"), std::string::npos) << c.protocol_note;
    EXPECT_NE(c.protocol_note.find("--exclude-features"), std::string::npos);
    EXPECT_NE(c.protocol_note.find("--profile"), std::string::npos);
    FeatureScope scope;
    exclude_unsupported(c, scope);
    EXPECT_FALSE(scope.allows("rmsprop"));
    EXPECT_FALSE(scope.allows("adagrad"));
    EXPECT_TRUE(scope.allows("adam"));
    EXPECT_TRUE(scope.allows("sgd.nesterov"));
    EXPECT_TRUE(scope.allows("op:cross_entropy"));
  }
  const Capabilities two = driver_capabilities(json::parse(R"({"name": "x", "version": "1", "protocol": 2})"));
  EXPECT_EQ(two.protocol, 2);
  ASSERT_TRUE(two.optimizers);  // every optimizer but those of a later protocol (L-BFGS: 5)
  EXPECT_EQ(two.optimizers->count("rmsprop"), 1u);
  EXPECT_EQ(two.optimizers->count("lbfgs"), 0u);
  const Capabilities declared = driver_capabilities(json::parse(
      R"({"name": "x", "version": "1", "protocol": 1, "supports": {"optimizers": {"rmsprop": ["lr"]}}})"));
  ASSERT_TRUE(declared.optimizers);
  EXPECT_EQ(declared.optimizers->count("rmsprop"), 1u);
  EXPECT_EQ(declared.protocol_note.find("RMSprop"), std::string::npos) << declared.protocol_note;
  EXPECT_EQ(capabilities_from_hello(json()).protocol, 0);  // an in-process engine
}

// Ops that came with a later protocol (softplus: 3) are not sent to a driver of an older one that lists no ops: it was
// written before they existed. A list of ops, or protocol 3, is taken as declared.
TEST(Capabilities, DriversOfAnOlderProtocolGetNoLaterOps) {
  using json = nlohmann::ordered_json;
  for (const char* hello : {R"({"name": "x", "version": "1", "protocol": 1})", R"({"name": "x", "version": "1", "protocol": 2})"}) {
    const Capabilities c = driver_capabilities(json::parse(hello));
    ASSERT_TRUE(c.ops) << hello;
    EXPECT_EQ(c.ops->count("softplus"), 0u) << hello;
    EXPECT_EQ(c.ops->count("tanh"), 1u) << hello;
    EXPECT_NE(c.protocol_note.find("softplus"), std::string::npos) << c.protocol_note;
    EXPECT_NE(c.protocol_note.find("\"protocol\": " + std::to_string(kDriverProtocolVersion)), std::string::npos)
        << c.protocol_note;
    FeatureScope scope;
    exclude_unsupported(c, scope);
    EXPECT_FALSE(scope.allows("op:softplus")) << hello;
    EXPECT_TRUE(scope.allows("op:tanh")) << hello;
  }
  const Capabilities three = driver_capabilities(json::parse(R"({"name": "x", "version": "1", "protocol": 3})"));
  EXPECT_FALSE(three.ops);
  EXPECT_EQ(three.protocol_note.find("softplus"), std::string::npos) << three.protocol_note;
  const Capabilities listed = driver_capabilities(json::parse(
      R"({"name": "x", "version": "1", "protocol": 2, "supports": {"ops": ["softplus", "sum"], "features": ["hold_grad"]}})"));
  ASSERT_TRUE(listed.ops);
  EXPECT_EQ(*listed.ops, (std::set<std::string>{"softplus", "sum"}));
  EXPECT_EQ(listed.protocol_note.find("softplus"), std::string::npos) << listed.protocol_note;
}

// A step's closure came with protocol 4 (SEMANTICS §17): a driver of an older protocol that lists no features gets every
// other feature and no closure, and the note says how to get it; a list of features, or protocol 4, is taken as declared.
TEST(Capabilities, DriversOfAnOlderProtocolGetNoClosure) {
  using json = nlohmann::ordered_json;
  for (const char* hello : {R"({"name": "x", "version": "1", "protocol": 1})", R"({"name": "x", "version": "1", "protocol": 3})"}) {
    const Capabilities c = driver_capabilities(json::parse(hello));
    ASSERT_TRUE(c.features) << hello;
    EXPECT_EQ(c.features->count("closure"), 0u) << hello;
    EXPECT_EQ(c.features->count("retain_graph"), 1u) << hello;
    EXPECT_NE(c.protocol_note.find("closure"), std::string::npos) << c.protocol_note;
    EXPECT_NE(c.protocol_note.find("closure (protocol 4)"), std::string::npos) << c.protocol_note;
    FeatureScope scope;
    exclude_unsupported(c, scope);
    EXPECT_FALSE(scope.allows("closure")) << hello;
    EXPECT_TRUE(scope.allows("retain_graph")) << hello;
    EXPECT_TRUE(scope.allows("special_values")) << hello;
  }
  const Capabilities four = driver_capabilities(json::parse(R"({"name": "x", "version": "1", "protocol": 4})"));
  ASSERT_TRUE(four.features);
  EXPECT_EQ(four.features->count("closure"), 1u);
  EXPECT_EQ(four.protocol_note.find("closure"), std::string::npos) << four.protocol_note;
  const Capabilities listed = driver_capabilities(
      json::parse(R"({"name": "x", "version": "1", "protocol": 3, "supports": {"features": ["closure"]}})"));
  ASSERT_TRUE(listed.features);
  EXPECT_EQ(*listed.features, (std::set<std::string>{"closure"}));
  EXPECT_EQ(listed.protocol_note.find("closure"), std::string::npos) << listed.protocol_note;
}

// L-BFGS came with protocol 5 (SEMANTICS §16): a driver of protocol 2 to 4 that lists no optimizers gets every other
// optimizer with every option, and the note says how to get it; a list of optimizers, or protocol 5, is taken as
// declared.
TEST(Capabilities, DriversOfAnOlderProtocolGetNoLbfgs) {
  using json = nlohmann::ordered_json;
  for (const char* hello : {R"({"name": "x", "version": "1", "protocol": 2})", R"({"name": "x", "version": "1", "protocol": 4})"}) {
    const Capabilities c = driver_capabilities(json::parse(hello));
    ASSERT_TRUE(c.optimizers) << hello;
    EXPECT_EQ(c.optimizers->count("lbfgs"), 0u) << hello;
    ASSERT_EQ(c.optimizers->count("adagrad"), 1u) << hello;
    EXPECT_EQ(c.optimizers->at("adagrad").count("lr_decay"), 1u) << hello;
    EXPECT_NE(c.protocol_note.find("lbfgs"), std::string::npos) << c.protocol_note;
    EXPECT_NE(c.protocol_note.find("lbfgs (protocol 5)"), std::string::npos) << c.protocol_note;
    FeatureScope scope;
    exclude_unsupported(c, scope);
    EXPECT_FALSE(scope.allows("lbfgs")) << hello;
    EXPECT_TRUE(scope.allows("adagrad")) << hello;
    EXPECT_TRUE(scope.allows("rmsprop.centered")) << hello;
  }
  // Protocol 5 gets every optimizer, L-BFGS too, with every option but maximize (protocol 8, SEMANTICS §20).
  const Capabilities five = driver_capabilities(json::parse(R"({"name": "x", "version": "1", "protocol": 5})"));
  ASSERT_TRUE(five.optimizers);
  EXPECT_EQ(five.optimizers->count("lbfgs"), 1u);
  EXPECT_EQ(five.optimizers->at("sgd").count("maximize"), 0u);
  EXPECT_EQ(five.protocol_note.find("lbfgs"), std::string::npos) << five.protocol_note;
  const Capabilities listed = driver_capabilities(json::parse(
      R"({"name": "x", "version": "1", "protocol": 4, "supports": {"optimizers": {"lbfgs": ["lr", "max_iter"]}}})"));
  ASSERT_TRUE(listed.optimizers);
  EXPECT_EQ(listed.optimizers->count("lbfgs"), 1u);
  EXPECT_EQ(listed.protocol_note.find("lbfgs"), std::string::npos) << listed.protocol_note;
}

// Gradient clipping came with protocol 6 (SEMANTICS §18): a driver of protocol 5 or older that lists no features gets no
// clip_grad_norm or clip_grad_value, and the note says how to get them; protocol 6, or a list naming them, gets them.
TEST(Capabilities, DriversOfAnOlderProtocolGetNoClipping) {
  using json = nlohmann::ordered_json;
  const Capabilities five = driver_capabilities(json::parse(R"({"name": "x", "version": "1", "protocol": 5})"));
  ASSERT_TRUE(five.features);
  EXPECT_EQ(five.features->count("clip_grad_norm"), 0u);
  EXPECT_EQ(five.features->count("clip_grad_value"), 0u);
  EXPECT_EQ(five.features->count("closure"), 1u);
  EXPECT_NE(five.protocol_note.find("clip_grad_norm (protocol 6)"), std::string::npos) << five.protocol_note;
  EXPECT_NE(five.protocol_note.find("\"protocol\": 8"), std::string::npos) << five.protocol_note;
  FeatureScope scope;
  exclude_unsupported(five, scope);
  EXPECT_FALSE(scope.allows("clip_grad_norm"));
  EXPECT_FALSE(scope.allows("clip_grad_value"));
  EXPECT_TRUE(scope.allows("closure"));
  // Checkpoints came with protocol 7 (SEMANTICS §19): protocol 6 gets clipping and not them; 7 gets everything.
  const Capabilities six = driver_capabilities(json::parse(R"({"name": "x", "version": "1", "protocol": 6})"));
  ASSERT_TRUE(six.features);
  EXPECT_EQ(six.features->count("clip_grad_norm"), 1u);
  EXPECT_EQ(six.features->count("state_dict"), 0u);
  EXPECT_EQ(six.features->count("load_state_dict"), 0u);
  EXPECT_NE(six.protocol_note.find("state_dict (protocol 7)"), std::string::npos) << six.protocol_note;
  const Capabilities seven = driver_capabilities(json::parse(R"({"name": "x", "version": "1", "protocol": 7})"));
  EXPECT_FALSE(seven.features);
  const Capabilities listed = driver_capabilities(
      json::parse(R"({"name": "x", "version": "1", "protocol": 5, "supports": {"features": ["clip_grad_value"]}})"));
  ASSERT_TRUE(listed.features);
  EXPECT_EQ(*listed.features, (std::set<std::string>{"clip_grad_value"}));
}

// maximize came with protocol 8 (SEMANTICS §20): an older driver that lists no options gets every optimizer's other
// options and not it, and the note says how to get it; protocol 8 gets it; a driver listing its options gets what it lists.
TEST(Capabilities, MaximizeCameWithProtocol8) {
  const Capabilities seven = driver_capabilities(json::parse(R"({"name": "x", "version": "1", "protocol": 7})"));
  ASSERT_TRUE(seven.optimizers);
  for (const char* optimizer : {"sgd", "adam", "adamw", "rmsprop", "adagrad"}) {
    ASSERT_TRUE(seven.optimizers->count(optimizer)) << optimizer;
    EXPECT_EQ(seven.optimizers->at(optimizer).count("maximize"), 0u) << optimizer;
    EXPECT_EQ(seven.optimizers->at(optimizer).count("lr"), 1u) << optimizer;
  }
  EXPECT_EQ(seven.optimizers->at("lbfgs").count("max_iter"), 1u);
  EXPECT_NE(seven.protocol_note.find("maximize (protocol 8)"), std::string::npos) << seven.protocol_note;
  FeatureScope scope;
  exclude_unsupported(seven, scope);
  EXPECT_FALSE(scope.allows("adam.maximize"));
  EXPECT_TRUE(scope.allows("adam.amsgrad"));
  const Capabilities one = driver_capabilities(nullptr);
  ASSERT_TRUE(one.optimizers);
  EXPECT_EQ(one.optimizers->at("sgd").count("maximize"), 0u);
  EXPECT_EQ(one.optimizers->at("sgd").count("nesterov"), 1u);
  const Capabilities eight = driver_capabilities(json::parse(R"({"name": "x", "version": "1", "protocol": 8})"));
  EXPECT_FALSE(eight.optimizers);
  EXPECT_TRUE(eight.protocol_note.empty()) << eight.protocol_note;
}

}  // namespace
}  // namespace lockstep
