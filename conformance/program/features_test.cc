// Tests of the feature vocabulary and the static scan of a program (features.h): every category, options at
// and away from the option type's defaults, every "feature" and every "situation" name, and that every name
// program_features() gives on generated programs is among all_features().
#include "conformance/program/features.h"

#include <cmath>
#include <limits>
#include <map>

#include <gtest/gtest.h>

#include "conformance/generate/generators.h"
#include "conformance/program/program_json.h"

namespace lockstep {
namespace {

using Features = std::set<std::string>;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

bool has(const Features& f, const std::string& name) { return f.count(name) > 0; }

std::string show(const Features& f) {
  std::string out;
  for (const std::string& n : f) out += (out.empty() ? "" : ", ") + n;
  return "{" + out + "}";
}

Action fwd(ExprPtr loss = nullptr) {
  Action a;
  a.kind = ActionKind::Forward;
  a.loss = std::move(loss);
  return a;
}
Action bwd() {
  Action a;
  a.kind = ActionKind::Backward;
  return a;
}
Action bwd_retain(std::optional<bool> retain) {
  Action a = bwd();
  a.retain_graph = retain;
  return a;
}
Action step() {
  Action a;
  a.kind = ActionKind::Step;
  return a;
}
Action zero(std::optional<bool> set_to_none) {
  Action a;
  a.kind = ActionKind::ZeroGrad;
  a.set_to_none = set_to_none;
  return a;
}
Action set_options(OptimizerOptions o, int group = 0) {
  Action a;
  a.kind = ActionKind::SetOptions;
  a.group = group;
  a.options = std::move(o);
  return a;
}
Action add_group(std::vector<std::string> params, std::optional<OptimizerOptions> options = std::nullopt) {
  Action a;
  a.kind = ActionKind::AddParamGroup;
  a.new_group = {std::move(params), std::move(options)};
  return a;
}

// w (float32, 2 elements) and v (float32, 0-d), loss (w*w).sum() + v, no optimizer, no actions.
Program base() {
  Program p;
  p.params.push_back({"w", DType::Float32, {2}, {1, 2}});
  p.params.push_back({"v", DType::Float32, {}, {3}});
  p.loss = add(sum(mul(param("w"), param("w"))), param("v"));
  return p;
}

// base() with an optimizer over one group {w, v} without options.
Program with_optimizer(OptimizerKind kind, OptimizerOptions defaults) {
  Program p = base();
  OptimizerSpec o;
  o.kind = kind;
  o.defaults = std::move(defaults);
  o.groups.push_back({{"w", "v"}, std::nullopt});
  p.optimizer = o;
  return p;
}

OptimizerOptions lr(double value) {
  OptimizerOptions o;
  o.lr = value;
  return o;
}

// The features of a program that has `defaults` for `kind` (one group without options, no actions).
Features of_defaults(OptimizerKind kind, OptimizerOptions defaults) {
  return program_features(with_optimizer(kind, std::move(defaults)));
}

// SEMANTICS §18.5: a clip_grad_value that no listed grad can reach, statically (the PyTorch 2.x finding's situation).
TEST(Features, ClipValueWithoutGrads) {
  Program p;
  p.params.push_back({"w", DType::Float32, {1}, {1}});
  p.params.push_back({"u", DType::Float32, {1}, {1}});
  p.loss = sum(param("w"));
  Action clip = Action::of(ActionKind::ClipGradValue);
  clip.params = {"w"};
  p.actions = {clip};
  EXPECT_EQ(program_features(p).count("clip_value_without_grads"), 1u);  // before any backward
  p.actions = {Action::forward(), Action::backward(), clip};
  EXPECT_EQ(program_features(p).count("clip_value_without_grads"), 0u);
  clip.params = {"u"};  // a parameter the loss does not reach
  p.actions = {Action::forward(), Action::backward(), clip};
  EXPECT_EQ(program_features(p).count("clip_value_without_grads"), 1u);
  Action none = Action::of(ActionKind::SetGradNone);
  none.param = "w";
  clip.params = {"w", "u"};
  p.actions = {Action::forward(), Action::backward(), none, clip};
  EXPECT_EQ(program_features(p).count("clip_value_without_grads"), 1u);
  p.loss = param("w");  // one element: backward needs no gradient (SEM-2.4), w is reached
  clip.params = {"w"};
  p.actions = {Action::forward(), Action::backward(), clip};
  EXPECT_EQ(program_features(p).count("clip_value_without_grads"), 0u);
  p.params[0].shape = {2};  // a non-scalar output without a gradient: the backward fails, nothing is reached
  p.params[0].values = {1, 2};
  EXPECT_EQ(program_features(p).count("clip_value_without_grads"), 1u);
  // A step with a closure in a program without an optimizer fails before it calls the closure: its backward
  // reaches nothing (found against python3-torch 2.6 as the oracle, seed 7's random-2600).
  p.params[0].shape = {1};
  p.params[0].values = {1};
  Action step = Action::of(ActionKind::Step);
  step.closure = std::vector<Action>{Action::forward(), Action::backward()};
  p.actions = {step, clip};
  EXPECT_EQ(program_features(p).count("clip_value_without_grads"), 1u);
  EXPECT_EQ(program_features(p).count("closure"), 1u);
  OptimizerSpec adam;  // an optimizer whose construction fails: the same (seed 7's random-62398)
  adam.kind = OptimizerKind::Adam;
  adam.defaults.betas = std::make_pair(1.0, 0.0);
  p.optimizer = adam;
  EXPECT_EQ(program_features(p).count("clip_value_without_grads"), 1u);
  p.optimizer->defaults.betas.reset();  // built: the closure runs, its backward reaches w
  EXPECT_EQ(program_features(p).count("clip_value_without_grads"), 0u);
}

TEST(Features, VocabularyIsComplete) {
  const std::vector<FeatureInfo>& all = all_features();
  std::set<std::string> names;
  std::map<std::string, int> per_category;
  for (const FeatureInfo& f : all) {
    EXPECT_TRUE(names.insert(f.name).second) << "duplicate " << f.name;
    EXPECT_FALSE(f.meaning.empty()) << f.name;
    ++per_category[f.category];
    ASSERT_EQ(find_feature(f.name), &f) << f.name;
  }
  EXPECT_EQ(per_category.size(), 6u);
  EXPECT_EQ(per_category["dtype"], 2);
  EXPECT_EQ(per_category["optimizer"], 6);
  EXPECT_EQ(per_category["option"], 38);  // SGD 6, Adam 6, AdamW 6, RMSprop 7, Adagrad 6 (maximize, §20), L-BFGS 7
  EXPECT_EQ(per_category["feature"], 19);  // closure came with SEMANTICS §17, state_dict and load_state_dict with §19
  EXPECT_EQ(per_category["situation"], 16);  // 9, clip_value_without_grads (SEM-18.5), 4 of loads (§19), L-BFGS's 3
  // Every op but param and const (program.h).
  for (int i = static_cast<int>(Op::Param); i <= static_cast<int>(Op::Embedding); ++i) {
    const Op op = static_cast<Op>(i);
    const FeatureInfo* f = find_feature(std::string("op:") + op_name(op));
    if (op == Op::Param || op == Op::Const) {
      EXPECT_EQ(f, nullptr) << op_name(op);
    } else {
      ASSERT_NE(f, nullptr) << op_name(op);
      EXPECT_EQ(f->category, "op");
    }
  }
  for (const char* n : {"float32", "sgd", "adamw.weight_decay", "retain_graph", "zero_grad_default",
                        "group_options_partial", "backward_after_freed", "backward_after_step"})
    EXPECT_NE(find_feature(n), nullptr) << n;
  for (const char* n : {"", "float16", "op:param", "op:const", "Adam", "sgd.betas", "adam.momentum", "op:*"})
    EXPECT_EQ(find_feature(n), nullptr) << n;
  EXPECT_EQ(find_feature("sgd.momentum")->category, "option");
  EXPECT_EQ(find_feature("param_in_two_groups")->category, "situation");
  EXPECT_EQ(find_feature("hold_grad")->category, "feature");
  // The categories come in the documented order.
  const std::vector<std::string> order = {"dtype", "op", "optimizer", "option", "feature", "situation"};
  size_t at = 0;
  for (const FeatureInfo& f : all) {
    while (at < order.size() && order[at] != f.category) ++at;
    ASSERT_LT(at, order.size()) << f.name << " out of the category order";
  }
  EXPECT_EQ(optimizer_option_names(OptimizerKind::SGD),
            (std::vector<std::string>{"lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize"}));
  EXPECT_EQ(optimizer_option_names(OptimizerKind::RMSprop),
            (std::vector<std::string>{"lr", "alpha", "eps", "weight_decay", "momentum", "centered", "maximize"}));
  EXPECT_EQ(optimizer_option_names(OptimizerKind::AdamW),
            (std::vector<std::string>{"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize"}));
}

// SEMANTICS §17: a step's closure is a feature of its own, and its actions count as actions of the program.
TEST(Features, AClosureAndWhatItDoes) {
  Program p = with_optimizer(OptimizerKind::SGD, OptimizerOptions{});
  p.optimizer->defaults.lr = 0.1;
  Action s = step();
  s.closure = std::vector<Action>{zero(true), fwd(), bwd_retain(true)};
  p.actions = {s};
  const Features f = program_features(p);
  EXPECT_TRUE(has(f, "closure")) << show(f);
  EXPECT_TRUE(has(f, "set_to_none")) << show(f);
  EXPECT_TRUE(has(f, "retain_graph")) << show(f);
  p.actions = {zero(true), fwd(), bwd_retain(true), step()};
  EXPECT_FALSE(has(program_features(p), "closure"));
}

TEST(Features, DtypesAndOps) {
  Program p = base();
  EXPECT_EQ(program_features(p), (Features{"float32", "op:add", "op:sum", "op:mul"}));

  p.params.push_back({"d", DType::Float64, {2}, {1, 1}});
  // A forward's own loss counts too; param and const are not ops.
  p.actions = {fwd(mean(unary(Op::Tanh, mul(param("d"), constant({DType::Float64, {2}, {1, 2}})))))};
  EXPECT_EQ(program_features(p),
            (Features{"float32", "float64", "op:add", "op:sum", "op:mul", "op:mean", "op:tanh"}));

  Program only64;
  only64.params.push_back({"x", DType::Float64, {2, 2}, {1, 2, 3, 4}});
  only64.loss = sum(binary(Op::Matmul, param("x"), param("x")));
  EXPECT_EQ(program_features(only64), (Features{"float64", "op:sum", "op:matmul"}));

  Program leaf_only;  // a loss that is a parameter itself: no op at all
  leaf_only.params.push_back({"x", DType::Float32, {}, {1}});
  leaf_only.loss = param("x");
  EXPECT_EQ(program_features(leaf_only), (Features{"float32"}));
  EXPECT_TRUE(program_features(Program{}).empty());
}

TEST(Features, Optimizers) {
  EXPECT_TRUE(has(of_defaults(OptimizerKind::SGD, lr(0.1)), "sgd"));
  EXPECT_TRUE(has(of_defaults(OptimizerKind::Adam, {}), "adam"));
  EXPECT_TRUE(has(of_defaults(OptimizerKind::AdamW, {}), "adamw"));
  const Features adam = of_defaults(OptimizerKind::Adam, {});
  EXPECT_FALSE(has(adam, "adamw"));
  EXPECT_FALSE(has(adam, "sgd"));
  // Nothing but the optimizer for a plain construction.
  EXPECT_EQ(adam, (Features{"float32", "op:add", "op:sum", "op:mul", "adam"}));
  EXPECT_EQ(of_defaults(OptimizerKind::SGD, lr(0.1)), (Features{"float32", "op:add", "op:sum", "op:mul", "sgd", "sgd.lr"}));
}

TEST(Features, OptionsCountOnlyAwayFromTheTypeDefault) {
  // Adam's lr 1e-3 is its default; 0.01 is not.
  EXPECT_FALSE(has(of_defaults(OptimizerKind::Adam, lr(1e-3)), "adam.lr"));
  EXPECT_TRUE(has(of_defaults(OptimizerKind::Adam, lr(0.01)), "adam.lr"));
  EXPECT_FALSE(has(of_defaults(OptimizerKind::Adam, {}), "adam.lr"));
  EXPECT_FALSE(has(of_defaults(OptimizerKind::AdamW, lr(1e-3)), "adamw.lr"));
  EXPECT_TRUE(has(of_defaults(OptimizerKind::AdamW, lr(0.5)), "adamw.lr"));
  // SGD has no default lr: it always needs "sgd.lr", whatever the value.
  for (double v : {1e-3, 0.1, 1.0}) EXPECT_TRUE(has(of_defaults(OptimizerKind::SGD, lr(v)), "sgd.lr")) << v;
  EXPECT_TRUE(has(of_defaults(OptimizerKind::SGD, {}), "sgd.lr"));

  auto wd = [](OptimizerKind k, double v) {
    OptimizerOptions o;
    if (k == OptimizerKind::SGD) o.lr = 0.1;
    o.weight_decay = v;
    return of_defaults(k, o);
  };
  // AdamW's weight_decay defaults to 1e-2, Adam's and SGD's to 0.
  EXPECT_FALSE(has(wd(OptimizerKind::AdamW, 1e-2), "adamw.weight_decay"));
  EXPECT_TRUE(has(wd(OptimizerKind::AdamW, 0.0), "adamw.weight_decay"));
  EXPECT_TRUE(has(wd(OptimizerKind::AdamW, 0.1), "adamw.weight_decay"));
  EXPECT_FALSE(has(wd(OptimizerKind::Adam, 0.0), "adam.weight_decay"));
  EXPECT_TRUE(has(wd(OptimizerKind::Adam, 1e-2), "adam.weight_decay"));
  EXPECT_FALSE(has(wd(OptimizerKind::SGD, 0.0), "sgd.weight_decay"));
  EXPECT_TRUE(has(wd(OptimizerKind::SGD, 0.5), "sgd.weight_decay"));

  OptimizerOptions sgd = lr(0.1);
  sgd.momentum = 0.0;
  sgd.dampening = 0.0;
  sgd.nesterov = false;
  Features f = of_defaults(OptimizerKind::SGD, sgd);
  for (const char* n : {"sgd.momentum", "sgd.dampening", "sgd.nesterov", "sgd.weight_decay"}) EXPECT_FALSE(has(f, n)) << n;
  sgd.momentum = 0.9;
  sgd.dampening = 0.1;
  f = of_defaults(OptimizerKind::SGD, sgd);
  EXPECT_TRUE(has(f, "sgd.momentum"));
  EXPECT_TRUE(has(f, "sgd.dampening"));
  EXPECT_FALSE(has(f, "sgd.nesterov"));
  sgd.dampening = 0.0;
  sgd.nesterov = true;
  f = of_defaults(OptimizerKind::SGD, sgd);
  EXPECT_TRUE(has(f, "sgd.nesterov"));
  EXPECT_FALSE(has(f, "sgd.dampening"));
  EXPECT_FALSE(has(f, "invalid_options"));

  OptimizerOptions adam;
  adam.betas = std::make_pair(0.9, 0.999);
  adam.eps = 1e-8;
  adam.amsgrad = false;
  f = of_defaults(OptimizerKind::Adam, adam);
  for (const char* n : {"adam.betas", "adam.eps", "adam.amsgrad", "adam.lr", "adam.weight_decay"}) EXPECT_FALSE(has(f, n)) << n;
  adam.betas = std::make_pair(0.9, 0.99);  // one beta away from its default is enough
  adam.eps = 1e-6;
  adam.amsgrad = true;
  f = of_defaults(OptimizerKind::AdamW, adam);
  for (const char* n : {"adamw.betas", "adamw.eps", "adamw.amsgrad"}) EXPECT_TRUE(has(f, n)) << n;
  for (const char* n : {"adam.betas", "adam.eps", "adam.amsgrad"}) EXPECT_FALSE(has(f, n)) << n;
}

TEST(Features, OptionsCountWhereverTheyAreGiven) {
  // In a group's options,
  Program p = with_optimizer(OptimizerKind::Adam, {});
  p.optimizer->groups[0].options = lr(0.5);
  EXPECT_TRUE(has(program_features(p), "adam.lr"));
  // in set_options,
  p = with_optimizer(OptimizerKind::SGD, lr(0.1));
  OptimizerOptions m;
  m.momentum = 0.9;
  EXPECT_FALSE(has(program_features(p), "sgd.momentum"));
  p.actions = {set_options(m)};
  EXPECT_TRUE(has(program_features(p), "sgd.momentum"));
  // and in add_param_group's options.
  p = with_optimizer(OptimizerKind::AdamW, {});
  p.optimizer->groups[0].params = {"w"};
  OptimizerOptions e;
  e.eps = 1e-3;
  p.actions = {add_group({"v"}, e)};
  const Features f = program_features(p);
  EXPECT_TRUE(has(f, "adamw.eps"));
  EXPECT_TRUE(has(f, "add_param_group"));
  // An option change back to the default needs nothing.
  p = with_optimizer(OptimizerKind::Adam, {});
  p.actions = {set_options(lr(1e-3))};
  EXPECT_FALSE(has(program_features(p), "adam.lr"));
}

TEST(Features, GraphFeatures) {
  Program p = base();
  p.actions = {fwd(), bwd()};
  Features f = program_features(p);
  for (const char* n : {"retain_graph", "create_graph", "no_grad", "explicit_gradient"}) EXPECT_FALSE(has(f, n)) << n;

  p.actions = {fwd(), bwd_retain(false)};
  EXPECT_FALSE(has(program_features(p), "retain_graph"));  // only when true
  p.actions = {fwd(), bwd_retain(true)};
  EXPECT_TRUE(has(program_features(p), "retain_graph"));

  Action cg = bwd();
  cg.create_graph = true;
  p.actions = {fwd(), cg};
  f = program_features(p);
  EXPECT_TRUE(has(f, "create_graph"));
  EXPECT_FALSE(has(f, "retain_graph"));  // retaining by default is not asking for it

  Action ng = fwd();
  ng.no_grad = true;
  p.actions = {ng};
  EXPECT_TRUE(has(program_features(p), "no_grad"));

  Action g = bwd();
  g.gradient = std::vector<double>{1.0};
  p.actions = {fwd(), g};
  f = program_features(p);
  EXPECT_TRUE(has(f, "explicit_gradient"));
  EXPECT_FALSE(has(f, "special_values"));
}

TEST(Features, ZeroGradSpellings) {
  Program p = with_optimizer(OptimizerKind::SGD, lr(0.1));
  const std::set<std::string> names = {"zero_grad", "set_to_none", "zero_grad_default"};
  auto zero_features = [&](std::vector<Action> actions) {
    p.actions = std::move(actions);
    Features out;
    for (const std::string& n : program_features(p))
      if (names.count(n)) out.insert(n);
    return out;
  };
  EXPECT_EQ(zero_features({zero(false)}), (Features{"zero_grad"}));
  EXPECT_EQ(zero_features({zero(true)}), (Features{"set_to_none"}));
  EXPECT_EQ(zero_features({zero(std::nullopt)}), (Features{"zero_grad_default"}));
  EXPECT_EQ(zero_features({zero(true), zero(false), zero(std::nullopt)}), names);
  EXPECT_EQ(zero_features({fwd(), bwd(), step()}), Features{});
}

TEST(Features, GradHandlingActions) {
  Program p = base();
  Action sgn;
  sgn.kind = ActionKind::SetGradNone;
  sgn.param = "w";
  Action hold;
  hold.kind = ActionKind::HoldGrad;
  hold.param = "w";
  hold.handle = "g";
  p.actions = {sgn};
  Features f = program_features(p);
  EXPECT_TRUE(has(f, "set_grad_none"));
  EXPECT_FALSE(has(f, "hold_grad"));
  p.actions = {hold};
  f = program_features(p);
  EXPECT_TRUE(has(f, "hold_grad"));
  EXPECT_FALSE(has(f, "set_grad_none"));
}

TEST(Features, ParamGroupsAddParamGroupSetOptions) {
  Program p = with_optimizer(OptimizerKind::SGD, lr(0.1));
  EXPECT_FALSE(has(program_features(p), "param_groups"));  // one group without options
  p.optimizer->groups = {{{"w"}, std::nullopt}, {{"v"}, std::nullopt}};
  EXPECT_TRUE(has(program_features(p), "param_groups"));  // two groups
  p.optimizer->groups = {{{"w", "v"}, lr(0.1)}};
  EXPECT_TRUE(has(program_features(p), "param_groups"));  // one group with its own options

  p = with_optimizer(OptimizerKind::Adam, {});
  p.optimizer->groups[0].params = {"w"};
  p.actions = {add_group({"v"})};
  Features f = program_features(p);
  EXPECT_TRUE(has(f, "add_param_group"));
  EXPECT_FALSE(has(f, "param_groups"));  // a group added later is add_param_group's
  EXPECT_FALSE(has(f, "set_options"));

  p.actions = {set_options(lr(0.01))};
  f = program_features(p);
  EXPECT_TRUE(has(f, "set_options"));
  EXPECT_FALSE(has(f, "add_param_group"));
  EXPECT_FALSE(has(f, "amsgrad_change"));
}

TEST(Features, SpecialValuesAnywhere) {
  Program p = base();
  EXPECT_FALSE(has(program_features(p), "special_values"));
  p.params[0].values = {1, kNaN};
  EXPECT_TRUE(has(program_features(p), "special_values"));  // in a parameter's values

  p = base();
  p.loss = sum(mul(param("w"), constant({DType::Float32, {2}, {1, -kInf}})));
  EXPECT_TRUE(has(program_features(p), "special_values"));  // in a constant of the loss

  p = base();
  p.actions = {fwd(sum(add(param("w"), constant({DType::Float32, {2}, {kInf, 0}}))))};
  EXPECT_TRUE(has(program_features(p), "special_values"));  // in a constant of a forward's own loss

  p = base();
  Action g = bwd();
  g.gradient = std::vector<double>{kNaN};
  p.actions = {fwd(), g};
  EXPECT_TRUE(has(program_features(p), "special_values"));  // in an explicit gradient

  p = base();
  p.params[0].values = {1e38, -0.0};  // large and negative zero are not special
  p.loss = sum(mul(param("w"), constant({DType::Float32, {2}, {1e-45, -3}})));
  EXPECT_FALSE(has(program_features(p), "special_values"));
}

TEST(Features, InvalidOptions) {
  EXPECT_FALSE(has(of_defaults(OptimizerKind::SGD, lr(0.1)), "invalid_options"));
  EXPECT_TRUE(has(of_defaults(OptimizerKind::SGD, lr(-0.1)), "invalid_options"));  // negative lr in the defaults
  OptimizerOptions nesterov = lr(0.1);
  nesterov.nesterov = true;  // without momentum
  EXPECT_TRUE(has(of_defaults(OptimizerKind::SGD, nesterov), "invalid_options"));
  nesterov.momentum = 0.9;
  EXPECT_FALSE(has(of_defaults(OptimizerKind::SGD, nesterov), "invalid_options"));
  nesterov.dampening = 0.5;  // nesterov needs zero dampening
  EXPECT_TRUE(has(of_defaults(OptimizerKind::SGD, nesterov), "invalid_options"));

  OptimizerOptions b;
  b.betas = std::make_pair(1.0, 0.999);  // beta1 >= 1
  Features f = of_defaults(OptimizerKind::Adam, b);
  EXPECT_TRUE(has(f, "invalid_options"));
  EXPECT_FALSE(has(f, "adam_beta1_one"));  // in the defaults the constructor rejects it: not the situation
  b.betas = std::make_pair(0.9, 1.5);
  EXPECT_TRUE(has(of_defaults(OptimizerKind::AdamW, b), "invalid_options"));
  b.betas = std::make_pair(0.0, 0.0);
  EXPECT_FALSE(has(of_defaults(OptimizerKind::AdamW, b), "invalid_options"));
  OptimizerOptions eps;
  eps.eps = -1e-8;
  EXPECT_TRUE(has(of_defaults(OptimizerKind::Adam, eps), "invalid_options"));

  // In a group's options and in set_options too.
  Program p = with_optimizer(OptimizerKind::SGD, lr(0.1));
  p.optimizer->groups[0].options = lr(-1);
  EXPECT_TRUE(has(program_features(p), "invalid_options"));
  p = with_optimizer(OptimizerKind::Adam, {});
  OptimizerOptions w;
  w.weight_decay = -0.1;
  p.actions = {set_options(w)};
  EXPECT_TRUE(has(program_features(p), "invalid_options"));
}

TEST(Features, GroupOptionsPartialOnlyForOptionsTheDefaultsChange) {
  OptimizerOptions defaults = lr(0.1);
  defaults.momentum = 0.9;
  Program p = with_optimizer(OptimizerKind::SGD, defaults);
  EXPECT_FALSE(has(program_features(p), "group_options_partial"));  // a group without options copies the defaults
  p.optimizer->groups[0].options = lr(0.5);                          // leaves momentum 0.9 unset
  EXPECT_TRUE(has(program_features(p), "group_options_partial"));
  OptimizerOptions full = lr(0.5);
  full.momentum = 0.0;  // given, even at the type's default
  p.optimizer->groups[0].options = full;
  EXPECT_FALSE(has(program_features(p), "group_options_partial"));

  // Defaults at the option type's own default: leaving it unset means the same thing in both rules.
  defaults.momentum = 0.0;
  p = with_optimizer(OptimizerKind::SGD, defaults);
  p.optimizer->groups[0].options = lr(0.5);
  EXPECT_FALSE(has(program_features(p), "group_options_partial"));
  // SGD's lr always comes from the defaults: a group without lr is partial.
  OptimizerOptions momentum_only;
  momentum_only.momentum = 0.5;
  p.optimizer->groups[0].options = momentum_only;
  EXPECT_TRUE(has(program_features(p), "group_options_partial"));

  // Adam: lr 1e-3 in the defaults is the type's default; 0.01 is not.
  OptimizerOptions e;
  e.eps = 1e-6;
  p = with_optimizer(OptimizerKind::Adam, lr(1e-3));
  p.optimizer->groups[0].options = e;
  EXPECT_FALSE(has(program_features(p), "group_options_partial"));
  p = with_optimizer(OptimizerKind::Adam, lr(0.01));
  p.optimizer->groups[0].options = e;
  EXPECT_TRUE(has(program_features(p), "group_options_partial"));
  // AdamW's weight_decay: 0 in the defaults differs from the type's 1e-2.
  OptimizerOptions wd0;
  wd0.weight_decay = 0;
  p = with_optimizer(OptimizerKind::AdamW, wd0);
  p.optimizer->groups[0].options = e;
  EXPECT_TRUE(has(program_features(p), "group_options_partial"));

  // Through add_param_group.
  p = with_optimizer(OptimizerKind::Adam, lr(0.01));
  p.optimizer->groups[0].params = {"w"};
  p.actions = {add_group({"v"}, e)};
  EXPECT_TRUE(has(program_features(p), "group_options_partial"));
  p.actions = {add_group({"v"})};  // without options: the defaults
  EXPECT_FALSE(has(program_features(p), "group_options_partial"));
}

TEST(Features, DuplicatesAndEmptyLists) {
  Program p = with_optimizer(OptimizerKind::SGD, lr(0.1));
  Features f = program_features(p);
  for (const char* n : {"duplicate_param_in_group", "param_in_two_groups", "empty_param_list"}) EXPECT_FALSE(has(f, n)) << n;

  p.optimizer->groups = {{{"w", "v", "w"}, std::nullopt}};
  f = program_features(p);
  EXPECT_TRUE(has(f, "duplicate_param_in_group"));
  EXPECT_FALSE(has(f, "param_in_two_groups"));

  p.optimizer->groups = {{{"w", "v"}, std::nullopt}, {{"w"}, std::nullopt}};
  f = program_features(p);
  EXPECT_TRUE(has(f, "param_in_two_groups"));
  EXPECT_FALSE(has(f, "duplicate_param_in_group"));

  // Via add_param_group: a parameter already in a group, or repeated in the new one.
  p.optimizer->groups = {{{"w"}, std::nullopt}};
  p.actions = {add_group({"v"})};
  EXPECT_FALSE(has(program_features(p), "param_in_two_groups"));
  p.actions = {add_group({"v", "w"})};
  EXPECT_TRUE(has(program_features(p), "param_in_two_groups"));
  p.actions = {add_group({"v"}), add_group({"v"})};
  EXPECT_TRUE(has(program_features(p), "param_in_two_groups"));
  p.actions = {add_group({"v", "v"})};
  f = program_features(p);
  EXPECT_TRUE(has(f, "duplicate_param_in_group"));
  EXPECT_FALSE(has(f, "param_in_two_groups"));

  p.actions.clear();
  p.optimizer->groups.clear();
  EXPECT_TRUE(has(program_features(p), "empty_param_list"));
}

TEST(Features, AmsgradChangeAndBetaOne) {
  Program p = with_optimizer(OptimizerKind::Adam, {});
  OptimizerOptions ams;
  ams.amsgrad = true;
  p.actions = {set_options(ams)};
  Features f = program_features(p);
  EXPECT_TRUE(has(f, "amsgrad_change"));
  EXPECT_TRUE(has(f, "adam.amsgrad"));

  // amsgrad in the defaults or a group's options is not a change.
  p = with_optimizer(OptimizerKind::Adam, ams);
  p.optimizer->groups[0].options = ams;
  EXPECT_FALSE(has(program_features(p), "amsgrad_change"));

  OptimizerOptions one;
  one.betas = std::make_pair(1.0, 0.999);
  p = with_optimizer(OptimizerKind::Adam, {});
  EXPECT_FALSE(has(program_features(p), "adam_beta1_one"));
  p.optimizer->groups[0].options = one;  // in a group's options
  f = program_features(p);
  EXPECT_TRUE(has(f, "adam_beta1_one"));
  EXPECT_TRUE(has(f, "invalid_options"));

  p = with_optimizer(OptimizerKind::AdamW, {});
  p.actions = {set_options(one)};  // in set_options
  EXPECT_TRUE(has(program_features(p), "adam_beta1_one"));

  p = with_optimizer(OptimizerKind::Adam, {});
  p.optimizer->groups[0].params = {"w"};
  p.actions = {add_group({"v"}, one)};  // in add_param_group's options
  EXPECT_TRUE(has(program_features(p), "adam_beta1_one"));

  p = with_optimizer(OptimizerKind::Adam, one);  // in the defaults: invalid, not the situation
  f = program_features(p);
  EXPECT_FALSE(has(f, "adam_beta1_one"));
  EXPECT_TRUE(has(f, "invalid_options"));

  OptimizerOptions almost;
  almost.betas = std::make_pair(0.999, 0.999);
  p = with_optimizer(OptimizerKind::Adam, {});
  p.actions = {set_options(almost)};
  EXPECT_FALSE(has(program_features(p), "adam_beta1_one"));
}

// An optimizer's own situation, from its description (SEMANTICS §11.14): L-BFGS's first group gives max_eval while
// the defaults do not, so that the C++ constructor replaces it.
TEST(Features, LbfgsGroupMaxEvalReplaced) {
  OptimizerOptions own;
  own.max_eval = 3;
  Program p = with_optimizer(OptimizerKind::LBFGS, {});
  EXPECT_FALSE(has(program_features(p), "lbfgs_group_max_eval_replaced"));
  p.optimizer->groups[0].options = own;
  Features f = program_features(p);
  EXPECT_TRUE(has(f, "lbfgs_group_max_eval_replaced")) << show(f);
  EXPECT_EQ(find_feature("lbfgs_group_max_eval_replaced")->category, "situation");
  EXPECT_EQ(find_feature("lbfgs_group_max_eval_replaced")->optimizer, "lbfgs");  // out of scope without L-BFGS
  EXPECT_EQ(find_feature("lbfgs.max_eval")->optimizer, "lbfgs");
  EXPECT_EQ(find_feature("amsgrad_change")->optimizer, "");

  OptimizerOptions computed;
  computed.max_eval = 25;  // what the constructor would set (the default max_iter 20 * 5 / 4): nothing differs
  p.optimizer->groups[0].options = computed;
  EXPECT_FALSE(has(program_features(p), "lbfgs_group_max_eval_replaced"));

  p = with_optimizer(OptimizerKind::LBFGS, own);  // the defaults give it too: the group keeps its own
  p.optimizer->groups[0].options = own;
  EXPECT_FALSE(has(program_features(p), "lbfgs_group_max_eval_replaced"));

  OptimizerOptions other;
  other.max_iter = 4;
  p = with_optimizer(OptimizerKind::LBFGS, {});
  p.optimizer->groups[0].options = other;  // a group of its own options without max_eval
  EXPECT_FALSE(has(program_features(p), "lbfgs_group_max_eval_replaced"));

  p = with_optimizer(OptimizerKind::Adam, {});  // another optimizer never has it
  p.optimizer->groups[0].options = OptimizerOptions{};
  EXPECT_FALSE(has(program_features(p), "lbfgs_group_max_eval_replaced"));
}

TEST(Features, BackwardAfterFreed) {
  Program p = base();
  auto freed = [&](std::vector<Action> actions) {
    p.actions = std::move(actions);
    return has(program_features(p), "backward_after_freed");
  };
  EXPECT_FALSE(freed({fwd(), bwd()}));
  EXPECT_TRUE(freed({fwd(), bwd(), bwd()}));                    // a second backward without retain
  EXPECT_TRUE(freed({fwd(), bwd_retain(false), bwd()}));
  EXPECT_FALSE(freed({fwd(), bwd_retain(true), bwd()}));        // not after retain_graph=true
  EXPECT_TRUE(freed({fwd(), bwd_retain(true), bwd(), bwd()}));  // the second freed it
  EXPECT_FALSE(freed({fwd(), bwd(), fwd(), bwd()}));            // reset by a forward
  Action no_grad = fwd();
  no_grad.no_grad = true;
  EXPECT_FALSE(freed({fwd(), bwd(), no_grad, bwd()}));          // any forward
  Action cg = bwd();
  cg.create_graph = true;                                        // retain_graph defaults to create_graph
  EXPECT_FALSE(freed({fwd(), cg, bwd()}));
  Action cg_no_retain = cg;
  cg_no_retain.retain_graph = false;
  EXPECT_TRUE(freed({fwd(), cg_no_retain, bwd()}));
  EXPECT_TRUE(freed({fwd(), bwd(), zero(true), bwd()}));        // zeroing does not restore the graph
}

TEST(Features, BackwardAfterStep) {
  Program p = with_optimizer(OptimizerKind::SGD, lr(0.1));
  auto after_step = [&](std::vector<Action> actions) {
    p.actions = std::move(actions);
    return has(program_features(p), "backward_after_step");
  };
  EXPECT_FALSE(after_step({fwd(), bwd(), step()}));
  EXPECT_TRUE(after_step({fwd(), bwd_retain(true), step(), bwd()}));
  EXPECT_TRUE(after_step({fwd(), step(), bwd()}));
  EXPECT_FALSE(after_step({fwd(), bwd(), step(), fwd(), bwd()}));  // a new forward after the step
  EXPECT_FALSE(after_step({step(), fwd(), bwd()}));
  // The two situations are independent.
  p.actions = {fwd(), bwd_retain(true), step(), bwd()};
  EXPECT_FALSE(has(program_features(p), "backward_after_freed"));
}

// Every name program_features gives is in the vocabulary: thousands of generated programs, with and without
// special values; and most of the vocabulary shows up.
TEST(Features, GeneratedProgramsUseOnlyKnownNames) {
  std::set<std::string> seen;
  for (bool special : {false, true}) {
    GenOptions options;
    options.special_values = special;
    options.maximize = special;  // as a run with a driver oracle that has it (SEMANTICS 20.4)
    options.max_size = 60;
    RandomPrograms programs(special ? 11 : 10, options);
    for (int i = 0; i < 700; ++i) {
      const Program p = programs.next().value();
      for (const std::string& n : program_features(p)) {
        ASSERT_NE(find_feature(n), nullptr) << "unknown feature " << n << " in " << program_to_json(p).dump();
        seen.insert(n);
      }
    }
  }
  std::vector<std::string> never;
  for (const FeatureInfo& f : all_features())
    if (!seen.count(f.name)) never.push_back(f.name);
  EXPECT_LE(never.size(), 3u) << "features never generated: " << show(Features(never.begin(), never.end()));
}

}  // namespace
}  // namespace lockstep
