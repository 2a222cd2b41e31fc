#include "conformance/run/runner.h"

#include <chrono>
#include <utility>

#include "conformance/program/feature_areas.h"
#include "conformance/program/features.h"
#include "conformance/run/replay.h"
#include "conformance/run/zero_grad_default.h"

namespace lockstep {

RunInputs load_run_inputs(const RunInputFiles& files) {
  RunInputs in;
  in.cases = load_cases(files.cases_dir.empty() ? default_cases_dir() : files.cases_dir);
  if (!files.expectations_file.empty()) in.expectations = load_expectations(files.expectations_file);
  if (!files.tolerance_file.empty())
    in.tolerance = with_tolerance_overrides(Tolerance{}, read_tolerance_overrides(files.tolerance_file), "*");
  return in;
}

LockstepResult run_case(TestedImplementation& subject, const NamedCase& c, const std::set<std::string>& features,
                        const Expectations& expectations) {
  LockstepResult result = subject.run(c.id, c.program, expectations.mask_for(c.id, &features, &c.program));
  if (!result.skipped.empty() || !subject.fatal_error().empty()) return result;
  std::string why;
  std::optional<Trace> own = subject.trace(c.id, c.program, why);
  if (!own) {
    result.passed = false;
    const std::string text = "no trace to check the case's claims on: " + why;
    result.engine_failure = result.engine_failure.empty() ? text : result.engine_failure + "\n" + text;
    return result;
  }
  for (std::string& check : check_case(c, *own, subject.pytorch_version()))
    result.claim_failures.push_back({std::move(check), c.claim, c.semantics});
  if (!result.claim_failures.empty()) result.passed = false;
  return result;
}

LockstepResult run_program_case(TestedImplementation& subject, const std::string& id, const Program& program,
                                const std::set<std::string>& features, const Expectations& expectations) {
  return subject.run(id, program, expectations.mask_for(id, &features, &program));
}

LockstepResult run_program_case(TestedImplementation& subject, const std::string& id, const Program& program,
                                const Expectations& expectations) {
  return run_program_case(subject, id, program, program_features(program), expectations);
}

bool is_unexplained_failure(const std::string& case_id, const LockstepResult& result,
                            const Expectations* expectations) {
  return make_case_report(case_id, result, std::nullopt, "", expectations).status == CaseStatus::Failed;
}

Program shrink_program(const rc::Shrinkable<Program>& failing, const std::function<bool(const Program&)>& still_fails,
                       double seconds, ShrinkStats* stats) {
  return shrink_failure(failing, still_fails, stats, std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
}

std::optional<CaseReport> CaseRunner::named_case(const NamedCase& c, const std::string& reproduce, std::string* why) {
  const std::set<std::string> features = program_features(c.program);
  if (!in_scope(scope_, c.id, c.program, features, why)) return std::nullopt;
  LockstepResult result = run_case(subject_, c, features, expectations_);
  implementation_lost_ = !subject_.fatal_error().empty();
  count_case(scope_, c.program, features, result);
  if (c.id == kZeroGradDefaultCase && result.skipped.empty()) default_case_ran_ = true;
  CaseReport r = make_case_report(c.id, std::move(result), c.program, reproduce, &expectations_, &features);
  r.areas = feature_areas(c.program, features);
  if (r.status == CaseStatus::Passed) r.program.reset();
  return r;
}

CaseReport CaseRunner::random_program(const std::string& id, const rc::Shrinkable<Program>& generated,
                                      const std::string& reproduce, double shrink_seconds) {
  const Program program = generated.value();
  const std::set<std::string> features = program_features(program);
  LockstepResult result = run_program_case(subject_, id, program, features, expectations_);
  implementation_lost_ = !subject_.fatal_error().empty();
  count_case(scope_, program, features, result);
  CaseReport r = make_case_report(id, std::move(result), program, reproduce, &expectations_, &features);
  if (r.status == CaseStatus::Failed && !implementation_lost_) {
    // The same kind of failure (LockstepResult::failure_kind): a simpler program that fails for another reason is
    // not the same bug.
    const std::string kind = r.result.failure_kind();
    auto still_fails = [&](const Program& candidate) {
      const std::set<std::string> f = program_features(candidate);
      CaseReport c = make_case_report(id, run_program_case(subject_, id, candidate, f, expectations_), candidate, "",
                                      &expectations_, &f);
      return c.status == CaseStatus::Failed && c.result.failure_kind() == kind;
    };
    ShrinkStats stats;
    const Program shrunk = shrink_program(generated, still_fails, shrink_seconds, &stats);
    const std::set<std::string> shrunk_features = program_features(shrunk);
    CaseReport s = make_case_report(id, run_program_case(subject_, id, shrunk, shrunk_features, expectations_), shrunk,
                                    reproduce, &expectations_, &shrunk_features);
    if (s.status == CaseStatus::Failed) {
      s.original_program = program;
      r = std::move(s);
    } else {
      r.program = program;  // the shrunk program no longer failed (a flaky driver): report the original
    }
    r.shrink_steps = stats.steps;
  } else if (r.status == CaseStatus::Known && r.result.skipped.empty()) {
    r.program = program;  // a skipped case's is not kept: its reproduce line makes it again (docs/programs-and-limits.md "Limits")
  } else if (r.status != CaseStatus::Failed) {
    r.program.reset();
  }
  // A failure counts in the areas of the program the report shows (shrunk: the smallest that still fails).
  r.areas = r.program && r.original_program ? feature_areas(*r.program) : feature_areas(program, features);
  return r;
}

}  // namespace lockstep
