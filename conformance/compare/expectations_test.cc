// Tests of the expectations file (expectations.h): globbing, masks and whole-case entries, the legacy forms,
// strict validation with errors naming the file and the JSON pointer.
#include "conformance/compare/expectations.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

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

TEST(Expectations, LoadsFilesAndNamesBadOnes) {
  const std::string path = ::testing::TempDir() + "expectations_test.json";
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

}  // namespace
}  // namespace lockstep
