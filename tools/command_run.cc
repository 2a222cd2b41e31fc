// `lockstep run`: the named cases, then N random programs, on the implementation under test, against LibTorch.
//
// One loop for every implementation (conformance/run/tested_implementation.h): impl (the default) and any in-process
// engine run in lockstep with LibTorch (conformance/run/lockstep_runner.h): after each action the engines
// are compared, then the engine is re-synchronised to the oracle's numbers; --free-running skips the
// re-synchronisation. A driver command (fixtures/PROTOCOL.md) runs whole programs, compared record by record
// with the error budget (conformance/compare/error_budget.h). Named cases check their claims on the
// implementation's own trace. A failing random program is shrunk (conformance/generate/shrink.h) by re-running
// candidates through the same implementation, driver included, and reported with the shrunk program, the
// first differing action and field, the driver's stderr and a reproduce command. `--engine oracle` is the
// self-check: LibTorch against a second LibTorch, free-running (the harness and LibTorch's determinism).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include "conformance/generate/generators.h"
#include "conformance/run/interpreter.h"
#include "conformance/compare/expectations.h"
#include "conformance/run/lockstep_runner.h"
#include "conformance/run/replay.h"
#include "conformance/run/tested_implementation.h"
#include "conformance/run/zero_grad_default.h"
#include "conformance/run/named_case.h"
#include "conformance/program/feature_areas.h"
#include "conformance/program/features.h"
#include "conformance/program/program_json.h"
#include "conformance/report/report.h"
#include "conformance/generate/shrink.h"
#include "tools/commands.h"
#include "tools/engines.h"
#include "tools/lockstep_session.h"
#include "tools/report_files.h"

namespace lockstep::tools {

namespace {

using Clock = std::chrono::steady_clock;

struct Tally {
  int passed = 0, failed = 0, known = 0;
  void add(CaseStatus s) {
    if (s == CaseStatus::Passed) ++passed;
    else if (s == CaseStatus::Failed) ++failed;
    else ++known;
  }
};

class Progress {
 public:
  explicit Progress(int64_t total) : total_(total), tty_(isatty(STDOUT_FILENO) == 1) {}
  void show(int64_t done, const Tally& t) {
    if (!tty_) return;
    fmt::print("\r  [{}/{}] {} passed, {} failed, {} known", done, total_, t.passed, t.failed, t.known);
    std::fflush(stdout);
  }
  void clear() {
    if (tty_) fmt::print("\r{:80}\r", "");
  }

 private:
  int64_t total_;
  bool tty_;
};

}  // namespace

int command_run(const RunArgs& args) {
  const auto t0 = Clock::now();
  std::vector<NamedCase> cases;
  Expectations expectations;
  Tolerance tolerance;
  const bool builtin = is_engine_name(args.engine);
  try {
    cases = load_cases(args.cases_dir.empty() ? default_cases_dir() : args.cases_dir);
    // The shipped expectations are impl's; a driver brings its own (--expectations).
    std::string file = args.expectations_file.empty() && builtin ? default_expectations_file() : args.expectations_file;
    if (!file.empty()) expectations = load_expectations(file);
    if (!args.tolerance_file.empty()) {
      ReplayConfig config;
      config.tolerance_overrides = read_tolerance_overrides(args.tolerance_file);
      tolerance = config.tolerance_for("*");
    }
  } catch (const std::exception& e) {
    std::cerr << "lockstep run: " << e.what() << "\n";
    return kExitInputError;
  }
  if (!args.only_case.empty()) {
    bool found = false;
    for (const auto& c : cases) found = found || c.id == args.only_case;
    if (!found) {
      std::cerr << "lockstep run: no named case '" << args.only_case << "'\n";
      return kExitInputError;
    }
  }

  const bool against_itself = args.engine == "oracle";
  if (!builtin && (!args.mutant.empty() || !args.variant.empty())) {
    std::cerr << "lockstep run: --mutant and --variant select an in-process impl; a driver selects its own "
                 "(lockstep-impl-driver --mutant NAME / --variant NAME)\n";
    return kExitInputError;
  }
  LockstepOptions options;
  options.tolerance = tolerance;
  // The oracle cannot be re-synchronised, nor can a driver: they run free.
  options.mode = args.free_running || against_itself || !builtin ? RunMode::FreeRunning : RunMode::Lockstep;
  EngineFactory make_oracle = [] { return make_engine("oracle"); };
  std::unique_ptr<TestedImplementation> subject;
  if (builtin) {
    subject = in_process_implementation(make_oracle, [&] { return make_engine(args.engine, args.mutant, args.variant); }, options);
  } else {
    DriverOptions driver_options;
    driver_options.timeout = std::chrono::milliseconds(args.timeout_ms);
    subject = driver_implementation(make_oracle, args.engine, driver_options, tolerance);
  }

  // The handshake (a driver starts now), then the scope: what it supports, --features/--exclude-features, its
  // API profile (capabilities.h, feature_scope.h, api_profile.h).
  subject->capabilities();
  if (!subject->fatal_error().empty()) {
    std::cerr << "lockstep run: the driver cannot start: " << subject->fatal_error() << "\n";
    return kExitInputError;
  }
  RunScope scope;
  try {
    scope = make_run_scope(subject->capabilities(), subject->zero_grad_rule(), args.features, args.exclude_features,
                           args.profile, expectations);
  } catch (const std::exception& e) {
    std::cerr << "lockstep run: " << e.what() << "\n";
    return kExitInputError;
  }
  if (!args.special_values && args.special_values_every == 0) scope.not_generated.insert("special_values");
  for (const std::string& w : scope.coverage.warnings) std::cerr << "lockstep run: warning: " << w << "\n";

  RunReport report;
  report.oracle_engine = make_oracle()->name();
  report.under_test_engine = builtin ? subject->name() : args.engine;
  report.seed = args.seed;
  report.count = args.count;
  report.max_size = args.max_size;
  report.mode = options.mode;

  std::string prefix = fmt::format("lockstep run --engine {}{}", shell_quote(args.engine),
                                   args.mutant.empty() ? "" : " --mutant " + shell_quote(args.mutant));
  if (!args.variant.empty()) prefix += " --variant " + shell_quote(args.variant);
  if (args.free_running && builtin && !against_itself) prefix += " --free-running";
  if (!args.cases_dir.empty()) prefix += " --cases " + shell_quote(args.cases_dir);
  if (!args.expectations_file.empty()) prefix += " --expectations " + shell_quote(args.expectations_file);
  if (!args.tolerance_file.empty()) prefix += " --tolerance " + shell_quote(args.tolerance_file);
  prefix += scope.reproduce_flags;

  // A case's report, judged by the expectations (expectations.h).
  auto case_report = [&](const std::string& id, LockstepResult result, std::optional<Program> program,
                         const std::string& reproduce) {
    return make_case_report(id, std::move(result), std::move(program), reproduce, &expectations);
  };
  auto fatal = [&]() -> bool {
    const std::string why = subject->fatal_error();
    if (why.empty()) return false;
    std::cerr << "lockstep run: the driver cannot start: " << why << "\n";
    return true;
  };

  Tally named, random;
  fmt::print("lockstep run: {} against {} ({} mode)\n", report.under_test_engine, report.oracle_engine,
             run_mode_name(options.mode));
  if (!scope.scope->empty())
    fmt::print("  scope: {} exclusion{} (what the implementation supports, flags, profile {}); see the report's coverage\n",
               scope.scope->exclusions().size(), scope.scope->exclusions().size() == 1 ? "" : "s",
               scope.coverage.profile.empty() ? "none" : scope.coverage.profile);
  for (const AppliedRule& r : scope.coverage.rules)
    if (r.kind == "default") fmt::print("  rule {}: {}\n", r.id, r.reason);

  // Named cases: the claim checks on the implementation's own trace, then the comparison with the oracle.
  bool default_case_ran = false;  // zero_grad_default.h: the case that checks the implementation's default
  if (args.only_index < 0) {
    for (const NamedCase& c : cases) {
      if (!args.only_case.empty() && c.id != args.only_case) continue;
      std::string why;
      const std::set<std::string> features = program_features(c.program);
      if (!in_scope(scope, c.id, c.program, features, &why)) {
        if (!args.only_case.empty()) fmt::print("  left out {}: {}\n", c.id, why);
        continue;
      }
      LockstepResult result = run_case(*subject, c, expectations);
      if (fatal()) return kExitInputError;
      count_case(scope, c.program, features, result);
      if (c.id == kZeroGradDefaultCase && result.skipped.empty()) default_case_ran = true;
      CaseReport r = case_report(c.id, std::move(result), c.program, prefix + " --case " + shell_quote(c.id));
      r.areas = feature_areas(c.program);
      if (r.status == CaseStatus::Passed) r.program.reset();
      named.add(r.status);
      if (r.status != CaseStatus::Passed)
        fmt::print("  {}  {}: {}\n", r.status == CaseStatus::Failed ? "FAIL " : "known", c.id,
                   printable_utf8(r.known_reason.empty() ? r.result.failure_summary() : r.known_reason));
      report.cases.push_back(std::move(r));
    }
  }

  // Random programs: program i is a pure function of (seed, i). --index runs that one program whatever
  // --count says.
  if (args.only_case.empty()) {
    GenOptions gen;
    gen.max_size = args.max_size;
    gen.special_values = args.special_values;
    gen.special_values_every = args.special_values_every;
    if (!scope.scope->empty()) gen.scope = scope.scope;
    RandomPrograms programs(args.seed, gen);
    std::string random_prefix = fmt::format("{} --seed {} --max-size {}{}", prefix, args.seed, args.max_size,
                                            args.special_values ? " --special-values" : "");
    if (!args.special_values && args.special_values_every != RunArgs{}.special_values_every)
      random_prefix += fmt::format(" --special-values-every {}", args.special_values_every);
    const int64_t first = args.only_index >= 0 ? args.only_index : 0;
    const int64_t end = args.only_index >= 0 ? args.only_index + 1 : args.count;
    Progress progress(end - first);
    for (int64_t i = first; i < end; ++i) {
      std::string id = fmt::format("random-{}", i);
      std::optional<rc::Shrinkable<Program>> generated;
      try {
        generated = programs.at(static_cast<uint64_t>(i));
      } catch (const std::runtime_error& e) {
        std::cerr << "lockstep run: " << e.what() << "\n";
        return kExitInputError;
      }
      const rc::Shrinkable<Program>& shrinkable = *generated;
      Program program = shrinkable.value();
      const std::set<std::string> features = program_features(program);
      const FieldMask mask = expectations.mask_for(id, &features, &program);
      LockstepResult result = subject->run(id, program, mask);
      if (fatal()) return kExitInputError;
      count_case(scope, program, features, result);
      const std::string reproduce = random_prefix + fmt::format(" --index {}", i);
      CaseReport r = case_report(id, result, program, reproduce);
      if (r.status == CaseStatus::Failed) {
        // Shrink to the smallest program that still fails (and is not explained by a known entry), re-running
        // every candidate through the same implementation.
        ShrinkStats stats;
        // The same kind of failure (LockstepResult::failure_kind): a simpler program that fails for another
        // reason is not the same bug.
        const std::string kind = r.result.failure_kind();
        auto still_fails = [&](const Program& candidate) {
          const std::set<std::string> f = program_features(candidate);
          CaseReport c = case_report(id, subject->run(id, candidate, expectations.mask_for(id, &f, &candidate)), candidate, "");
          return c.status == CaseStatus::Failed && c.result.failure_kind() == kind;
        };
        Program shrunk = shrink_program(shrinkable, still_fails, args.shrink_seconds, &stats);
        const std::set<std::string> shrunk_features = program_features(shrunk);
        LockstepResult shrunk_result = subject->run(id, shrunk, expectations.mask_for(id, &shrunk_features, &shrunk));
        CaseReport s = case_report(id, shrunk_result, shrunk, reproduce);
        if (s.status == CaseStatus::Failed) {
          s.original_program = program;
          r = std::move(s);
        } else {
          r.program = program;  // the shrunk program no longer failed (a flaky driver): report the original
        }
        progress.clear();
        fmt::print("  FAIL   {}: {}\n         shrunk to {} in {} steps; reproduce: {}\n", id,
                   printable_utf8(r.result.failure_summary()), describe(program_size(*r.program)), stats.steps,
                   printable_utf8(r.reproduce_command));
        if (!r.result.driver_stderr.empty())
          fmt::print("         driver stderr: {}\n", printable_utf8(r.result.driver_stderr.substr(0, 1000)));
      } else if (r.status == CaseStatus::Known) {
        r.program = program;
      } else {
        r.program.reset();
      }
      // A failure counts in the areas of the program the report shows (shrunk: the smallest that still fails).
      r.areas = feature_areas(r.program ? *r.program : program);
      random.add(r.status);
      report.cases.push_back(std::move(r));
      progress.show(i - first + 1, random);
    }
    progress.clear();
  }

  for (AppliedRule& r : scope.coverage.rules)
    if (r.id == kZeroGradDefaultRule && !default_case_ran)
      r.reason += std::string(" -- but ") + kZeroGradDefaultCase + " did not run here (left out, skipped or not "
                  "selected): the implementation's default itself was not checked in this run";
  finish_coverage(scope, report, expectations);
  if (report.cases.empty() && scope.coverage.out_of_scope > 0) {
    std::cerr << "lockstep run: nothing was tested: every selected case is out of scope (";
    for (const LeftOutCase& x : scope.coverage.left_out_cases) std::cerr << x.id << ": " << x.reason << "; ";
    std::cerr << "see --features/--exclude-features, the driver's hello, its profile)\n";
    return kExitInputError;
  }
  for (const std::string& u : report.unused_expectations) fmt::print("  unused expectation: {}\n", u);
  if (!report.coverage->not_exercised.empty())
    fmt::print("  in scope but not exercised: {}\n", fmt::join(report.coverage->not_exercised, ", "));
  try {
    write_reports(args.report_dir, report, "lockstep-report");
  } catch (const std::exception& e) {
    std::cerr << "lockstep run: cannot write the reports: " << e.what() << "\n";
    return kExitInputError;
  }

  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  fmt::print("\n  {:<14} {:>7} {:>7} {:>7} {:>7}\n", "", "total", "passed", "failed", "known");
  auto row = [](const char* what, const Tally& t) {
    fmt::print("  {:<14} {:>7} {:>7} {:>7} {:>7}\n", what, t.passed + t.failed + t.known, t.passed, t.failed,
               t.known);
  };
  row("named cases", named);
  row("random", random);
  fmt::print("{} passed, {} failed ({:.1f} s; seed {}, max size {})\n", named.passed + random.passed,
             named.failed + random.failed, secs, args.seed, args.max_size);
  return named.failed + random.failed ? kExitDiscrepancies : kExitOk;
}

}  // namespace lockstep::tools
