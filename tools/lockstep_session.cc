#include "tools/lockstep_session.h"

#include <chrono>

#include "conformance/run/interpreter.h"
#include "conformance/report/report.h"
#include "tools/engines.h"

namespace lockstep::tools {

LockstepResult run_against_oracle(const Program& program, const EngineFactory& make_under_test,
                                  const LockstepOptions& options) {
  auto oracle = make_engine("oracle");
  auto under_test = make_under_test();
  return run_lockstep(program, *oracle, *under_test, options);
}

LockstepResult run_named_case(const NamedCase& c, const EngineFactory& make_under_test,
                              const LockstepOptions& options) {
  std::vector<std::string> claim_failures;
  {
    auto engine = make_under_test();
    claim_failures = check_case(c, run_program(c.program, *engine));
  }
  LockstepResult result = run_against_oracle(c.program, make_under_test, options);
  if (!claim_failures.empty()) {
    result.passed = false;
    std::string text = "claim checks failed:";
    for (const auto& f : claim_failures) text += "\n  " + f;
    result.engine_failure = result.engine_failure.empty() ? text : result.engine_failure + "\n" + text;
  }
  return result;
}

bool is_unexplained_failure(const std::string& case_id, const LockstepResult& result,
                            const Expectations* known) {
  return !result.passed && make_case_report(case_id, result, std::nullopt, "", known).status == CaseStatus::Failed;
}

Program shrink_program(const rc::Shrinkable<Program>& failing, const std::function<bool(const Program&)>& still_fails,
                       double seconds, ShrinkStats* stats) {
  return shrink_failure(failing, still_fails, stats, std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
}

}  // namespace lockstep::tools
