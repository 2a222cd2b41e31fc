// conformance/run/run_scope.h: what a run or a replay may send the implementation under test and what it reached:
// the scope (what the implementation's hello declares, --features/--exclude-features, its API profile, the
// version rules), each case in or left out with the reason, and the coverage record the report carries.
//
// Example:
//   RunScope scope = make_scope_against_oracle({caps, zero_grad_rule, version, oracle_caps, oracle_name}, expectations);
//   const std::set<std::string> features = program_features(program);  // once per program
//   if (in_scope(scope, id, program, features, &why)) { ... run it ...; count_case(scope, program, features, result); }
//   finish_coverage(scope, report, expectations);
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>

#include "conformance/compare/expectations.h"
#include "conformance/program/feature_scope.h"
#include "conformance/report/report.h"
#include "conformance/program/program.h"
#include "conformance/run/lockstep_runner.h"
#include "conformance/run/capabilities.h"

namespace lockstep {

// The scope of a run (what the implementation declares, --features/--exclude-features, the API profile) and
// the coverage record the report carries (report.h, CoverageReport).
struct RunScope {
  std::shared_ptr<FeatureScope> scope = std::make_shared<FeatureScope>();
  CoverageReport coverage;
  std::map<std::string, int64_t> left_out_by;  // exclusion reason -> programs or fixtures it left out
  std::set<std::string> not_generated;  // features this run's settings never generate (special_values without
                                        // --special-values): not reported as "not exercised"
};

// Throws std::invalid_argument (a bad flag) or InputError (a profile that cannot be read). A profile the
// hello names but lockstep does not ship is a warning, not an error; one named by --profile is an error.
// `zero_grad_rule`: TestedImplementation::zero_grad_rule() (empty: both follow the same default).
RunScope make_run_scope(const Capabilities& caps, const std::string& zero_grad_rule, const std::string& features,
                        const std::string& exclude_features, const std::string& profile, Expectations& expectations);
// What the oracle cannot judge leaves the run. With LibTorch's C++ API (`oracle_caps` null): the option maximize
// (SEMANTICS 20.2). With a driver as the oracle (`lockstep run --oracle`): what its hello does not declare, and the
// API profile its hello names, turned around (the oracle is the side whose API differs from C++, so a rule's
// expected and actual values swap), unless `profile` (the run's --profile) is "none". Throws InputError when that
// profile cannot be read.
void exclude_what_the_oracle_lacks(RunScope& s, const Capabilities* oracle_caps, const std::string& profile,
                                   Expectations& expectations);
// The scope of a run against its oracle, in one call for `lockstep run` and `lockstep mutants --oracle`: the entries of
// `expectations` for the implementation's version (keep_for_version), make_run_scope, exclude_what_the_oracle_lacks,
// the oracle's own expectations file turned around (SEMANTICS 20.4, appended to `expectations`) and the version rules.
// Throws std::invalid_argument (a bad flag), InputError (the profile) or std::runtime_error: an error of the
// oracle's profile or of its expectations file, naming the flag ("--oracle: ...", "--oracle-expectations: ...").
struct ScopeAgainstOracle {
  const Capabilities& caps;               // the implementation's hello
  std::string zero_grad_rule;             // TestedImplementation::zero_grad_rule()
  std::string implementation_version;     // its PyTorch version, or empty
  const Capabilities* oracle_caps;        // a driver oracle's hello; null: LibTorch's C++ API in-process
  std::string oracle_name;                // the --oracle command, or the in-process oracle's name (its version)
  std::string features, exclude_features, profile;  // --features, --exclude-features, --profile
  std::string oracle_expectations_file;   // --oracle-expectations, or empty
};
RunScope make_scope_against_oracle(const ScopeAgainstOracle& in, Expectations& expectations);
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

}  // namespace lockstep
