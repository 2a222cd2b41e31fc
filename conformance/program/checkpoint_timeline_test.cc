// Tests of the checkpoint timeline (checkpoint_timeline.h, SEMANTICS §19): what a load finds, read statically.
#include "conformance/program/checkpoint_timeline.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "conformance/program/program_json.h"

namespace lockstep {
namespace {

// SGD over a and b in one group (c is left for add_param_group); `actions` as JSON.
Program sgd_with(const char* actions) {
  return program_from_json(nlohmann::ordered_json::parse(std::string(R"({
    "params": [{"name": "a", "dtype": "float64", "shape": [1], "values": [1.0]},
               {"name": "b", "dtype": "float64", "shape": [1], "values": [2.0]},
               {"name": "c", "dtype": "float64", "shape": [1], "values": [3.0]}],
    "loss": {"op": "sum", "args": [{"op": "param", "name": "a"}]},
    "optimizer": {"type": "sgd", "defaults": {"lr": 0.1}, "params": ["a", "b"]},
    "actions": )") + actions + "}"));
}

// What each load_state_dict of `p` found, in order (`t`: the timeline of `p`, alive while the loads are read).
std::vector<CheckpointTimeline::Load> loads_of(const Program& p, CheckpointTimeline& t) {
  std::vector<CheckpointTimeline::Load> loads;
  for (const Action& a : p.actions) {
    const CheckpointTimeline::Load load = t.apply(a);
    if (a.kind == ActionKind::LoadStateDict) loads.push_back(load);
  }
  return loads;
}

TEST(CheckpointTimeline, ALoadRightAfterItsSaveFindsTheSameGroupsOptionsAndSteps) {
  const Program p = sgd_with(R"([{"action": "state_dict", "checkpoint": "s"},
                                 {"action": "load_state_dict", "checkpoint": "s"}])");
  CheckpointTimeline t(p);
  const auto loads = loads_of(p, t);
  ASSERT_EQ(loads.size(), 1u);
  ASSERT_NE(loads[0].saved, nullptr);
  EXPECT_EQ(loads[0].saved->groups, (CheckpointTimeline::Groups{{"a", "b"}}));
  EXPECT_FALSE(loads[0].steps_since_save);
  EXPECT_FALSE(loads[0].groups_differ);
  EXPECT_FALSE(loads[0].options_differ);
}

TEST(CheckpointTimeline, StepsSetOptionsAndAnAddedGroupAreSeenBetweenTheSaveAndTheLoad) {
  const Program p = sgd_with(R"([
      {"action": "forward"}, {"action": "backward"},
      {"action": "state_dict", "checkpoint": "s"},
      {"action": "step"},
      {"action": "set_options", "group": 0, "options": {"lr": 0.5}},
      {"action": "load_state_dict", "checkpoint": "s"},
      {"action": "load_state_dict", "checkpoint": "s"},
      {"action": "add_param_group", "params": ["c"]},
      {"action": "load_state_dict", "checkpoint": "s"},
      {"action": "load_state_dict", "checkpoint": "s", "fresh": true}])");
  CheckpointTimeline t(p);
  const auto loads = loads_of(p, t);
  ASSERT_EQ(loads.size(), 4u);
  EXPECT_TRUE(loads[0].steps_since_save);
  EXPECT_TRUE(loads[0].options_differ);  // set_options after the save
  EXPECT_FALSE(loads[0].groups_differ);
  // A load whose options differed leaves options no save shares (1.13 keeps, 2.x restores: SEM-19.2).
  EXPECT_TRUE(loads[1].options_differ);
  EXPECT_TRUE(loads[2].groups_differ);   // two groups now, one saved
  EXPECT_FALSE(loads[2].options_differ);  // decided by the number of groups first
  // A fresh optimizer has the program's groups and options: the save's again.
  EXPECT_FALSE(loads[3].groups_differ);
  EXPECT_FALSE(loads[3].options_differ);
  EXPECT_TRUE(loads[3].steps_since_save);
}

TEST(CheckpointTimeline, TheGroupsFollowAddsAndFreshLoads) {
  CheckpointTimeline t(sgd_with("[]"));
  Action add;
  add.kind = ActionKind::AddParamGroup;
  add.new_group.params = {"c"};
  t.apply(add);
  EXPECT_EQ(t.groups(), (CheckpointTimeline::Groups{{"a", "b"}, {"c"}}));
  Action load;
  load.kind = ActionKind::LoadStateDict;
  load.checkpoint = "never-saved";
  load.fresh = true;
  const CheckpointTimeline::Load found = t.apply(load);
  EXPECT_EQ(found.saved, nullptr);
  EXPECT_EQ(t.groups(), (CheckpointTimeline::Groups{{"a", "b"}}));
  Action step;
  step.kind = ActionKind::Step;
  t.apply(step);
  t.apply(step);
  EXPECT_EQ(t.steps(), 2);
}

}  // namespace
}  // namespace lockstep
