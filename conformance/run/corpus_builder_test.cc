// Tests of the corpus builder (corpus_builder.h) with impl as the recorder (torch-free; `lockstep fixtures
// generate` records on LibTorch, and the fixtures_* tests check the shipped corpus is what it makes): the folders
// in order, a version-dependent case recorded for its generation, ids unique, the same corpus twice, and each
// fixture's trace the recorder's own.
#include "conformance/run/corpus_builder.h"

#include <set>

#include <gtest/gtest.h>

#include "conformance/generate/generators.h"
#include "conformance/program/program_json.h"
#include "conformance/program/trace_json.h"
#include "conformance/run/corpus_reach.h"
#include "conformance/run/interpreter.h"
#include "impl/engine_adapter.h"

namespace lockstep {
namespace {


CorpusOptions small() {
  CorpusOptions o;
  o.max_random = 4;
  o.max_candidates = 300;
  o.default_run_count = 200;
  return o;
}

TEST(CorpusBuilder, TheGenerationOfAnOracleIsItsMajorVersion) {
  EXPECT_FALSE(second_generation_oracle("libtorch-1.13.1"));
  EXPECT_TRUE(second_generation_oracle("libtorch-2.6.0"));
  EXPECT_FALSE(second_generation_oracle("impl"));
}

TEST(CorpusBuilder, FoldersInOrderIdsUniqueTracesTheRecordersOwn) {
  const std::vector<NamedCase> cases = load_cases(default_cases_dir());
  const std::vector<CorpusFixture> all = build_corpus(cases, [] { return make_impl_engine(); }, small());
  ASSERT_GT(all.size(), cases.size());
  const std::vector<std::string> order = {"cases", "gradient_fed", "ops", "random", "default_run"};
  size_t at = 0;
  std::set<std::string> ids;
  size_t random = 0;
  for (const CorpusFixture& g : all) {
    while (at < order.size() && order[at] != g.folder) ++at;
    ASSERT_LT(at, order.size()) << g.fixture.id << " in " << g.folder << " is out of order";
    EXPECT_TRUE(ids.insert(g.fixture.id).second) << g.fixture.id;
    EXPECT_FALSE(g.fixture.tags.empty()) << g.fixture.id;
    EXPECT_EQ(g.fixture.provenance.oracle_version, "impl");
    random += g.folder == "random";
  }
  EXPECT_GT(random, 0u);
  EXPECT_LE(random, 4u);
  // The default run's programs close the gap: the corpus reaches all that the first 200 of them that fit a
  // fixture reach.
  Reach corpus;
  size_t from_run = 0;
  for (const CorpusFixture& g : all) {
    corpus.add(g.fixture.program);
    if (g.folder != "default_run") continue;
    ++from_run;
    EXPECT_EQ(g.fixture.provenance.generator, "default_run");
    EXPECT_EQ(g.fixture.provenance.seed, kDefaultRunSeed);
    ASSERT_TRUE(g.fixture.provenance.index);
    RandomPrograms stream(kDefaultRunSeed, default_run_gen_options());
    EXPECT_EQ(fixture_to_json(g.fixture).at("program"),
              program_to_json(stream.at(*g.fixture.provenance.index).value())) << g.fixture.id;
  }
  EXPECT_GT(from_run, 0u);
  EXPECT_TRUE(not_reached(default_run_reach(200, /*fixture_sized_only=*/true).total, corpus).empty());
  for (const CorpusFixture& g : all) EXPECT_TRUE(g.folder != "default_run" || fits_a_fixture(g.fixture.program));
  // A named case's fixture is the case's program with the recorder's trace of it.
  const CorpusFixture& first = all.front();
  EXPECT_EQ(first.folder, "cases");
  EXPECT_EQ(first.fixture.id, cases.front().id);
  auto impl = make_impl_engine();
  EXPECT_EQ(trace_to_json(first.fixture.expected), trace_to_json(run_program(cases.front().program, *impl)));
  // Deterministic: the same corpus again.
  const std::vector<CorpusFixture> again = build_corpus(cases, [] { return make_impl_engine(); }, small());
  ASSERT_EQ(again.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i)
    EXPECT_EQ(fixture_to_json(again[i].fixture), fixture_to_json(all[i].fixture)) << all[i].fixture.id;
}

TEST(CorpusBuilder, VersionDependentOnlyRecordsTheCasesWhoseChecksNameAVersion) {
  const std::vector<NamedCase> cases = load_cases(default_cases_dir());
  CorpusOptions o = small();
  o.version_dependent_only = true;
  const std::vector<CorpusFixture> all = build_corpus(cases, [] { return make_impl_engine(); }, o);
  ASSERT_FALSE(all.empty());
  for (const CorpusFixture& g : all) {
    EXPECT_EQ(g.folder, "cases");  // impl names no version: the first generation's folder and id
    EXPECT_EQ(g.fixture.when_pytorch, "<2.0") << g.fixture.id;
  }
  EXPECT_LT(all.size(), cases.size());
}

}  // namespace
}  // namespace lockstep
