// Replaying golden fixtures (fixture.h) on an engine: in-process, or through an external driver
// (driver_process.h), with an optional expected-failures file and tolerance-overrides file.
//
// Replay has no oracle at run time, so there is no re-synchronisation: the engine's trace is compared with the
// fixture's expected trace record by record (comparator.h, compare_records, with the previous expected record
// as context for the ULP scale and the loss's operand scales for forward/backward records). A case fails at
// its first record with a difference; all the differences of that record are reported.
//
// Expected-failures file (validated strictly; InputError names the file and the JSON pointer):
//   {"expected_failures": [
//     {"id": "tut001-set-to-none-*", "reason": "why it fails", "category": "api_difference"}]}
//   id: a glob ("*", "?") on fixture ids; category: one of expected_failure_categories(); optional
//   "field": a glob on the differences' field paths (comparator.h, "w → grad*"): the failure is expected only
//   when every difference of the failing record matches it (a driver failure has no field paths, so only an
//   entry without "field" expects it); "comment" is allowed and ignored.
//   A matching case that fails is reported as an expected failure. A case that passes although an entry
//   without "field" names it is an unexpected pass (a failure: the file must say what is true); an entry with
//   a field describes a kind of difference, which a case may well not have. An entry that matches no case is
//   reported as stale.
// Tolerance-overrides file:
//   {"tolerance_overrides": [
//     {"id": "*", "k": {"grad": 8, "exp_avg_sq": 16}, "reason": "summation order differs"}]}
//   k: ULP multipliers per quantity (tolerance.h names), each > 0; entries apply in order, later ones win.
//
// Example:
//   ReplayConfig config = ReplayConfig{};
//   config.expected_failures = read_expected_failures("fixtures/expectations/pytorch-python.json");
//   ReplayCaseResult r = replay_in_process(fixture, impl_engine_factory, config);
//   if (r.status == ReplayStatus::Failed) std::cout << r.summary();
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "conformance/compare/comparator.h"
#include "conformance/compare/expectations.h"
#include "conformance/compare/trace_comparison.h"
#include "conformance/run/engine.h"
#include "conformance/run/driver_protocol.h"
#include "conformance/run/fixture.h"
#include "conformance/run/lockstep_runner.h"
#include "conformance/compare/tolerance.h"

namespace lockstep {

struct ToleranceOverride {
  std::string id_pattern;
  std::vector<std::pair<Quantity, double>> k;
  std::string reason;
};

// Strict readers; throw InputError(file, pointer, message).
std::vector<ToleranceOverride> read_tolerance_overrides(const std::string& path);
std::vector<ToleranceOverride> tolerance_overrides_from_json(const nlohmann::ordered_json& doc,
                                                             const std::string& file);

// `base` with the k of every override whose id pattern (a glob) matches `id`, in file order (a later entry wins).
Tolerance with_tolerance_overrides(Tolerance base, const std::vector<ToleranceOverride>& overrides,
                                   const std::string& id);

struct ReplayConfig {
  Tolerance tolerance;                         // before overrides
  Expectations expectations;                   // expectations.h: masks and expected failures
  std::vector<ToleranceOverride> tolerance_overrides;

  Tolerance tolerance_for(const std::string& id) const;
};

enum class ReplayStatus { Passed, Failed, Skipped, ExpectedFailure, UnexpectedPass };
const char* replay_status_name(ReplayStatus s);  // "passed", "failed", "skipped", "expected_failure", ...

struct ReplayCaseResult {
  std::string id, file;
  std::vector<std::string> tags;
  ReplayStatus status = ReplayStatus::Passed;
  // Failed / ExpectedFailure:
  std::string failure_category;          // "mismatch", or a driver failure ("timeout", "garbage", ...)
  std::string failure;                   // a readable sentence
  bool failed_at_setup = false;
  std::optional<size_t> failed_action;   // the first record with a difference
  std::string failed_action_name;
  std::vector<Difference> differences;   // every difference of that record
  std::vector<MaskedDifference> masked;  // differences an expectation accepted (the comparison went on)
  OptionalFieldCounts optional_fields;   // optional trace fields compared / untested (optional_fields.h)
  Imprecision imprecision;               // values whose bound was at least their magnitude (SEMANTICS §9.6)
  // Skipped: the feature the driver does not support.
  std::string skipped_feature;
  // Matched expected-failure entry (ExpectedFailure / UnexpectedPass).
  std::string expected_reason, expected_category;
  std::string stderr_excerpt;            // external drivers
  // The largest ULP error per quantity of every record compared, up to and including the first failing one
  // (the conformance matrix plots it, conformance_matrix.h).
  std::vector<GrowthRow> growth;
  std::vector<std::string> areas;        // what the fixture's program exercises (feature_areas.h)
  std::chrono::nanoseconds elapsed{0};

  // "action 3 (step): w → value[1]: expected 0.5, actual 0.25 (4 ulp of 0.5 (float32))" or the failure.
  std::string summary() const;
};

// Compares `actual` with the fixture's expected trace (no re-synchronisation); fills status Passed/Failed,
// failed_action, differences. Never throws.
// `mask`: the fixture's masks (expectations.h).
ReplayCaseResult compare_fixture_trace(const Fixture& fixture, const Trace& actual, const Tolerance& tolerance,
                                       const FieldMask& mask = {});

// Runs the fixture's program on a fresh engine from `make_engine` and compares; applies the config
// (tolerance overrides, expected failures). An exception out of the engine is a failure, not a crash.
// `features`: program_features(fixture.program) where the caller has them (a replay plan computes them once);
// null: computed here.
ReplayCaseResult replay_in_process(const Fixture& fixture, const std::function<std::unique_ptr<Engine>()>& make_engine,
                                   const ReplayConfig& config, const std::set<std::string>* features = nullptr);

// Sends the fixture's program to the driver and compares its trace; "unsupported" gives Skipped.
ReplayCaseResult replay_on_driver(const Fixture& fixture, ExternalDriver& driver, const ReplayConfig& config,
                                  const std::set<std::string>* features = nullptr);

// Applies the whole-case expectations to a result (Failed -> ExpectedFailure, Passed -> UnexpectedPass); a pass
// with masked differences becomes ExpectedFailure (known) with the first mask's reason.
// `program`: the fixture's, for rules (entries with "features", and "from"); without it only ids match.
void apply_expectations(ReplayCaseResult& result, const ReplayConfig& config, const Program* program = nullptr,
                        const std::set<std::string>* features = nullptr);

struct ReplaySummary {
  int passed = 0, failed = 0, skipped = 0, expected_failures = 0, unexpected_passes = 0;
  std::vector<std::string> stale_expectations;  // expectation id patterns that matched no fixture
  bool ok() const { return failed == 0 && unexpected_passes == 0; }
};
ReplaySummary summarise(const std::vector<ReplayCaseResult>& results, const ReplayConfig& config);

}  // namespace lockstep
