// conformance/run/runner.h: the runner every command that runs cases live shares (`lockstep run`, `lockstep
// mutants`): what a run loads (the named cases, the expectations, the tolerance), and one case on the
// implementation under test (an in-process engine or a driver, tested_implementation.h) judged against LibTorch:
// a named case (the comparison with the oracle, then its claims on the implementation's own trace) or a random
// program (compared, and shrunk to the smallest program that still fails the same way). Each returns the case's
// report (report.h) with the implementation's result in it; a program's features (features.h) are computed once
// and passed to the scope, the masks, the coverage and the report. The commands parse flags, print and write
// the reports; nothing here prints.
//
// Example:
//   RunInputs in = load_run_inputs({"", "conformance/compare/expectations.json", ""});
//   std::unique_ptr<TestedImplementation> subject = in_process_implementation(make_oracle, make_impl, {});
//   RunScope scope = make_run_scope(subject->capabilities(), subject->zero_grad_rule(), "", "", "", in.expectations);
//   CaseRunner runner(*subject, in.expectations, scope);
//   for (const NamedCase& c : in.cases)
//     if (std::optional<CaseReport> r = runner.named_case(c, "lockstep run --case " + c.id)) ...
//   CaseReport r = runner.random_program("random-7", programs.at(7), "lockstep run --index 7", 10.0);
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "conformance/compare/expectations.h"
#include "conformance/compare/tolerance.h"
#include "conformance/generate/shrink.h"
#include "conformance/program/program.h"
#include "conformance/report/report.h"
#include "conformance/run/named_case.h"
#include "conformance/run/run_scope.h"
#include "conformance/run/tested_implementation.h"

namespace lockstep {

// The files a run reads before it starts; an empty name: the shipped named cases, no expectations, the default
// tolerance.
struct RunInputFiles {
  std::string cases_dir;
  std::string expectations_file;
  std::string tolerance_file;  // a tolerance-overrides file (replay.h); a run applies the entries for id "*"
};

struct RunInputs {
  std::vector<NamedCase> cases;
  Expectations expectations;
  Tolerance tolerance;
};

// Throws InputError (or std::runtime_error) naming the file and what is wrong in it.
RunInputs load_run_inputs(const RunInputFiles& files);

// A named case on `subject`: the comparison with the oracle (with the case's masks), then its claim checks on
// the implementation's own trace (skipped when the implementation declined the program). Failed claims make
// the result fail and are listed in claim_failures, each with the case's claim and SEMANTICS sections. A driver
// answers the trace of its comparison again (it is not sent the program twice); an in-process engine in lockstep
// mode runs the program a second time alone, as the comparison re-synchronises it to the oracle's numbers.
// `features`: program_features(c.program).
LockstepResult run_case(TestedImplementation& subject, const NamedCase& c, const std::set<std::string>& features,
                        const Expectations& expectations);

// A program on `subject` with the masks of case `id`; `features`: program_features(program).
LockstepResult run_program_case(TestedImplementation& subject, const std::string& id, const Program& program,
                                const std::set<std::string>& features, const Expectations& expectations);

// The same, computing the program's features (a caller that has them passes them).
LockstepResult run_program_case(TestedImplementation& subject, const std::string& id, const Program& program,
                                const Expectations& expectations);

// Whether `result` failed and the expectations (may be null) do not accept it (report.h, make_case_report).
bool is_unexplained_failure(const std::string& case_id, const LockstepResult& result,
                            const Expectations* expectations);

// The smallest program that still fails (shrink.h, shrink_failure) within `seconds`.
Program shrink_program(const rc::Shrinkable<Program>& failing, const std::function<bool(const Program&)>& still_fails,
                       double seconds, ShrinkStats* stats);

// One run's cases on one implementation, in its scope, judged by its expectations: each case is counted in the
// scope's coverage and comes back as its report. After each call, implementation_lost() says whether the
// implementation could not run the case at all (a driver that cannot start, subject.fatal_error()): the caller
// ends the run. A driver that gives up while a failing program is shrunk ends the run at the next case, after
// this one's report.
class CaseRunner {
 public:
  CaseRunner(TestedImplementation& subject, Expectations& expectations, RunScope& scope)
      : subject_(subject), expectations_(expectations), scope_(scope) {}

  // Named case `c`, reproduced by `reproduce`; nullopt when it is out of the scope (recorded as left out there,
  // `why` says why). A passing case's report keeps no program.
  std::optional<CaseReport> named_case(const NamedCase& c, const std::string& reproduce, std::string* why = nullptr);

  // Random program `id`, reproduced by `reproduce`. An unexplained failure is shrunk within `shrink_seconds`
  // (every candidate run through the same implementation, failing the same way: failure_kind()); the report
  // holds the shrunk program and the original one, or the original alone when the shrunk one no longer fails
  // (a flaky driver). An expected failure keeps its program (a skipped one does not: its reproduce line makes it
  // again); a pass keeps none.
  CaseReport random_program(const std::string& id, const rc::Shrinkable<Program>& generated,
                            const std::string& reproduce, double shrink_seconds);

  // Whether the case that checks the implementation's zero_grad() default ran (zero_grad_default.h).
  bool default_case_ran() const { return default_case_ran_; }

  // Whether the implementation had a fatal error right after the last case's run (before any shrinking).
  bool implementation_lost() const { return implementation_lost_; }

 private:
  TestedImplementation& subject_;
  Expectations& expectations_;
  RunScope& scope_;
  bool default_case_ran_ = false;
  bool implementation_lost_ = false;
};

}  // namespace lockstep
