// Tests of the expectations file (expectations.h): globbing, masks and whole-case entries, the legacy forms,
// strict validation with errors naming the file and the JSON pointer.
#include "conformance/compare/expectations.h"

#include <cmath>
#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "conformance/compare/tolerance.h"
#include "conformance/program/features.h"
#include "conformance/program/file_system.h"
#include "conformance/program/program_json.h"

namespace lockstep {
namespace {

using json = nlohmann::ordered_json;

TEST(Expectations, GlobMatching) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("random-*", "random-17"));
  EXPECT_FALSE(glob_match("random-*", "tutorial-1"));
  EXPECT_TRUE(glob_match("w → exp_avg_sq[*]", "w → exp_avg_sq[1,2]"));
  EXPECT_TRUE(glob_match("*grad*", "w → grad.defined"));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "ac"));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXXbYY"));
  EXPECT_TRUE(glob_match("exact", "exact"));
  EXPECT_FALSE(glob_match("exact", "exactly"));
}

TEST(Expectations, MasksAndWholeCaseEntries) {
  Expectations e = expectations_from_json(json::parse(R"({"expectations": [
    {"id": "random-*", "fields": ["* → state.exists", "group * → lr"], "reason": "masks", "category": "api_difference"},
    {"id": "tut001-*", "reason": "whole case", "category": "implementation_bug", "comment": "c"},
    {"id": "random-1?", "field": "error.kind", "reason": "legacy single field"}]})"), "e.json");
  ASSERT_EQ(e.entries.size(), 3u);
  FieldMask m = e.mask_for("random-17");
  ASSERT_FALSE(m.empty());
  ASSERT_NE(m.match("w → state.exists"), nullptr);
  EXPECT_EQ(m.match("w → state.exists")->reason, "masks");
  EXPECT_EQ(m.match("group 2 → lr")->reason, "masks");
  EXPECT_EQ(m.match("error.kind")->reason, "legacy single field");
  EXPECT_EQ(m.match("w → grad[0]"), nullptr);
  EXPECT_EQ(e.mask_for("random-7").match("error.kind"), nullptr);  // random-1? needs two characters
  EXPECT_TRUE(e.mask_for("tut001-x").empty());                      // whole-case entries are not masks
  ASSERT_NE(e.whole_case("tut001-x"), nullptr);
  EXPECT_EQ(e.whole_case("tut001-x")->category, "implementation_bug");
  EXPECT_EQ(e.whole_case("random-17"), nullptr);
  EXPECT_EQ(e.stale({"random-3"}), (std::vector<std::string>{"tut001-*", "random-1?"}));
}

TEST(Expectations, LegacyForms) {
  // The replay format ("expected_failures") and the known-discrepancies format (a bare array).
  EXPECT_EQ(expectations_from_json(json::parse(R"({"expected_failures": [{"id": "x", "reason": "r",
      "category": "precision"}]})"), "e.json").entries.size(), 1u);
  Expectations bare = expectations_from_json(json::parse(R"([{"id": "x", "field": "f", "reason": "r"}])"), "k.json");
  ASSERT_EQ(bare.entries.size(), 1u);
  EXPECT_EQ(bare.entries[0].fields, std::vector<std::string>{"f"});
}

TEST(Expectations, ValidationNamesFileAndPointer) {
  struct Bad {
    const char* text;
    const char* pointer;
  } bad[] = {
      {R"({"expectations": [{"id": "x", "reason": "r", "category": "whatever"}]})", "/expectations/0/category"},
      {R"({"expectations": [{"id": "x", "reason": ""}]})", "/expectations/0/reason"},
      {R"({"expectations": [{"reason": "r"}]})", "/expectations/0"},
      {R"({"expectations": {}})", "/expectations"},
      {R"({"expectations": [{"id": "x", "reason": "r", "fields": []}]})", "/expectations/0/fields"},
      {R"({"expectations": [{"id": "x", "reason": "r", "fields": ["a", 3]}]})", "/expectations/0/fields/1"},
      {R"({"expectations": [{"id": "x", "reason": "r", "fields": ["a"], "field": "b"}]})", "/expectations/0/field"},
      {R"({"expectations": [{"id": "x", "reason": "r", "bogus": 1}]})", "/expectations/0/bogus"},
      {R"({"expected": []})", ""},
      {R"([1])", "/0"},
      {R"({"expectations": [{"id": "x", "reason": "r", "when": {"pytorch": "2.0"}}]})", "/expectations/0/when/pytorch"},
      {R"({"expectations": [{"id": "x", "reason": "r", "when": {"torch": ">=2.0"}}]})", "/expectations/0/when"},
      {R"({"expectations": [{"id": "x", "reason": "r", "when": ">=2.0"}]})", "/expectations/0/when"},
  };
  for (const Bad& b : bad) {
    try {
      expectations_from_json(json::parse(b.text), "e.json");
      ADD_FAILURE() << b.text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "e.json");
      EXPECT_EQ(e.pointer(), b.pointer) << e.what();
    }
  }
}

// SEM-12.7: an entry with "when" applies only to an implementation of a version that meets it; the others are set
// aside, so they are neither matched nor reported unused on that version.
TEST(Expectations, WhenKeepsTheEntriesOfTheImplementationsVersion) {
  const char* text = R"({"expectations": [
    {"id": "fixed-in-2", "reason": "a 1.x bug", "when": {"pytorch": "<2.0"}},
    {"id": "new-in-2", "fields": ["* → grad.defined"], "reason": "a 2.x bug", "when": {"pytorch": ">=2.0"}},
    {"id": "always", "reason": "every version"}]})";
  Expectations v1 = expectations_from_json(json::parse(text), "e.json");
  EXPECT_EQ(v1.keep_for_version("1.13.0a0"), 1u);
  ASSERT_EQ(v1.entries.size(), 2u);
  EXPECT_NE(v1.whole_case("fixed-in-2"), nullptr);
  EXPECT_TRUE(v1.mask_for("new-in-2").empty());
  ASSERT_EQ(v1.for_other_versions.size(), 1u);
  EXPECT_EQ(v1.for_other_versions[0].id, "new-in-2");

  Expectations v2 = expectations_from_json(json::parse(text), "e.json");
  EXPECT_EQ(v2.keep_for_version("libtorch-2.6.0"), 1u);
  EXPECT_EQ(v2.whole_case("fixed-in-2"), nullptr);
  EXPECT_FALSE(v2.mask_for("new-in-2").empty());
  EXPECT_NE(v2.whole_case("always"), nullptr);
  for (const Expectation* e : v2.unused_entries()) EXPECT_NE(e->id, "fixed-in-2") << "an entry of another version";

  // No readable version: only the entries without a condition apply.
  Expectations none = expectations_from_json(json::parse(text), "e.json");
  EXPECT_EQ(none.keep_for_version(""), 2u);
  EXPECT_EQ(none.entries.size(), 1u);
}

TEST(Expectations, LoadsFilesAndNamesBadOnes) {
  const std::string path = files::process_temp_dir() + "/expectations_test.json";
  {
    std::ofstream out(path);
    out << R"({"expectations": [{"id": "a", "reason": "r"}]})";
  }
  EXPECT_EQ(load_expectations(path).entries.size(), 1u);
  {
    std::ofstream out(path);
    out << "{";
  }
  try {
    load_expectations(path);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
  }
  std::remove(path.c_str());
  EXPECT_THROW(load_expectations(path), InputError);
  EXPECT_TRUE(load_expectations(default_expectations_file()).entries.empty());
}

TEST(Expectations, FeatureEntriesMatchOnlyWhenEveryGlobMatches) {
  Expectations e = expectations_from_json(json::parse(R"({"expectations": [
    {"features": ["sgd", "op:mul*"], "fields": ["* → state.exists"], "reason": "sgd state"},
    {"features": ["adamw"], "reason": "whole adamw cases"},
    {"id": "fixture-*", "features": ["float64"], "fields": ["output → has_grad_fn"], "reason": "fixtures in float64"}]})"),
                                          "e.json");
  ASSERT_EQ(e.entries.size(), 3u);
  EXPECT_EQ(e.entries[0].id, "*");  // a rule for live runs: any case id
  EXPECT_EQ(e.entries[0].features, (std::vector<std::string>{"sgd", "op:mul*"}));
  EXPECT_EQ(e.entries[0].source, "e.json");

  const std::set<std::string> sgd_mul = {"float32", "sgd", "sgd.lr", "op:mul_scalar"};
  const std::set<std::string> sgd_only = {"float32", "sgd", "sgd.lr", "op:add"};
  const std::set<std::string> adam_mul = {"float32", "adam", "op:mul"};
  const std::set<std::string> none;
  EXPECT_NE(e.mask_for("random-1", &sgd_mul).match("w → state.exists"), nullptr);
  EXPECT_EQ(e.mask_for("random-1", &sgd_mul).match("w → grad[0]"), nullptr);
  EXPECT_TRUE(e.mask_for("random-1", &sgd_only).empty());  // op:mul* matches none of them
  EXPECT_TRUE(e.mask_for("random-1", &adam_mul).empty());  // sgd matches none of them
  EXPECT_TRUE(e.mask_for("random-1", &none).empty());
  EXPECT_TRUE(e.mask_for("random-1").empty());              // features not given: never
  EXPECT_TRUE(e.mask_for("random-1", nullptr).empty());

  const std::set<std::string> adamw = {"float32", "adamw"};
  ASSERT_NE(e.whole_case("random-2", &adamw), nullptr);
  EXPECT_EQ(e.whole_case("random-2", &adamw)->reason, "whole adamw cases");
  EXPECT_EQ(e.whole_case("random-2", &sgd_mul), nullptr);
  EXPECT_EQ(e.whole_case("random-2"), nullptr);

  // With an id too, both must match.
  const std::set<std::string> f64 = {"float64"};
  EXPECT_NE(e.mask_for("fixture-7", &f64).match("output → has_grad_fn"), nullptr);
  EXPECT_EQ(e.mask_for("random-7", &f64).match("output → has_grad_fn"), nullptr);
  EXPECT_EQ(e.mask_for("fixture-7", &sgd_mul).match("output → has_grad_fn"), nullptr);
}

TEST(Expectations, ErrorsMaskOnlyRecordsThatRaisedSuchAnError) {
  Expectations e = expectations_from_json(json::parse(R"({"expectations": [
    {"id": "*", "fields": ["output → has_grad_fn", "error.kind"], "errors": ["inplace_*", "backward_through_freed_graph"], "reason": "errors"},
    {"id": "case-b", "fields": ["w → grad.defined"], "reason": "any record"}]})"), "e.json");
  ASSERT_EQ(e.entries[0].errors, (std::vector<std::string>{"inplace_*", "backward_through_freed_graph"}));
  const FieldMask m = e.mask_for("case-a");
  EXPECT_EQ(m.match("output → has_grad_fn"), nullptr);                    // no error in the record
  EXPECT_EQ(m.match("output → has_grad_fn", {"no_grad_fn"}), nullptr);    // another kind
  EXPECT_NE(m.match("output → has_grad_fn", {"no_grad_fn", "inplace_modified"}), nullptr);
  EXPECT_NE(m.match("error.kind", {"backward_through_freed_graph"}), nullptr);
  EXPECT_EQ(m.match("w → grad[0]", {"backward_through_freed_graph"}), nullptr);       // the fields still have to match
  // An entry without errors masks whatever the records raised.
  const FieldMask b = e.mask_for("case-b");
  EXPECT_NE(b.match("w → grad.defined"), nullptr);
  EXPECT_NE(b.match("w → grad.defined", {"inplace_modified"}), nullptr);
}

TEST(Expectations, FeaturesAndErrorsAreValidated) {
  // Without "id" but with "features": valid.
  Expectations ok = expectations_from_json(
      json::parse(R"({"expectations": [{"features": ["sgd"], "reason": "r"}]})"), "e.json");
  ASSERT_EQ(ok.entries.size(), 1u);
  EXPECT_EQ(ok.entries[0].id, "*");
  EXPECT_TRUE(ok.entries[0].fields.empty());
  struct Bad {
    const char* text;
    const char* pointer;
  } bad[] = {
      {R"({"expectations": [{"fields": ["a"], "reason": "r"}]})", "/expectations/0"},  // neither id nor features
      {R"({"expectations": [{"id": "x", "errors": ["inplace_*"], "reason": "r"}]})", "/expectations/0/errors"},
      {R"({"expectations": [{"features": ["sgd"], "errors": ["e"], "reason": "r"}]})", "/expectations/0/errors"},
      {R"({"expectations": [{"features": [], "reason": "r"}]})", "/expectations/0/features"},
      {R"({"expectations": [{"features": "sgd", "reason": "r"}]})", "/expectations/0/features"},
      {R"({"expectations": [{"features": ["sgd", ""], "reason": "r"}]})", "/expectations/0/features/1"},
      {R"({"expectations": [{"id": "x", "fields": ["f"], "errors": [], "reason": "r"}]})", "/expectations/0/errors"},
      {R"({"expectations": [{"id": "x", "fields": ["f"], "errors": [7], "reason": "r"}]})", "/expectations/0/errors/0"},
  };
  for (const Bad& b : bad) {
    try {
      expectations_from_json(json::parse(b.text), "e.json");
      ADD_FAILURE() << b.text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "e.json");
      EXPECT_EQ(e.pointer(), b.pointer) << b.text << ": " << e.what();
    }
  }
}

TEST(Expectations, UsesCountMatchesAndUnusedEntriesAreListed) {
  Expectations e = expectations_from_json(json::parse(R"({"expectations": [
    {"id": "*", "fields": ["a"], "reason": "first"},
    {"id": "*", "fields": ["a", "b"], "reason": "second"},
    {"id": "x", "reason": "whole case"}]})"), "e.json");
  EXPECT_EQ(e.unused_entries().size(), 3u);
  const FieldMask m = e.mask_for("case");
  EXPECT_EQ(m.match("a")->reason, "first");  // the first matching entry takes the use
  EXPECT_EQ(m.match("a")->reason, "first");
  EXPECT_EQ(m.match("c"), nullptr);
  EXPECT_EQ(e.entries[0].uses, 2);
  EXPECT_EQ(e.entries[1].uses, 0);
  std::vector<const Expectation*> unused = e.unused_entries();
  ASSERT_EQ(unused.size(), 2u);
  EXPECT_EQ(unused[0], &e.entries[1]);
  EXPECT_EQ(unused[1], &e.entries[2]);
  EXPECT_EQ(m.match("b")->reason, "second");
  EXPECT_EQ(e.entries[1].uses, 1);
  ASSERT_EQ(e.unused_entries().size(), 1u);
  EXPECT_EQ(e.unused_entries()[0]->reason, "whole case");
  ++e.entries[2].uses;  // the report counts whole-case entries that explained a failure
  EXPECT_TRUE(e.unused_entries().empty());
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// A mask can accept one direction only: {"expected": "false", "actual": "true"} accepts an extra state entry,
// never a missing one (the pytorch-python profile's rule py-sgd-state-without-momentum).
TEST(Expectations, ExpectedAndActualNarrowAMaskToOneDirection) {
  const Expectations e = expectations_from_json(nlohmann::ordered_json::parse(R"({"expectations": [
    {"features": ["sgd"], "fields": ["* → state.exists"], "expected": "false", "actual": "true", "reason": "extra"}]})"),
                                                "e.json");
  const std::set<std::string> sgd = {"sgd"};
  const FieldMask m = e.mask_for("random-1", &sgd);
  EXPECT_NE(m.match("w → state.exists", {}, "false", "true"), nullptr);
  EXPECT_EQ(m.match("w → state.exists", {}, "true", "false"), nullptr);
  EXPECT_THROW(expectations_from_json(nlohmann::ordered_json::parse(
                   R"({"expectations": [{"id": "*", "expected": "false", "reason": "r"}]})"), "e.json"),
               InputError);  // "expected" narrows a mask: it needs "fields"
}

// Names that cannot match anything are errors, as in profiles: a rule that silently never applies is a lie.
TEST(Expectations, UnknownFeatureAndErrorNamesAreErrors) {
  for (const char* bad : {R"({"expectations": [{"features": ["teleport"], "reason": "r"}]})",
                          R"({"expectations": [{"id": "*", "fields": ["*"], "errors": ["teleport_error"], "reason": "r"}]})"}) {
    try {
      expectations_from_json(nlohmann::ordered_json::parse(bad), "e.json");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const InputError& err) {
      EXPECT_EQ(err.file(), "e.json");
      EXPECT_NE(err.pointer().find("/expectations/0/"), std::string::npos) << err.pointer();
    }
  }
}

Action act(ActionKind k) {
  Action a;
  a.kind = k;
  return a;
}

// Two parameters, an SGD optimizer over both; forwards read only w unless told.
Program two_params(std::vector<Action> actions) {
  Program p;
  p.params.push_back({"w", DType::Float32, {1}, {1}});
  p.params.push_back({"b", DType::Float32, {1}, {1}});
  p.loss = sum(param("w"));
  OptimizerSpec o;
  o.defaults.lr = 0.1;
  o.groups.push_back({{"w", "b"}, std::nullopt});
  p.optimizer = o;
  p.actions = std::move(actions);
  return p;
}

TEST(Expectations, RecordSituationsFromTheProgram) {
  using K = ActionKind;
  Program p = two_params({act(K::Forward), act(K::Backward), act(K::Forward), act(K::Backward)});
  EXPECT_EQ(first_action_in_situation(p, "repeated_backward"), std::nullopt);  // a new forward each time
  p.actions.push_back(act(K::Backward));
  EXPECT_EQ(first_action_in_situation(p, "repeated_backward"), 4u);

  // b is never reached by a backward: the first step is without its grad.
  Program q = two_params({act(K::Forward), act(K::Backward), act(K::Step)});
  EXPECT_EQ(first_action_in_situation(q, "step_without_grad"), 2u);
  Action both = act(K::Forward);
  both.loss = add(sum(param("w")), sum(param("b")));
  Action none = act(K::ZeroGrad);
  none.set_to_none = true;
  Action zero = act(K::ZeroGrad);
  zero.set_to_none = false;
  Action b_none = act(K::SetGradNone);
  b_none.param = "b";
  Program r = two_params({both, act(K::Backward), act(K::Step), zero, act(K::Step)});
  EXPECT_EQ(first_action_in_situation(r, "step_without_grad"), std::nullopt);  // zeroed, not None
  r.actions.push_back(b_none);
  r.actions.push_back(act(K::Step));
  EXPECT_EQ(first_action_in_situation(r, "step_without_grad"), 6u);
  Program s = two_params({both, act(K::Backward), none, act(K::Step)});
  EXPECT_EQ(first_action_in_situation(s, "step_without_grad"), 3u);
  Action no_grad = both;
  no_grad.no_grad = true;
  Program t = two_params({no_grad, act(K::Backward), act(K::Step)});  // a no_grad forward reaches nothing
  EXPECT_EQ(first_action_in_situation(t, "step_without_grad"), 2u);

  // A step's closure runs before its update (SEMANTICS §17.1): its backward gives grads, its situations are the step's.
  Action closure_step = act(K::Step);
  closure_step.closure = std::vector<Action>{both, act(K::Backward)};
  EXPECT_EQ(first_action_in_situation(two_params({closure_step}), "step_without_grad"), std::nullopt);
  closure_step.closure = std::vector<Action>{both, act(K::Backward), act(K::Backward)};
  EXPECT_EQ(first_action_in_situation(two_params({act(K::Forward), closure_step}), "repeated_backward"), 1u);
}

TEST(Expectations, FromMasksOnlyTheSituationsRecordAndLaterOnes) {
  using K = ActionKind;
  Expectations e = expectations_from_json(json::parse(R"({"expectations": [
    {"features": ["sgd"], "from": "repeated_backward", "fields": ["* → grad.*"], "reason": "second backward"}]})"),
                                          "e.json");
  Program p = two_params({act(K::Forward), act(K::Backward), act(K::Backward), act(K::Step)});
  const std::set<std::string> features = program_features(p);
  FieldMask m = e.mask_for("random-1", &features, &p);
  EXPECT_EQ(m.match("w → grad.defined", {}, "1", "2", std::nullopt), nullptr);  // setup
  EXPECT_EQ(m.match("w → grad.defined", {}, "1", "2", 1), nullptr);             // the first backward is judged
  EXPECT_NE(m.match("w → grad.defined", {}, "2", "4", 2), nullptr);             // the second is accepted
  EXPECT_NE(m.match("w → grad.defined", {}, "2", "4", 3), nullptr);             // and what follows
  EXPECT_EQ(m.match("w → same_as_previous", {}, "2", "4", 3), nullptr);         // fields still narrow it
  // Without the program (or in a program without the situation) the entry never applies.
  EXPECT_TRUE(e.mask_for("random-1", &features).empty());
  Program once = two_params({act(K::Forward), act(K::Backward), act(K::Step)});
  EXPECT_EQ(e.mask_for("random-1", &features, &once).match("w → grad.defined", {}, "1", "2", 2), nullptr);
}

TEST(Expectations, WithoutFeaturesKeepsAnEntryFromProgramsThatUseThem) {
  Expectations e = expectations_from_json(json::parse(R"({"expectations": [
    {"features": ["adam"], "without_features": ["adam.betas"], "fields": ["* → state.exists"], "reason": "defaults"},
    {"features": ["adam"], "without_features": ["adam.b*"], "reason": "whole"}]})"), "e.json");
  const std::set<std::string> defaults = {"adam", "float64"}, betas = {"adam", "adam.betas", "float64"};
  EXPECT_NE(e.mask_for("x", &defaults).match("w → state.exists"), nullptr);
  EXPECT_TRUE(e.mask_for("x", &betas).empty());
  EXPECT_NE(e.whole_case("x", &defaults), nullptr);
  EXPECT_EQ(e.whole_case("x", &betas), nullptr);
}

TEST(Expectations, FromAndWithoutFeaturesAreValidated) {
  struct Bad {
    const char* text;
    const char* pointer;
  } bad[] = {
      {R"({"expectations": [{"id": "x", "fields": ["f"], "from": "sometimes", "reason": "r"}]})", "/expectations/0/from"},
      {R"({"expectations": [{"id": "x", "from": "repeated_backward", "reason": "r"}]})", "/expectations/0/from"},
      {R"({"expectations": [{"id": "x", "fields": ["f"], "from": 3, "reason": "r"}]})", "/expectations/0/from"},
      {R"({"expectations": [{"id": "x", "without_features": ["nope"], "reason": "r"}]})", "/expectations/0/without_features"},
      {R"({"expectations": [{"id": "x", "without_features": [], "reason": "r"}]})", "/expectations/0/without_features"},
  };
  for (const Bad& b : bad) {
    try {
      expectations_from_json(json::parse(b.text), "e.json");
      ADD_FAILURE() << b.text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.pointer(), b.pointer) << b.text << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

Difference numeric(const std::string& path, double expected, double actual, double centre = NAN) {
  Difference d;
  d.kind = DifferenceKind::Numeric;
  d.path = path;
  d.field = path.substr(0, path.find('['));
  d.expected = expected;
  d.actual = actual;
  d.centre = std::isnan(centre) ? expected : centre;
  d.scale = std::max(std::fabs(expected), 1.0);
  d.allowed_ulps = 4;
  d.bound_value = 4 * ulp(d.scale, DType::Float64);
  d.dtype = DType::Float64;
  return d;
}

// Issue 28: an entry that masks numbers says what it accepts; one that does not is a read error naming the entry.
TEST(Expectations, AMaskOfNumbersNeedsAPredicate) {
  for (const char* field : {"* → grad*", "output → value", "handle * → value*", "* → exp_avg_sq[*", "* → value"}) {
    const json doc = {{"expectations", {{{"id", "*"}, {"fields", {field}}, {"reason", "r"}}}}};
    try {
      expectations_from_json(doc, "e.json");
      ADD_FAILURE() << field << " was accepted without a predicate";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("e.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("/expectations/0/fields/0"), std::string::npos) << e.what();
    }
  }
  // Structure only: no predicate needed.
  EXPECT_NO_THROW(expectations_from_json(
      json::parse(R"({"expectations": [{"id": "*", "fields": ["* → state.exists", "* → grad.defined"], "reason": "r"}]})"),
      "e.json"));
  for (const char* bad : {R"({"actual": "teapot"})", R"({"actual": "nan"})", R"({"expected": "finite", "actual": "nonzero"})", R"({"ulps": 1e8})", R"({"ulps": -1})", R"({"ulps": 4, "actual": "nan"})", R"({})",
                          R"({"variant": "no.such"})", R"({"unchanged": false})", R"({"dtype": "float32"})"}) {
    const json doc = {{"expectations", {{{"id", "*"}, {"fields", {"* → grad*"}}, {"accept", json::parse(bad)}, {"reason", "r"}}}}};
    EXPECT_THROW(expectations_from_json(doc, "e.json"), InputError) << bad;
  }
}

TEST(Expectations, FieldGlobsNameTheirParts) {
  EXPECT_TRUE(field_glob_match("* → value*", "w → value[1]"));
  EXPECT_FALSE(field_glob_match("* → value*", "output → value"));
  EXPECT_FALSE(field_glob_match("* → value*", "handle g0 → value[0]"));
  EXPECT_TRUE(field_glob_match("output → value*", "output → value[0]"));
  EXPECT_TRUE(field_glob_match("handle * → value*", "handle g0 → value[0]"));
  EXPECT_FALSE(field_glob_match("*", "w → grad"));  // one part against two
  EXPECT_TRUE(field_glob_match("* → grad*", "w → grad.defined"));
  EXPECT_TRUE(field_glob_match("group * → lr", "group 0 → lr"));
  EXPECT_FALSE(field_glob_match("* → lr", "group 0 → lr"));
}

TEST(Expectations, PredicatesAcceptOnlyWhatTheySay) {
  Expectations e = expectations_from_json(json::parse(R"({"expectations": [
    {"id": "nan", "fields": ["* → grad*"], "accept": {"expected": "finite", "actual": "nan"}, "reason": "r"},
    {"id": "nan", "fields": ["* → grad.defined"], "reason": "structure: its own entry"},
    {"id": "zero", "fields": ["* → grad*"], "accept": {"expected": "-0", "actual": "+0"}, "reason": "r"},
    {"id": "ulps", "fields": ["* → grad*"], "accept": {"ulps": 64}, "reason": "r"},
    {"id": "f32", "fields": ["* → grad*"], "accept": {"ulps": 4, "dtype": "float32"}, "reason": "r"},
    {"id": "unchanged", "fields": ["handle * → value*"], "accept": {"unchanged": true}, "reason": "r"},
    {"id": "variant", "fields": ["* → value*"], "accept": {"variant": "adam.no_bias_correction"}, "reason": "r"}]})"),
                                          "e.json");
  EXPECT_NE(e.mask_for("nan").match(numeric("w → grad[0]", 1, NAN), {}, std::nullopt, nullptr), nullptr);
  EXPECT_EQ(e.mask_for("nan").match(numeric("w → grad[0]", 1, 2), {}, std::nullopt, nullptr), nullptr);
  EXPECT_EQ(e.mask_for("nan").match(numeric("w → grad[0]", INFINITY, NAN), {}, std::nullopt, nullptr), nullptr);
  EXPECT_NE(e.mask_for("zero").match(numeric("w → grad[0]", -0.0, 0.0), {}, std::nullopt, nullptr), nullptr);
  EXPECT_EQ(e.mask_for("zero").match(numeric("w → grad[0]", 0.0, -0.0), {}, std::nullopt, nullptr), nullptr);
  // 64 ULPs of the scale (1) around the centre, never a factor.
  EXPECT_NE(e.mask_for("ulps").match(numeric("w → grad[0]", 1, 1 + 60 * 0x1p-52), {}, std::nullopt, nullptr), nullptr);
  EXPECT_EQ(e.mask_for("ulps").match(numeric("w → grad[0]", 1, 1 + 70 * 0x1p-52), {}, std::nullopt, nullptr), nullptr);
  EXPECT_EQ(e.mask_for("ulps").match(numeric("w → grad[0]", 1, -3), {}, std::nullopt, nullptr), nullptr);
  EXPECT_NE(e.mask_for("f32").match(numeric("w → grad[0]", 1, 1 + 3 * 0x1p-23), {}, std::nullopt, nullptr), nullptr);
  EXPECT_EQ(e.mask_for("f32").match(numeric("w → grad[0]", 1, 1 + 5 * 0x1p-23), {}, std::nullopt, nullptr), nullptr);
  Difference missed = numeric("handle g0 → value[0]", 3, 1);
  missed.has_actual_before = true;
  missed.actual_before = 1;
  EXPECT_NE(e.mask_for("unchanged").match(missed, {}, std::nullopt, nullptr), nullptr);
  missed.actual_before = 2;
  EXPECT_EQ(e.mask_for("unchanged").match(missed, {}, std::nullopt, nullptr), nullptr);
  // A variant holds where its value (here from the evaluator) is within the bound, and nowhere else.
  const VariantEvaluator evaluator = [](const std::string&, const Difference&) -> std::optional<double> { return 0.5; };
  EXPECT_NE(e.mask_for("variant").match(numeric("w → value[0]", 0.9, 0.5), {}, 0, &evaluator), nullptr);
  EXPECT_EQ(e.mask_for("variant").match(numeric("w → value[0]", 0.9, 0.1), {}, 0, &evaluator), nullptr);
  EXPECT_EQ(e.mask_for("variant").match(numeric("w → value[0]", 0.9, 0.5), {}, 0, nullptr), nullptr);
  // A numeric difference is never masked by an entry's globs alone, nor a structural one by an entry with a predicate.
  EXPECT_EQ(e.mask_for("nan").match("w → grad.requires_grad"), nullptr);
  EXPECT_NE(e.mask_for("nan").match("w → grad.defined"), nullptr);
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// A rule with "from" explains a failure only at or after the first action in its situation; an entry with "accept"
// never masks structure.
TEST(Expectations, ARuleWithFromExplainsOnlyLaterFailures) {
  using K = ActionKind;
  Expectations e = expectations_from_json(json::parse(R"({"expectations": [
    {"features": ["sgd"], "from": "repeated_backward", "reason": "second backward on"}]})"), "e.json");
  Program p = two_params({act(K::Forward), act(K::Backward), act(K::Backward), act(K::Step)});
  const std::set<std::string> features = program_features(p);
  EXPECT_EQ(e.whole_case("random-1", &features, &p, 1), nullptr);  // the first backward: judged
  EXPECT_NE(e.whole_case("random-1", &features, &p, 2), nullptr);
  EXPECT_NE(e.whole_case("random-1", &features, &p, 3), nullptr);
  EXPECT_EQ(e.whole_case("random-1", &features, &p, std::nullopt), nullptr);  // setup, or no failure
  EXPECT_EQ(e.whole_case("random-1", &features, nullptr, 3), nullptr);
}

}  // namespace
// SEMANTICS 20.4: the oracle's expectations, turned around. Its "when" is decided by the oracle's version; expected and
// actual swap, so an entry written for Python as the implementation (expected inf from C++, actual NaN from Python)
// accepts Python as the oracle (expected NaN) against an implementation that gives inf, and nothing else.
TEST(Expectations, TurnedAroundForTheOracleSwapsTheSidesAndDecidesWhenByTheOraclesVersion) {
  const Expectations python = expectations_from_json(json::parse(R"({"expectations": [
    {"features": ["adam*.betas"], "fields": ["* → exp_avg*"], "accept": {"expected": "inf", "actual": "nan"},
     "when": {"pytorch": ">=2.0"}, "reason": "lerp"},
    {"id": "raises", "fields": ["error.kind"], "reason": "r"},
    {"id": "one-way", "fields": ["* → state.exists"], "expected": "false", "actual": "true", "reason": "r"},
    {"id": "old", "reason": "r", "when": {"pytorch": "<2.0"}}]})"),
                                                     "python.json");
  const std::set<std::string> adam = {"adam", "adam.betas"};
  const Expectations turned = turned_around(python, "2.6.0");
  ASSERT_EQ(turned.entries.size(), 3u);  // "old" is for 1.x oracles only
  EXPECT_TRUE(turned.for_other_versions.empty());
  EXPECT_NE(turned.entries[0].source.find("python.json, the oracle's, turned around"), std::string::npos);
  const FieldMask lerp = turned.mask_for("random-1", &adam);
  EXPECT_NE(lerp.match(numeric("w → exp_avg[0]", NAN, INFINITY), {}, std::nullopt, nullptr), nullptr);
  EXPECT_EQ(lerp.match(numeric("w → exp_avg[0]", INFINITY, NAN), {}, std::nullopt, nullptr), nullptr);  // not turned back
  EXPECT_EQ(lerp.match(numeric("w → exp_avg[0]", NAN, 1.5), {}, std::nullopt, nullptr), nullptr);       // another bug
  EXPECT_NE(turned.mask_for("one-way").match("w → state.exists", {}, "true", "false"), nullptr);
  EXPECT_EQ(turned.mask_for("one-way").match("w → state.exists", {}, "false", "true"), nullptr);
  // The implementation's own version no longer decides: the entry stays whatever keep_for_version is given.
  Expectations kept = turned;
  EXPECT_EQ(kept.keep_for_version("1.13.1"), 0u);
  // Against a 1.13 oracle the 2.x entry is gone.
  EXPECT_EQ(turned_around(python, "1.13.1").entries.size(), 3u);
  EXPECT_EQ(turned_around(python, "1.13.1").mask_for("random-1", &adam).match(numeric("w → exp_avg[0]", NAN, INFINITY), {},
                                                                               std::nullopt, nullptr),
            nullptr);
  // An acceptance judged at the implementation's inputs cannot be turned: the error names the file and the entry.
  const Expectations variant = expectations_from_json(json::parse(R"({"expectations": [
    {"features": ["sgd"], "fields": ["* → grad*"], "accept": {"variant": "step.adds_weight_decay_to_grad"}, "reason": "r"}]})"),
                                                      "foreach.json");
  try {
    turned_around(variant, "2.6.0");
    FAIL() << "a variant entry was turned around";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("foreach.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("features sgd"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot be turned around"), std::string::npos) << e.what();
  }
}

}  // namespace lockstep
