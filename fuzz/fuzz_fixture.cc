// Fuzz target: the golden-fixture reader, fixture_from_json() (conformance/run/fixture.h) on the document
// parse_json_text() makes of the input with the depth bound read_fixture_file() uses (256). This also drives
// the program reader (program_from_json) and the trace reader (trace_from_json, conformance/program/trace_json.h)
// on the fixture's "program" and "expected" members.
//
// Contract under test, for any input bytes:
//   - parse_json_text() returns a document or throws JsonError; fixture_from_json() returns a Fixture or throws
//     InputError; nothing else escapes;
//   - an accepted fixture survives its writers: format_fixture_json(fixture_to_json(f)) (the corpus's own file
//     format) parses and re-reads without error, and writes back to the same text;
//   - feature_tags() of an accepted fixture does not throw;
//   - replaying a fixture's expected trace against itself (compare_fixture_trace, conformance/run/replay.h) does
//     not throw inside the comparator: the reader accepted the trace, so the comparator must be able to judge
//     it (compare_fixture_trace turns such an exception into failure category "comparator"; that is a finding);
//   - no sanitizer finding.
//
// Run (build with -DLOCKSTEP_FUZZ=ON and Clang; seeds from fuzz/seed_corpus.sh):
//   fuzz/seed_corpus.sh /tmp/lockstep-seeds
//   mkdir -p fuzz/corpus/fixture
//   build-sanitize/fuzz/fuzz_fixture -max_len=262144 -dict=fuzz/lockstep.dict fuzz/corpus/fixture /tmp/lockstep-seeds/fixture
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "conformance/compare/tolerance.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/program_json.h"
#include "conformance/run/fixture.h"
#include "conformance/run/replay.h"
#include "fuzz/fuzz_common.h"

namespace {
// read_fixture_file()'s nesting bound (conformance/run/fixture.cc); keep in step with it.
constexpr int kFixtureDepth = 256;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string text = fuzz::as_text(data, size);

  const std::optional<nlohmann::ordered_json> parsed = fuzz::parsed_json(text, kFixtureDepth);
  if (!parsed) return 0;
  const nlohmann::ordered_json& doc = *parsed;
  Fixture f;
  try {
    f = fixture_from_json(doc, "<fuzz>");
  } catch (const InputError&) {
    return 0;
  }

  (void)feature_tags(f.program, &f.expected);

  // The expected trace against itself: no comparator exception (and, in practice, a pass).
  const ReplayCaseResult self = compare_fixture_trace(f, f.expected, Tolerance{});
  if (self.status == ReplayStatus::Failed && self.failure_category == "comparator")
    fuzz::fuzz_fail("comparing an accepted fixture's expected trace with itself threw inside the comparator",
                    self.failure);
  (void)self.summary();

  // The round trip through the corpus's file format.
  const std::string first = format_fixture_json(fixture_to_json(f));
  Fixture g;
  try {
    g = fixture_from_json(parse_json_text(first, kFixtureDepth), "<round trip>");
  } catch (const JsonError& e) {
    fuzz::fuzz_fail("format_fixture_json(fixture_to_json(f)) does not parse: " + std::string(e.what()), first);
  } catch (const InputError& e) {
    fuzz::fuzz_fail("fixture_to_json(f) of an accepted fixture does not re-read: " + std::string(e.what()), first);
  }
  const std::string second = format_fixture_json(fixture_to_json(g));
  if (second != first)
    fuzz::fuzz_fail("a fixture written, re-read and written again differs",
                    "first:\n" + first + "\nsecond:\n" + second);
  return 0;
}
