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
#include <map>
#include <set>
#include <memory>
#include <string>

#include <rapidcheck.h>

#include "conformance/compare/expectations.h"
#include "conformance/program/feature_scope.h"
#include "conformance/report/report.h"
#include "conformance/generate/shrink.h"
#include "conformance/program/program.h"
#include "conformance/run/lockstep_runner.h"
#include "conformance/run/named_case.h"
#include "conformance/run/tested_implementation.h"

namespace lockstep::tools {

// A named case on `subject`: the comparison with the oracle (with the case's masks), then its claim checks on
// the implementation's own trace (skipped when the implementation declined the program). Failed claims make
// the result fail and are listed in claim_failures, each with the case's claim and SEMANTICS sections.
LockstepResult run_case(TestedImplementation& subject, const NamedCase& c, const Expectations& expectations);

// A program on `subject` with the masks of case `id`.
LockstepResult run_program_case(TestedImplementation& subject, const std::string& id, const Program& program,
                                const Expectations& expectations);

// Whether `result` failed and the expectations (may be null) do not accept it (report.h, make_case_report).
bool is_unexplained_failure(const std::string& case_id, const LockstepResult& result,
                            const Expectations* expectations);

// The scope of a run (what the implementation declares, --features/--exclude-features, the API profile) and
// the coverage record the report carries (report.h, CoverageReport).
struct RunScope {
  std::shared_ptr<FeatureScope> scope = std::make_shared<FeatureScope>();
  CoverageReport coverage;
  std::string reproduce_flags;  // " --features ... --profile ..." for reproduce lines
  std::map<std::string, int64_t> left_out_by;  // exclusion reason -> programs or fixtures it left out
  std::set<std::string> not_generated;  // features this run's settings never generate (special_values without
                                        // --special-values): not reported as "not exercised"
};

// Throws std::invalid_argument (a bad flag) or InputError (a profile that cannot be read). A profile the
// hello names but lockstep does not ship is a warning, not an error; one named by --profile is an error.
// `zero_grad_rule`: TestedImplementation::zero_grad_rule() (empty: both follow the same default).
RunScope make_run_scope(const Capabilities& caps, const std::string& zero_grad_rule, const std::string& features,
                        const std::string& exclude_features, const std::string& profile, Expectations& expectations);
// Where the implementation follows another generation of PyTorch than the oracle it is compared with (1.x against
// 2.x, either way) and the two differ in more than a default (SEMANTICS 12.5): the programs in which they differ
// are left out with the rule's reason (rule `embedding-saved-weight-by-version`, listed in the report). Today one
// situation: a backward through a retained embedding graph after a step (op:embedding with backward_after_step).
// Nothing when either version cannot be read or both are of one generation.
void apply_version_rules(RunScope& s, const std::string& implementation_version, const std::string& oracle_version);
// The same rule for one recorded case (a replay, whose fixtures may come from either generation): false, recording
// it as left out with the rule's reason, when the case is in the rule's situation and `recorder_version` is of
// another generation than `implementation_version`.
bool in_version_scope(RunScope& s, const std::string& id, const Program& program, const std::set<std::string>& features,
                      const std::string& implementation_version, const std::string& recorder_version,
                      std::string* why = nullptr);
// Whether case `id`, whose program has `features` (program_features()), is in scope; when not, records it as
// left out and gives the reason.
bool in_scope(RunScope& s, const std::string& id, const Program& program, const std::set<std::string>& features,
              std::string* why = nullptr);
// Counts a case that ran (or was skipped by the implementation) in the coverage, by its program's features.
void count_case(RunScope& s, const Program& program, const std::set<std::string>& features,
                const LockstepResult& result);
// At the end of a run: features in scope never exercised, how often each rule was used, unused expectations.
void finish_coverage(RunScope& s, RunReport& report, const Expectations& expectations);

// The smallest program that still fails (shrink.h, shrink_failure) within `seconds`.
Program shrink_program(const rc::Shrinkable<Program>& failing, const std::function<bool(const Program&)>& still_fails,
                       double seconds, ShrinkStats* stats);

}  // namespace lockstep::tools
