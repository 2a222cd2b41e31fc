// Fuzz target: the API-profile reader, profile_from_text() (conformance/run/api_profile.h), which load_profile()
// runs on the file's text: fixtures/profiles/*.json and the files of `--profile FILE`. (Not in the original list
// of readers; added because it is one more strict reader of user files.) An "extends" names a shipped profile,
// which is read from the data directory (conformance/program/data_dir.h: the source tree here), as in a real run.
//
// Contract under test, for any input bytes:
//   - profile_from_text() returns an ApiProfile or throws InputError; nothing else escapes;
//   - apply_profile() of an accepted profile (avoid rules -> FeatureScope exclusions, field rules -> expectations)
//     does not throw, nor do the scope and mask queries a run then makes;
//   - no sanitizer finding.
//
// Run (build with -DLOCKSTEP_FUZZ=ON and Clang; seeds from fuzz/seed_corpus.sh):
//   fuzz/seed_corpus.sh /tmp/lockstep-seeds
//   mkdir -p fuzz/corpus/profile
//   build-sanitize/fuzz/fuzz_profile -max_len=65536 -dict=fuzz/lockstep.dict fuzz/corpus/profile /tmp/lockstep-seeds/profile
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "conformance/compare/expectations.h"
#include "conformance/program/feature_scope.h"
#include "conformance/program/program_json.h"
#include "conformance/run/api_profile.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  ApiProfile profile;
  try {
    profile = profile_from_text(fuzz::as_text(data, size), "<fuzz>");
  } catch (const InputError&) {
    return 0;
  }

  FeatureScope scope;
  Expectations expectations;
  apply_profile(profile, scope, expectations);
  const std::set<std::string> features = {"float32", "sgd", "sgd.momentum", "op:mul", "op:sum", "zero_grad"};
  (void)scope.excluded(features);
  for (const std::string& f : features) {
    (void)scope.allows(f);
    (void)scope.why_not(f);
  }
  const FieldMask mask = expectations.mask_for("random-0", &features);
  (void)mask.match("w → state.exists", {}, "false", "true");
  (void)mask.match("group 0 → lr");
  return 0;
}
