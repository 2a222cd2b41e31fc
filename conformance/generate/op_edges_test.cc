// op_edges.h: one valid program per op row of the coverage table, dtype and edge class, with unique ids.
#include "conformance/generate/op_edges.h"

#include <set>

#include <gtest/gtest.h>

#include "conformance/program/coverage_cells.h"

namespace lockstep {
namespace {

TEST(OpEdges, ProgramsAreValidWithUniqueFixtureIds) {
  std::set<std::string> ids;
  for (const OpEdgeProgram& p : op_edge_programs()) {
    EXPECT_TRUE(ids.insert(p.id).second) << p.id;
    EXPECT_NO_THROW(validate(p.program)) << p.id;
    for (char c : p.id) EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-') << p.id;
  }
}

// Every op row of the coverage table (pow by exponent) at every edge class that applies to it has a fixture
// program, in both dtypes, and the program reaches that cell itself (at its initial values).
TEST(OpEdges, EveryOpRowAndEdgeClassHasAProgramThatReachesIt) {
  std::map<std::string, std::set<std::string>> reached;  // "relu float32" -> edges
  for (const OpEdgeProgram& p : op_edge_programs())
    for (const std::string& cell : coverage_cells(p.program))
      if (cell.rfind("ops|", 0) == 0) {
        const size_t bar = cell.find('|', 4);
        reached[cell.substr(4, bar - 4)].insert(cell.substr(bar + 1));
      }
  const CoverageTable& ops = coverage_tables().front();
  ASSERT_EQ(ops.name, "ops");
  for (size_t r = 0; r < ops.rows.size(); ++r)
    for (size_t c = 0; c < ops.columns.size(); ++c) {
      if (!ops.applies[r][c]) continue;
      EXPECT_TRUE(reached[ops.rows[r]].count(ops.columns[c])) << ops.rows[r] << " / " << ops.columns[c];
    }
}

}  // namespace
}  // namespace lockstep
