// `lockstep replay`: an engine (in-process, or a driver command) against the golden fixtures, offline.
#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "conformance/report/atomic_file.h"
#include "conformance/run/driver_protocol.h"
#include "conformance/run/fixture.h"
#include "conformance/generate/generators.h"
#include "conformance/run/interpreter.h"
#include "conformance/run/named_case.h"
#include "conformance/program/program_json.h"
#include "conformance/run/replay.h"
#include "conformance/run/capabilities.h"
#include "conformance/run/zero_grad_default.h"
#include "impl/engine_adapter.h"
#include "conformance/program/features.h"
#include "conformance/program/json_reader.h"
#include "conformance/report/report.h"
#include "conformance/report/report_reader.h"
#include "tools/commands.h"
#include "tools/commands_fixtures.h"
#include "tools/engines.h"
#include "conformance/run/replay_plan.h"
#include "conformance/run/run_scope.h"
#include "tools/report_files.h"
#include "tools/workers.h"
#include <CLI/CLI.hpp>
#include "tools/cli_options.h"

namespace lockstep::tools {

namespace {

using Clock = std::chrono::steady_clock;

// Without --jobs, a worker per this many fixtures at most (and per core).
constexpr int64_t kFixturesPerDefaultJob = 200;

// A worker's result for the parent (--jobs): every field of ReplayCaseResult (not a user-facing format).
nlohmann::ordered_json replay_result_to_json(const ReplayCaseResult& r) {
  nlohmann::ordered_json diffs = nlohmann::ordered_json::array(), masked = nlohmann::ordered_json::array(),
                         growth = nlohmann::ordered_json::array(), fields = nlohmann::ordered_json::object();
  for (const Difference& d : r.differences) diffs.push_back(difference_to_json(d));
  for (const MaskedDifference& m : r.masked)
    masked.push_back({{"difference", difference_to_json(m.difference)},
                      {"action_index", m.action_index ? nlohmann::ordered_json(*m.action_index) : nlohmann::ordered_json()},
                      {"action", m.action}, {"reason", m.reason}, {"by_profile", m.by_profile}});
  for (const GrowthRow& g : r.growth) growth.push_back(growth_to_json(g));
  for (const auto& [name, n] : r.optional_fields) fields[name] = {n.compared, n.not_reported, n.not_expected};
  return {{"id", r.id}, {"file", r.file}, {"tags", r.tags}, {"status", static_cast<int>(r.status)},
          {"failure_category", r.failure_category}, {"failure", r.failure}, {"failed_at_setup", r.failed_at_setup},
          {"failed_action", r.failed_action ? nlohmann::ordered_json(*r.failed_action) : nlohmann::ordered_json()},
          {"failed_action_name", r.failed_action_name}, {"differences", diffs}, {"masked", masked},
          {"optional_fields", fields}, {"skipped_feature", r.skipped_feature}, {"expected_reason", r.expected_reason},
          {"expected_category", r.expected_category}, {"stderr_excerpt", r.stderr_excerpt}, {"growth", growth},
          {"areas", r.areas}, {"elapsed_ns", static_cast<int64_t>(r.elapsed.count())},
          {"imprecision", {{"values", r.imprecision.values}, {"first", r.imprecision.first}}}};
}

ReplayCaseResult replay_result_from_json(const nlohmann::ordered_json& j) {
  ReplayCaseResult r;
  r.id = j.at("id").get<std::string>();
  r.file = j.at("file").get<std::string>();
  r.tags = j.at("tags").get<std::vector<std::string>>();
  r.status = static_cast<ReplayStatus>(j.at("status").get<int>());
  r.failure_category = j.at("failure_category").get<std::string>();
  r.failure = j.at("failure").get<std::string>();
  r.failed_at_setup = j.at("failed_at_setup").get<bool>();
  if (!j.at("failed_action").is_null()) r.failed_action = j.at("failed_action").get<size_t>();
  r.failed_action_name = j.at("failed_action_name").get<std::string>();
  for (const nlohmann::ordered_json& d : j.at("differences")) r.differences.push_back(difference_from_json(d, ""));
  for (const nlohmann::ordered_json& m : j.at("masked")) {
    MaskedDifference md;
    md.difference = difference_from_json(m.at("difference"), "");
    if (!m.at("action_index").is_null()) md.action_index = m.at("action_index").get<size_t>();
    md.action = m.at("action").get<std::string>();
    md.reason = m.at("reason").get<std::string>();
    md.by_profile = m.at("by_profile").get<bool>();
    r.masked.push_back(std::move(md));
  }
  for (auto it = j.at("optional_fields").begin(); it != j.at("optional_fields").end(); ++it)
    r.optional_fields[it.key()] = {it.value().at(0).get<int64_t>(), it.value().at(1).get<int64_t>(),
                                   it.value().at(2).get<int64_t>()};
  r.skipped_feature = j.at("skipped_feature").get<std::string>();
  r.expected_reason = j.at("expected_reason").get<std::string>();
  r.expected_category = j.at("expected_category").get<std::string>();
  r.stderr_excerpt = j.at("stderr_excerpt").get<std::string>();
  for (const nlohmann::ordered_json& g : j.at("growth")) r.growth.push_back(growth_row_from_json(g, ""));
  r.areas = j.at("areas").get<std::vector<std::string>>();
  r.elapsed = std::chrono::nanoseconds(j.at("elapsed_ns").get<int64_t>());
  // SEMANTICS §9.6: an imprecise case is never a pass, in a worker or in the parent.
  r.imprecision.values = j.at("imprecision").at("values").get<int64_t>();
  r.imprecision.first = j.at("imprecision").at("first").get<std::string>();
  return r;
}

bool is_builtin_engine(const std::string& name) {
  for (const std::string& n : engine_names())
    if (n == name) return true;
  return false;
}

// The reports of report.h, from replay results. A skipped case (the driver answered "unsupported") and an
// expected failure are shown as "known" with their reason; an unexpected pass is a failure.
RunReport to_run_report(const std::vector<ReplayCaseResult>& results, const std::string& oracle,
                        const std::string& under_test, uint64_t seed,
                        const std::function<std::string(const std::string&)>& reproduce) {
  RunReport report;
  report.oracle_engine = oracle;
  report.under_test_engine = under_test;
  report.seed = seed;
  report.count = static_cast<int64_t>(results.size());
  report.mode = RunMode::FreeRunning;  // no re-synchronisation in replay
  for (const ReplayCaseResult& r : results) {
    CaseReport c;
    c.id = r.id;
    c.duration_seconds = std::chrono::duration<double>(r.elapsed).count();
    c.result.oracle_engine = oracle;
    c.result.under_test_engine = under_test;
    c.result.mode = RunMode::FreeRunning;
    c.result.failed_at_setup = r.failed_at_setup;
    c.result.failed_action = r.failed_action;
    c.result.failed_action_name = r.failed_action_name;
    c.result.differences = r.differences;
    c.result.masked = r.masked;
    c.areas = r.areas;
    // The error per record of a case that did not pass (the report's drift table, the matrix's plot).
    if (r.status != ReplayStatus::Passed && r.status != ReplayStatus::Skipped) c.result.growth = r.growth;
    // A case that only masked differences (or an expected failure that passed by masks) has no failure to report.
    c.result.passed = r.status == ReplayStatus::Passed ||
                      (r.status == ReplayStatus::ExpectedFailure && r.differences.empty() && r.failure.empty());
    if (r.differences.empty() && !r.failure.empty())
      c.result.engine_failure = r.failure + (r.stderr_excerpt.empty() ? "" : "\nstderr:\n" + r.stderr_excerpt);
    switch (r.status) {
      case ReplayStatus::Passed:
        c.status = CaseStatus::Passed;
        if (r.imprecision.values > 0) {  // SEMANTICS §9.6: not passed, counted (report.h)
          c.status = CaseStatus::Known;
          c.known_reason = fmt::format("{} (not passed): {} tensor{} whose every value has a bound at least its "
                                       "magnitude (SEMANTICS §9.6; first: {})", kImpreciseReason, r.imprecision.values,
                                       r.imprecision.values == 1 ? "" : "s", r.imprecision.first);
        }
        break;
      case ReplayStatus::Failed: c.status = CaseStatus::Failed; break;
      case ReplayStatus::ExpectedFailure:
        c.status = CaseStatus::Known;
        c.known_reason = fmt::format("expected failure ({}): {}", r.expected_category, r.expected_reason);
        break;
      case ReplayStatus::Skipped:
        c.status = CaseStatus::Known;
        c.result.passed = true;
        c.result.skipped = r.skipped_feature;  // as a live run reports it (the matrix counts it unsupported)
        c.known_reason = "skipped: the engine answered unsupported '" + r.skipped_feature + "'";
        break;
      case ReplayStatus::UnexpectedPass:
        c.status = CaseStatus::Failed;
        c.result.passed = false;
        c.result.engine_failure = r.summary();
        break;
    }
    if (c.status != CaseStatus::Passed) c.reproduce_command = reproduce(r.id);
    report.cases.push_back(std::move(c));
  }
  return report;
}

void print_result(const ReplayCaseResult& r, bool verbose) {
  const char* label = nullptr;
  switch (r.status) {
    case ReplayStatus::Passed: label = verbose ? "pass " : nullptr; break;
    case ReplayStatus::Failed: label = "FAIL "; break;
    case ReplayStatus::Skipped: label = verbose ? "skip " : nullptr; break;  // counted in one line at the end
    case ReplayStatus::ExpectedFailure: label = "xfail"; break;
    case ReplayStatus::UnexpectedPass: label = "XPASS"; break;
  }
  if (!label) return;
  fmt::print("  {}  {}", label, r.id);
  if (r.status != ReplayStatus::Passed) {
    fmt::print(": {}", printable_utf8(r.summary()));
    if (!r.failure_category.empty() && r.failure_category != "mismatch") fmt::print(" [{}]", r.failure_category);
  }
  fmt::print("\n");
  if (r.status == ReplayStatus::Failed && !r.stderr_excerpt.empty()) {
    std::string s = r.stderr_excerpt.substr(0, 1000);
    fmt::print("        driver stderr: {}\n", printable_utf8(s));
  }
}

ReplayConfig load_config(const std::string& expected_failures_file, const std::string& tolerance_file) {
  ReplayConfig config;
  if (!expected_failures_file.empty()) config.expectations = load_expectations(expected_failures_file);
  if (!tolerance_file.empty()) config.tolerance_overrides = read_tolerance_overrides(tolerance_file);
  return config;
}

int finish(const std::vector<ReplayCaseResult>& results, const ReplayConfig& config, Clock::time_point t0,
           const std::string& what) {
  ReplaySummary s = summarise(results, config);
  for (const std::string& p : s.stale_expectations)
    fmt::print("  note: expected-failure entry '{}' matches no case\n", p);
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  size_t imprecise = 0;  // SEMANTICS §9.6: counted with the passes by ReplaySummary, reported as known
  for (const ReplayCaseResult& r : results) imprecise += r.status == ReplayStatus::Passed && r.imprecision.values > 0;
  fmt::print("{}: {} passed, {} failed, {} skipped, {} expected failures, {} unexpected passes{} ({:.2f} s)\n", what,
             s.passed - imprecise, s.failed, s.skipped, s.expected_failures, s.unexpected_passes,
             imprecise ? fmt::format(", {} imprecise (not passed, SEMANTICS §9.6)", imprecise) : "", secs);
  return s.ok() ? kExitOk : kExitDiscrepancies;
}

// The driver cannot start (driver_process.h, PROTOCOL.md 2a): the run ends once, here, with exit status 2, its
// message (the command, how it ended, its stderr) and no report, instead of failing every case.
int stop_on_driver_startup_failure(const char* command, const ExternalDriver& driver) {
  std::cerr << command << ": " << driver.startup_failure() << "\n";
  return kExitInputError;
}

}  // namespace

int command_replay(const ReplayArgs& args) {
  const auto t0 = Clock::now();
  std::vector<Fixture> fixtures;
  ReplayConfig config;
  try {
    fixtures = load_fixture_index(args.fixtures_dir.empty() ? default_fixtures_dir() : args.fixtures_dir);
    config = load_config(args.expected_failures_file, args.tolerance_file);
  } catch (const InputError& e) {
    std::cerr << "lockstep replay: " << e.what() << "\n";
    return kExitInputError;
  }
  if (args.timeout_ms <= 0) {
    std::cerr << "lockstep replay: --timeout-ms must be > 0\n";
    return kExitInputError;
  }

  std::string engine_name = args.engine;
  const bool builtin = is_builtin_engine(args.engine);
  std::unique_ptr<ExternalDriver> driver;
  Capabilities caps;
  if (!builtin) {
    DriverOptions options;
    options.timeout = std::chrono::milliseconds(args.timeout_ms);
    driver = std::make_unique<ExternalDriver>(args.engine, options);
    // The handshake first: what the driver supports decides which fixtures it is given (capabilities.h).
    if (!driver->ensure_started()) return stop_on_driver_startup_failure("lockstep replay", *driver);
    try {
      caps = driver_capabilities(driver->hello());
    } catch (const JsonError& e) {
      std::cerr << "lockstep replay: the driver '" << args.engine << "' answered the hello with capabilities "
                << "lockstep cannot read: " << e.pointer() << ": " << e.message() << "\n";
      return kExitInputError;
    }
  } else {
    engine_name = make_engine(args.engine)->name();
    caps.name = engine_name;
  }
  // impl replays each fixture as the version that recorded it (ImplVersion, SEM-12.6): the oracle of a replay.
  const bool follows_each_recorder = args.engine == "impl";
  auto make_replay_engine = [&](const std::string& recorded_by) -> std::unique_ptr<Engine> {
    if (follows_each_recorder) return make_impl_engine_following(impl_version_of(recorded_by));
    return make_engine(args.engine);
  };
  // The corpus' recorder: that of its fixtures for every version (those with "when" are another generation's extra
  // recordings, Fixture::when_pytorch).
  std::string recorder = fixtures.empty() ? "" : fixtures.front().expected.engine;
  for (const Fixture& f : fixtures)
    if (f.when_pytorch.empty()) {
      recorder = f.expected.engine;
      break;
    }
  // The version whose recordings apply where versions differ, and whose expectations entries apply: a driver's
  // declared version, else the corpus' recorder; the oracle's own; impl follows every recording's.
  const std::string replay_version = args.engine == "oracle" ? make_engine("oracle")->name()
                                     : !caps.pytorch_version.empty() ? caps.pytorch_version
                                                                     : recorder;
  // The recording oracle's zero_grad() default (SEM-12.1), from its version; when the implementation's differs,
  // the programs it gets spell zero_grad() out as the recording oracle's. A fixture's own recorder decides for it.
  const bool recorder_none = recorder_zero_grad_none(recorder);
  const bool mine = builtin ? make_replay_engine(recorder)->zero_grad_sets_to_none_by_default()
                            : resolved_zero_grad_default_none(caps, recorder_none);
  config.expectations.keep_for_version(replay_version);  // entries for other versions ("when", expectations.h)
  RunScope scope;
  try {
    scope = make_run_scope(caps, mine == recorder_none ? "" : zero_grad_default_replay_rule_text(mine, recorder_none),
                           args.features, args.exclude_features, args.profile, config.expectations);
  } catch (const std::exception& e) {
    std::cerr << "lockstep replay: " << e.what() << "\n";
    return kExitInputError;
  }
  // LibTorch's C++ API as the engine under test has no maximize (SEMANTICS 20.2): corpus/python-oracle's are left out.
  if (args.engine == "oracle") exclude_what_the_oracle_lacks(scope, nullptr, "", config.expectations);
  for (const std::string& w : scope.coverage.warnings) std::cerr << "lockstep replay: warning: " << w << "\n";
  // 1. Which fixtures run: those selected and in scope (the others recorded as left out, in order).
  const ReplayPlan plan = plan_replay(fixtures, {split_list(args.only), split_list(args.tags), split_list(args.exclude_tags)},
                                      scope, replay_version, follows_each_recorder, mine);
  if (args.verbose)
    for (const auto& [id, why] : plan.left_out) fmt::print("  left out {}: {}\n", id, why);
  const std::vector<PlannedFixture>& planned = plan.planned;
  if (plan.matched == 0) {
    std::cerr << "lockstep replay: no fixture matches --only/--tags/--exclude-tags\n";
    return kExitInputError;
  }
  if (planned.empty()) {
    std::cerr << "lockstep replay: every selected fixture is out of scope (the driver's capabilities, "
                 "--features/--exclude-features, its profile); see --verbose\n";
    return kExitInputError;
  }

  // 2. Replay them, here or in workers (workers.h; fixture i in worker i % jobs, each with its own engine or
  // driver; the expectations' use counts come back with the results).
  auto replay_one = [&](const PlannedFixture& p, ExternalDriver* on) {
    return replay_planned(p, on, make_replay_engine, config);
  };
  std::vector<ReplayCaseResult> results(planned.size());
  int64_t driver_starts = 0;
  const int64_t jobs = args.jobs > 0 ? std::min<int64_t>(args.jobs, static_cast<int64_t>(planned.size()))
                                     : std::max<int64_t>(1, std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()),
                                                                               static_cast<int64_t>(planned.size()) / kFixturesPerDefaultJob));
  if (jobs == 1) {
    pin_oracle_threads();
    for (size_t i = 0; i < planned.size(); ++i) {
      try {
        results[i] = replay_one(planned[i], driver.get());
      } catch (const InputError& e) {  // a fixture file that changed since it was planned
        std::cerr << "lockstep replay: " << e.what() << "\n";
        return kExitInputError;
      }
      if (driver && driver->startup_failed()) return stop_on_driver_startup_failure("lockstep replay", *driver);
    }
    if (driver) driver_starts = driver->starts();
  } else {
    driver.reset();  // the hello's driver: each worker starts its own
    try {
      WorkerDir dir("lockstep-replay");
      const std::vector<WorkerEnd> ends = run_workers(static_cast<int>(jobs), dir.path(), [&](int w, const std::string& own) {
        pin_oracle_threads();
        std::unique_ptr<ExternalDriver> mine_driver;
        if (!builtin) {
          DriverOptions options;
          options.timeout = std::chrono::milliseconds(args.timeout_ms);
          mine_driver = std::make_unique<ExternalDriver>(args.engine, options);
          if (!mine_driver->ensure_started()) return stop_on_driver_startup_failure("lockstep replay", *mine_driver);
        }
        nlohmann::ordered_json done = nlohmann::ordered_json::array();
        for (size_t i = static_cast<size_t>(w); i < planned.size(); i += static_cast<size_t>(jobs)) {
          done.push_back(replay_result_to_json(replay_one(planned[i], mine_driver.get())));
          if (mine_driver && mine_driver->startup_failed())
            return stop_on_driver_startup_failure("lockstep replay", *mine_driver);
        }
        nlohmann::ordered_json uses = nlohmann::ordered_json::array();
        for (const Expectation& e : config.expectations.entries) uses.push_back(e.uses);
        nlohmann::ordered_json out{{"results", std::move(done)}, {"uses", std::move(uses)},
                                   {"starts", mine_driver ? mine_driver->starts() : 0}};
        make_strings_valid_utf8(out);  // as every writer sanitises them: the same console and reports
        write_file_atomically(own + "/results.json", out.dump());
        return kExitOk;
      });
      if (report_workers(ends, "lockstep replay")) return kExitInputError;
      for (int64_t w = 0; w < jobs; ++w) {
        const nlohmann::ordered_json got =
            nlohmann::ordered_json::parse(read_text_file(dir.path() + "/" + std::to_string(w) + "/results.json"));
        const nlohmann::ordered_json& list = got.at("results");
        for (size_t k = 0; k < list.size(); ++k)
          results[static_cast<size_t>(w) + k * static_cast<size_t>(jobs)] = replay_result_from_json(list[k]);
        const nlohmann::ordered_json& uses = got.at("uses");
        for (size_t e = 0; e < config.expectations.entries.size(); ++e)
          config.expectations.entries[e].uses += uses.at(e).get<int64_t>();
        driver_starts += got.at("starts").get<int64_t>();
      }
    } catch (const std::exception& e) {
      std::cerr << "lockstep replay: --jobs " << jobs << ": " << e.what() << "\n";
      return kExitInputError;
    }
  }

  // 3. In fixture order: coverage, the console, the reports.
  for (size_t i = 0; i < planned.size(); ++i) {
    const Fixture& original = *planned[i].original;
    const Fixture& f = planned[i].sent;
    const ReplayCaseResult& r = results[i];
    LockstepResult counted;
    if (r.status == ReplayStatus::Skipped) counted.skipped = r.skipped_feature;
    counted.optional_fields = r.optional_fields;
    // Counted as what was sent: a spelled-out zero_grad() exercised set_to_none=false, not the default.
    count_case(scope, f.program, planned[i].features, counted);
    if (uses_zero_grad_default(original.program) && planned[i].default_differs)
      for (AppliedRule& rule : scope.coverage.rules)
        if (rule.id == kZeroGradDefaultRule) ++rule.uses;
    print_result(r, args.verbose);
  }
  std::string oracle = recorder;
  std::string prefix = fmt::format("lockstep replay --fixtures {} --engine {}",
                                   shell_quote(path_for_reproduce(args.fixtures_dir.empty() ? default_fixtures_dir() : args.fixtures_dir)),
                                   shell_quote(args.engine));
  if (!args.expected_failures_file.empty()) prefix += " --expectations " + shell_quote(path_for_reproduce(args.expected_failures_file));
  if (!args.tolerance_file.empty()) prefix += " --tolerance " + shell_quote(path_for_reproduce(args.tolerance_file));
  prefix += scope_reproduce_flags(args.features, args.exclude_features, args.profile);
  RunReport report = to_run_report(results, "fixtures of " + oracle, engine_name, 0,
                                   [&](const std::string& id) { return prefix + " --only " + shell_quote(id) + reproduce_report_dir_flag(id); });
  finish_coverage(scope, report, config.expectations);
  if (const std::string line = untested_line(report); !line.empty())
    fmt::print("{}{}\n", line, args.verbose ? "" : " (--verbose lists them here)");
  size_t skipped = 0;
  for (const ReplayCaseResult& r : results) skipped += r.status == ReplayStatus::Skipped;
  if (const std::string warning = mostly_skipped_warning(skipped, results.size(), "fixtures"); !warning.empty()) {
    fmt::print("warning: {}\n", warning);
    if (report.coverage) report.coverage->warnings.push_back(warning);
  }
  if (plan.other_versions > 0)
    fmt::print("{} fixture{} not replayed: recorded for another PyTorch version than {} (SEMANTICS 12.5)\n",
               plan.other_versions, plan.other_versions == 1 ? "" : "s", replay_version);
  try {
    write_reports(args.report_dir, report, "replay-report");
  } catch (const std::exception& e) {
    std::cerr << "lockstep replay: cannot write the reports: " << e.what() << "\n";
    return kExitInputError;
  }
  if (driver_starts > jobs) fmt::print("the driver was started {} times\n", driver_starts);
  return finish(results, config, t0, fmt::format("replay of {} fixtures on {}", results.size(), engine_name));
}

CLI::App* add_replay_command(CLI::App& app, ReplayArgs& args) {
  CLI::App* replay = app.add_subcommand(
      "replay", "Check an engine against the golden fixtures offline (no LibTorch at run time): impl, oracle, "
                "or a driver command speaking fixtures/PROTOCOL.md");
  replay->add_option("--fixtures", args.fixtures_dir, "Fixture directory (default: the shipped corpus)");
  add_implementation_options(replay, ImplementationOptions{&args.engine, &args.timeout_ms, nullptr, nullptr},
                             "impl, oracle, a registered engine, or a driver command line (run by /bin/sh -c)",
                             "Per-program timeout of a driver command");
  replay->add_option("--expectations,--expected-failures", args.expected_failures_file,
                     "Expected-failures file (id pattern, reason, category)")
      ->check(CLI::ExistingFile);
  replay->add_option("--tolerance", args.tolerance_file, "Tolerance-overrides file")->check(CLI::ExistingFile);
  add_report_dir_option(replay, args.report_dir, "Where replay-report.{md,json,xml} go (the last one given)");
  replay->add_option("--only", args.only, "Only fixtures whose id matches one of these comma-separated globs");
  replay->add_option("--tags", args.tags, "Only fixtures carrying every one of these comma-separated tags");
  replay->add_option("--exclude-tags", args.exclude_tags, "No fixture carrying any of these comma-separated tags");
  add_scope_options(replay, args.features, args.exclude_features, args.profile, ScopeOf::Fixtures);
  replay->add_flag("--verbose", args.verbose, "A line per fixture, passes included");
  add_jobs_option(replay, args.jobs,
                  "Worker processes, each with its own engine or driver (default: the machine's cores, one per 200 "
                  "fixtures at most); the output and reports are those of one process");
  return replay;
}

}  // namespace lockstep::tools
