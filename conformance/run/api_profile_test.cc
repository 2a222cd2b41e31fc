// Tests of API profiles (api_profile.h): the shipped pytorch-python profile loads, bad profile files are
// rejected naming the file and the JSON pointer, and apply_profile turns rules into scope exclusions and
// expectations.
#include "conformance/run/api_profile.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "conformance/program/features.h"
#include "conformance/program/file_system.h"
#include "conformance/program/program_json.h"

namespace lockstep {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = files::process_temp_dir() + "/" + name;
  std::ofstream out(path);
  out << text;
  return path;
}

TEST(ApiProfile, ShippedPytorchPythonProfileLoads) {
  const std::string path = profile_path("pytorch-python");
  EXPECT_EQ(path, default_profiles_dir() + "/pytorch-python.json");
  const ApiProfile p = load_profile(path);
  EXPECT_EQ(p.name, "pytorch-python");
  EXPECT_EQ(p.file, path);
  EXPECT_FALSE(p.description.empty());
  ASSERT_GE(p.rules.size(), 8u);
  std::set<std::string> ids;
  int avoid = 0, fields = 0;
  for (const ProfileRule& r : p.rules) {
    EXPECT_TRUE(ids.insert(r.id).second) << "duplicate id " << r.id;
    EXPECT_FALSE(r.when.empty()) << r.id;
    EXPECT_FALSE(r.reason.empty()) << r.id;
    EXPECT_EQ(r.semantics.rfind("SEM-11.", 0), 0u) << r.id << ": " << r.semantics;
    EXPECT_NE(r.avoid, !r.fields.empty()) << r.id << ": exactly one of avoid and fields";
    if (!r.errors.empty()) {
      EXPECT_FALSE(r.fields.empty()) << r.id;
    }
    for (const std::string& g : r.when) {
      bool any = false;
      for (const FeatureInfo& f : all_features()) any = any || glob_match(g, f.name);
      EXPECT_TRUE(any) << r.id << ": " << g;
    }
    (r.avoid ? avoid : fields) += 1;
  }
  EXPECT_GT(avoid, 0);
  EXPECT_GT(fields, 0);
  // A few rules as documented in SEMANTICS §11.
  auto rule = [&](const std::string& id) -> const ProfileRule* {
    for (const ProfileRule& r : p.rules)
      if (r.id == id) return &r;
    return nullptr;
  };
  ASSERT_NE(rule("py-group-options-inherit"), nullptr);
  EXPECT_TRUE(rule("py-group-options-inherit")->avoid);
  EXPECT_EQ(rule("py-group-options-inherit")->when, std::vector<std::string>{"group_options_partial"});
  ASSERT_NE(rule("py-sgd-step-bumps-version"), nullptr);
  EXPECT_EQ(rule("py-sgd-step-bumps-version")->when, (std::vector<std::string>{"sgd", "backward_after_step"}));
  ASSERT_NE(rule("py-sgd-state-without-momentum"), nullptr);
  EXPECT_FALSE(rule("py-sgd-state-without-momentum")->avoid);
  EXPECT_EQ(rule("py-sgd-state-without-momentum")->fields, std::vector<std::string>{"* → state.exists"});
}

// profile_from_text() is load_profile() without the file: the same rules, and errors naming the given name.
TEST(ApiProfile, TextReadsLikeTheFileAndNamesTheGivenFile) {
  const std::string path = profile_path("pytorch-python");
  const ApiProfile from_file = load_profile(path);
  const ApiProfile from_text = profile_from_text(read_text_file(path), "stdin");
  EXPECT_EQ(from_text.file, "stdin");
  EXPECT_EQ(from_text.name, from_file.name);
  ASSERT_EQ(from_text.rules.size(), from_file.rules.size());
  for (size_t i = 0; i < from_file.rules.size(); ++i) EXPECT_EQ(from_text.rules[i].id, from_file.rules[i].id);
  try {
    profile_from_text(R"({"profile": "p", "rules": []})", "stdin");
    FAIL() << "an empty rule list was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "stdin");
    EXPECT_EQ(e.pointer(), "/rules");
  }
}

TEST(ApiProfile, ProfilePathNamesAndPaths) {
  try {
    profile_path("no-such-profile");
    ADD_FAILURE() << "no error for an unknown profile";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-profile"), std::string::npos) << e.what();
  }
  EXPECT_THROW(profile_path(::testing::TempDir() + "missing-profile.json"), InputError);
  EXPECT_THROW(profile_path("missing.json"), InputError);
  EXPECT_THROW(profile_path(default_profiles_dir()), InputError);  // a directory is not a profile file
  const std::string path = write_temp("api_profile_test_path.json", "{}");
  EXPECT_EQ(profile_path(path), path);  // a path is taken as is
  std::remove(path.c_str());
}

TEST(ApiProfile, BadFilesNameTheFileAndThePointer) {
  const std::string rule_ok = R"({"id": "ok", "when": ["sgd"], "avoid": true, "reason": "r"})";
  struct Bad {
    std::string text;
    std::string pointer;
  } bad[] = {
      // missing "when"
      {R"({"profile": "p", "rules": [{"id": "a", "avoid": true, "reason": "r"}]})", "/rules/0"},
      // both avoid and fields; neither
      {R"({"profile": "p", "rules": [{"id": "a", "when": ["sgd"], "avoid": true, "fields": ["x"], "reason": "r"}]})", "/rules/0"},
      {R"({"profile": "p", "rules": [{"id": "a", "when": ["sgd"], "reason": "r"}]})", "/rules/0"},
      {R"({"profile": "p", "rules": [{"id": "a", "when": ["sgd"], "avoid": false, "reason": "r"}]})", "/rules/0"},
      // "errors" without fields
      {R"({"profile": "p", "rules": [{"id": "a", "when": ["sgd"], "avoid": true, "errors": ["inplace_modified"], "reason": "r"}]})",
       "/rules/0/errors"},
      // an unknown feature in "when"
      {R"({"profile": "p", "rules": [)" + rule_ok + R"(, {"id": "a", "when": ["sgd", "bogus_feature"], "avoid": true, "reason": "r"}]})",
       "/rules/1/when/1"},
      {R"({"profile": "p", "rules": [{"id": "a", "when": [], "avoid": true, "reason": "r"}]})", "/rules/0/when"},
      {R"({"profile": "p", "rules": [{"id": "a", "when": "sgd", "avoid": true, "reason": "r"}]})", "/rules/0/when"},
      // an unknown field, on a rule and at the top
      {R"({"profile": "p", "rules": [{"id": "a", "when": ["sgd"], "avoid": true, "reason": "r", "colour": "red"}]})",
       "/rules/0/colour"},
      {R"({"profile": "p", "rules": [{"id": "a", "when": ["sgd"], "avoid": true, "reason": "r"}], "version": 2})", "/version"},
      {R"({"profile": "p", "rules": []})", "/rules"},
      {R"({"profile": "", "rules": [{"id": "a", "when": ["sgd"], "avoid": true, "reason": "r"}]})", "/profile"},
      {R"({"profile": "p", "rules": [{"id": "a", "when": ["sgd"], "avoid": true, "expected": "false", "reason": "r"}]})", "/rules/0/expected"},
      // ids and reasons
      {R"({"profile": "p", "rules": [)" + rule_ok + ", " + rule_ok + "]}", "/rules/1/id"},
      {R"({"profile": "p", "rules": [{"id": "", "when": ["sgd"], "avoid": true, "reason": "r"}]})", "/rules/0/id"},
      {R"({"profile": "p", "rules": [{"id": "a", "when": ["sgd"], "avoid": true, "reason": ""}]})", "/rules/0/reason"},
      {R"({"profile": "p", "rules": [{"id": "a", "when": ["sgd"], "avoid": true}]})", "/rules/0"},
      {R"({"profile": "p", "rules": [{"id": "a", "when": ["sgd"], "fields": [], "reason": "r"}]})", "/rules/0/fields"},
      {R"({"profile": "p", "rules": {}})", "/rules"},
      {R"({"rules": []})", ""},
  };
  int i = 0;
  for (const Bad& b : bad) {
    const std::string path = write_temp("api_profile_test_bad_" + std::to_string(i++) + ".json", b.text);
    try {
      load_profile(path);
      ADD_FAILURE() << "no error for " << b.text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_EQ(e.pointer(), b.pointer) << b.text << "\n" << e.what();
    }
    std::remove(path.c_str());
  }
  // Not JSON at all, and no file.
  const std::string broken = write_temp("api_profile_test_broken.json", "{\"profile\": ");
  try {
    load_profile(broken);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), broken);
  }
  std::remove(broken.c_str());
  EXPECT_THROW(load_profile(broken), InputError);
}

TEST(ApiProfile, GoodFileWithEveryField) {
  const std::string path = write_temp("api_profile_test_good.json", R"({"profile": "mine", "description": "d",
    "comment": "c",
    "rules": [{"id": "a", "when": ["adam*", "op:mul"], "fields": ["* → grad[*]", "output → value"],
               "errors": ["inplace_*"], "semantics": "SEM-11.9", "reason": "why", "comment": "c"},
              {"id": "b", "when": ["float64"], "avoid": true, "reason": "no doubles"}]})");
  const ApiProfile p = load_profile(path);
  std::remove(path.c_str());
  EXPECT_EQ(p.name, "mine");
  EXPECT_EQ(p.description, "d");
  ASSERT_EQ(p.rules.size(), 2u);
  EXPECT_EQ(p.rules[0].when, (std::vector<std::string>{"adam*", "op:mul"}));
  EXPECT_FALSE(p.rules[0].avoid);
  EXPECT_EQ(p.rules[0].fields, (std::vector<std::string>{"* → grad[*]", "output → value"}));
  EXPECT_EQ(p.rules[0].errors, std::vector<std::string>{"inplace_*"});
  EXPECT_EQ(p.rules[0].semantics, "SEM-11.9");
  EXPECT_TRUE(p.rules[1].avoid);
  EXPECT_TRUE(p.rules[1].fields.empty());
  EXPECT_EQ(p.rules[1].semantics, "");
}

TEST(ApiProfile, ApplyPutsAvoidRulesInTheScopeAndFieldRulesInExpectations) {
  const ApiProfile p = load_profile(profile_path("pytorch-python"));
  FeatureScope scope;
  Expectations expectations;
  apply_profile(p, scope, expectations);
  size_t avoid = 0;
  for (const ProfileRule& r : p.rules) avoid += r.avoid ? 1 : 0;
  ASSERT_EQ(scope.exclusions().size(), avoid);
  ASSERT_EQ(expectations.entries.size(), p.rules.size() - avoid);

  for (const FeatureExclusion& x : scope.exclusions()) EXPECT_EQ(x.source, "profile");
  const FeatureExclusion* partial = scope.excluded({"adam", "group_options_partial"});
  ASSERT_NE(partial, nullptr);
  EXPECT_NE(partial->reason.find("profile pytorch-python rule py-group-options-inherit"), std::string::npos)
      << partial->reason;
  EXPECT_NE(partial->reason.find("SEM-11.2"), std::string::npos) << partial->reason;
  EXPECT_FALSE(scope.allows("group_options_partial"));
  EXPECT_FALSE(scope.allows("empty_param_list"));
  // Combinations stay combinations.
  EXPECT_TRUE(scope.allows("backward_after_step"));
  EXPECT_EQ(scope.excluded({"adam", "backward_after_step"}), nullptr);
  EXPECT_NE(scope.excluded({"sgd", "backward_after_step"}), nullptr);
  EXPECT_EQ(scope.excluded({"op:mul_scalar", "sgd"}), nullptr);
  EXPECT_NE(scope.excluded({"op:mul_scalar", "backward_after_freed", "adam"}), nullptr);

  const Expectation& e = expectations.entries.at(0);
  EXPECT_EQ(e.source, "profile pytorch-python rule py-sgd-state-without-momentum");
  EXPECT_EQ(e.id, "*");
  EXPECT_EQ(e.features, std::vector<std::string>{"sgd"});
  EXPECT_EQ(e.fields, std::vector<std::string>{"* → state.exists"});
  EXPECT_EQ(e.category, "api_difference");
  EXPECT_NE(e.reason.find("profile pytorch-python rule py-sgd-state-without-momentum"), std::string::npos);
  // The entry masks state.exists in SGD programs only, and only when the features are known.
  const std::set<std::string> sgd = {"float32", "sgd", "sgd.lr"}, adam = {"float32", "adam"};
  EXPECT_EQ(expectations.mask_for("random-3", &sgd).match("w → state.exists", {}, "false", "true"), &e);
  // Only the direction Python shows (an extra entry), never a missing one.
  EXPECT_EQ(expectations.mask_for("random-3", &sgd).match("w → state.exists", {}, "true", "false"), nullptr);
  EXPECT_EQ(expectations.mask_for("random-3", &sgd).match("w → grad[0]", {}, "false", "true"), nullptr);
  EXPECT_EQ(expectations.mask_for("random-3", &adam).match("w → state.exists", {}, "false", "true"), nullptr);
  EXPECT_EQ(expectations.mask_for("random-3").match("w → state.exists"), nullptr);
  EXPECT_EQ(expectations.whole_case("random-3", &sgd), nullptr);  // a mask, never a whole-case entry
}

TEST(ApiProfile, ApplyKeepsErrorsAndAppendsToWhatIsThere) {
  ApiProfile p;
  p.name = "t";
  p.rules.push_back({"m", {"adam", "backward_after_freed"}, false, {"error.kind"}, {"inplace_*"}, "SEM-11.9", "why"});
  p.rules.push_back({"x", {"float64"}, true, {}, {}, "", "no doubles"});
  FeatureScope scope;
  scope.exclude({"adamw"}, "caps", "capabilities");
  Expectations expectations;
  expectations.entries.push_back(Expectation{});
  expectations.entries.back().reason = "user's own";
  apply_profile(p, scope, expectations);
  ASSERT_EQ(scope.exclusions().size(), 2u);
  EXPECT_EQ(scope.exclusions()[0].source, "capabilities");
  EXPECT_EQ(scope.exclusions()[1].when, std::vector<std::string>{"float64"});
  EXPECT_EQ(scope.exclusions()[1].reason, "profile t rule x: no doubles");
  ASSERT_EQ(expectations.entries.size(), 2u);
  const Expectation& e = expectations.entries[1];
  EXPECT_EQ(e.source, "profile t rule m");
  EXPECT_EQ(e.reason, "profile t rule m: SEM-11.9 why");
  EXPECT_EQ(e.errors, std::vector<std::string>{"inplace_*"});
  EXPECT_EQ(e.features, (std::vector<std::string>{"adam", "backward_after_freed"}));
  const std::set<std::string> f = {"adam", "backward_after_freed"};
  const FieldMask mask = expectations.mask_for("any", &f);
  EXPECT_EQ(mask.match("error.kind", {"other"}), nullptr);
  EXPECT_EQ(mask.match("error.kind", {"inplace_modified"}), &e);
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// A driver's hello may name only a shipped profile: an implementation cannot bring its own judge.
TEST(ApiProfile, AHelloCannotNameAFile) {
  EXPECT_NO_THROW(profile_path("pytorch-python", /*allow_files=*/false));
  for (const char* name : {"/etc/passwd", "../profiles/pytorch-python", "mine.json", "a b", ""})
    EXPECT_THROW(profile_path(name, /*allow_files=*/false), InputError) << name;
}

}  // namespace
}  // namespace lockstep
