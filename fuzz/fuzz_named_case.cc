// Fuzz target: the named-case reader, case_from_text() (conformance/run/named_case.h), which read_case_file()
// runs on the file's text: conformance/cases/*.json and the files of `lockstep run --cases DIR`.
//
// Contract under test, for any input bytes:
//   - case_from_text() returns a NamedCase or throws InputError (unreadable, not JSON, not a valid case);
//     nothing else escapes;
//   - an accepted case's checks can be evaluated: check_case() on a trace with one record per action (the
//     records the checks name hold the program's parameters: values, a defined grad equal to them, no state)
//     returns its failures and does not throw, with and without a PyTorch version (the reader validates pointers, indices and "when"
//     conditions so that the checks cannot throw when they run, issue 14);
//   - no sanitizer finding.
//
// Run (build with -DLOCKSTEP_FUZZ=ON and Clang; seeds from fuzz/seed_corpus.sh):
//   fuzz/seed_corpus.sh /tmp/lockstep-seeds
//   mkdir -p fuzz/corpus/named_case
//   build-sanitize/fuzz/fuzz_named_case -max_len=65536 -dict=fuzz/lockstep.dict fuzz/corpus/named_case /tmp/lockstep-seeds/named_case
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "conformance/program/program.h"
#include "conformance/program/program_json.h"
#include "conformance/program/trace.h"
#include "conformance/run/named_case.h"
#include "fuzz/fuzz_common.h"

namespace {

// A record of the state the checks point into: every parameter with its values and a grad equal to them.
lockstep::Record record_of(const lockstep::Program& program, const std::string& action) {
  lockstep::Record r;
  r.action = action;
  for (const lockstep::ParamSpec& p : program.params) {
    lockstep::ParamObservation o;
    o.name = p.name;
    o.value = lockstep::TensorValue{p.dtype, p.shape, p.values};
    o.grad.defined = true;
    o.grad.value = o.value;
    r.state.params.push_back(std::move(o));
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  NamedCase c;
  try {
    c = case_from_text(fuzz::as_text(data, size), "<fuzz>");
  } catch (const InputError&) {
    return 0;
  }

  // The records the checks point at get the parameters' state (others only their action name), within a budget
  // of materialised values so that many checks on large parameters stay cheap.
  std::vector<bool> referenced(c.program.actions.size(), false);
  bool init_referenced = false;
  for (const CaseCheck& check : c.checks) {
    for (int after : {check.after, check.kind == CaseCheck::Kind::SameAs ? check.same_as_after : check.after}) {
      if (after < 0) init_referenced = true;
      else if (static_cast<size_t>(after) < referenced.size()) referenced[static_cast<size_t>(after)] = true;
    }
  }
  size_t per_record = 0;
  for (const ParamSpec& p : c.program.params) per_record += 2 * p.values.size() + 1;
  size_t budget = size_t{1} << 22;
  auto make = [&](bool full, const std::string& action) {
    if (!full || per_record > budget) {
      Record r;
      r.action = action;
      return r;
    }
    budget -= per_record;
    return record_of(c.program, action);
  };
  Trace trace;
  trace.engine = "fuzz";
  trace.init = make(init_referenced, "init");
  for (size_t i = 0; i < c.program.actions.size(); ++i)
    trace.records.push_back(make(referenced[i], action_name(c.program.actions[i].kind)));
  for (const char* version : {"", "1.13.1", "2.1.0", "libtorch-1.13.0"}) (void)check_case(c, trace, version);
  return 0;
}
