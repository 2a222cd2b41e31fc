// Fuzz target: the program reader, program_from_text() (conformance/program/program_json.h), the function
// behind `lockstep trace PROGRAM.json` and every program inside a fixture, case or driver request.
//
// Contract under test, for any input bytes:
//   - program_from_text(text, source) returns a Program or throws InputError; nothing else escapes (it
//     parses with parse_json_text under its own depth bound and turns JsonError/ProgramError into InputError);
//   - a program it accepted survives its writer: program_to_json(p) re-reads without error, and writing the
//     re-read program gives the same document (the header promises a field-by-field, bitwise round trip);
//   - program_features(p) (what scopes and profiles are decided on) does not throw on an accepted program;
//   - no sanitizer finding (ASan/UBSan when built with the sanitize preset).
//
// Run (build with -DLOCKSTEP_FUZZ=ON and Clang; seeds from fuzz/seed_corpus.sh):
//   fuzz/seed_corpus.sh /tmp/lockstep-seeds
//   mkdir -p fuzz/corpus/program
//   build-sanitize/fuzz/fuzz_program -max_len=65536 -dict=fuzz/lockstep.dict fuzz/corpus/program /tmp/lockstep-seeds/program
// Reproduce a crash: build-sanitize/fuzz/fuzz_program crash-<sha1>
#include <cstddef>
#include <cstdint>
#include <string>

#include "conformance/program/features.h"
#include "conformance/program/program_json.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string text = fuzz::as_text(data, size);

  Program p;
  try {
    p = program_from_text(text, "<fuzz>");
  } catch (const InputError&) {
    return 0;  // the documented rejection
  }

  (void)program_features(p);

  // The round trip: what the writer makes of an accepted program must read back, and to the same document.
  const std::string first = program_to_json(p).dump();
  Program q;
  try {
    q = program_from_text(first, "<round trip>");
  } catch (const InputError& e) {
    fuzz::fuzz_fail("program_to_json() wrote a program that program_from_text() rejects: " + std::string(e.what()),
                    "written:\n" + first);
  }
  const std::string second = program_to_json(q).dump();
  if (second != first)
    fuzz::fuzz_fail("program_to_json(program_from_text(program_to_json(p))) differs from program_to_json(p)",
                    "first:\n" + first + "\nsecond:\n" + second);
  return 0;
}
