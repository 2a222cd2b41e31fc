// conformance/run/corpus_builder.h: the golden corpus (fixtures/corpus) as `lockstep fixtures generate` records
// it, deterministically, on a recording oracle: the fixtures and the folder each goes in. The command writes
// them (fixture.h) and the coverage table.
//
//   cases/         every named case (conformance/cases), id = the case's id; a case whose checks depend on the
//                  version (SEMANTICS 12.5) is recorded once per generation: by 1.x as itself with "when" <2.0,
//                  by 2.x as ID-torch2 in cases-torch2/ with "when" >=2.0
//   gradient_fed/  optimizer programs whose gradients are given directly (no autograd needed)
//   ops/           every op at the edge points of its inputs (conformance/generate/op_edges.h)
//   random/        seeded random programs, picked until every feature tag is covered twice; id = a hash of the
//                  program, so an id is never reused for another program
//   default_run/   programs of the default run (default_run.h) that reach a feature or coverage cell no fixture
//                  above reaches (corpus_reach.h), so replay reaches all a default `lockstep run` reaches
//   python-oracle/ what LibTorch's C++ API cannot record (maximize, SEMANTICS 20.2), recorded by PyTorch's Python API
//                  through its adapter (`fixtures generate --oracle`, build_driver_oracle_corpus)
//
// Example:
//   std::vector<CorpusFixture> all = build_corpus(load_cases(default_cases_dir()), make_oracle, CorpusOptions{});
//   for (const CorpusFixture& g : all) write(out + "/corpus/" + g.folder + "/" + g.fixture.id + ".json", ...);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conformance/run/default_run.h"
#include "conformance/run/fixture.h"
#include "conformance/run/named_case.h"
#include "conformance/run/tested_implementation.h"

namespace lockstep {

struct CorpusFixture {
  std::string folder;  // "cases", "cases-torch2", "gradient_fed", "ops", "random", "default_run"
  Fixture fixture;
};

struct CorpusOptions {
  uint64_t seed = 20240501;             // the random part's seed
  int max_random = 120;                 // at most this many random fixtures
  uint64_t max_candidates = 20000;      // random programs looked at before giving up on a tag
  bool version_dependent_only = false;  // only the named cases whose checks depend on the version (SEM-12.5)
  int64_t default_run_count = kDefaultRunCount;  // the default run's programs looked at (5.); 0: none
};

// Whether `oracle_name` ("libtorch-2.6.0") is of PyTorch's second generation (2.x).
bool second_generation_oracle(const std::string& oracle_name);

// The corpus only a driver oracle can record (SEMANTICS 20.2: maximize, which LibTorch's C++ API lacks), in folder
// "python-oracle" (`lockstep fixtures generate --oracle CMD`): the named cases `cases` (python_oracle_cases_dir()),
// then `count` random programs with maximize within `scope` (the oracle's, run_scope.h), each recorded by `record`
// (nullopt: the oracle declined it). A program in which the recording shows where the oracle's API differs from C++
// (Python's SGD keeps a state entry without momentum, SEM-11.1) is not kept: replay compares with C++ semantics.
// `provenance` names the recorder; `seed` the random programs'.
std::vector<CorpusFixture> build_driver_oracle_corpus(
    const std::vector<NamedCase>& cases, const std::function<std::optional<Trace>(const Program&)>& record,
    const FixtureProvenance& provenance, std::shared_ptr<const FeatureScope> scope, uint64_t seed, int count);

// The corpus `make_oracle`'s engine records: the named cases `cases` first, then (unless
// version_dependent_only) the gradient-fed, op edge, random and default-run fixtures, in that order.
std::vector<CorpusFixture> build_corpus(const std::vector<NamedCase>& cases, const EngineFactory& make_oracle,
                                        const CorpusOptions& options);

// The Markdown table of fixtures per feature tag and folder (fixtures/README.md, between its coverage markers).
std::string corpus_coverage_table(const std::vector<CorpusFixture>& all);

}  // namespace lockstep
