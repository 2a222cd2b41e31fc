#include "conformance/run/replay.h"

#include <algorithm>
#include <set>

#include "conformance/program/features.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "conformance/compare/trace_comparison.h"
#include "conformance/run/interpreter.h"
#include "conformance/program/json_number.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/program_json.h"

namespace lockstep {

namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

json read_json_file(const std::string& path) {
  std::string text = read_text_file(path);
  try {
    return parse_json_text(text, 64);
  } catch (const JsonError& e) {
    throw InputError(path, e.pointer(), e.message());
  }
}

std::string nonempty_string(JsonObjectReader& r, const std::string& key) {
  std::string s = r.string(key);
  if (s.empty()) throw JsonError(r.pointer(key), "must not be empty");
  return s;
}

}  // namespace

std::vector<ToleranceOverride> tolerance_overrides_from_json(const json& doc, const std::string& file) {
  std::vector<ToleranceOverride> out;
  try {
    JsonObjectReader top(doc, "", "a tolerance-overrides file");
    const json& list = array_from_json(top.required("tolerance_overrides"), "/tolerance_overrides");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string p = json_pointer_append("/tolerance_overrides", i);
      JsonObjectReader r(list[i], p, "a tolerance override");
      ToleranceOverride o;
      o.id_pattern = nonempty_string(r, "id");
      o.reason = nonempty_string(r, "reason");
      const json& k = r.required("k");
      if (!k.is_object() || k.empty()) throw JsonError(r.pointer("k"), "expected an object of quantity: k");
      for (auto it = k.begin(); it != k.end(); ++it) {
        const std::string kp = json_pointer_append(r.pointer("k"), it.key());
        const std::optional<Quantity> q = quantity_from_name(it.key());
        if (!q) {
          std::vector<std::string> names;
          for (Quantity cand : all_quantities()) names.push_back(quantity_name(cand));
          throw JsonError(kp, fmt::format("unknown quantity '{}' (known: {})", it.key(), fmt::join(names, ", ")));
        }
        if (!it.value().is_number()) throw JsonError(kp, "expected a number");
        double v = it.value().get<double>();
        if (!(v > 0) || !std::isfinite(v) || v > 1e12)
          throw JsonError(kp, "k must be a finite number > 0 (ULPs)");
        o.k.emplace_back(*q, v);
      }
      r.finish(false);
      out.push_back(std::move(o));
    }
    top.finish(true);
  } catch (const JsonError& e) {
    throw InputError(file, e.pointer(), e.message());
  }
  return out;
}

std::vector<ToleranceOverride> read_tolerance_overrides(const std::string& path) {
  return tolerance_overrides_from_json(read_json_file(path), path);
}

Tolerance with_tolerance_overrides(Tolerance base, const std::vector<ToleranceOverride>& overrides,
                                   const std::string& id) {
  for (const ToleranceOverride& o : overrides)
    if (glob_match(o.id_pattern, id))
      for (const auto& [q, k] : o.k) base.k(q) = k;
  return base;
}

Tolerance ReplayConfig::tolerance_for(const std::string& id) const {
  return with_tolerance_overrides(tolerance, tolerance_overrides, id);
}

const char* replay_status_name(ReplayStatus s) {
  switch (s) {
    case ReplayStatus::Passed: return "passed";
    case ReplayStatus::Failed: return "failed";
    case ReplayStatus::Skipped: return "skipped";
    case ReplayStatus::ExpectedFailure: return "expected_failure";
    case ReplayStatus::UnexpectedPass: return "unexpected_pass";
  }
  return "?";
}

std::string ReplayCaseResult::summary() const {
  if (status == ReplayStatus::Skipped) return "skipped: the engine does not support '" + skipped_feature + "'";
  if (status == ReplayStatus::UnexpectedPass)
    return fmt::format("passed, but is listed as an expected failure ({}: {})", expected_category, expected_reason);
  if (status == ReplayStatus::Passed) return "passed";
  std::string s = failure;
  if (!differences.empty()) {
    const Difference& d = differences.front();
    std::string where = failed_at_setup ? std::string("setup (init)")
                                        : fmt::format("action {} ({})", failed_action.value_or(0), failed_action_name);
    s = where + ": " + difference_text(d);
    if (differences.size() > 1) s += fmt::format(" [+{} more]", differences.size() - 1);
  }
  // An expected failure says why it is expected (the entry's reason), not only what differs.
  if (status == ReplayStatus::ExpectedFailure && !expected_reason.empty())
    s += (s.empty() ? "" : " -- ") + std::string("expected") +
         (expected_category.empty() ? "" : " (" + expected_category + ")") + ": " + expected_reason;
  return s;
}

ReplayCaseResult compare_fixture_trace(const Fixture& fixture, const Trace& actual, const Tolerance& tolerance,
                                       const FieldMask& mask) {
  ReplayCaseResult result;
  result.id = fixture.id;
  result.file = fixture.file;
  result.tags = fixture.tags;
  const Program& program = fixture.program;
  const Trace& expected = fixture.expected;
  auto fail = [&](std::string category, std::string message) {
    result.status = ReplayStatus::Failed;
    result.failure_category = std::move(category);
    result.failure = std::move(message);
    return result;
  };
  try {
    // The same record-by-record comparison as a live run without re-synchronisation (trace_comparison.h):
    // every value judged where it is produced, with the error budget its inputs carry.
    TraceComparison comparison(program, tolerance, mask);
    struct KeepMasked {  // the masked differences and field counts go with the result: called before each return
      ReplayCaseResult& r;
      const TraceComparison& c;
      void operator()() const {
        r.masked = c.masked();
        r.optional_fields = c.optional_fields();
        r.imprecision = c.imprecision();
      }
    } keep_masked{result, comparison};
    ErrorStats stats;
    std::vector<Difference> d = comparison.compare_init(expected.init, actual.init, &stats);
    result.growth.push_back(GrowthRow{std::nullopt, "init", stats});
    if (!d.empty()) {
      result.failed_at_setup = true;
      result.failed_action_name = "init";
      result.differences = std::move(d);
      keep_masked();
      return fail("mismatch", "");
    }
    for (size_t i = 0; i < program.actions.size(); ++i) {
      if (i >= actual.records.size()) {
        keep_masked();
        return fail("trace_shape", fmt::format("the trace has {} records for a program of {} actions",
                                               actual.records.size(), program.actions.size()));
      }
      stats = ErrorStats{};
      d = comparison.compare_action(i, expected.records[i], actual.records[i], &stats);
      result.growth.push_back(GrowthRow{i, action_name(program.actions[i].kind), stats});
      if (!d.empty()) {
        result.failed_action = i;
        result.failed_action_name = action_name(program.actions[i].kind);
        result.differences = std::move(d);
        keep_masked();
        return fail("mismatch", "");
      }
      if (!comparison.ended_at().empty()) break;  // SEMANTICS §9.2: the later records follow from it
    }
    keep_masked();
    if (actual.records.size() > program.actions.size())
      return fail("trace_shape", fmt::format("the trace has {} records for a program of {} actions",
                                             actual.records.size(), program.actions.size()));
  } catch (const std::exception& e) {
    return fail("comparator", std::string("comparing the traces threw: ") + e.what());
  }
  result.status = ReplayStatus::Passed;
  return result;
}

void apply_expectations(ReplayCaseResult& result, const ReplayConfig& config, const Program* program,
                        const std::set<std::string>* features) {
  std::set<std::string> computed;  // for rules (entries with "features"), which a fixture matches like a live case
  if (program && !features) features = &(computed = program_features(*program));
  const Expectation* e =
      config.expectations.whole_case(result.id, program ? features : nullptr, program, result.failed_action);
  const bool masked_by_expectations = std::any_of(result.masked.begin(), result.masked.end(),
                                                  [](const MaskedDifference& m) { return !m.by_profile; });
  if (e && (result.status == ReplayStatus::Failed || (result.status == ReplayStatus::Passed && masked_by_expectations))) {
    // Passing only by masks is still a deviation: the entry that says the case fails holds.
    result.status = ReplayStatus::ExpectedFailure;
    ++e->uses;
  } else if (e && result.status == ReplayStatus::Passed && e->features.empty()) {  // a rule's cases may pass
    result.status = ReplayStatus::UnexpectedPass;
  } else if (!e && result.status == ReplayStatus::Passed && !result.masked.empty() &&
             std::any_of(result.masked.begin(), result.masked.end(), [](const MaskedDifference& m) { return !m.by_profile; })) {
    // Differences an API profile's rule accepted leave a pass a pass (the report lists the rule's uses).
    result.status = ReplayStatus::ExpectedFailure;
    result.expected_reason = fmt::format("{} masked difference{}: {}", result.masked.size(),
                                         result.masked.size() == 1 ? "" : "s", result.masked.front().reason);
    result.expected_category = "masked";
    return;
  } else {
    return;
  }
  if (result.status == ReplayStatus::Passed) return;
  result.expected_reason = e->reason;
  result.expected_category = e->category.empty() ? "expected" : e->category;
}

ReplayCaseResult replay_in_process(const Fixture& fixture,
                                   const std::function<std::unique_ptr<Engine>()>& make_engine,
                                   const ReplayConfig& config, const std::set<std::string>* features) {
  const auto t0 = Clock::now();
  ReplayCaseResult result;
  std::set<std::string> computed;
  if (!features) features = &(computed = program_features(fixture.program));
  try {
    std::unique_ptr<Engine> engine = make_engine();
    Trace actual = run_program(fixture.program, *engine);
    result = compare_fixture_trace(fixture, actual, config.tolerance_for(fixture.id),
                                   config.expectations.mask_for(fixture.id, features, &fixture.program));
  } catch (const std::exception& e) {
    result.id = fixture.id;
    result.file = fixture.file;
    result.tags = fixture.tags;
    result.status = ReplayStatus::Failed;
    result.failure_category = "engine_exception";
    result.failure = std::string("the engine threw out of the interpreter: ") + e.what();
  }
  result.elapsed = Clock::now() - t0;
  apply_expectations(result, config, &fixture.program, features);
  return result;
}

ReplayCaseResult replay_on_driver(const Fixture& fixture, ExternalDriver& driver, const ReplayConfig& config,
                                  const std::set<std::string>* features) {
  DriverOutcome out = run_on_driver(driver, fixture.id, fixture.program_json);
  ReplayCaseResult result;
  std::set<std::string> computed;
  if (!features) features = &(computed = program_features(fixture.program));
  if (out.kind == DriverOutcome::Kind::Trace) {
    result = compare_fixture_trace(fixture, out.trace, config.tolerance_for(fixture.id),
                                   config.expectations.mask_for(fixture.id, features, &fixture.program));
  } else {
    result.id = fixture.id;
    result.file = fixture.file;
    result.tags = fixture.tags;
    if (out.kind == DriverOutcome::Kind::Unsupported) {
      result.status = ReplayStatus::Skipped;
      result.skipped_feature = out.feature;
    } else {
      result.status = ReplayStatus::Failed;
      result.failure_category = out.failure_category;
      result.failure = out.failure;
    }
  }
  result.stderr_excerpt = std::move(out.stderr_excerpt);
  result.elapsed = out.elapsed;
  apply_expectations(result, config, &fixture.program, features);
  return result;
}

ReplaySummary summarise(const std::vector<ReplayCaseResult>& results, const ReplayConfig& config) {
  ReplaySummary s;
  for (const ReplayCaseResult& r : results) {
    switch (r.status) {
      case ReplayStatus::Passed: ++s.passed; break;
      case ReplayStatus::Failed: ++s.failed; break;
      case ReplayStatus::Skipped: ++s.skipped; break;
      case ReplayStatus::ExpectedFailure: ++s.expected_failures; break;
      case ReplayStatus::UnexpectedPass: ++s.unexpected_passes; break;
    }
  }
  std::vector<std::string> ids;
  for (const ReplayCaseResult& r : results) ids.push_back(r.id);
  s.stale_expectations = config.expectations.stale(ids);
  return s;
}

}  // namespace lockstep
