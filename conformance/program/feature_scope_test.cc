// Tests of feature scopes (feature_scope.h): exclusions of one glob and of several, allows/why_not,
// --features/--exclude-features (narrow_scope) and split_list.
#include "conformance/program/feature_scope.h"

#include <stdexcept>

#include <gtest/gtest.h>

#include "conformance/program/features.h"

namespace lockstep {
namespace {

using Features = std::set<std::string>;

TEST(FeatureScope, EmptyScopeAllowsEverything) {
  FeatureScope scope;
  EXPECT_TRUE(scope.empty());
  EXPECT_TRUE(scope.exclusions().empty());
  EXPECT_EQ(scope.excluded({"float64", "sgd", "group_options_partial"}), nullptr);
  for (const FeatureInfo& f : all_features()) {
    EXPECT_TRUE(scope.allows(f.name)) << f.name;
    EXPECT_EQ(scope.why_not(f.name), nullptr) << f.name;
  }
}

TEST(FeatureScope, SingleGlobExclusion) {
  FeatureScope scope;
  scope.exclude({"float64"}, "the driver declares dtypes float32 only", "capabilities");
  EXPECT_FALSE(scope.empty());
  ASSERT_EQ(scope.exclusions().size(), 1u);
  EXPECT_EQ(scope.excluded({"float32", "sgd", "op:add"}), nullptr);
  const FeatureExclusion* x = scope.excluded({"float32", "float64", "sgd"});
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->when, std::vector<std::string>{"float64"});
  EXPECT_EQ(x->reason, "the driver declares dtypes float32 only");
  EXPECT_EQ(x->source, "capabilities");
  EXPECT_FALSE(scope.allows("float64"));
  EXPECT_TRUE(scope.allows("float32"));
  EXPECT_EQ(scope.why_not("float64"), x);
  EXPECT_EQ(scope.why_not("float32"), nullptr);
  EXPECT_EQ(scope.excluded({}), nullptr);
}

TEST(FeatureScope, GlobsMatchSeveralFeatures) {
  FeatureScope scope;
  scope.exclude({"adam*.weight_decay"}, "--exclude-features", "flag");
  EXPECT_FALSE(scope.allows("adam.weight_decay"));
  EXPECT_FALSE(scope.allows("adamw.weight_decay"));
  EXPECT_TRUE(scope.allows("sgd.weight_decay"));
  EXPECT_TRUE(scope.allows("adam.lr"));
  EXPECT_TRUE(scope.allows("adamw"));
  EXPECT_NE(scope.excluded({"adamw", "adamw.weight_decay"}), nullptr);
  EXPECT_EQ(scope.excluded({"adamw", "adamw.lr", "sgd.weight_decay"}), nullptr);

  FeatureScope ops;
  ops.exclude({"op:?ul*"}, "no products", "flag");
  EXPECT_FALSE(ops.allows("op:mul"));
  EXPECT_FALSE(ops.allows("op:mul_scalar"));
  EXPECT_TRUE(ops.allows("op:matmul"));
  EXPECT_TRUE(ops.allows("mul"));  // globs match whole names
}

TEST(FeatureScope, SeveralGlobsExcludeOnlyTogether) {
  FeatureScope scope;
  scope.exclude({"sgd", "group_options_partial"}, "profile rule", "profile");
  // A combination is enforced on whole programs, never on a single feature.
  EXPECT_TRUE(scope.allows("sgd"));
  EXPECT_TRUE(scope.allows("group_options_partial"));
  EXPECT_EQ(scope.why_not("sgd"), nullptr);
  EXPECT_EQ(scope.excluded({"sgd", "float32"}), nullptr);
  EXPECT_EQ(scope.excluded({"adam", "group_options_partial"}), nullptr);
  const FeatureExclusion* x = scope.excluded({"float32", "group_options_partial", "sgd"});
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->source, "profile");

  FeatureScope globs;
  globs.exclude({"op:mul_scalar", "backward_after_*"}, "r", "profile");
  EXPECT_EQ(globs.excluded({"op:mul_scalar", "retain_graph"}), nullptr);
  EXPECT_NE(globs.excluded({"op:mul_scalar", "backward_after_step"}), nullptr);
  EXPECT_NE(globs.excluded({"op:mul_scalar", "backward_after_freed"}), nullptr);
  EXPECT_EQ(globs.excluded({"op:mul", "backward_after_freed"}), nullptr);
}

TEST(FeatureScope, FirstMatchingExclusionIsReported) {
  FeatureScope scope;
  scope.exclude({"sgd", "sgd.momentum"}, "first", "profile");
  scope.exclude({"sgd.*"}, "second", "flag");
  scope.exclude({"sgd.momentum"}, "third", "capabilities");
  ASSERT_EQ(scope.exclusions().size(), 3u);
  EXPECT_EQ(scope.excluded({"sgd", "sgd.lr", "sgd.momentum"})->reason, "first");
  EXPECT_EQ(scope.excluded({"sgd.momentum"})->reason, "second");
  EXPECT_EQ(scope.why_not("sgd.momentum")->reason, "second");  // the first exclusion of one glob
  EXPECT_EQ(scope.why_not("sgd"), nullptr);  // "sgd" only appears in a combination
}

TEST(SplitList, TrimsAndDropsEmptyItems) {
  EXPECT_EQ(split_list("a,b , c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split_list(""), std::vector<std::string>{});
  EXPECT_EQ(split_list(",, ,"), std::vector<std::string>{});
  EXPECT_EQ(split_list(" single "), std::vector<std::string>{"single"});
  EXPECT_EQ(split_list("a,,b,"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(split_list("\tadam*.weight_decay\t, op:* "), (std::vector<std::string>{"adam*.weight_decay", "op:*"}));
  EXPECT_EQ(split_list("a b,c"), (std::vector<std::string>{"a b", "c"}));  // only commas separate
}

TEST(NarrowScope, NothingAskedChangesNothing) {
  FeatureScope scope;
  narrow_scope(scope, "", "");
  EXPECT_TRUE(scope.empty());
  narrow_scope(scope, " , ", ",");
  EXPECT_TRUE(scope.empty());
}

TEST(NarrowScope, FeaturesKeepOnlyTheListedNamesOfTheirCategories) {
  FeatureScope scope;
  narrow_scope(scope, "float32,sgd,adam", "");
  EXPECT_TRUE(scope.allows("float32"));
  EXPECT_FALSE(scope.allows("float64"));
  EXPECT_TRUE(scope.allows("sgd"));
  EXPECT_TRUE(scope.allows("adam"));
  EXPECT_FALSE(scope.allows("adamw"));
  // Categories not named are left alone.
  for (const char* n : {"op:matmul", "sgd.momentum", "adamw.lr", "retain_graph", "group_options_partial"})
    EXPECT_TRUE(scope.allows(n)) << n;
  ASSERT_NE(scope.why_not("float64"), nullptr);
  EXPECT_EQ(scope.why_not("float64")->source, "flag");
  EXPECT_NE(scope.why_not("float64")->reason.find("--features"), std::string::npos) << scope.why_not("float64")->reason;
  EXPECT_EQ(scope.exclusions().size(), 5u);  // float64, adamw, rmsprop, adagrad and lbfgs, one each
  for (const FeatureExclusion& x : scope.exclusions()) EXPECT_EQ(x.when.size(), 1u);
}

TEST(NarrowScope, FeatureGlobs) {
  FeatureScope ops;
  narrow_scope(ops, "op:add,op:s*", "");
  for (const char* n : {"op:add", "op:sub", "op:sum", "op:square", "op:sigmoid"}) EXPECT_TRUE(ops.allows(n)) << n;
  for (const char* n : {"op:mul", "op:matmul", "op:mean", "op:embedding"}) EXPECT_FALSE(ops.allows(n)) << n;
  EXPECT_TRUE(ops.allows("float64"));
  EXPECT_TRUE(ops.allows("adamw"));

  FeatureScope options;
  narrow_scope(options, "sgd.lr,sgd.momentum", "");
  EXPECT_TRUE(options.allows("sgd.lr"));
  EXPECT_TRUE(options.allows("sgd.momentum"));
  EXPECT_FALSE(options.allows("sgd.nesterov"));
  EXPECT_TRUE(options.allows("adam.lr"));  // an optimizer's lr stays unless excluded by name (SGD needs it)
  EXPECT_TRUE(options.allows("adam"));  // the optimizers themselves are another category

  FeatureScope features;
  narrow_scope(features, "zero_grad,hold_grad", "");
  EXPECT_TRUE(features.allows("zero_grad"));
  EXPECT_FALSE(features.allows("set_to_none"));
  EXPECT_FALSE(features.allows("zero_grad_default"));
  EXPECT_FALSE(features.allows("retain_graph"));
  EXPECT_TRUE(features.allows("backward_after_freed"));  // a situation
  EXPECT_TRUE(features.allows("op:mul"));
}

TEST(NarrowScope, ExcludeFeatures) {
  FeatureScope scope;
  narrow_scope(scope, "", "adam*.weight_decay, float64");
  ASSERT_EQ(scope.exclusions().size(), 2u);
  EXPECT_EQ(scope.exclusions()[0].when, std::vector<std::string>{"adam*.weight_decay"});
  EXPECT_EQ(scope.exclusions()[1].when, std::vector<std::string>{"float64"});
  for (const FeatureExclusion& x : scope.exclusions()) {
    EXPECT_EQ(x.source, "flag");
    EXPECT_NE(x.reason.find("--exclude-features"), std::string::npos) << x.reason;
  }
  EXPECT_FALSE(scope.allows("adamw.weight_decay"));
  EXPECT_FALSE(scope.allows("float64"));
  EXPECT_TRUE(scope.allows("sgd.weight_decay"));
  EXPECT_TRUE(scope.allows("float32"));

  // Both flags at once: the exclusion comes on top of the narrowing.
  FeatureScope both;
  narrow_scope(both, "sgd,adam", "adam");
  EXPECT_TRUE(both.allows("sgd"));
  EXPECT_FALSE(both.allows("adam"));
  EXPECT_FALSE(both.allows("adamw"));
}

TEST(NarrowScope, UnknownNamesThrow) {
  for (const auto& [features, exclude] : std::vector<std::pair<std::string, std::string>>{
           {"float16", ""}, {"float32,bogus", ""}, {"", "nope*"}, {"", "sgd,op:conv2d"}, {"op:param", ""}}) {
    FeatureScope scope;
    try {
      narrow_scope(scope, features, exclude);
      ADD_FAILURE() << "no error for --features '" << features << "' --exclude-features '" << exclude << "'";
    } catch (const std::invalid_argument& e) {
      const std::string flag = features.empty() ? "--exclude-features" : "--features";
      EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
    }
  }
  FeatureScope ok;
  EXPECT_NO_THROW(narrow_scope(ok, "op:*", "backward_after_*"));
  EXPECT_FALSE(ok.allows("backward_after_step"));
  EXPECT_TRUE(ok.allows("op:linear"));
}

}  // namespace
}  // namespace lockstep
