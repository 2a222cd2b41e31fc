#include "tools/lockstep_session.h"

#include <chrono>

#include "conformance/report/report.h"

namespace lockstep::tools {

LockstepResult run_case(TestedImplementation& subject, const NamedCase& c, const Expectations& expectations) {
  LockstepResult result = subject.run(c.id, c.program, expectations.mask_for(c.id));
  if (!result.skipped.empty() || !subject.fatal_error().empty()) return result;
  std::string why;
  std::optional<Trace> own = subject.trace(c.id, c.program, why);
  std::vector<std::string> claim_failures = own ? check_case(c, *own) : std::vector<std::string>{why};
  if (!claim_failures.empty()) {
    result.passed = false;
    std::string text = "claim checks failed:";
    for (const auto& f : claim_failures) text += "\n  " + f;
    result.engine_failure = result.engine_failure.empty() ? text : result.engine_failure + "\n" + text;
  }
  return result;
}

LockstepResult run_program_case(TestedImplementation& subject, const std::string& id, const Program& program,
                                const Expectations& expectations) {
  return subject.run(id, program, expectations.mask_for(id));
}

bool is_unexplained_failure(const std::string& case_id, const LockstepResult& result,
                            const Expectations* expectations) {
  return make_case_report(case_id, result, std::nullopt, "", expectations).status == CaseStatus::Failed;
}

Program shrink_program(const rc::Shrinkable<Program>& failing, const std::function<bool(const Program&)>& still_fails,
                       double seconds, ShrinkStats* stats) {
  return shrink_failure(failing, still_fails, stats, std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
}

}  // namespace lockstep::tools
