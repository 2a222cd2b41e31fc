// Golden fixtures: a program with the trace the oracle recorded for it, for implementations that cannot
// link LibTorch (fixtures/README.md, fixtures/PROTOCOL.md; the JSON Schema is
// fixtures/schema/fixture.schema.json).
//
// A fixture file (one per case):
//   {"id": "tut003-repeated-backward-accumulates",        stable: never reused, never renumbered
//    "description": "...",
//    "semantics": ["SEM-3.4"],                             SEMANTICS sections it exercises
//    "tags": ["float64", "accumulation", ...],            feature tags (feature_tags() below)
//    "program": PROGRAM,                                   program_json.h
//    "expected": TRACE,                                    trace_json.h, recorded on the oracle
//    "provenance": {"oracle": "libtorch", "oracle_version": "1.13.0", "schema_version": 1,
//                   "generator": "named_case" | "random" | "gradient_fed" | "op_edge" | "default_run",
//                   "source": "conformance/cases/....json"   (named cases)
//                   "seed": 1, "index": 17   (random and default_run programs), "special_values": true
//                                             (random programs of the all-special stream; only when set)}}
//
// Reading is strict (unknown fields, wrong types, a program that does not validate, a trace whose records do
// not match the program's actions): InputError naming the file and the JSON pointer.
//
// Example:
//   for (const Fixture& f : load_fixtures("fixtures")) {        // every *.json under it, sorted by id
//     Trace actual = run_program(f.program, engine);
//     ... compare_fixture_trace(f, actual, Tolerance{}) ...      (replay.h)
//   }
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/program/program.h"
#include "conformance/program/trace.h"

namespace lockstep {

inline constexpr int kFixtureSchemaVersion = 1;

struct FixtureProvenance {
  std::string oracle = "libtorch";
  std::string oracle_version;            // "1.13.0"
  int schema_version = kFixtureSchemaVersion;
  std::string generator;                 // "named_case", "random", "gradient_fed", "op_edge", "default_run"
  std::string source;                    // named cases: the case file, relative to the source tree
  std::optional<uint64_t> seed;          // random programs: the stream's seed ...
  std::optional<uint64_t> index;         // ... and the program's index in it (generators.h, RandomPrograms)
  bool special_values = false;           // random programs: generated with GenOptions::special_values
};

struct Fixture {
  std::string file;                      // where it was read from (empty when built in memory)
  std::string id;
  std::string description;
  std::vector<std::string> semantics;    // "SEM-3.4", ...
  std::vector<std::string> tags;
  Program program;
  nlohmann::ordered_json program_json;   // as written in the file (sent to drivers as is)
  Trace expected;
  FixtureProvenance provenance;
  // "when": {"pytorch": "<2.0"}: the recording holds only for such versions, where versions differ (a named case
  // with version-conditioned checks, SEMANTICS 12.5): the corpus then holds one recording per generation, and a
  // replay gives an implementation the one of its version (fixture_applies()). Empty: every version.
  std::string when_pytorch;
};

// Whether the fixture's recording holds for an implementation of `pytorch_version` ("2.6.0", "libtorch-1.13.0").
bool fixture_applies(const Fixture& f, const std::string& pytorch_version);

// --- Feature tags -----------------------------------------------------------------------------------------

// Every tag feature_tags() can give, with a one-line meaning (for fixtures/README.md's coverage table).
struct FeatureTagInfo {
  std::string tag;
  std::string meaning;
  // Only a driver oracle records it (maximize, SEMANTICS 20.2: corpus/python-oracle); LibTorch's corpus has none.
  bool driver_oracle_only = false;
};
const std::vector<FeatureTagInfo>& all_feature_tags();

// The features a program exercises, sorted as in all_feature_tags(). With the program's trace, the tags that
// depend on what happened are exact ("errors": an action or the setup failed; "grad_none_skip": a step ran
// while a parameter of the optimizer had no grad); without it they are inferred from the program alone.
std::vector<std::string> feature_tags(const Program& program, const Trace* trace = nullptr);

// --- JSON --------------------------------------------------------------------------------------------------

nlohmann::ordered_json fixture_to_json(const Fixture& f);

// Strict reading; throws InputError(file, pointer, message) (program_json.h).
Fixture fixture_from_json(const nlohmann::ordered_json& doc, const std::string& file);
Fixture read_fixture_file(const std::string& path);

// Every *.json file under `dir` (recursively, except under a "schema" folder), sorted by id. Duplicate ids are
// an InputError naming both files. A missing or empty directory is an InputError too.
std::vector<Fixture> load_fixtures(const std::string& dir);

// The same, each fixture without its expected trace's records and its program JSON (`expected.engine` is kept):
// what a replay plans with. The replay reads each file again when it replays it (read_fixture_file(f.file)), so a
// corpus of any size is held as its programs only (issue 29: a 5,000-fixture replay held 936 MB).
std::vector<Fixture> load_fixture_index(const std::string& dir);

// The corpus shipped with the source tree (fixtures/).
std::string default_fixtures_dir();

// The JSON text of a fixture as the corpus stores it: two-space indentation, arrays of numbers and strings
// on one line, a final newline. Deterministic (regeneration is byte-identical).
std::string format_fixture_json(const nlohmann::ordered_json& doc);

// A stable id from the program's content: "<prefix>-" + 12 hex digits of a 64-bit FNV-1a hash of its
// compact JSON. Two different programs practically never share one, so an id is never reused.
std::string content_id(const std::string& prefix, const nlohmann::ordered_json& program_json);

}  // namespace lockstep
