// `lockstep run`: the named cases, then N random programs, on the engine under test.
//
// On impl (or any in-process engine but the oracle) every program runs in lockstep with LibTorch
// (conformance/lockstep_runner.h): after each action the engines are compared, then impl is re-synchronised
// to the oracle's numbers; --free-running skips the re-synchronisation and reports the error growth. A
// failing random program is shrunk (conformance/shrink.h) before it is reported. Named cases also check
// their claims (conformance/named_case.h). On the oracle itself, the claims are checked and the random
// programs are run twice on two oracle instances (free-running), which checks the harness and the
// oracle's determinism.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include "conformance/generators.h"
#include "conformance/interpreter.h"
#include "conformance/known_discrepancies.h"
#include "conformance/lockstep_runner.h"
#include "conformance/named_case.h"
#include "conformance/program_json.h"
#include "conformance/report.h"
#include "conformance/shrink.h"
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
  KnownDiscrepancies known;
  try {
    cases = load_cases(args.cases_dir.empty() ? default_cases_dir() : args.cases_dir);
    std::string known_file = args.known_discrepancies_file.empty() ? default_known_discrepancies_file()
                                                                   : args.known_discrepancies_file;
    known = load_known_discrepancies(known_file);
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
  LockstepOptions options;
  // The oracle cannot be re-synchronised: against itself it runs free.
  options.mode = args.free_running || against_itself ? RunMode::FreeRunning : RunMode::Lockstep;
  auto make_under_test = [&] { return make_engine(args.engine, args.mutant); };

  RunReport report;
  report.oracle_engine = make_engine("oracle")->name();
  report.under_test_engine = make_under_test()->name();
  report.seed = args.seed;
  report.count = args.count;
  report.max_size = args.max_size;
  report.mode = options.mode;

  std::string prefix = fmt::format("lockstep run --engine {}{}", shell_quote(args.engine),
                                   args.mutant.empty() ? "" : " --mutant " + shell_quote(args.mutant));
  if (options.mode == RunMode::FreeRunning && !against_itself) prefix += " --free-running";

  auto run_pair = [&](const Program& p) { return run_against_oracle(p, make_under_test, options); };

  Tally named, random;
  fmt::print("lockstep run: {} against {} ({} mode)\n", report.under_test_engine, report.oracle_engine,
             run_mode_name(options.mode));

  // Named cases: the claim checks on the engine under test, and lockstep against the oracle.
  if (args.only_index < 0) {
    for (const NamedCase& c : cases) {
      if (!args.only_case.empty() && c.id != args.only_case) continue;
      LockstepResult result = run_named_case(c, make_under_test, options);
      CaseReport r = make_case_report(c.id, std::move(result), c.program,
                                      prefix + " --count 0 --case " + shell_quote(c.id), &known);
      if (r.status == CaseStatus::Passed) r.program.reset();
      named.add(r.status);
      if (r.status != CaseStatus::Passed)
        fmt::print("  {}  {}: {}\n", r.status == CaseStatus::Failed ? "FAIL " : "known", c.id,
                   r.result.failure_summary());
      report.cases.push_back(std::move(r));
    }
  }

  // Random programs: program i is a pure function of (seed, i).
  if (args.only_case.empty()) {
    GenOptions gen;
    gen.max_size = args.max_size;
    gen.special_values = args.special_values;
    RandomPrograms programs(args.seed, gen);
    std::string random_prefix = fmt::format("{} --seed {} --max-size {}{}", prefix, args.seed, args.max_size,
                                            args.special_values ? " --special-values" : "");
    Progress progress(args.count);
    for (int64_t i = 0; i < args.count; ++i) {
      if (args.only_index >= 0 && i != args.only_index) continue;
      std::string id = fmt::format("random-{}", i);
      rc::Shrinkable<Program> shrinkable = programs.at(static_cast<uint64_t>(i));
      Program program = shrinkable.value();
      LockstepResult result = run_pair(program);
      CaseReport r = make_case_report(id, result, program, random_prefix + fmt::format(" --index {}", i), &known);
      if (r.status == CaseStatus::Failed) {
        // Shrink to the smallest program that still fails (and is not explained by a known entry).
        ShrinkStats stats;
        auto still_fails = [&](const Program& candidate) {
          return is_unexplained_failure(id, run_pair(candidate), &known);
        };
        Program shrunk = shrink_program(shrinkable, still_fails, args.shrink_seconds, &stats);
        r = make_case_report(id, run_pair(shrunk), shrunk, r.reproduce_command, &known);
        progress.clear();
        fmt::print("  FAIL   {}: {}\n         shrunk to {} in {} steps; reproduce: {}\n", id,
                   r.result.failure_summary(), describe(program_size(shrunk)), stats.steps, r.reproduce_command);
      } else if (r.status == CaseStatus::Known) {
        r.program = program;
      } else {
        r.program.reset();
      }
      random.add(r.status);
      report.cases.push_back(std::move(r));
      progress.show(i + 1, random);
    }
    progress.clear();
  }

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
