// Fuzz target: the expectations (known-discrepancies) reader, expectations_from_json()
// (conformance/compare/expectations.h), on the document parse_json_text() makes of the input with the depth
// bound load_expectations() uses (16): the files of --expectations / --expected-failures /
// --known-discrepancies, fixtures/expectations/*.json and conformance/compare/expectations.json.
//
// Contract under test, for any input bytes:
//   - parse_json_text() returns a document or throws JsonError; expectations_from_json() returns Expectations
//     or throws InputError; nothing else escapes;
//   - what a run then does with accepted entries does not throw: whole_case(), mask_for() (with features and a
//     program, so entries with "features", "without_features" and "from" are evaluated), FieldMask::match()
//     on comparator-style paths, unused_entries(), stale();
//   - no sanitizer finding (the globs of glob.h run on every entry).
//
// Run (build with -DLOCKSTEP_FUZZ=ON and Clang; seeds from fuzz/seed_corpus.sh):
//   fuzz/seed_corpus.sh /tmp/lockstep-seeds
//   mkdir -p fuzz/corpus/expectations
//   build-sanitize/fuzz/fuzz_expectations -max_len=65536 -dict=fuzz/lockstep.dict fuzz/corpus/expectations /tmp/lockstep-seeds/expectations
#include <cstddef>
#include <cstdint>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/compare/expectations.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/program.h"
#include "conformance/program/program_json.h"
#include "fuzz/fuzz_common.h"

namespace {
// load_expectations()'s nesting bound (conformance/compare/expectations.cc); keep in step with it.
constexpr int kExpectationsDepth = 16;

// A small program in two situations (record_situations()): a second backward through a retained graph, and a
// step while a parameter has no grad, so that entries with "from" find their first action.
lockstep::Program make_situated_program() {
  try {
    return lockstep::program_from_text(R"({
    "params": [{"name": "w", "dtype": "float32", "shape": [2], "values": [1, 2]},
               {"name": "b", "dtype": "float32", "shape": [], "values": [0.5]}],
    "loss": {"op": "sum", "args": [{"op": "mul", "args": [{"op": "param", "name": "w"}, {"op": "param", "name": "w"}]}]},
    "optimizer": {"type": "sgd", "defaults": {"lr": 0.1}, "params": ["w", "b"]},
    "actions": [{"action": "forward"}, {"action": "backward", "retain_graph": true}, {"action": "backward"},
                {"action": "step"}, {"action": "zero_grad", "set_to_none": true}, {"action": "step"}]})",
                                       "<fuzz_expectations program>");
  } catch (const lockstep::InputError& e) {
    lockstep::fuzz::fuzz_fail(std::string("the target's own program does not read: ") + e.what());
  }
}

const lockstep::Program& situated_program() {
  static const lockstep::Program p = make_situated_program();
  return p;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string text = fuzz::as_text(data, size);

  const std::optional<nlohmann::ordered_json> parsed = fuzz::parsed_json(text, kExpectationsDepth);
  if (!parsed) return 0;
  const nlohmann::ordered_json& doc = *parsed;
  Expectations e;
  try {
    e = expectations_from_json(doc, "<fuzz>");
  } catch (const InputError&) {
    return 0;
  }

  // What a run does with the entries.
  const Program& program = situated_program();
  const std::set<std::string> features = {"float32", "sgd", "sgd.lr", "op:mul", "op:sum", "retain_graph",
                                          "set_to_none", "zero_grad"};
  for (const char* id : {"tut001-set-to-none-leaves-none", "random-17", "op-tanh-nonfinite-f64", ""}) {
    (void)e.whole_case(id);
    (void)e.whole_case(id, &features);
    const FieldMask mask = e.mask_for(id, &features, &program);
    const std::vector<std::string> kinds = {"no_grad_fn", "backward_through_freed_graph"};
    for (const char* path : {"w → grad[1]", "w → state.exists", "w → state.step", "group 0 → lr",
                             "handle g0 → value[3]", "output → value", "error.kind"}) {
      (void)mask.match(path);
      (void)mask.match(path, kinds, "false", "true", std::nullopt);
      for (size_t record = 0; record < program.actions.size(); ++record)
        (void)mask.match(path, {}, "0.25", "absent", record);
    }
  }
  (void)e.unused_entries();
  (void)e.stale({"tut001-set-to-none-leaves-none", "random-17"});
  Expectations more;
  more.append(e);
  return 0;
}
