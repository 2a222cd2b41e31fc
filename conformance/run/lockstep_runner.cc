// The lockstep runner (see lockstep_runner.h, SEMANTICS §9).
#include "conformance/run/lockstep_runner.h"

#include <exception>
#include <map>

#include <fmt/format.h>

#include "conformance/compare/trace_comparison.h"
#include "conformance/run/interpreter.h"

namespace lockstep {

const char* run_mode_name(RunMode m) { return m == RunMode::Lockstep ? "lockstep" : "free-running"; }

std::optional<RunMode> run_mode_from_name(const std::string& name) {
  if (name == "lockstep") return RunMode::Lockstep;
  if (name == "free-running") return RunMode::FreeRunning;
  return std::nullopt;
}

std::string LockstepResult::failure_summary() const {
  if (passed) return "passed";
  const std::string where = failed_at_setup ? std::string("setup")
                            : failed_action ? fmt::format("action {} ({})", *failed_action, failed_action_name)
                                            : std::string("run");
  if (!engine_failure.empty() && differences.empty()) return where + ": " + engine_failure;
  if (!claim_failures.empty() && differences.empty()) return "claim: " + claim_failures.front().check;
  if (differences.empty()) return where + ": failed";
  const Difference& d = differences.front();
  return where + ": " + difference_text(d);
}

std::string LockstepResult::failure_kind() const {
  if (passed) return "";
  const std::string where = failed_at_setup ? std::string("setup") : failed_action_name.empty() ? "run" : failed_action_name;
  if (differences.empty() && engine_failure.empty() && !claim_failures.empty()) return "claim";
  if (differences.empty()) return where + ": engine";
  const Difference& d = differences.front();
  std::string field = d.path;
  const size_t arrow = field.rfind("→ ");
  if (arrow != std::string::npos) field = field.substr(arrow + std::string("→ ").size());
  const size_t bracket = field.find('[');
  if (bracket != std::string::npos) field = field.substr(0, bracket);
  if (field == "error.kind" || d.kind == DifferenceKind::Structure)
    field += " " + d.expected_text + "/" + d.actual_text;  // which error, which structure
  return where + ": " + field;
}

namespace {

std::string exception_text(std::exception_ptr p) {
  try {
    std::rethrow_exception(p);
  } catch (const EngineError& e) {
    return fmt::format("{} [{}]", e.what(), e.kind());
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

std::string safe_name(Engine& engine) {
  try {
    return engine.name();
  } catch (...) {
    return "?";
  }
}

class Run {
 public:
  Run(const Program& program, Engine& oracle, Engine& under_test, const LockstepOptions& options,
      const FieldMask& mask)
      : program_(program), oracle_(oracle), under_test_(under_test), options_(options), mask_(mask) {
    result_.oracle_engine = safe_name(oracle);
    result_.under_test_engine = safe_name(under_test);
    result_.mode = options.mode;
  }

  LockstepResult run() {
    try {
      validate(program_);
    } catch (const ProgramError& e) {
      fail_setup(fmt::format("invalid program at {}: {}", e.path().empty() ? "/" : e.path(), e.what()));
      return std::move(result_);
    }
    ProgramRunner oracle_runner(program_, oracle_);
    ProgramRunner test_runner(program_, under_test_);

    Record expected, actual;
    if (!guard(oracle_who(), "setup", [&] { expected = oracle_runner.setup(); }, std::nullopt, "init") ||
        !guard(test_who(), "setup", [&] { actual = test_runner.setup(); }, std::nullopt, "init"))
      return std::move(result_);
    TraceComparison comparison(program_, options_.tolerance, mask_);
    if (!compare(comparison, expected, actual, std::nullopt)) return finish(comparison);

    for (size_t i = 0; i < program_.actions.size(); ++i) {
      const std::string name = action_name(program_.actions[i].kind);
      const std::string phase = fmt::format("action {} ({})", i, name);
      if (!guard(oracle_who(), phase, [&] { expected = oracle_runner.run_action(i); }, i, name) ||
          !guard(test_who(), phase, [&] { actual = test_runner.run_action(i); }, i, name))
        return finish(comparison);
      result_.actions_run = i + 1;
      if (!compare(comparison, expected, actual, i)) return finish(comparison);
    }
    return finish(comparison);
  }

 private:
  const Program& program_;
  Engine& oracle_;
  Engine& under_test_;
  const LockstepOptions& options_;
  const FieldMask& mask_;
  LockstepResult result_;

  LockstepResult finish(const TraceComparison& comparison) {
    result_.masked = comparison.masked();
    result_.optional_fields = comparison.optional_fields();
    result_.imprecision = comparison.imprecision();
    return std::move(result_);
  }
  std::string oracle_who() const { return fmt::format("oracle ({})", result_.oracle_engine); }
  std::string test_who() const { return fmt::format("engine under test ({})", result_.under_test_engine); }

  void fail_setup(const std::string& message) {
    result_.passed = false;
    result_.failed_at_setup = true;
    result_.failed_action_name = "init";
    result_.engine_failure = message;
  }

  // Runs `body`; an exception out of it fails the run at `index` (nullopt: setup) and returns false.
  template <class F>
  bool guard(const std::string& who, const std::string& phase, F&& body, std::optional<size_t> index,
             const std::string& action) {
    try {
      body();
      return true;
    } catch (...) {
      const std::string message = fmt::format("{} threw from {}: {}", who, phase, exception_text(std::current_exception()));
      if (result_.passed) {
        result_.passed = false;
        result_.failed_at_setup = !index.has_value();
        result_.failed_action = index;
        result_.failed_action_name = action;
      }
      if (result_.engine_failure.empty()) result_.engine_failure = message;
      else result_.stop_reason = message;
      return false;
    }
  }

  // Compares one pair of records; false when the run must stop.
  bool compare(TraceComparison& comparison, Record& expected, Record& actual, std::optional<size_t> index) {
    const bool free_running = options_.mode == RunMode::FreeRunning;
    ErrorStats stats;
    const std::string action = expected.action;
    std::vector<Difference> differences =
        index ? comparison.compare_action(*index, std::move(expected), std::move(actual),
                                          free_running ? &stats : nullptr)
              : comparison.compare_init(std::move(expected), std::move(actual), free_running ? &stats : nullptr);
    if (free_running) result_.growth.push_back(GrowthRow{index, action, stats});
    if (!differences.empty()) {
      const bool structural = has_structural_difference(differences);
      if (result_.passed) {
        result_.passed = false;
        result_.failed_at_setup = !index.has_value();
        result_.failed_action = index;
        result_.failed_action_name = action;
        result_.differences = differences;
      } else if (structural) {
        result_.stop_reason =
            fmt::format("structural difference at {}: {}: expected {}, actual {}",
                        index ? fmt::format("action {} ({})", *index, action) : std::string("setup"),
                        differences.front().path, differences.front().expected_text,
                        differences.front().actual_text);
      }
      if (!free_running || structural) return false;
      return true;
    }
    if (!comparison.ended_at().empty()) {
      result_.stop_reason = comparison.ended_why() + " at " + comparison.ended_at() +
                            ": the later records follow from it and are not compared";
      return false;
    }
    if (free_running || comparison.masked_structure()) return true;
    // Lockstep: structure (and numbers) agree, so re-synchronise the engine under test (SEMANTICS §9).
    const std::string phase = index ? fmt::format("synchronise() after action {} ({})", *index, action)
                                    : std::string("synchronise() after setup");
    if (!guard(test_who(), phase, [&] { under_test_.synchronise(comparison.expected_previous().state); }, index,
               action))
      return false;
    comparison.resynchronised();
    return true;
  }
};

}  // namespace

LockstepResult run_lockstep(const Program& program, Engine& oracle, Engine& under_test,
                            const LockstepOptions& options, const FieldMask& mask) {
  return Run(program, oracle, under_test, options, mask).run();
}

}  // namespace lockstep
