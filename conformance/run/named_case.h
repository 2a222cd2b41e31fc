// Named cases: the claims of SEMANTICS §10 (and any other hand-written case) as programs with checks.
//
// A case file (conformance/cases/<id>.json) holds a stable id, a description, the claim it settles, the
// SEMANTICS sections and feature tags it exercises, the program, and checks on the trace. A check names a
// record (`"after": 3` is the record after action 3, `"after": "init"` the setup record) and a JSON pointer
// into that record's JSON form (trace_json.h), and says what must be there:
//
//   {"after": 1, "pointer": "/params/x/grad/values", "equals": [4, 8, 12]}
//   {"after": 0, "pointer": "/output/requires_grad", "equals": false}
//   {"after": 2, "pointer": "/params/w/state/momentum_buffer", "absent": true}
//   {"after": 3, "pointer": "/params/w/grad/defined", "equals": false, "when": {"pytorch": ">=2.0"}}
//   {"after": 7, "pointer": "/params/w/grad/values",
//    "same_as": {"after": 9, "pointer": "/params/v/grad/values"}, "tolerance": 1e-6}
//
// Numbers compare exactly unless the check gives a relative `tolerance`; NaN equals NaN.
// The same checks run on every engine (the oracle, impl, anything else), so a claim is asserted once.
//
// Example:
//   for (const NamedCase& c : load_cases(default_cases_dir())) {
//     Trace t = run_program(c.program, engine);
//     for (const std::string& failure : check_case(c, t)) ...
//   }
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/program/program.h"
#include "conformance/program/trace.h"

namespace lockstep {

struct CaseCheck {
  int after = -1;                   // -1: the init record
  std::string pointer;              // into the record's JSON
  enum class Kind { Equals, Absent, SameAs } kind = Kind::Equals;
  nlohmann::ordered_json equals;    // Equals
  int same_as_after = -1;           // SameAs
  std::string same_as_pointer;      // SameAs
  double tolerance = 0;             // relative, for numbers
  std::string when_pytorch;         // "when": {"pytorch": ">=2.0"}: checked only for such versions (SEM-12)
};

struct NamedCase {
  std::string file;                    // where it was read from
  std::string id;                      // stable, never reused
  std::string description;
  std::string claim;                   // the tutorial claim it settles, and how
  std::vector<std::string> semantics;  // "SEM-3.4", ...
  std::vector<std::string> tags;       // feature tags
  Program program;
  nlohmann::ordered_json program_json;
  std::vector<CaseCheck> checks;
};

// Reads and validates one case file; throws InputError (program_json.h) naming the file and JSON pointer.
NamedCase read_case_file(const std::string& path);
// The same for a case's text; `file` names it in errors and in NamedCase::file.
NamedCase case_from_text(const std::string& text, const std::string& file);

// Every *.json in `dir`, sorted by id; duplicate ids are an error.
std::vector<NamedCase> load_cases(const std::string& dir);

// The cases shipped with the source tree (conformance/cases).
std::string default_cases_dir();
// The named cases only a driver oracle can judge (SEMANTICS 20.2: maximize, which LibTorch's C++ API lacks): a run
// with --oracle and no --cases runs them after the shipped ones; recorded into fixtures/corpus/python-oracle.
std::string python_oracle_cases_dir();

// The failed checks of `c` on `trace`, each a readable sentence; empty when every check holds. A check with
// "when": {"pytorch": ">=2.0"} is checked only when `pytorch_version` (TestedImplementation::pytorch_version(),
// "2.1.0", "libtorch-1.13.0") satisfies it; with no version, conditional checks are not checked.
std::vector<std::string> check_case(const NamedCase& c, const Trace& trace, const std::string& pytorch_version = "");

}  // namespace lockstep
