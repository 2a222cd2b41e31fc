// API profiles: where a framework's API legitimately differs from LibTorch's C++ API (the oracle), written once
// as rules, so that a correct implementation's live run has no failures that are not bugs, and the oracle is
// still what every value is compared against (SEMANTICS §11).
//
// A profile file (fixtures/profiles/<name>.json; a driver names its profile in its hello's "api_profile"):
//   {"profile": "pytorch-python",
//    "description": "PyTorch's Python API compared with LibTorch's C++ API",
//    "extends": "base-profile",                  optional: a shipped profile whose rules come first
//    "rules": [
//      {"id": "py-group-options-inherit", "when": ["group_options_partial"], "avoid": true,
//       "semantics": "SEM-11.1", "reason": "Python fills a group's unset options from the optimizer's defaults"},
//      {"id": "py-sgd-state-entry", "when": ["sgd"], "fields": ["* → state.exists"],
//       "semantics": "SEM-11.5", "reason": "Python's SGD keeps a state entry for every stepped parameter"}]}
// - "when": feature globs (conformance/program/features.h), all of which the program must have.
// - "avoid": true: such programs are not generated and such fixtures not replayed (a FeatureScope exclusion).
// - "fields" (+ optional "errors", "expected", "actual"): the differences at those field paths are expected in
//   such programs (an expectation with "features", expectations.h), in the direction "expected"/"actual" say;
//   the comparison goes on, so a later real bug still fails. A case whose only differences a profile accepted
//   passes (the profile is the API the implementation declared); each rule's uses are in the report.
// Exactly one of "avoid" and "fields". Every rule a run used is listed in its report with how often.
//
// Example:
//   ApiProfile p = load_profile(profile_path("pytorch-python"));
//   apply_profile(p, scope, expectations);
#pragma once

#include <string>
#include <vector>

#include "conformance/compare/expectations.h"
#include "conformance/program/feature_scope.h"

namespace lockstep {

struct ProfileRule {
  std::string id;
  std::vector<std::string> when;    // feature globs
  bool avoid = false;
  std::vector<std::string> fields;  // field globs (not avoid)
  std::vector<std::string> errors;  // error-kind globs (optional, with fields)
  std::string semantics;            // "SEM-11.1" (optional)
  std::string reason;
  std::string expected = "*", actual = "*";  // globs on the differing values (optional, with fields)
};

struct ApiProfile {
  std::string name, description, file;
  std::vector<ProfileRule> rules;
};

// A name -> fixtures/profiles/<name>.json in the source tree; with `allow_files`, anything with a '/' or ending
// in ".json" is a path (the --profile flag; a driver's hello may name only a shipped profile, so that an
// implementation cannot bring its own judge). Throws InputError when there is no such profile.
std::string profile_path(const std::string& name_or_path, bool allow_files = true);
// Strict reader; throws InputError naming the file and the JSON pointer.
ApiProfile load_profile(const std::string& path);
// The same for a profile's text; `file` names it in errors and in ApiProfile::file.
ApiProfile profile_from_text(const std::string& text, const std::string& file);

// Avoid rules become exclusions of `scope` (source "profile"), field rules entries of `expectations` (source
// "profile NAME rule ID", so reports tell them from the user's own entries).
void apply_profile(const ApiProfile& profile, FeatureScope& scope, Expectations& expectations);

// The directory of the shipped profiles.
std::string default_profiles_dir();

}  // namespace lockstep
