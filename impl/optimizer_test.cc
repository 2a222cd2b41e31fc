// Tests of the optimizer base: zero_grad (SEM-4.1, 4.2), parameter groups (SEM-7.1-7.5), validation
// (SEM-5.2, 6.1) and its messages. The expected messages and orderings are LibTorch 1.13's, found black-box.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "impl/adam.h"
#include "impl/adamw.h"
#include "impl/autograd.h"  // Node: to make a non-leaf tensor
#include "impl/optimizer.h"
#include "impl/sgd.h"
#include "impl/test_params.h"

namespace lockstep::impl {
namespace {

Tensor make_non_leaf() {
  Tensor t = make_param({1, 2});
  t.impl()->grad_fn = std::make_shared<Node>();
  return t;
}

// Runs `make` and returns the Error it throws (fails the test if it throws nothing).
template <class F>
Error error_of(F&& make) {
  try {
    make();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no Error thrown";
  return Error(ErrorKind::Other, "no Error thrown");
}

// --- zero_grad ------------------------------------------------------------------------------------------

TEST(ZeroGrad, Sem4_1_ZeroesInPlaceKeepingIdentityAndDetaches) {
  Tensor w = make_param({1, 2});
  set_grad(w, {3, 4});
  Tensor handle = w.grad();
  handle.set_requires_grad(true);
  handle.impl()->grad_fn = std::make_shared<Node>();  // as after a create_graph backward
  SGD sgd({w}, SGDOptions(0.1));
  sgd.zero_grad();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_TRUE(w.grad().is_same(handle));
  EXPECT_EQ(handle.to_values(), (std::vector<double>{0, 0}));
  EXPECT_FALSE(handle.requires_grad());
  EXPECT_EQ(handle.grad_fn(), nullptr);
}

TEST(ZeroGrad, Sem4_1_UndefinedGradStaysUndefined) {
  Tensor w = make_param({1, 2});
  Adam adam({w});
  adam.zero_grad();
  EXPECT_FALSE(w.grad().defined());
}

TEST(ZeroGrad, Sem4_2_SetToNoneResetsSlotAndHandleKeepsValues) {
  Tensor w = make_param({1, 2});
  set_grad(w, {3, 4});
  Tensor handle = w.grad();
  SGD sgd({w}, SGDOptions(0.1));
  sgd.zero_grad(/*set_to_none=*/true);
  EXPECT_FALSE(w.grad().defined());
  EXPECT_EQ(handle.to_values(), (std::vector<double>{3, 4}));
}

TEST(ZeroGrad, Sem4_1_EveryGroup) {
  Tensor a = make_param({1}), b = make_param({2});
  set_grad(a, {5});
  set_grad(b, {6});
  SGD sgd({ParamGroup({a}), ParamGroup({b}, SGDOptions(0.3))}, SGDOptions(0.1));
  sgd.zero_grad();
  EXPECT_EQ(a.grad().at(0), 0);
  EXPECT_EQ(b.grad().at(0), 0);
}

// --- groups -----------------------------------------------------------------------------------------------

TEST(Groups, Sem7_1_FlatListIsOneGroupWithTheDefaults) {
  Tensor a = make_param({1}), b = make_param({2});
  SGD sgd({a, b}, SGDOptions(0.25).set_momentum(0.5));
  ASSERT_EQ(sgd.param_groups().size(), 1u);
  EXPECT_EQ(sgd.param_groups()[0].params.size(), 2u);
  EXPECT_TRUE(sgd.param_groups()[0].params[1].is_same(b));
  EXPECT_EQ(sgd.group_options(0).lr, 0.25);
  EXPECT_EQ(sgd.group_options(0).momentum, 0.5);
  // A copy: changing the group does not change the defaults.
  sgd.group_options(0).lr = 1;
  EXPECT_EQ(sgd.sgd_defaults().lr, 0.25);
}

TEST(Groups, Sem7_1_GroupOptionsAreUsedEntirely_1_13) {
  Tensor a = make_param({1}), b = make_param({2});
  Adam adam({ParamGroup({a}), ParamGroup({b}, AdamOptions(0.5))},
            AdamOptions(0.01).set_weight_decay(0.1).set_amsgrad(true).set_eps(1e-3));
  EXPECT_EQ(adam.group_options(0).lr, 0.01);
  EXPECT_EQ(adam.group_options(0).weight_decay, 0.1);
  EXPECT_TRUE(adam.group_options(0).amsgrad);
  // [1.13]: fields the group did not set take AdamOptions' own defaults, not the optimizer's.
  EXPECT_EQ(adam.group_options(1).lr, 0.5);
  EXPECT_EQ(adam.group_options(1).weight_decay, 0);
  EXPECT_FALSE(adam.group_options(1).amsgrad);
  EXPECT_EQ(adam.group_options(1).eps, 1e-8);
  EXPECT_EQ(adam.group_options(1).betas, (std::pair<double, double>{0.9, 0.999}));
}

TEST(Groups, Sem7_1_AddedGroupWithoutOptionsGetsTheDefaults) {
  Tensor a = make_param({1}), b = make_param({2});
  AdamW adamw({a}, AdamWOptions(0.02));
  adamw.group_options(0).lr = 7;  // changing group 0 does not change what new groups get
  adamw.add_param_group(ParamGroup({b}));
  ASSERT_EQ(adamw.param_groups().size(), 2u);
  EXPECT_EQ(adamw.group_options(1).lr, 0.02);
  EXPECT_EQ(adamw.group_options(1).weight_decay, 1e-2);
}

TEST(Groups, Sem7_2_EmptyListAccepted) {
  SGD sgd(std::vector<Tensor>{}, SGDOptions(0.1));
  EXPECT_EQ(sgd.param_groups().size(), 1u);
  EXPECT_TRUE(sgd.param_groups()[0].params.empty());
  sgd.step();
  sgd.zero_grad();
  Adam adam(std::vector<ParamGroup>{});
  EXPECT_TRUE(adam.param_groups().empty());
  adam.step();
}

TEST(Groups, Sem7_3_NonLeafRejected) {
  Tensor leaf = make_param({1});
  Tensor non_leaf = make_non_leaf();
  Error e = error_of([&] { SGD sgd({leaf, non_leaf}, SGDOptions(0.1)); });
  EXPECT_EQ(error_kind_name(e.kind), "non_leaf_parameter");
  EXPECT_STREQ(e.what(), "can't optimize a non-leaf Tensor");
  Adam adam({leaf});
  e = error_of([&] { adam.add_param_group(ParamGroup({non_leaf})); });
  EXPECT_EQ(error_kind_name(e.kind), "non_leaf_parameter");
  EXPECT_EQ(adam.param_groups().size(), 1u);
}

TEST(Groups, Sem7_3_LeafCheckComesBeforeOptionValidation) {  // black-box ordering of LibTorch 1.13
  Tensor non_leaf = make_non_leaf();
  EXPECT_EQ(error_kind_name(error_of([&] { SGD sgd({non_leaf}, SGDOptions(-0.1)); }).kind), "non_leaf_parameter");
  EXPECT_EQ(error_kind_name(error_of([&] { Adam adam({non_leaf}, AdamOptions(-0.1)); }).kind), "non_leaf_parameter");
  EXPECT_EQ(error_kind_name(error_of([&] { AdamW adamw({non_leaf}, AdamWOptions(-0.1)); }).kind), "non_leaf_parameter");
}

TEST(Groups, WrongOptionTypeRejected) {  // a group's options must be the optimizer's own type
  Tensor a = make_param({1}), b = make_param({2});
  SGD sgd({a}, SGDOptions(0.1));
  Error e = error_of([&] { sgd.add_param_group(ParamGroup({b}, AdamOptions(0.1))); });
  EXPECT_EQ(error_kind_name(e.kind), "other");
  EXPECT_STREQ(e.what(), "a param group's options are not this optimizer's option type");
  EXPECT_EQ(sgd.param_groups().size(), 1u);
  sgd.add_param_group(ParamGroup({b}, SGDOptions(0.2)));
  EXPECT_EQ(sgd.param_groups().size(), 2u);
}

TEST(Groups, Sem7_4_ParamWithStateRejectedByAddParamGroup) {
  Tensor a = make_param({1}), b = make_param({2});
  Adam adam({a});
  set_grad(a, {1});
  adam.step();
  ASSERT_TRUE(adam.has_state(a));
  Error e = error_of([&] { adam.add_param_group(ParamGroup({b, a})); });
  EXPECT_EQ(error_kind_name(e.kind), "duplicate_parameter");
  EXPECT_STREQ(e.what(), "some parameters appear in more than one parameter group");
  EXPECT_EQ(adam.param_groups().size(), 1u);  // atomic: b was not added either
  adam.add_param_group(ParamGroup({b}));      // b has no state: accepted
  EXPECT_EQ(adam.param_groups().size(), 2u);
}

TEST(Groups, Sem7_4_LeafChecksBeforeDuplicateChecks) {  // black-box: [a_with_state, non_leaf] -> non-leaf
  Tensor a = make_param({1});
  Adam adam({a});
  set_grad(a, {1});
  adam.step();
  Tensor non_leaf = make_non_leaf();
  EXPECT_EQ(error_kind_name(error_of([&] { adam.add_param_group(ParamGroup({a, non_leaf})); }).kind), "non_leaf_parameter");
}

TEST(Groups, Sem7_4_ParamInTwoGroupsBeforeAnyStepAccepted) {
  Tensor a = make_param({1});
  SGD sgd({ParamGroup({a}), ParamGroup({a})}, SGDOptions(0.1).set_momentum(0.9));
  EXPECT_EQ(sgd.param_groups().size(), 2u);
  sgd.add_param_group(ParamGroup({a}));  // still no state
  EXPECT_EQ(sgd.param_groups().size(), 3u);
}

TEST(Groups, Sem7_4_SgdWithoutMomentumNeverHasStateSoNeverDuplicate) {
  Tensor a = make_param({1});
  SGD sgd({a}, SGDOptions(0.1));
  set_grad(a, {1});
  sgd.step();
  EXPECT_FALSE(sgd.has_state(a));
  sgd.add_param_group(ParamGroup({a}));
  EXPECT_EQ(sgd.param_groups().size(), 2u);
}

TEST(Groups, Sem7_5_OptionsWritableBetweenSteps) {
  Tensor a = make_param({1});
  SGD sgd({a}, SGDOptions(0.1));
  set_grad(a, {1});
  sgd.step();  // 1 - 0.1
  sgd.group_options(0).lr = 0.5;
  sgd.step();  // 0.9 - 0.5
  EXPECT_DOUBLE_EQ(a.at(0), 1 - 0.1 - 0.5);
}

// --- validation -------------------------------------------------------------------------------------------

template <class F>
void expect_invalid(F&& make, const std::string& message) {
  Error e = error_of(make);
  EXPECT_EQ(error_kind_name(e.kind), "invalid_option");
  EXPECT_EQ(std::string(e.what()), message);
}

TEST(Validation, Sem5_2_SgdMessages) {
  Tensor a = make_param({1});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_invalid([&] { SGD s({a}, SGDOptions(-0.1)); }, "Invalid learning rate: -0.1");
  expect_invalid([&] { SGD s({a}, SGDOptions(-1e-8)); }, "Invalid learning rate: -1e-08");
  expect_invalid([&] { SGD s({a}, SGDOptions(-123456789.0)); }, "Invalid learning rate: -1.23457e+08");
  expect_invalid([&] { SGD s({a}, SGDOptions(nan)); }, "Invalid learning rate: nan");
  expect_invalid([&] { SGD s({a}, SGDOptions(0.1).set_momentum(-0.5)); }, "Invalid momentum value: -0.5");
  expect_invalid([&] { SGD s({a}, SGDOptions(0.1).set_weight_decay(-0.5)); }, "Invalid weight_decay value: -0.5");
  expect_invalid([&] { SGD s({a}, SGDOptions(0.1).set_nesterov(true)); },
                 "Nesterov momentum requires a momentum and zero dampening");
  expect_invalid([&] { SGD s({a}, SGDOptions(0.1).set_nesterov(true).set_momentum(0.5).set_dampening(0.1)); },
                 "Nesterov momentum requires a momentum and zero dampening");
  // Order: lr, momentum, weight_decay, nesterov (black-box).
  expect_invalid([&] { SGD s({a}, SGDOptions(-0.1).set_momentum(-1).set_nesterov(true)); },
                 "Invalid learning rate: -0.1");
  expect_invalid([&] { SGD s({a}, SGDOptions(0.1).set_momentum(-1).set_weight_decay(-1)); },
                 "Invalid momentum value: -1");
  expect_invalid([&] { SGD s({a}, SGDOptions(0.1).set_weight_decay(-1).set_nesterov(true)); },
                 "Invalid weight_decay value: -1");
  // Boundaries that pass: -0 is not < 0; nesterov with momentum and no dampening.
  SGD ok1({a}, SGDOptions(-0.0));
  SGD ok2({a}, SGDOptions(0).set_momentum(0.1).set_nesterov(true));
}

TEST(Validation, Sem6_1_AdamMessages) {
  Tensor a = make_param({1});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_invalid([&] { Adam o({a}, AdamOptions(-0.1)); }, "Invalid learning rate: -0.1");
  expect_invalid([&] { Adam o({a}, AdamOptions(0.1).set_eps(-1e-8)); }, "Invalid epsilon value: -1e-08");
  expect_invalid([&] { Adam o({a}, AdamOptions(0.1).set_eps(nan)); }, "Invalid epsilon value: nan");
  expect_invalid([&] { Adam o({a}, AdamOptions(0.1).set_betas({1.0, 0.9})); }, "Invalid beta parameter at index 0: 1");
  expect_invalid([&] { Adam o({a}, AdamOptions(0.1).set_betas({nan, 0.9})); }, "Invalid beta parameter at index 0: nan");
  expect_invalid([&] { Adam o({a}, AdamOptions(0.1).set_betas({0.9, -0.1})); },
                 "Invalid beta parameter at index 1: -0.1");
  expect_invalid([&] { Adam o({a}, AdamOptions(0.1).set_weight_decay(-0.1)); }, "Invalid weight_decay value: -0.1");
  // Order: lr, eps, beta 0, beta 1, weight_decay (black-box).
  expect_invalid([&] { Adam o({a}, AdamOptions(-0.1).set_eps(-1).set_betas({2, 2}).set_weight_decay(-1)); },
                 "Invalid learning rate: -0.1");
  expect_invalid([&] { Adam o({a}, AdamOptions(0.1).set_eps(-1).set_betas({2, 2})); }, "Invalid epsilon value: -1");
  expect_invalid([&] { Adam o({a}, AdamOptions(0.1).set_betas({2, 2})); }, "Invalid beta parameter at index 0: 2");
  expect_invalid([&] { Adam o({a}, AdamOptions(0.1).set_betas({0.5, 2}).set_weight_decay(-1)); },
                 "Invalid beta parameter at index 1: 2");
  // Boundaries that pass: beta 0, lr inf, weight_decay -0.
  Adam ok1({a}, AdamOptions(std::numeric_limits<double>::infinity()).set_betas({0, 0}).set_weight_decay(-0.0));
}

TEST(Validation, Sem6_4_AdamWMessagesAndDefaults) {
  Tensor a = make_param({1});
  expect_invalid([&] { AdamW o({a}, AdamWOptions(0.1).set_weight_decay(-0.1)); }, "Invalid weight_decay value: -0.1");
  expect_invalid([&] { AdamW o({a}, AdamWOptions(0.1).set_betas({1.5, 0.9})); },
                 "Invalid beta parameter at index 0: 1.5");
  AdamWOptions d;
  EXPECT_EQ(d.lr, 1e-3);
  EXPECT_EQ(d.weight_decay, 1e-2);
  EXPECT_EQ(d.eps, 1e-8);
  EXPECT_FALSE(d.amsgrad);
}

TEST(Validation, Sem10_000_AdamDefaults) {
  AdamOptions d;
  EXPECT_EQ(d.lr, 0.001);
  EXPECT_EQ(d.betas, (std::pair<double, double>{0.9, 0.999}));
  EXPECT_EQ(d.eps, 1e-08);
  EXPECT_EQ(d.weight_decay, 0);
  EXPECT_FALSE(d.amsgrad);
}

TEST(Validation, Sem5_2_GroupOptionsAreNotValidated) {
  Tensor a = make_param({1});
  SGD sgd({ParamGroup({a}, SGDOptions(-1).set_nesterov(true))}, SGDOptions(0.1));
  EXPECT_EQ(sgd.group_options(0).lr, -1);
  Adam adam({ParamGroup({a}, AdamOptions(-1).set_betas({2, 2}))});
  EXPECT_EQ(adam.group_options(0).betas.first, 2);
}

TEST(Validation, FormatLikeOstream) {
  EXPECT_EQ(format_option_value(-0.1), "-0.1");
  EXPECT_EQ(format_option_value(1e-8), "1e-08");
  EXPECT_EQ(format_option_value(1.5), "1.5");
  EXPECT_EQ(format_option_value(2), "2");
  EXPECT_EQ(format_option_value(-std::numeric_limits<double>::infinity()), "-inf");
}

// SEMANTICS §19: save() copies the state; load() restores it by position, refuses other group structures.
TEST(Checkpoint, Sem19_5_SaveIsACopyAndLoadRestoresIt) {
  Tensor p = make_param({1, -2});
  Adam adam({p}, AdamOptions(0.1));
  set_grad(p, {0.5, -0.25});
  adam.step();
  const OptimizerCheckpoint saved = adam.save();
  const std::vector<double> m1 = adam.state_of(p)->exp_avg.to_values();
  adam.step();
  EXPECT_EQ(adam.state_of(p)->step, 2);
  EXPECT_NE(adam.state_of(p)->exp_avg.to_values(), m1);
  adam.load(saved, false);
  EXPECT_EQ(adam.state_of(p)->step, 1);
  EXPECT_EQ(adam.state_of(p)->exp_avg.to_values(), m1);
  adam.step();  // the loaded tensors are the optimizer's own now: the checkpoint stays as saved
  adam.load(saved, false);
  EXPECT_EQ(adam.state_of(p)->exp_avg.to_values(), m1);
}

TEST(Checkpoint, Sem19_2_OptionsKeptOrRestored) {
  Tensor p = make_param({1, -2});
  Adam adam({p}, AdamOptions(0.1));
  const OptimizerCheckpoint saved = adam.save();
  static_cast<AdamOptions&>(*adam.param_groups()[0].options).lr = 0.5;
  adam.load(saved, false);  // LibTorch 1.13: the groups keep theirs
  EXPECT_EQ(static_cast<AdamOptions&>(*adam.param_groups()[0].options).lr, 0.5);
  adam.load(saved, true);   // 2.x: the saved ones
  EXPECT_EQ(static_cast<AdamOptions&>(*adam.param_groups()[0].options).lr, 0.1);
}

TEST(Checkpoint, Sem19_3_OtherGroupsAreRefusedAndChangeNothing) {
  Tensor p = make_param({1, -2}), q = make_param({3});
  Adam adam({p}, AdamOptions(0.1));
  set_grad(p, {1, 1});
  adam.step();
  const OptimizerCheckpoint one_group = adam.save();
  adam.add_param_group(ParamGroup({q}));
  adam.step();
  EXPECT_EQ(error_of([&] { adam.load(one_group, true); }).kind, ErrorKind::StateDictMismatch);
  EXPECT_EQ(adam.state_of(p)->step, 2);
  Adam two({p, q}, AdamOptions(0.1));
  EXPECT_EQ(error_of([&] { two.load(one_group, false); }).kind, ErrorKind::StateDictMismatch);
}

TEST(Checkpoint, Sem19_3_AParameterWithoutSavedStateKeepsItsOwn) {
  Tensor p = make_param({1, -2});
  SGD sgd({p}, SGDOptions(0.1).set_momentum(0.9));
  const OptimizerCheckpoint empty = sgd.save();  // before any step: no state
  set_grad(p, {1, 1});
  sgd.step();
  sgd.load(empty, false);
  ASSERT_NE(sgd.state_of(p), nullptr);
  EXPECT_EQ(sgd.state_of(p)->momentum_buffer.to_values(), (std::vector<double>{1, 1}));
}

}  // namespace
}  // namespace lockstep::impl
