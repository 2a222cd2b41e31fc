// The features a run may use (features.h): everything, narrowed by what the implementation under test
// declares in its handshake, by --features/--exclude-features, and by the "avoid" rules of its API profile.
// Every exclusion carries its reason, so reports can say what was left out and why.
//
// An exclusion names one or more feature globs ('*' and '?', expectations.h's glob_match): a program is
// out of scope when every glob of some exclusion matches one of its features. Exclusions of one glob also
// steer the generator away from the feature (allows()); exclusions of several globs (a combination, such as
// "sgd" with "group_options_partial") are enforced on whole programs.
//
// Example:
//   FeatureScope scope;
//   scope.exclude({"float64"}, "the driver declares dtypes float32 only", "capabilities");
//   scope.exclude({"adam*.weight_decay"}, "--exclude-features", "flag");
//   if (const FeatureExclusion* x = scope.excluded(program_features(p))) ... x->reason ...
#pragma once

#include <set>
#include <string>
#include <vector>

namespace lockstep {

struct FeatureExclusion {
  std::vector<std::string> when;  // feature globs, all of which must match
  std::string reason;             // one line: why
  std::string source;             // "capabilities", "flag", "profile"
};

class FeatureScope {
 public:
  void exclude(std::vector<std::string> when, std::string reason, std::string source);

  // The first exclusion that rules out a program with these features; nullptr when it is in scope.
  const FeatureExclusion* excluded(const std::set<std::string>& features) const;
  // Whether the single feature `name` may appear at all.
  bool allows(const std::string& name) const;
  // The exclusion of one glob that forbids `name`; nullptr when none does.
  const FeatureExclusion* why_not(const std::string& name) const;

  const std::vector<FeatureExclusion>& exclusions() const { return exclusions_; }
  bool empty() const { return exclusions_.empty(); }

 private:
  std::vector<FeatureExclusion> exclusions_;
};

// Applies --features (a comma-separated list of names or globs: within each category it names, only the
// features it lists stay allowed) and --exclude-features (each glob excluded). Throws std::invalid_argument
// for an item that matches no known feature (features.h).
void narrow_scope(FeatureScope& scope, const std::string& features, const std::string& exclude_features);

// "a,b , c" -> {"a", "b", "c"}; empty items dropped.
std::vector<std::string> split_list(const std::string& list);

}  // namespace lockstep
