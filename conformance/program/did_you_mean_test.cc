// Tests of did_you_mean.h: the distance, and which known names count as near.
#include "conformance/program/did_you_mean.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TEST(DidYouMean, EditDistanceCountsEditsAndTranspositions) {
  EXPECT_EQ(edit_distance("run", "run"), 0u);
  EXPECT_EQ(edit_distance("rnu", "run"), 1u);  // one adjacent transposition
  EXPECT_EQ(edit_distance("cout", "count"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(DidYouMean, NearestIsWithinAThirdOrAnAbbreviation) {
  const std::vector<std::string> subcommands{"run", "replay", "trace", "merge", "matrix", "mutants", "features"};
  EXPECT_EQ(nearest_name("rnu", subcommands), "run");
  EXPECT_EQ(nearest_name("replya", subcommands), "replay");
  EXPECT_EQ(nearest_name("feat", subcommands), "features");  // a prefix
  EXPECT_EQ(nearest_name("zzzzzzzz", subcommands), "");
  EXPECT_EQ(nearest_name("", subcommands), "");
  EXPECT_EQ(nearest_name("--exclude-feature", {"--exclude-features", "--features"}), "--exclude-features");
  EXPECT_EQ(nearest_name("backward_after_stp", {"backward_after_step", "backward_after_freed"}), "backward_after_step");
}

}  // namespace
}  // namespace lockstep
