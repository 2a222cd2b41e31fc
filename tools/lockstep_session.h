// tools/lockstep_session.h: the pieces `lockstep run` and `lockstep mutants` share: a named case (its claims
// and the comparison with the oracle) or a program on any implementation under test (in-process engine or
// driver, conformance/run/tested_implementation.h), whether a result is a failure the expectations do not
// accept, and shrinking a failing random program within a time budget.
//
// Example:
//   auto subject = in_process_implementation(oracle_factory, [] { return make_engine("impl", "zero_grad_noop"); }, {});
//   LockstepResult r = run_case(*subject, c, expectations);
//   if (is_unexplained_failure(c.id, r, &expectations)) ...
//   Program small = shrink_program(shrinkable, [&](const Program& p) { return ...; }, 10.0, &stats);
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <rapidcheck.h>

#include "conformance/compare/expectations.h"
#include "conformance/generate/shrink.h"
#include "conformance/program/program.h"
#include "conformance/run/lockstep_runner.h"
#include "conformance/run/named_case.h"
#include "conformance/run/tested_implementation.h"

namespace lockstep::tools {

// A named case on `subject`: the comparison with the oracle (with the case's masks), then its claim checks on
// the implementation's own trace (skipped when the implementation declined the program). Failed claims make
// the result fail and are listed in engine_failure.
LockstepResult run_case(TestedImplementation& subject, const NamedCase& c, const Expectations& expectations);

// A program on `subject` with the masks of case `id`.
LockstepResult run_program_case(TestedImplementation& subject, const std::string& id, const Program& program,
                                const Expectations& expectations);

// Whether `result` failed and the expectations (may be null) do not accept it (report.h, make_case_report).
bool is_unexplained_failure(const std::string& case_id, const LockstepResult& result,
                            const Expectations* expectations);

// The smallest program that still fails (shrink.h, shrink_failure) within `seconds`.
Program shrink_program(const rc::Shrinkable<Program>& failing, const std::function<bool(const Program&)>& still_fails,
                       double seconds, ShrinkStats* stats);

}  // namespace lockstep::tools
