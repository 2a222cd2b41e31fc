// Fuzz target: the tolerance-overrides reader, tolerance_overrides_from_json() (conformance/run/replay.h), on the
// document parse_json_text() makes of the input with the depth bound read_tolerance_overrides() uses (64): the
// files of `lockstep run --tolerance` / `lockstep replay --tolerance` (fixtures/expectations/tfjs-tolerance.json).
//
// Contract under test, for any input bytes:
//   - parse_json_text() returns a document or throws JsonError; tolerance_overrides_from_json() returns the
//     overrides or throws InputError; nothing else escapes;
//   - every accepted multiplier is what the header promises, a finite number > 0 (and <= 1e12, the reader's
//     cap), so ReplayConfig::tolerance_for() never yields a bound of zero, a negative one or NaN;
//   - no sanitizer finding.
//
// Run (build with -DLOCKSTEP_FUZZ=ON and Clang; seeds from fuzz/seed_corpus.sh):
//   fuzz/seed_corpus.sh /tmp/lockstep-seeds
//   mkdir -p fuzz/corpus/tolerance
//   build-sanitize/fuzz/fuzz_tolerance -max_len=65536 -dict=fuzz/lockstep.dict fuzz/corpus/tolerance /tmp/lockstep-seeds/tolerance
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/compare/tolerance.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/program_json.h"
#include "conformance/run/replay.h"
#include "fuzz/fuzz_common.h"

namespace {
// read_tolerance_overrides()'s nesting bound (read_json_file in conformance/run/replay.cc); keep in step with it.
constexpr int kToleranceDepth = 64;

bool sane(double k) { return std::isfinite(k) && k > 0 && k <= 1e12; }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string text = fuzz::as_text(data, size);

  const std::optional<nlohmann::ordered_json> parsed = fuzz::parsed_json(text, kToleranceDepth);
  if (!parsed) return 0;
  const nlohmann::ordered_json& doc = *parsed;
  ReplayConfig config;
  try {
    config.tolerance_overrides = tolerance_overrides_from_json(doc, "<fuzz>");
  } catch (const InputError&) {
    return 0;
  }

  for (const ToleranceOverride& o : config.tolerance_overrides) {
    if (o.id_pattern.empty() || o.reason.empty() || o.k.empty())
      fuzz::fuzz_fail("an accepted override with an empty id, reason or k", doc.dump());
    for (const auto& [q, k] : o.k)
      if (!sane(k)) fuzz::fuzz_fail("an accepted override with k out of range for " + std::string(quantity_name(q)),
                                    doc.dump());
  }
  // What lockstep run ("*") and replay (a fixture id) make of them.
  for (const char* id : {"*", "random-3", "tut001-set-to-none-leaves-none", ""}) {
    const Tolerance t = config.tolerance_for(id);
    for (Quantity q : all_quantities())
      if (!sane(t.k(q)))
        fuzz::fuzz_fail("tolerance_for(\"" + std::string(id) + "\") gives k out of range for " + quantity_name(q),
                        doc.dump());
  }
  return 0;
}
