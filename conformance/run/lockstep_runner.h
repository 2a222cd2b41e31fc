// The lockstep runner: one program on the oracle and on the engine under test, compared action by action
// (SEMANTICS §9).
//
// Lockstep mode: after the setup and after every action the two records are compared (comparator.h); if
// they agree, the engine under test is re-synchronised to the oracle's state (Engine::synchronise), so
// rounding never compounds. The run stops at the first action with a difference and reports all the
// differences of that action.
// Free-running mode: no re-synchronisation; every action runs and the largest ULP error per quantity is
// recorded per action, so a report shows how the engines drift apart. A numeric difference beyond the
// tolerance fails the case (the first such action's differences are reported) but does not stop the run;
// a structural difference (definedness, identity, error kinds, shapes, ...) stops it. A number neither
// engine changed in an action is not judged again there (CompareContext::actual_previous): each action's
// row shows the error of what that action computed, in ULPs of its operands.
// An exception escaping either engine (out of observe(), synchronise(), ...) ends the run as a discrepancy
// with a message naming the engine and the phase; it is never a crash.
//
// Example:
//   auto oracle = make_torch_engine();
//   auto impl = make_impl_engine();
//   LockstepResult r = run_lockstep(program, *oracle, *impl, LockstepOptions{});
//   if (!r.passed) std::cout << r.failure_summary();
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "conformance/compare/comparator.h"
#include "conformance/compare/expectations.h"
#include "conformance/compare/trace_comparison.h"
#include "conformance/run/engine.h"
#include "conformance/program/program.h"
#include "conformance/compare/tolerance.h"

namespace lockstep {

enum class RunMode { Lockstep, FreeRunning };
const char* run_mode_name(RunMode m);                       // "lockstep", "free-running"
std::optional<RunMode> run_mode_from_name(const std::string& name);

struct LockstepOptions {
  RunMode mode = RunMode::Lockstep;
  Tolerance tolerance;
};

// One row of the free-running growth table: the largest ULP error (in ULPs of m) per quantity after an action.
struct GrowthRow {
  std::optional<size_t> action_index;  // nullopt: the setup record
  std::string action;                  // "init", "step", ...
  ErrorStats max_ulp_error;            // -1 where nothing of that quantity was compared
};

// A named case's check that the implementation's own trace does not hold (named_case.h check_case), with the claim
// and the SEMANTICS sections the case settles, so a report says which claim the implementation breaks.
struct ClaimFailure {
  std::string check;                   // the failed check, a sentence
  std::string claim;                   // the case's claim
  std::vector<std::string> semantics;  // "SEM-3.4", ...
};

struct LockstepResult {
  std::string oracle_engine;      // Engine::name()
  std::string under_test_engine;
  RunMode mode = RunMode::Lockstep;
  bool passed = true;
  // Where the first failure happened: at_setup, or actions[failed_action].
  bool failed_at_setup = false;
  std::optional<size_t> failed_action;
  std::string failed_action_name;        // "init" for the setup
  std::vector<Difference> differences;   // every difference of the failing action, the first first
  // Set when an engine threw out of the harness (observe, synchronise, setup) or the program was invalid:
  // e.g. "engine under test (impl) threw from synchronise() after action 3 (step): ...".
  std::string engine_failure;
  // A named case's claims its implementation's trace breaks (the trace compared may still match the oracle's).
  std::vector<ClaimFailure> claim_failures;
  // Free-running: why the run stopped after the first failure, if it did (a later structural difference
  // or an engine exception); empty otherwise.
  std::string stop_reason;
  // Set when the implementation declined the program (a driver's "unsupported"): a pass, reported as skipped.
  std::string skipped;
  // A driver's stderr while it ran the program (kept with failures, for the report).
  std::string driver_stderr;
  size_t actions_run = 0;                // actions performed on both engines
  std::vector<GrowthRow> growth;         // free-running only: one row per record compared
  std::vector<MaskedDifference> masked;  // differences the case's expectations accepted (expectations.h)
  OptionalFieldCounts optional_fields;   // optional trace fields compared / untested (optional_fields.h)
  Imprecision imprecision;               // values whose bound was at least their magnitude (SEMANTICS §9.6)

  // One line: "action 3 (step): w → exp_avg_sq[1,2]: expected 0.5, actual 0.50000006 (4 ulp of 0.5 (float32))".
  std::string failure_summary() const;
  // What kind of failure this is, without names, indices and numbers: "step: momentum_buffer",
  // "setup: error.kind none/duplicate_parameter", "backward: engine". Shrinking keeps it, so that a shrunk
  // program fails for the reason the original did (not for another one a simpler program happens to have).
  // Empty when passed.
  std::string failure_kind() const;
};

// `mask`: the case's expectations with fields (expectations.h); a masked difference does not stop the run. After
// a masked structural difference the engine under test is no longer re-synchronised (its structure may differ).
LockstepResult run_lockstep(const Program& program, Engine& oracle, Engine& under_test,
                            const LockstepOptions& options = {}, const FieldMask& mask = {});

}  // namespace lockstep
