// Tests of the program JSON format (program_json.h): round trips, and a clear error with the JSON pointer
// (and the file) for every kind of bad input, including the files under testdata/bad/.
#include "conformance/program/program_json.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "conformance/program/json_reader.h"
#include "conformance/program/data_dir.h"
#include "conformance/program/file_system.h"

namespace lockstep {
namespace {

using nlohmann::ordered_json;

const std::string kBadDir = source_dir() + "/conformance/testdata/bad/";

// A program that uses every op, every action and both optimizer forms' features, with awkward numbers.
Program rich_program() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Program p;
  p.params = {
      {"x", DType::Float64, {3}, {0.1, -0.0, 4.9e-324}},
      {"h", DType::Float32, {3}, {0.1f, 1e-45f, -3.4028235e38f}},
      {"m", DType::Float64, {2, 3}, {1, 2, 3, 4, 5, nan}},
      {"w", DType::Float64, {4, 3}, std::vector<double>(12, 0.25)},
      {"b", DType::Float64, {4}, {inf, -inf, 0, 1}},
      {"s", DType::Float64, {}, {2}},
  };
  auto x = param("x");
  auto m = param("m");
  ExprPtr l = add(sum(mul(x, x)), mean(binary(Op::Div, unary(Op::Exp, x), mul_scalar(x, 0.1))));
  l = add(l, sum(binary(Op::Sub, pow_scalar(unary(Op::Tanh, x), 3), unary(Op::Neg, param("s")))));
  l = add(l, sum(unary(Op::Square, unary(Op::Sigmoid, unary(Op::Relu, unary(Op::Abs, unary(Op::Log, x)))))));
  l = add(l, sum(binary(Op::Matmul, m, unary(Op::Neg, param("w")))));  // shapes are not checked here
  l = add(l, binary(Op::MseLoss, x, constant({DType::Float32, {3}, {0.1f, 0.2f, 0.3f}})));
  l = add(l, cross_entropy(linear(m, param("w"), param("b")), {0, 3}));
  l = add(l, sum(embedding(param("w"), {0, 0, 3})));
  p.loss = l;
  OptimizerSpec o;
  o.kind = OptimizerKind::Adam;
  o.defaults.lr = 1e-3;
  o.defaults.betas = std::make_pair(0.9, 0.999);
  o.defaults.eps = 1e-8;
  o.defaults.amsgrad = true;
  OptimizerOptions go;
  go.weight_decay = 0.01;
  o.groups = {{{"x", "x"}, std::nullopt}, {{"m"}, go}};
  p.optimizer = o;

  Action fwd;
  fwd.no_grad = true;
  fwd.loss = sum(param("h"));
  Action fwd2;
  Action bwd;
  bwd.kind = ActionKind::Backward;
  bwd.retain_graph = false;
  bwd.create_graph = true;
  bwd.gradient = std::vector<double>{-0.0};
  Action zero;
  zero.kind = ActionKind::ZeroGrad;
  zero.set_to_none = true;
  Action none;
  none.kind = ActionKind::SetGradNone;
  none.param = "x";
  Action hold;
  hold.kind = ActionKind::HoldGrad;
  hold.param = "m";
  hold.handle = "g0";
  Action step;
  step.kind = ActionKind::Step;
  Action set;
  set.kind = ActionKind::SetOptions;
  set.group = 1;
  set.options.lr = 0.5;
  set.options.betas = std::make_pair(0.5, nan);
  Action addg;
  addg.kind = ActionKind::AddParamGroup;
  addg.new_group.params = {"b"};
  addg.new_group.options = OptimizerOptions{};
  addg.new_group.options->eps = 1e-6;
  p.actions = {fwd, fwd2, bwd, zero, none, hold, step, set, addg};
  return p;
}

TEST(ProgramJson, RoundTripIsExact) {
  Program p = rich_program();
  // rich_program's loss does not fit its shapes; check the round trip below validate().
  ordered_json j = program_to_json(p);
  ordered_json again = ordered_json::parse(j.dump(2));
  EXPECT_EQ(again.dump(), j.dump());
  // Read it without validation problems: replace the loss by a valid one.
  p.loss = sum(mul(param("x"), param("x")));
  p.actions[2].gradient.reset();
  j = program_to_json(p);
  Program q = program_from_json(ordered_json::parse(j.dump()));
  EXPECT_EQ(program_to_json(q).dump(), j.dump());
  ASSERT_EQ(q.params.size(), p.params.size());
  for (size_t i = 0; i < p.params.size(); ++i) {
    EXPECT_EQ(q.params[i].name, p.params[i].name);
    EXPECT_EQ((TensorValue{q.params[i].dtype, q.params[i].shape, q.params[i].values}),
              (TensorValue{p.params[i].dtype, p.params[i].shape, p.params[i].values}))
        << p.params[i].name;
  }
  EXPECT_EQ(std::signbit(q.params[0].values[1]), true);  // -0.0 survives
  EXPECT_EQ(q.params[0].values[2], 4.9e-324);             // a denormal survives
  ASSERT_TRUE(q.optimizer);
  EXPECT_EQ(q.optimizer->kind, OptimizerKind::Adam);
  EXPECT_EQ(q.optimizer->defaults, p.optimizer->defaults);
  ASSERT_EQ(q.optimizer->groups.size(), 2u);
  EXPECT_EQ(q.optimizer->groups[0].params, (std::vector<std::string>{"x", "x"}));
  EXPECT_FALSE(q.optimizer->groups[0].options);
  EXPECT_EQ(q.optimizer->groups[1].options, p.optimizer->groups[1].options);
  ASSERT_EQ(q.actions.size(), p.actions.size());
  for (size_t i = 0; i < p.actions.size(); ++i) EXPECT_EQ(q.actions[i].kind, p.actions[i].kind) << i;
  EXPECT_TRUE(q.actions[0].no_grad);
  EXPECT_FALSE(q.actions[1].loss);
  EXPECT_EQ(q.actions[2].retain_graph, std::optional<bool>(false));
  EXPECT_TRUE(q.actions[2].create_graph);
  EXPECT_TRUE(q.actions[3].set_to_none);
  EXPECT_EQ(q.actions[5].handle, "g0");
  EXPECT_EQ(q.actions[7].group, 1);
  EXPECT_EQ(q.actions[7].options, p.actions[7].options);  // NaN beta included
  EXPECT_EQ(q.actions[8].new_group.params, std::vector<std::string>{"b"});
  EXPECT_EQ(q.actions[8].new_group.options, p.actions[8].new_group.options);
}

TEST(ProgramJson, EveryExpressionFormRoundTrips) {
  // The rich loss, written and re-read as an expression document, gives the same document.
  Program p = rich_program();
  ordered_json loss = expr_to_json(*p.loss);
  EXPECT_NE(loss.dump().find("\"op\":\"cross_entropy\""), std::string::npos);
  EXPECT_NE(loss.dump().find("\"targets\":[0,3]"), std::string::npos);
  EXPECT_NE(loss.dump().find("\"indices\":[0,0,3]"), std::string::npos);
  EXPECT_NE(loss.dump().find("\"exponent\":3.0"), std::string::npos);
  EXPECT_NE(loss.dump().find("\"scalar\":0.1"), std::string::npos);
  EXPECT_NE(loss.dump().find("\"values\":[0.1,0.2,0.3]"), std::string::npos);  // float32 shortest
}

TEST(ProgramJson, ReadsTheDocumentedFormat) {
  const char* text = R"J({
    "comment": "y = (x*x).sum()",
    "params": [{"name": "x", "dtype": "float64", "shape": [3], "values": [1, 2, 3]},
               {"name": "y", "dtype": "float32", "shape": [3], "values": [0.1, 0.2, 0.3]}],
    "loss": {"op": "sum", "comment": "reduce", "args": [{"op": "mul", "args": [{"op": "param", "name": "x"},
                                                                       {"op": "param", "name": "x"}]}]},
    "optimizer": {"type": "sgd", "defaults": {"lr": 0.1, "momentum": 0.9, "nesterov": false}, "params": ["x"]},
    "actions": [{"action": "forward", "comment": "first"}, {"action": "backward"}, {"action": "step"},
                {"action": "forward", "loss": {"op": "sum", "args": [{"op": "add", "args": [
                    {"op": "param", "name": "y"}, {"op": "const", "shape": [], "values": [0.1]}]}]}},
                {"action": "backward", "gradient": [1.5]}]
  })J";
  Program p = program_from_text(text, "inline.json");
  ASSERT_EQ(p.params.size(), 2u);
  EXPECT_EQ(p.params[1].values[0], static_cast<double>(0.1f));  // float32 values are floats
  EXPECT_EQ(p.loss->op, Op::Sum);
  ASSERT_TRUE(p.optimizer);
  ASSERT_EQ(p.optimizer->groups.size(), 1u);
  EXPECT_FALSE(p.optimizer->groups[0].options);
  EXPECT_EQ(p.optimizer->defaults.momentum, std::optional<double>(0.9));
  EXPECT_EQ(p.optimizer->defaults.nesterov, std::optional<bool>(false));
  EXPECT_FALSE(p.optimizer->defaults.dampening);
  // The untyped const took its sibling's dtype (float32) and is rounded to a float.
  const Expr& c = *p.actions[3].loss->args[0]->args[1];
  EXPECT_EQ(c.constant.dtype, DType::Float32);
  EXPECT_EQ(c.constant.data[0], static_cast<double>(0.1f));
  EXPECT_EQ(*p.actions[4].gradient, std::vector<double>{1.5});
  // The shorthand is written back as the shorthand.
  EXPECT_EQ(program_to_json(p)["optimizer"]["params"], ordered_json::array({"x"}));
}

TEST(ProgramJson, UntypedConstTakesTheSiblingDtype) {
  const char* text = R"({"params": [{"name": "x", "dtype": "float64", "shape": [1], "values": [1]}],
    "loss": {"op": "sum", "args": [{"op": "mul", "args": [{"op": "const", "shape": [], "values": [0.1]},
                                                          {"op": "param", "name": "x"}]}]},
    "actions": [{"action": "forward", "loss": {"op": "sum", "args": [{"op": "const", "shape": [], "values": [0.1]}]}}]})";
  Program p = program_from_text(text, "t.json");
  const Expr& c = *p.loss->args[0]->args[0];
  EXPECT_EQ(c.constant.dtype, DType::Float64);
  EXPECT_EQ(c.constant.data[0], 0.1);
  const Expr& lone = *p.actions[0].loss->args[0];  // no sibling: float32
  EXPECT_EQ(lone.constant.dtype, DType::Float32);
  EXPECT_EQ(lone.constant.data[0], static_cast<double>(0.1f));
}

// Each kind of bad input: the message names the JSON pointer.
struct BadCase {
  std::string name, text, pointer, fragment;
};

const char* kParams = R"("params": [{"name": "x", "dtype": "float64", "shape": [3], "values": [1, 2, 3]},
                                    {"name": "m", "dtype": "float64", "shape": [2, 3], "values": [1, 2, 3, 4, 5, 6]}])";

std::string with(const std::string& rest) { return std::string("{") + kParams + ", " + rest + "}"; }

const std::string kSumX = R"({"op": "sum", "args": [{"op": "param", "name": "x"}]})";

// With the program's loss sum(x).
std::string with_loss(const std::string& rest) { return with(R"("loss": )" + kSumX + ", " + rest); }

std::vector<BadCase> bad_cases() {
  return {
      {"not_an_object", "[1, 2]", "", "expected an object (a program), got array"},
      // SEMANTICS §18: clipping's fields
      {"clip_unknown_param", with(R"("actions": [{"action": "clip_grad_norm", "params": ["x", "y"], "max_norm": 1}])"),
       "/actions/0/params/1", "unknown parameter 'y'"},
      {"clip_missing_max_norm", with(R"("actions": [{"action": "clip_grad_norm", "params": ["x"]}])"), "/actions/0",
       "needs the field 'max_norm'"},
      {"clip_norm_type_three", with(R"("actions": [{"action": "clip_grad_norm", "params": [], "max_norm": 1, "norm_type": 3}])"),
       "/actions/0/norm_type", "norm_type 3 is not one lockstep models"},
      {"clip_norm_type_nan", with(R"("actions": [{"action": "clip_grad_norm", "params": [], "max_norm": 1, "norm_type": "NaN"}])"),
       "/actions/0/norm_type", "norm_type \"NaN\" is not one lockstep models"},
      {"clip_value_missing", with(R"("actions": [{"action": "clip_grad_value", "params": ["x"]}])"), "/actions/0",
       "needs the field 'clip_value'"},
      {"clip_value_foreign_field", with(R"("actions": [{"action": "clip_grad_value", "params": ["x"], "clip_value": 1, "max_norm": 2}])"),
       "/actions/0/max_norm", "unknown field 'max_norm'"},
      {"clip_in_closure", with_loss(R"("optimizer": {"type": "sgd", "defaults": {"lr": 0.1}, "params": ["x"]},
       "actions": [{"action": "step", "closure": [{"action": "forward"}, {"action": "clip_grad_value", "params": ["x"], "clip_value": 1}]}])"),
       "/actions/0/closure/1/action", "a closure cannot hold clip_grad_value"},
      // SEMANTICS §19: checkpoints' fields
      {"load_unsaved_checkpoint", with(R"("optimizer": {"type": "sgd", "defaults": {"lr": 0.1}, "params": ["x"]},
       "actions": [{"action": "load_state_dict", "checkpoint": "c"}, {"action": "state_dict", "checkpoint": "c"}])"),
       "/actions/0/checkpoint", "no earlier state_dict saved checkpoint 'c'"},
      {"state_dict_empty_name", with(R"("actions": [{"action": "state_dict", "checkpoint": ""}])"), "/actions/0/checkpoint",
       "needs a non-empty checkpoint name"},
      {"load_fresh_not_bool", with(R"("actions": [{"action": "state_dict", "checkpoint": "c"},
       {"action": "load_state_dict", "checkpoint": "c", "fresh": 1}])"), "/actions/1/fresh", "expected true or false"},
      {"state_dict_in_closure", with_loss(R"("optimizer": {"type": "sgd", "defaults": {"lr": 0.1}, "params": ["x"]},
       "actions": [{"action": "step", "closure": [{"action": "forward"}, {"action": "state_dict", "checkpoint": "c"}]}])"),
       "/actions/0/closure/1/action", "a closure cannot hold state_dict"},
      {"missing_actions", std::string("{") + kParams + "}", "", "needs the field 'actions'"},
      {"unknown_top_field", with(R"("actions": [], "extra": 1)"), "/extra", "unknown field 'extra'"},
      {"comment_not_string", with(R"("actions": [], "comment": 3)"), "/comment", "expected a string"},
      {"params_not_array", R"({"params": {}, "actions": []})", "/params", "expected an array"},
      {"missing_dtype", R"({"params": [{"name": "x", "shape": [1], "values": [1]}], "actions": []})", "/params/0",
       "needs the field 'dtype'"},
      {"unknown_dtype", R"({"params": [{"name": "x", "dtype": "int64", "shape": [1], "values": [1]}], "actions": []})",
       "/params/0/dtype", "unknown dtype 'int64'"},
      {"shape_wrong_type", R"({"params": [{"name": "x", "dtype": "float64", "shape": 3, "values": [1]}], "actions": []})",
       "/params/0/shape", "expected an array"},
      {"negative_dim", R"({"params": [{"name": "x", "dtype": "float64", "shape": [-1], "values": []}], "actions": []})",
       "/params/0/shape/0", "non-negative integer, got -1"},
      {"fractional_dim", R"({"params": [{"name": "x", "dtype": "float64", "shape": [1.5], "values": [1]}], "actions": []})",
       "/params/0/shape/0", "non-negative integer"},
      {"value_not_number", R"({"params": [{"name": "x", "dtype": "float64", "shape": [2], "values": [1, "one"]}], "actions": []})",
       "/params/0/values/1", "expected a number"},
      {"wrong_value_count", R"({"params": [{"name": "x", "dtype": "float64", "shape": [2], "values": [1]}], "actions": []})",
       "/params/0/values", "needs 2 values, got 1"},
      {"too_many_elements", R"({"params": [{"name": "x", "dtype": "float64", "shape": [1048577], "values": []}], "actions": []})",
       "/params/0/shape", "limit"},
      {"param_unknown_field", R"({"params": [{"name": "x", "dtype": "float64", "shape": [], "values": [1], "grad": 1}], "actions": []})",
       "/params/0/grad", "unknown field 'grad'"},
      {"duplicate_param", R"({"params": [{"name": "x", "dtype": "float64", "shape": [], "values": [1]},
                                         {"name": "x", "dtype": "float64", "shape": [], "values": [1]}], "actions": []})",
       "/params/1/name", "duplicate"},
      {"unknown_op", with(R"("loss": {"op": "sum", "args": [{"op": "softmax", "args": []}]}, "actions": [])"),
       "/loss/args/0/op", "unknown op 'softmax'"},
      {"op_not_string", with(R"("loss": {"op": 1}, "actions": [])"), "/loss/op", "expected a string"},
      {"missing_args", with(R"("loss": {"op": "sum"}, "actions": [])"), "/loss", "needs the field 'args'"},
      {"wrong_arity", with(R"("loss": {"op": "add", "args": [{"op": "param", "name": "x"}]}, "actions": [])"),
       "/loss/args", "takes 2 operands, got 1"},
      {"unknown_param", with(R"("loss": {"op": "sum", "args": [{"op": "mul", "args": [{"op": "param", "name": "x"},
          {"op": "param", "name": "y"}]}]}, "actions": [])"), "/loss/args/0/args/1/name", "unknown parameter 'y'"},
      {"shape_mismatch", with(R"("loss": {"op": "sum", "args": [{"op": "add", "args": [{"op": "param", "name": "x"},
          {"op": "param", "name": "m"}]}]}, "actions": [])"), "/loss/args/0", "shapes do not match"},
      {"expr_unknown_field", with(R"("loss": {"op": "param", "name": "x", "args": []}, "actions": [])"), "/loss/args",
       "unknown field 'args'"},
      {"missing_scalar", with(R"("loss": {"op": "mul_scalar", "args": [{"op": "param", "name": "x"}]}, "actions": [])"),
       "/loss", "needs the field 'scalar'"},
      {"const_values", with(R"("loss": {"op": "const", "shape": [2], "values": [1, 2, 3]}, "actions": [])"),
       "/loss/values", "needs 2 values, got 3"},
      {"negative_target", with(R"("loss": {"op": "cross_entropy", "args": [{"op": "param", "name": "m"}], "targets": [0, -2]}, "actions": [])"),
       "/loss/targets/1", "non-negative integer, got -2"},
      {"target_out_of_range", with(R"("loss": {"op": "cross_entropy", "args": [{"op": "param", "name": "m"}], "targets": [0, 3]}, "actions": [])"),
       "/loss/targets/1", "not a class in [0, 3)"},
      {"non_integer_index", with(R"("loss": {"op": "sum", "args": [{"op": "embedding", "args": [{"op": "param", "name": "m"}], "indices": [0.5]}]}, "actions": [])"),
       "/loss/args/0/indices/0", "non-negative integer"},
      {"actions_not_array", with(R"("actions": {})"), "/actions", "expected an array"},
      {"action_not_object", with(R"("actions": ["forward"])"), "/actions/0", "expected an object (an action)"},
      {"missing_action", with(R"("actions": [{"loss": {"op": "param", "name": "x"}}])"), "/actions/0",
       "needs the field 'action'"},
      {"unknown_action", with(R"("loss": )" + kSumX + R"(, "actions": [{"action": "forward"}, {"action": "fly"}])"),
       "/actions/1/action", "unknown action 'fly'"},
      {"action_unknown_field", with(R"("loss": )" + kSumX + R"(, "actions": [{"action": "step", "lr": 1}])"),
       "/actions/0/lr", "unknown field 'lr'"},
      {"field_of_other_action", with(R"("loss": )" + kSumX + R"(, "actions": [{"action": "forward", "retain_graph": true}])"),
       "/actions/0/retain_graph", "unknown field"},
      {"bool_wrong_type", with(R"("loss": )" + kSumX + R"(, "actions": [{"action": "forward", "no_grad": 1}])"),
       "/actions/0/no_grad", "expected true or false"},
      {"forward_without_loss", with(R"("actions": [{"action": "forward"}])"), "/actions/0", "no loss"},
      {"action_loss_unknown_param", with(R"("actions": [{"action": "forward", "loss": {"op": "param", "name": "q"}}])"),
       "/actions/0/loss/name", "unknown parameter 'q'"},
      {"gradient_size", with(R"("loss": )" + kSumX + R"(, "actions": [{"action": "forward"}, {"action": "backward", "gradient": [1, 2]}])"),
       "/actions/1/gradient", "needs 1 value, got 2"},
      {"hold_grad_unknown_param", with(R"("actions": [{"action": "hold_grad", "param": "z", "handle": "g"}])"),
       "/actions/0/param", "unknown parameter 'z'"},
      {"hold_grad_missing_handle", with(R"("actions": [{"action": "hold_grad", "param": "x"}])"), "/actions/0",
       "needs the field 'handle'"},
      {"hold_grad_empty_handle", with(R"("actions": [{"action": "hold_grad", "param": "x", "handle": ""}])"),
       "/actions/0/handle", "non-empty"},
      {"set_grad_none_unknown", with(R"("actions": [{"action": "set_grad_none", "param": "z"}])"), "/actions/0/param",
       "unknown parameter"},
      {"set_options_without_optimizer", with(R"("actions": [{"action": "set_options", "group": 0, "options": {"lr": 1}}])"),
       "/actions/0", "needs an optimizer"},
      {"negative_group", with(R"("optimizer": {"type": "adam", "params": ["x"]}, "actions": [{"action": "set_options", "group": -1, "options": {}}])"),
       "/actions/0/group", "non-negative integer, got -1"},
      {"non_integer_group", with(R"("optimizer": {"type": "adam", "params": ["x"]}, "actions": [{"action": "set_options", "group": 0.5, "options": {}}])"),
       "/actions/0/group", "non-negative integer"},
      {"add_group_unknown_param", with(R"("optimizer": {"type": "adam", "params": ["x"]}, "actions": [{"action": "add_param_group", "params": ["m", "k"]}])"),
       "/actions/0/params/1", "unknown parameter 'k'"},
      {"unknown_optimizer", with(R"("optimizer": {"type": "rprop", "params": ["x"]}, "actions": [])"), "/optimizer/type",
       "unknown optimizer 'rprop'"},
      {"optimizer_both_forms", with(R"("optimizer": {"type": "adam", "params": ["x"], "groups": []}, "actions": [])"),
       "/optimizer", "exactly one of"},
      {"optimizer_unknown_param", with(R"("optimizer": {"type": "adam", "params": ["x", "nope"]}, "actions": [])"),
       "/optimizer/params/1", "unknown parameter 'nope'"},
      {"group_unknown_param", with(R"("optimizer": {"type": "adam", "groups": [{"params": ["x"]}, {"params": ["nope"]}]}, "actions": [])"),
       "/optimizer/groups/1/params/0", "unknown parameter 'nope'"},
      {"sgd_without_lr", with(R"("optimizer": {"type": "sgd", "defaults": {"momentum": 0.9}, "params": ["x"]}, "actions": [])"),
       "/optimizer/defaults", "need 'lr'"},
      {"sgd_group_without_lr", with(R"("optimizer": {"type": "sgd", "defaults": {"lr": 1}, "groups": [{"params": ["x"], "options": {}}]}, "actions": [])"),
       "/optimizer/groups/0/options", "need 'lr'"},
      {"betas_on_sgd", with(R"("optimizer": {"type": "sgd", "defaults": {"lr": 1, "betas": [0.9, 0.99]}, "params": ["x"]}, "actions": [])"),
       "/optimizer/defaults/betas", "'betas' does not apply to sgd"},
      {"momentum_on_adamw", with(R"("optimizer": {"type": "adamw", "params": ["x"]}, "actions": [{"action": "set_options", "group": 0, "options": {"momentum": 0.9}}])"),
       "/actions/0/options/momentum", "'momentum' does not apply to adamw"},
      {"unknown_option", with(R"("optimizer": {"type": "adam", "defaults": {"learning_rate": 1}, "params": ["x"]}, "actions": [])"),
       "/optimizer/defaults/learning_rate", "unknown field 'learning_rate'"},
      {"betas_count", with(R"("optimizer": {"type": "adam", "defaults": {"betas": [0.9]}, "params": ["x"]}, "actions": [])"),
       "/optimizer/defaults/betas", "needs 2 numbers"},
      {"escaped_pointer", with(R"("actions": [], "a/b~c": 1)"), "/a~1b~0c", "unknown field 'a/b~c'"},
      {"duplicate_key", R"({"params": [], "actions": [], "params": []})", "/params", "more than once"},
      {"invalid_json", "{\n  \"params\": [,]\n}", "", "line 2, column"},
      {"empty_text", "", "", "invalid JSON"},
      {"number_out_of_range", with(R"("actions": [{"action": "step", "lr": 1e999999}])"), "/actions/0/lr",
       "number overflow"},
      // A step's closure (SEMANTICS §17.2).
      {"closure_on_forward", with(R"("actions": [{"action": "forward", "closure": [{"action": "forward"}]}])"),
       "/actions/0/closure", "unknown field 'closure'"},
      {"closure_not_a_list", with(R"("actions": [{"action": "step", "closure": {"action": "forward"}}])"),
       "/actions/0/closure", "expected an array"},
      {"closure_empty", with(R"("actions": [{"action": "step", "closure": []}])"), "/actions/0/closure",
       "at least one action"},
      {"closure_without_forward", with(R"("actions": [{"action": "step", "closure": [{"action": "zero_grad"}]}])"),
       "/actions/0/closure", "needs a forward"},
      {"closure_holds_a_step", with_loss(R"("actions": [{"action": "step", "closure": [{"action": "forward"}, {"action": "step"}]}])"),
       "/actions/0/closure/1/action", "cannot hold step"},
      {"closure_nests", with_loss(R"("actions": [{"action": "step", "closure": [{"action": "step", "closure": [{"action": "forward"}]}]}])"),
       "/actions/0/closure/0/closure", "cannot hold a step"},
      {"closure_holds_set_options", with_loss(R"("actions": [{"action": "step", "closure": [{"action": "forward"}, {"action": "set_options", "group": 0, "options": {}}]}])"),
       "/actions/0/closure/1/action", "cannot hold set_options"},
      {"closure_unknown_param", with_loss(R"("actions": [{"action": "step", "closure": [{"action": "forward"}, {"action": "set_grad_none", "param": "nope"}]}])"),
       "/actions/0/closure/1/param", "unknown parameter 'nope'"},
  };
}

TEST(ProgramJson, AStepsClosureRoundTrips) {  // SEMANTICS §17.2
  const std::string text = with_loss(R"("actions": [{"action": "step", "closure": [{"action": "zero_grad", "set_to_none": false},
      {"action": "forward"}, {"action": "backward"}, {"action": "hold_grad", "param": "x", "handle": "g"}]},
      {"action": "step"}])");
  Program p = program_from_text(text, "mem.json");
  ASSERT_EQ(p.actions.size(), 2u);
  ASSERT_TRUE(p.actions[0].closure);
  EXPECT_FALSE(p.actions[1].closure);  // a step without one stays without
  ASSERT_EQ(p.actions[0].closure->size(), 4u);
  EXPECT_EQ((*p.actions[0].closure)[0].set_to_none, std::optional<bool>(false));
  EXPECT_EQ((*p.actions[0].closure)[3].handle, "g");
  const ordered_json j = program_to_json(p);
  EXPECT_EQ(j["actions"][0]["closure"].size(), 4u);
  EXPECT_FALSE(j["actions"][1].contains("closure"));
  EXPECT_EQ(program_to_json(program_from_json(j)).dump(), j.dump());
}

TEST(ProgramJson, ClippingRoundTrips) {  // SEMANTICS §18
  const std::string text = with_loss(R"("actions": [{"action": "clip_grad_norm", "params": ["x", "m", "x"], "max_norm": 0.5,
      "norm_type": "Infinity", "error_if_nonfinite": true}, {"action": "clip_grad_norm", "params": [], "max_norm": "NaN"},
      {"action": "clip_grad_value", "params": ["m"], "clip_value": -0.25}])");
  Program p = program_from_text(text, "mem.json");
  ASSERT_EQ(p.actions.size(), 3u);
  EXPECT_EQ(p.actions[0].params, (std::vector<std::string>{"x", "m", "x"}));
  EXPECT_EQ(p.actions[0].max_norm, 0.5);
  EXPECT_TRUE(std::isinf(p.actions[0].norm_type));
  EXPECT_TRUE(p.actions[0].error_if_nonfinite);
  EXPECT_EQ(p.actions[1].norm_type, 2);  // the default
  EXPECT_FALSE(p.actions[1].error_if_nonfinite);
  EXPECT_TRUE(std::isnan(p.actions[1].max_norm));
  EXPECT_EQ(p.actions[2].clip_value, -0.25);
  const ordered_json j = program_to_json(p);
  EXPECT_EQ(j["actions"][0]["norm_type"], "Infinity");
  EXPECT_FALSE(j["actions"][2].contains("max_norm"));
  EXPECT_EQ(program_to_json(program_from_json(j)).dump(), j.dump());
}

TEST(ProgramJson, EveryBadInputNamesItsPointer) {
  for (const BadCase& c : bad_cases()) {
    SCOPED_TRACE(c.name);
    try {
      program_from_text(c.text, "mem.json");
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "mem.json");
      EXPECT_EQ(e.pointer(), c.pointer) << e.what();
      const std::string prefix = c.pointer.empty() ? "mem.json: " : "mem.json: " + c.pointer + ": ";
      EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
      EXPECT_NE(e.message().find(c.fragment), std::string::npos) << e.what();
    }
  }
}

TEST(ProgramJson, ProgramFromJsonThrowsProgramErrorWithThePointer) {
  try {
    program_from_json(ordered_json::parse(with(R"("actions": [{"action": "set_grad_none", "param": 5}])")));
    FAIL();
  } catch (const ProgramError& e) {
    EXPECT_EQ(e.path(), "/actions/0/param");
  }
}

// The files the command-line tests use too.
TEST(ProgramJson, BadFilesNameTheFileAndThePointer) {
  // One list of files and pointers, shared with the command-line tests (tools/cli_test.cc).
  std::ifstream in(kBadDir + "expected_pointers.json");
  const ordered_json expected = ordered_json::parse(in);
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& [name, pointer] : expected.at("files").items()) files.emplace_back(name, pointer.get<std::string>());
  ASSERT_EQ(files.size(), 21u);
  for (const auto& [name, pointer] : files) {
    SCOPED_TRACE(name);
    const std::string path = kBadDir + name;
    try {
      read_program_file(path);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_EQ(e.pointer(), pointer) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(path + ": " + (pointer.empty() ? "" : pointer + ": "), 0), 0u) << e.what();
    }
  }
  // invalid_json.json: the position of the syntax error.
  try {
    read_program_file(kBadDir + "invalid_json.json");
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("line 3, column"), std::string::npos) << e.what();
  }
}

TEST(ProgramJson, MissingFileAndDirectory) {
  try {
    read_program_file(kBadDir + "does_not_exist.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), kBadDir + "does_not_exist.json");
    EXPECT_NE(e.message().find("cannot read"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_program_file(kBadDir), InputError);
}

TEST(ProgramJson, DeepNestingDoesNotOverflowTheStack) {
  for (const char* open_close : {"[]", "{}"}) {
    std::string text;
    const int depth = 100000;
    for (int i = 0; i < depth; ++i) text += open_close[0] == '[' ? "[" : "{\"a\":";
    text += "1";
    for (int i = 0; i < depth; ++i) text += open_close[1];
    try {
      program_from_text(text, "deep.json");
      FAIL();
    } catch (const InputError& e) {
      EXPECT_NE(e.message().find("nesting deeper than"), std::string::npos) << e.message().substr(0, 200);
    }
  }
  // A deep expression, within the text limit but over the expression limit: the expression reader says so.
  std::string e = R"({"op": "param", "name": "x"})";
  for (int i = 0; i < 60; ++i) e = R"({"op": "neg", "args": [)" + e + "]}";
  ProgramLimits limits;
  limits.max_expr_depth = 40;
  try {
    program_from_text(with(R"("loss": )" + e + R"(, "actions": [])"), "deep.json", limits);
    FAIL();
  } catch (const InputError& err) {
    EXPECT_NE(err.message().find("depth limit of 40"), std::string::npos) << err.what();
  }
  // Deep but allowed: sum + 60 neg + param.
  limits.max_expr_depth = 62;
  EXPECT_NO_THROW(program_from_text(with(R"("loss": {"op": "sum", "args": [)" + e + R"(]}, "actions": [])"), "d.json", limits));
}

// Random damage to a valid document never crashes the reader: it accepts or throws InputError.
TEST(ProgramJson, MangledInputNeverCrashes) {
  Program p = rich_program();
  p.loss = sum(mul(param("x"), param("x")));
  p.actions[2].gradient.reset();
  const std::string good = program_to_json(p).dump();
  ASSERT_NO_THROW(program_from_text(good, "good.json"));
  std::mt19937 rng(3);
  const std::string alphabet = "{}[]\",:0123456789-.eE truefalsnul\\";
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      size_t pos = rng() % text.size();
      switch (rng() % 3) {
        case 0: text.erase(pos, 1 + rng() % 8); break;
        case 1: text.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
        default: text[pos] = alphabet[rng() % alphabet.size()]; break;
      }
    }
    try {
      program_from_text(text, "m.json");
      ++accepted;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "m.json");
    }
  }
  EXPECT_LT(accepted, 3000);
}

// SEM-12.1: zero_grad() without set_to_none is the framework's default, and must stay distinct from an
// explicit false through JSON (absent stays absent, false stays false, true stays true).
TEST(ProgramJson, ZeroGradSetToNoneRoundTripsThreeWays) {
  Program p;
  p.params = {{"w", DType::Float32, {2}, {1, 2}}};
  p.loss = sum(param("w"));
  OptimizerSpec o;
  o.kind = OptimizerKind::SGD;
  o.defaults.lr = 0.1;
  o.groups.push_back({{"w"}, std::nullopt});
  p.optimizer = o;
  for (std::optional<bool> s : {std::optional<bool>(), std::optional<bool>(false), std::optional<bool>(true)}) {
    Action z;
    z.kind = ActionKind::ZeroGrad;
    z.set_to_none = s;
    p.actions.push_back(z);
  }
  const ordered_json doc = program_to_json(p);
  ASSERT_EQ(doc["actions"].size(), 3u);
  EXPECT_FALSE(doc["actions"][0].contains("set_to_none")) << doc["actions"][0].dump();
  EXPECT_EQ(doc["actions"][1]["set_to_none"], false);
  EXPECT_EQ(doc["actions"][2]["set_to_none"], true);

  const Program back = program_from_json(doc);
  ASSERT_EQ(back.actions.size(), 3u);
  EXPECT_EQ(back.actions[0].set_to_none, std::nullopt);
  EXPECT_EQ(back.actions[1].set_to_none, std::optional<bool>(false));
  EXPECT_EQ(back.actions[2].set_to_none, std::optional<bool>(true));
  EXPECT_EQ(program_to_json(back), doc);

  // And from text, as a user writes it.
  const Program read = program_from_text(R"({"params": [{"name": "w", "dtype": "float32", "shape": [], "values": [1]}],
    "optimizer": {"type": "adam", "defaults": {}, "params": ["w"]},
    "actions": [{"action": "zero_grad"}, {"action": "zero_grad", "set_to_none": false},
                {"action": "zero_grad", "set_to_none": true}]})", "t.json");
  EXPECT_EQ(read.actions[0].set_to_none, std::nullopt);
  EXPECT_EQ(read.actions[1].set_to_none, std::optional<bool>(false));
  EXPECT_EQ(read.actions[2].set_to_none, std::optional<bool>(true));
  EXPECT_THROW(program_from_text(R"({"params": [{"name": "w", "dtype": "float32", "shape": [], "values": [1]}],
    "optimizer": {"type": "adam", "defaults": {}, "params": ["w"]},
    "actions": [{"action": "zero_grad", "set_to_none": null}]})", "t.json"), InputError);
}

// Issue 14: `lockstep trace /dev/zero` read without bound; every reader (programs, fixtures, cases, expectations,
// profiles, reports) goes through read_text_file. Issue 29: it reads regular files only, so a device or a FIFO is an
// error naming the file before anything is read (a FIFO without a writer hung for good).
TEST(ReadTextFile, EndlessInputIsAnErrorNamingTheFileNotAHang) {
  try {
    read_text_file("/dev/zero");
    ADD_FAILURE() << "no error for /dev/zero";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "/dev/zero");
    EXPECT_NE(std::string(e.what()).find("a character device, not a regular file"), std::string::npos) << e.what();
  }
  const std::string fifo = files::temp_directory() + "/lockstep-fifo-test-" + std::to_string(::getpid());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    read_text_file(fifo);  // no writer: a blocking open would never return
    ADD_FAILURE() << "no error for a FIFO";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), fifo);
    EXPECT_NE(std::string(e.what()).find("a FIFO, not a regular file"), std::string::npos) << e.what();
  }
  ::unlink(fifo.c_str());
}

TEST(ReadTextFile, ALargerFileThanTheLimitIsRefusedBeforeItIsRead) {
  const std::string file = files::temp_directory() + "/lockstep-large-test-" + std::to_string(::getpid());
  {
    std::ofstream out(file);
    out << std::string(3 << 20, ' ');
  }
  try {
    read_text_file(file, size_t{2} << 20, "tests");
    ADD_FAILURE() << "no error for a file past the limit";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("larger than 2 MiB, the limit for tests"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_text_file(file, size_t{4} << 20, "tests").size(), size_t{3} << 20);
  std::remove(file.c_str());
}

}  // namespace
}  // namespace lockstep

// The shipped schema's optimizer parts are generated from the descriptions (`lockstep fixtures generate`): a new
// optimizer, option or state tensor that is not in fixtures/schema/fixture.schema.json fails here.
TEST(ProgramJson, ShippedSchemaDescribesEveryOptimizer) {
  std::ifstream in(lockstep::source_dir() + "/fixtures/schema/fixture.schema.json");
  ASSERT_TRUE(in);
  const nlohmann::ordered_json shipped = nlohmann::ordered_json::parse(in);
  EXPECT_TRUE(shipped == lockstep::schema_from_descriptions(shipped))
      << "fixtures/schema/fixture.schema.json is out of date: run `lockstep fixtures generate`";
  const nlohmann::ordered_json& options = shipped["$defs"]["options"]["properties"];
  for (const char* name : {"alpha", "centered", "lr_decay", "initial_accumulator_value"})
    EXPECT_TRUE(options.contains(name)) << name;
  EXPECT_NE(shipped.dump().find("\"square_avg\""), std::string::npos);
}
