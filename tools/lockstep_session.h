// tools/lockstep_session.h: the pieces `lockstep run` and `lockstep mutants` share: one program (or named
// case) on an engine under test against a fresh oracle, whether a result is a failure that no known
// discrepancy explains, and shrinking a failing random program within a time budget.
//
// Example:
//   EngineFactory under_test = [] { return make_engine("impl", "zero_grad_noop"); };
//   LockstepResult r = run_named_case(c, under_test, LockstepOptions{});
//   if (is_unexplained_failure(c.id, r, &known)) ...
//   Program small = shrink_program(shrinkable, [&](const Program& p) { return ...; }, 10.0, &stats);
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <rapidcheck.h>

#include "conformance/run/engine.h"
#include "conformance/compare/expectations.h"
#include "conformance/run/lockstep_runner.h"
#include "conformance/run/named_case.h"
#include "conformance/program/program.h"
#include "conformance/generate/shrink.h"

namespace lockstep::tools {

using EngineFactory = std::function<std::unique_ptr<Engine>()>;

// `program` in lockstep (or free-running, per options) on a fresh oracle and a fresh engine under test.
LockstepResult run_against_oracle(const Program& program, const EngineFactory& make_under_test,
                                  const LockstepOptions& options);

// A named case: its claim checks on a fresh engine under test (conformance/run/named_case.h), then the program
// against the oracle. Failed claims make the result fail and are listed in engine_failure.
LockstepResult run_named_case(const NamedCase& c, const EngineFactory& make_under_test,
                              const LockstepOptions& options);

// Whether `result` failed and `known` (may be null) does not explain it (report.h, make_case_report).
bool is_unexplained_failure(const std::string& case_id, const LockstepResult& result,
                            const Expectations* known);

// The smallest program that still fails (shrink.h, shrink_failure) within `seconds`.
Program shrink_program(const rc::Shrinkable<Program>& failing, const std::function<bool(const Program&)>& still_fails,
                       double seconds, ShrinkStats* stats);

}  // namespace lockstep::tools
