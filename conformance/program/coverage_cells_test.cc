// coverage_cells.h: each table's cells from small programs whose situations are known by construction.
#include "conformance/program/coverage_cells.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace lockstep {
namespace {

bool has(const std::set<std::string>& cells, const std::string& table, const std::string& row, const std::string& col) {
  return cells.count(coverage_cell_key(table, row, col)) > 0;
}

Action act(ActionKind k) {
  Action a;
  a.kind = k;
  return a;
}

Program one_param(std::vector<double> values, DType d = DType::Float32, Shape shape = {3}) {
  Program p;
  p.params.push_back({"w", d, shape, std::move(values)});
  return p;
}

TEST(CoverageCells, EdgeClassesOfAnOpsInputsAtTheInitialValues) {
  Program p = one_param({0, -2, std::numeric_limits<double>::quiet_NaN()});
  p.loss = sum(unary(Op::Relu, param("w")));
  p.actions = {act(ActionKind::Forward)};
  const auto cells = coverage_cells(p);
  EXPECT_TRUE(has(cells, "ops", "relu float32", "any"));
  EXPECT_TRUE(has(cells, "ops", "relu float32", "zero"));
  EXPECT_TRUE(has(cells, "ops", "relu float32", "negative"));
  EXPECT_TRUE(has(cells, "ops", "relu float32", "nonfinite"));
  EXPECT_FALSE(has(cells, "ops", "relu float32", "large"));
  EXPECT_FALSE(has(cells, "ops", "relu float32", "tiny"));
  // sum's input is relu's output: 0, 0, NaN
  EXPECT_TRUE(has(cells, "ops", "sum float32", "zero"));
  EXPECT_FALSE(has(cells, "ops", "sum float32", "negative"));
  EXPECT_TRUE(has(cells, "ops", "sum float32", "nonfinite"));
}

TEST(CoverageCells, TinyAndLargeFollowTheDtype) {
  Program p = one_param({std::ldexp(1.0, -130), 3 * 1048576.0, 1}, DType::Float32);
  p.loss = sum(param("w"));
  p.actions = {act(ActionKind::Forward)};
  auto cells = coverage_cells(p);
  EXPECT_TRUE(has(cells, "ops", "sum float32", "tiny"));
  EXPECT_TRUE(has(cells, "ops", "sum float32", "large"));
  // 2^-130 is an ordinary double
  Program q = one_param({std::ldexp(1.0, -130), 1, 1}, DType::Float64);
  q.loss = sum(param("w"));
  q.actions = {act(ActionKind::Forward)};
  EXPECT_FALSE(has(coverage_cells(q), "ops", "sum float64", "tiny"));
}

// [] - [1] is [1] (SEMANTICS §2): adding it to a [1] parameter broadcasts nothing. The coverage evaluator once
// gave such a result the 0-d side's shape and counted a broadcast that LibTorch never made.
TEST(CoverageCells, ABroadcastResultHasTheTensorOperandsShape) {
  Program p = one_param({3.5}, DType::Float64, {1});
  TensorValue zero_d{DType::Float64, {}, {2}};
  TensorValue one{DType::Float64, {1}, {1}};
  p.loss = sum(add(binary(Op::Sub, constant(zero_d), constant(one)), param("w")));
  p.actions = {act(ActionKind::Forward)};
  const auto cells = coverage_cells(p);
  EXPECT_TRUE(has(cells, "ops", "sub float64", "broadcast"));
  EXPECT_TRUE(has(cells, "ops", "add float64", "any"));
  EXPECT_FALSE(has(cells, "ops", "add float64", "broadcast"));
}

TEST(CoverageCells, PowRowsByExponentBroadcastAndRepeatedIndices) {
  Program p = one_param({0, 1, 2});
  p.params.push_back({"s", DType::Float32, {}, {2}});
  p.params.push_back({"e", DType::Float32, {3, 2}, {1, 2, 3, 4, 5, 6}});
  p.loss = add(add(sum(pow_scalar(param("w"), 3)), sum(mul(param("w"), param("s")))),
               sum(embedding(param("e"), {0, 2, 0})));
  p.actions = {act(ActionKind::Forward)};
  const auto cells = coverage_cells(p);
  EXPECT_TRUE(has(cells, "ops", "pow^3 float32", "zero"));
  EXPECT_FALSE(has(cells, "ops", "pow^2 float32", "any"));
  EXPECT_TRUE(has(cells, "ops", "mul float32", "broadcast"));
  EXPECT_TRUE(has(cells, "ops", "embedding float32", "repeated_index"));
}

TEST(CoverageCells, ActionPairsStartWithStart) {
  Program p = one_param({1, 2, 3});
  p.loss = sum(param("w"));
  p.actions = {act(ActionKind::Forward), act(ActionKind::Backward), act(ActionKind::Backward)};
  const auto cells = coverage_cells(p);
  EXPECT_TRUE(has(cells, "actions", "start", "forward"));
  EXPECT_TRUE(has(cells, "actions", "forward", "backward"));
  EXPECT_TRUE(has(cells, "actions", "backward", "backward"));
  EXPECT_FALSE(has(cells, "actions", "start", "backward"));
  // the second backward through a graph that saved nothing: freed
  EXPECT_TRUE(has(cells, "situations", "float32", "backward through a freed graph"));
}

TEST(CoverageCells, OptionClassesIncludeLrZeroAndTheTypesDefaults) {
  Program p = one_param({1, 2, 3});
  p.loss = sum(param("w"));
  OptimizerSpec adamw;
  adamw.kind = OptimizerKind::AdamW;
  adamw.defaults.lr = 0.0;
  adamw.groups.push_back({{"w"}, std::nullopt});
  p.optimizer = adamw;
  auto cells = coverage_cells(p);
  EXPECT_TRUE(has(cells, "options", "adamw", "lr 0"));
  EXPECT_TRUE(has(cells, "options", "adamw", "weight_decay > 0"));  // AdamW's own default, 1e-2
  EXPECT_FALSE(has(cells, "options", "adamw", "weight_decay 0"));
  EXPECT_TRUE(has(cells, "groups", "adamw", "one list"));
  p.optimizer->defaults.betas = std::make_pair(0.0, 0.999);
  p.optimizer->defaults.lr = -1.0;
  cells = coverage_cells(p);
  EXPECT_TRUE(has(cells, "options", "adamw", "beta1 0"));
  EXPECT_TRUE(has(cells, "options", "adamw", "invalid"));
}

TEST(CoverageCells, RetainedGraphSteppedThenBackpropagatedAgainOnAnActivationOfAParam) {
  Program p = one_param({1, 2, 3});
  p.loss = sum(unary(Op::Tanh, param("w")));
  OptimizerSpec sgd;
  sgd.kind = OptimizerKind::SGD;
  sgd.defaults.lr = 0.1;
  sgd.groups.push_back({{"w"}, std::nullopt});
  p.optimizer = sgd;
  Action retained = act(ActionKind::Backward);
  retained.retain_graph = true;
  p.actions = {act(ActionKind::Forward), retained, act(ActionKind::Step), act(ActionKind::Backward)};
  const auto cells = coverage_cells(p);
  EXPECT_TRUE(has(cells, "situations", "float32", "backward after step, no new forward"));
  EXPECT_TRUE(has(cells, "situations", "float32", "retained graph stepped, backward again"));
  EXPECT_TRUE(has(cells, "situations", "float32", "activation of a param, stepped, backward again"));
  EXPECT_FALSE(has(cells, "situations", "float32", "backward through a freed graph"));
}

TEST(CoverageCells, SharedZeroDimGradStorageNeedsASecondBackward) {
  Program p;
  p.params.push_back({"a", DType::Float64, {}, {1}});
  p.params.push_back({"b", DType::Float64, {}, {2}});
  p.loss = add(sum(param("a")), sum(param("b")));
  p.actions = {act(ActionKind::Forward), act(ActionKind::Backward)};
  EXPECT_FALSE(has(coverage_cells(p), "situations", "float64", "0-d grads sharing storage, accumulated again"));
  p.actions.push_back(act(ActionKind::Forward));
  p.actions.push_back(act(ActionKind::Backward));
  EXPECT_TRUE(has(coverage_cells(p), "situations", "float64", "0-d grads sharing storage, accumulated again"));
}

TEST(CoverageCells, HeldHandlesAcrossZeroingAreCountedAtTheNextBackward) {
  Program p = one_param({1, 2, 3});
  p.loss = sum(param("w"));
  Action hold = act(ActionKind::HoldGrad);
  hold.param = "w";
  hold.handle = "h";
  Action none = act(ActionKind::ZeroGrad);
  none.set_to_none = true;
  p.actions = {act(ActionKind::Forward), act(ActionKind::Backward), hold, none, act(ActionKind::Forward),
               act(ActionKind::Backward)};
  const auto cells = coverage_cells(p);
  EXPECT_TRUE(has(cells, "situations", "float32", "held across set_to_none"));
  EXPECT_FALSE(has(cells, "situations", "float32", "held across zero_grad"));
}

// Issue 32, item 3: a parameter reached by several edges while its grad exists; held (not under create_graph,
// where accumulation is out of place); a 0-d grad sharing storage with another's.
TEST(CoverageCells, AParamUsedTwiceWhileItsGradExists) {
  Program p = one_param({1, 2, 3});
  p.loss = add(sum(param("w")), sum(mul(param("w"), param("w"))));
  Action hold = act(ActionKind::HoldGrad);
  hold.param = "w";
  hold.handle = "h";
  p.actions = {act(ActionKind::Forward), act(ActionKind::Backward)};
  EXPECT_FALSE(has(coverage_cells(p), "situations", "float32", "param used twice, grad defined"));  // none yet
  p.actions = {act(ActionKind::Forward), act(ActionKind::Backward), act(ActionKind::Forward), act(ActionKind::Backward)};
  EXPECT_TRUE(has(coverage_cells(p), "situations", "float32", "param used twice, grad defined"));
  EXPECT_FALSE(has(coverage_cells(p), "situations", "float32", "param used twice, grad held"));
  p.actions = {act(ActionKind::Forward), act(ActionKind::Backward), hold, act(ActionKind::Forward),
               act(ActionKind::Backward)};
  EXPECT_TRUE(has(coverage_cells(p), "situations", "float32", "param used twice, grad held"));
  p.actions.back().create_graph = true;
  EXPECT_FALSE(has(coverage_cells(p), "situations", "float32", "param used twice, grad held"));
  EXPECT_TRUE(has(coverage_cells(p), "situations", "float32", "held across create_graph"));

  Program z;
  z.params = {{"a", DType::Float64, {}, {1}}, {"b", DType::Float64, {}, {2}}};
  Action pair = act(ActionKind::Forward);
  pair.loss = add(sum(param("a")), sum(param("b")));
  Action twice = act(ActionKind::Forward);
  twice.loss = add(add(sum(param("a")), sum(param("b"))), sum(param("a")));
  z.actions = {pair, act(ActionKind::Backward), twice, act(ActionKind::Backward)};
  EXPECT_TRUE(has(coverage_cells(z), "situations", "float64", "param used twice, 0-d grad aliased"));
  z.actions = {pair, act(ActionKind::Backward), act(ActionKind::Forward), act(ActionKind::Backward)};
  z.loss = twice.loss;
  z.actions[2].loss = nullptr;
  EXPECT_TRUE(has(coverage_cells(z), "situations", "float64", "param used twice, 0-d grad aliased"));
  Action none = act(ActionKind::SetGradNone);  // a's grad gone: no longer aliased, nor defined
  none.param = "a";
  z.actions.insert(z.actions.begin() + 2, none);
  EXPECT_FALSE(has(coverage_cells(z), "situations", "float64", "param used twice, 0-d grad aliased"));
}

TEST(CoverageCells, GroupCellsOfTheIssue32Situations) {
  Program p;
  p.params = {{"w", DType::Float32, {2}, {1, 2}}, {"v", DType::Float32, {2}, {3, 4}}, {"b", DType::Float32, {}, {0}}};
  p.loss = add(sum(param("w")), add(sum(param("v")), param("b")));
  OptimizerSpec sgd;
  sgd.kind = OptimizerKind::SGD;
  sgd.defaults.lr = 0.1;
  sgd.groups = {{{"w", "b"}, std::nullopt}, {{"v"}, std::nullopt}};
  p.optimizer = sgd;
  // Without momentum SGD keeps no state: two same-shape parameters do not count.
  EXPECT_FALSE(has(coverage_cells(p), "groups", "sgd", "same-shape params with state"));
  p.optimizer->defaults.momentum = 0.9;
  EXPECT_TRUE(has(coverage_cells(p), "groups", "sgd", "same-shape params with state"));
  // One parameter listed in two groups is not two parameters.
  p.optimizer->groups = {{{"w"}, std::nullopt}, {{"w", "b"}, std::nullopt}};
  EXPECT_FALSE(has(coverage_cells(p), "groups", "sgd", "same-shape params with state"));
  Action change = act(ActionKind::SetOptions);
  change.group = 1;
  change.options.lr = 0.5;
  p.actions = {change};
  EXPECT_TRUE(has(coverage_cells(p), "groups", "sgd", "change with several groups"));
  p.actions[0].group = 5;  // a missing group is its own cell
  EXPECT_FALSE(has(coverage_cells(p), "groups", "sgd", "change with several groups"));
  EXPECT_TRUE(has(coverage_cells(p), "groups", "sgd", "change of a missing group"));
  OptimizerOptions invalid;
  invalid.lr = -1;
  p.optimizer->groups[1].options = invalid;
  EXPECT_TRUE(has(coverage_cells(p), "groups", "sgd", "invalid in one of several groups"));
}

TEST(CoverageCells, EveryTableCellThatAppliesHasAKeyAndTablesAreRectangular) {
  for (const CoverageTable& t : coverage_tables()) {
    ASSERT_EQ(t.applies.size(), t.rows.size()) << t.name;
    for (const auto& row : t.applies) EXPECT_EQ(row.size(), t.columns.size()) << t.name;
  }
  // broadcast applies to binary ops only; repeated_index to embedding and cross_entropy only
  const CoverageTable& ops = coverage_tables().front();
  auto applies = [&](const std::string& row, const std::string& col) {
    const size_t r = std::find(ops.rows.begin(), ops.rows.end(), row) - ops.rows.begin();
    const size_t c = std::find(ops.columns.begin(), ops.columns.end(), col) - ops.columns.begin();
    return r < ops.rows.size() && c < ops.columns.size() && ops.applies[r][c];
  };
  EXPECT_TRUE(applies("add float32", "broadcast"));
  EXPECT_FALSE(applies("relu float32", "broadcast"));
  EXPECT_TRUE(applies("embedding float64", "repeated_index"));
  EXPECT_FALSE(applies("sum float64", "repeated_index"));
}

}  // namespace
}  // namespace lockstep
