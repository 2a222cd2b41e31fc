// Tests of zero_grad_default.h: a program's zero_grad() is spelled out wherever it is, a step's closure included
// (SEMANTICS §12.1, §17.2), and an explicit choice is left alone.
#include "conformance/run/zero_grad_default.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

Action zero_grad(std::optional<bool> set_to_none) {
  Action a;
  a.kind = ActionKind::ZeroGrad;
  a.set_to_none = set_to_none;
  return a;
}

Action step_with(std::vector<Action> closure) {
  Action a;
  a.kind = ActionKind::Step;
  a.closure = std::move(closure);
  return a;
}

TEST(ZeroGradDefault, SpelledOutInTheProgramAndInAClosure) {
  Program p;
  p.actions = {zero_grad(std::nullopt), zero_grad(false), step_with({zero_grad(std::nullopt), zero_grad(true)})};
  EXPECT_TRUE(uses_zero_grad_default(p));
  const Program spelled = spell_out_zero_grad(p, /*set_to_none=*/true);
  EXPECT_EQ(spelled.actions[0].set_to_none, true);
  EXPECT_EQ(spelled.actions[1].set_to_none, false);  // an explicit choice stays
  EXPECT_EQ((*spelled.actions[2].closure)[0].set_to_none, true);
  EXPECT_EQ((*spelled.actions[2].closure)[1].set_to_none, true);
  EXPECT_FALSE(uses_zero_grad_default(spelled));
}

TEST(ZeroGradDefault, OnlyInAClosureStillCounts) {
  Program p;
  p.actions = {step_with({zero_grad(std::nullopt)}), zero_grad(false)};
  EXPECT_TRUE(uses_zero_grad_default(p));
  EXPECT_EQ((*spell_out_zero_grad(p, false).actions[0].closure)[0].set_to_none, false);
  Program explicit_only;
  explicit_only.actions = {step_with({zero_grad(true)}), zero_grad(false)};
  EXPECT_FALSE(uses_zero_grad_default(explicit_only));
}

}  // namespace
}  // namespace lockstep
