// Tests of the known-discrepancies file: globbing, matching every difference, strict validation with errors
// naming the file and the JSON pointer.
#include "conformance/compare/known_discrepancies.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TEST(KnownDiscrepancies, GlobMatching) {
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

TEST(KnownDiscrepancies, ExplainNeedsEveryDifferenceMatched) {
  KnownDiscrepancies k = known_discrepancies_from_text(R"([
    {"id": "tutorial-003", "field": "x → grad*", "reason": "r1"},
    {"id": "random-*", "reason": "r2", "comment": "any field"},
    {"id": "crash-*", "field": "output*", "reason": "r3"}
  ])", "known.json");
  ASSERT_EQ(k.entries.size(), 3u);
  const KnownDiscrepancy* e = k.explain("tutorial-003", {"x → grad[0]", "x → grad[1]"});
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->reason, "r1");
  EXPECT_EQ(k.explain("tutorial-003", {"x → grad[0]", "x → value[0]"}), nullptr);  // one is new
  EXPECT_EQ(k.explain("tutorial-004", {"x → grad[0]"}), nullptr);
  ASSERT_NE(k.explain("random-5", {"anything"}), nullptr);
  EXPECT_EQ(k.explain("random-5", {})->reason, "r2");  // an engine failure: only entries without a field
  EXPECT_EQ(k.explain("crash-1", {}), nullptr);
}

void expect_error(const std::string& text, const std::string& message_part) {
  try {
    known_discrepancies_from_text(text, "known.json");
    FAIL() << "accepted: " << text;
  } catch (const KnownDiscrepancyError& e) {
    EXPECT_NE(std::string(e.what()).find(message_part), std::string::npos) << e.what();
    EXPECT_EQ(e.file(), "known.json");
  }
}

TEST(KnownDiscrepancies, ValidationNamesFileAndPointer) {
  expect_error("{}", "known.json: expected an array");
  expect_error("[1]", "known.json: /0: expected an object");
  expect_error(R"([{"id": "a", "reason": "r"}, {"id": "b"}])", "known.json: /1");
  expect_error(R"([{"id": "a", "reason": "r", "fields": "x"}])", "known.json: /0/fields");
  expect_error(R"([{"id": "", "reason": "r"}])", "known.json: /0/id: \"id\" must not be empty");
  expect_error(R"([{"id": "a", "reason": ""}])", "known.json: /0/reason");
  expect_error(R"([{"id": "a", "reason": "r", "field": 3}])", "known.json: /0/field");
  expect_error("[{", "known.json: invalid JSON");
}

TEST(KnownDiscrepancies, LoadsFilesAndNamesMissingOnes) {
  const std::string path = ::testing::TempDir() + "known_discrepancies_test.json";
  {
    std::ofstream out(path);
    out << R"([{"id": "a-*", "reason": "because"}])";
  }
  KnownDiscrepancies k = load_known_discrepancies(path);
  ASSERT_EQ(k.entries.size(), 1u);
  EXPECT_EQ(k.entries[0].id, "a-*");
  EXPECT_FALSE(k.entries[0].field.has_value());
  std::remove(path.c_str());
  try {
    load_known_discrepancies(path);
    FAIL();
  } catch (const KnownDiscrepancyError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot read the file: No such file or directory");
  }
}

}  // namespace
}  // namespace lockstep
