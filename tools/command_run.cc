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
#include <set>
#include <thread>

#include <fmt/format.h>

#include "conformance/generate/generators.h"
#include "conformance/run/interpreter.h"
#include "conformance/compare/expectations.h"
#include "conformance/run/lockstep_runner.h"
#include "conformance/run/runner.h"
#include "conformance/run/tested_implementation.h"
#include "conformance/run/zero_grad_default.h"
#include "conformance/run/named_case.h"
#include "conformance/program/program_json.h"
#include "conformance/report/atomic_file.h"
#include "conformance/report/report.h"
#include "conformance/report/report_reader.h"
#include "conformance/report/report_shards.h"
#include "tools/commands.h"
#include "tools/engines.h"
#include "tools/report_files.h"
#include "tools/workers.h"
#include "conformance/program/file_system.h"
#include <CLI/CLI.hpp>
#include "tools/cli_options.h"

namespace lockstep::tools {

namespace {

using Clock = std::chrono::steady_clock;

// Without --jobs, a worker per this many random programs at most (and per core): below it, starting a process,
// its engines and its driver costs about what it saves.
constexpr int64_t kRandomProgramsPerDefaultJob = 1000;

// One vocabulary with replay: passed, failed, xfail (a known discrepancy: the expectations explain it), skipped
// (the implementation answered unsupported).
struct Tally {
  int passed = 0, failed = 0, xfail = 0, skipped = 0;
  void add(const CaseReport& c) {
    if (c.status == CaseStatus::Passed) ++passed;
    else if (c.status == CaseStatus::Failed) ++failed;
    else if (!c.result.skipped.empty()) ++skipped;
    else ++xfail;
  }
  int total() const { return passed + failed + xfail + skipped; }
};

class Progress {
 public:
  Progress(int64_t total, bool shown) : total_(total), tty_(shown && isatty(STDOUT_FILENO) == 1) {}
  void show(int64_t done, const Tally& t) {
    if (!tty_) return;
    fmt::print("\r  [{}/{}] {} passed, {} failed, {} skipped", done, total_, t.passed, t.failed, t.skipped);
    std::fflush(stdout);
  }
  void clear() {
    if (tty_) fmt::print("\r{:80}\r", "");
  }

 private:
  int64_t total_;
  bool tty_;
};

// Which process runs a slice: the run itself (it prints everything and writes the reports), or a worker of --jobs,
// which prints only the header and writes its JSON report for the parent to merge (the parent prints the case
// lines and the summary of the merged report).
enum class SliceRole { Whole, Worker };

// The line(s) a case gets on stdout: a failure or a known named case; a failing random program with its shrunk
// size and reproduce line. `named`: a named case (else a random program).
void print_case_line(const CaseReport& r, bool named) {
  if (named) {
    if (r.status == CaseStatus::Failed)
      fmt::print("  FAIL   {}: {}\n         reproduce: {}\n", r.id, printable_utf8(r.result.failure_summary()),
                 printable_utf8(r.reproduce_command));
    else if (r.status == CaseStatus::Known && r.result.skipped.empty())  // skipped ones: counted at the end
      fmt::print("  xfail  {}: {}\n", r.id, printable_utf8(r.known_reason));
    return;
  }
  if (r.status != CaseStatus::Failed) return;
  fmt::print("  FAIL   {}: {}\n         shrunk to {} in {} steps; reproduce: {}\n", r.id,
             printable_utf8(r.result.failure_summary()), r.program ? describe(program_size(*r.program)) : "?",
             r.shrink_steps.value_or(0), printable_utf8(r.reproduce_command));
  if (!r.result.driver_stderr.empty())
    fmt::print("         driver stderr: {}\n", printable_utf8(r.result.driver_stderr.substr(0, 1000)));
}

// The end of a run (one process, or the merged report of --jobs): unused expectations, features not exercised,
// the reports, the table. `named_cases`: how many of the report's cases (the first) are named cases.
int finish_run(const RunArgs& args, RunReport& report, size_t named_cases, Clock::time_point t0) {
  Tally named, random;
  for (size_t i = 0; i < report.cases.size(); ++i) (i < named_cases ? named : random).add(report.cases[i]);
  for (const std::string& u : report.unused_expectations) fmt::print("  unused expectation: {}\n", u);
  const bool one_case = !args.only_case.empty() || args.only_index >= 0;  // a reproduce line: no run-wide notes
  if (!one_case) {
    if (const std::string line = untested_line(report); !line.empty()) fmt::print("  {}\n", line);
    if (report.coverage && !report.coverage->not_exercised.empty())
      fmt::print("  {} feature{} in scope not exercised (the report's Coverage names them)\n",
                 report.coverage->not_exercised.size(), report.coverage->not_exercised.size() == 1 ? "" : "s");
    warn_if_mostly_skipped(report);
  }
  try {
    write_reports(args.report_dir, report, "lockstep-report");
  } catch (const std::exception& e) {
    std::cerr << "lockstep run: cannot write the reports: " << e.what() << "\n";
    return kExitInputError;
  }
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  fmt::print("\n  {:<14} {:>7} {:>7} {:>7} {:>7} {:>7}\n", "", "total", "passed", "failed", "xfail", "skipped");
  auto row = [](const char* what, const Tally& t) {
    fmt::print("  {:<14} {:>7} {:>7} {:>7} {:>7} {:>7}\n", what, t.total(), t.passed, t.failed, t.xfail, t.skipped);
  };
  row("named cases", named);
  row("random", random);
  const ReportSummary summary = summarise(report);
  fmt::print("{} passed, {} failed, {} skipped ({}{:.1f} s; seed {}, max size {}{})\n", named.passed + random.passed,
             named.failed + random.failed, named.skipped + random.skipped,
             summary.imprecise ? fmt::format("{} of the xfail imprecise, SEMANTICS §9.6; ", summary.imprecise) : "",
             secs, args.seed, args.max_size,
             report.shard ? fmt::format("; shard {} of {}", report.shard->index, report.shard->total) : "");
  return named.failed + random.failed ? kExitDiscrepancies : kExitOk;
}

// A one-word --engine that is no engine was taken for a driver command: say which engines there are.
std::string not_an_engine_hint(const std::string& engine) {
  if (engine.find_first_of(" /") != std::string::npos) return "";
  std::string known;
  for (const std::string& n : engine_names()) known += (known.empty() ? "" : ", ") + n;
  return "\n(--engine '" + engine + "' is no engine of this lockstep, so it was run as a driver command; known "
         "engines: " + known + ")";
}

int run_slice(const RunArgs& args, const ShardSpec& shard, SliceRole role, Clock::time_point t0);
int run_in_workers(const RunArgs& args, const ShardSpec& shard, int jobs, Clock::time_point t0);

}  // namespace

int command_run(const RunArgs& args) {
  const auto t0 = Clock::now();
  if (!oracle_available()) {  // every run compares with LibTorch, live
    std::cerr << "lockstep run: " << kNoOracle << "\n";
    return kExitInputError;
  }
  // The slice of the run (report_shards.h): --shard, else GoogleTest's variables; --case and --index run their one
  // case wherever they are (a reproduce line works inside a sharded CI job too).
  ShardSpec shard;
  const bool single_case = !args.only_case.empty() || args.only_index >= 0;
  try {
    if (!args.shard.empty()) {
      if (single_case) throw std::invalid_argument("--shard splits a run; --case and --index run one case");
      shard = parse_shard_spec(args.shard);
    } else if (const std::optional<ShardSpec> env = shard_from_environment(); env && !single_case) {
      shard = *env;
    }
  } catch (const std::exception& e) {
    std::cerr << "lockstep run: " << e.what() << "\n";
    return kExitInputError;
  }
  // Workers: --jobs, else the machine's cores but one per kRandomProgramsPerDefaultJob (a short run gains
  // nothing from more processes: each starts its own engines and driver); never more than there are programs.
  const int64_t programs = programs_in_shard(shard, args.count);
  int64_t jobs = args.jobs > 0 ? args.jobs
                               : std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()),
                                                   programs / kRandomProgramsPerDefaultJob);
  jobs = std::max<int64_t>(1, std::min<int64_t>(jobs, programs));
  if (single_case) jobs = 1;
  if (jobs > 1) return run_in_workers(args, shard, static_cast<int>(jobs), t0);
  pin_oracle_threads();
  return run_slice(args, shard, SliceRole::Whole, t0);
}

namespace {

int run_slice(const RunArgs& args, const ShardSpec& shard, SliceRole role, Clock::time_point t0) {
  const bool worker = role == SliceRole::Worker;
  const bool builtin = is_engine_name(args.engine);
  // The shipped expectations are impl's; a driver or a registered engine (run_main.h) brings its own.
  const bool shipped = args.engine == "impl" || args.engine == "oracle";
  RunInputs in;
  try {
    in = load_run_inputs({args.cases_dir,
                          args.expectations_file.empty() && shipped ? default_expectations_file() : args.expectations_file,
                          args.tolerance_file});
  } catch (const std::exception& e) {
    std::cerr << "lockstep run: " << e.what() << "\n";
    return kExitInputError;
  }
  if (!args.oracle.empty() && args.cases_dir.empty()) {  // SEMANTICS 20.2: the cases only a driver oracle can judge
    try {
      for (NamedCase& c : load_cases(python_oracle_cases_dir())) in.cases.push_back(std::move(c));
    } catch (const std::exception& e) {
      std::cerr << "lockstep run: " << e.what() << "\n";
      return kExitInputError;
    }
  }
  const std::vector<NamedCase>& cases = in.cases;
  Expectations& expectations = in.expectations;
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
  options.tolerance = in.tolerance;
  // The oracle cannot be re-synchronised, nor can a driver: they run free.
  options.mode = args.free_running || against_itself || !builtin ? RunMode::FreeRunning : RunMode::Lockstep;
  EngineFactory make_oracle = [] { return make_engine("oracle"); };
  std::unique_ptr<TestedImplementation> subject;
  DriverOptions driver_options;
  driver_options.timeout = std::chrono::milliseconds(args.timeout_ms);
  if (builtin) {
    subject = in_process_implementation(make_oracle, [&] { return make_engine(args.engine, args.mutant, args.variant); }, options);
  } else {
    subject = driver_implementation(make_oracle, args.engine, driver_options, in.tolerance);
  }
  if (!args.oracle.empty()) {  // compared as recorded traces: free-running
    options.mode = RunMode::FreeRunning;
    subject = against_driver_oracle(std::move(subject), args.oracle, driver_options, in.tolerance);
  }

  // The handshake (a driver starts now), then the scope: what it supports, --features/--exclude-features, its
  // API profile (capabilities.h, feature_scope.h, api_profile.h).
  subject->capabilities();
  const Capabilities* oracle_caps = subject->oracle_capabilities();
  if (!subject->fatal_error().empty()) {
    std::cerr << "lockstep run: " << subject->fatal_error() << not_an_engine_hint(args.engine) << "\n";
    return kExitInputError;
  }
  const std::string oracle_name = oracle_caps ? args.oracle : make_oracle()->name();
  RunScope scope;
  try {
    scope = make_scope_against_oracle({subject->capabilities(), subject->zero_grad_rule(), subject->pytorch_version(),
                                       oracle_caps, oracle_name, args.features, args.exclude_features, args.profile,
                                       args.oracle_expectations_file},
                                      expectations);
  } catch (const std::exception& e) {
    std::cerr << "lockstep run: " << e.what() << "\n";
    return kExitInputError;
  }
  if (!args.special_values && args.special_values_every == 0) scope.not_generated.insert("special_values");
  for (const std::string& w : scope.coverage.warnings) std::cerr << "lockstep run: warning: " << w << "\n";

  RunReport report;
  report.oracle_engine = oracle_name;
  report.under_test_engine = builtin ? subject->name() : args.engine;
  report.seed = args.seed;
  report.count = args.count;
  report.max_size = args.max_size;
  report.mode = options.mode;
  if (shard.total > 1) report.shard = ReportShard{shard.index, shard.total, 0, ""};

  std::string prefix = fmt::format("lockstep run --engine {}{}", shell_quote(args.engine),
                                   args.mutant.empty() ? "" : " --mutant " + shell_quote(args.mutant));
  if (!args.variant.empty()) prefix += " --variant " + shell_quote(args.variant);
  if (args.free_running && builtin && !against_itself) prefix += " --free-running";
  if (!args.cases_dir.empty()) prefix += " --cases " + shell_quote(path_for_reproduce(args.cases_dir));
  if (!args.expectations_file.empty()) prefix += " --expectations " + shell_quote(path_for_reproduce(args.expectations_file));
  if (!args.tolerance_file.empty()) prefix += " --tolerance " + shell_quote(path_for_reproduce(args.tolerance_file));
  prefix += scope_reproduce_flags(args.features, args.exclude_features, args.profile);
  if (!args.oracle.empty()) prefix += " --oracle " + shell_quote(args.oracle);
  if (!args.oracle_expectations_file.empty())
    prefix += " --oracle-expectations " + shell_quote(path_for_reproduce(args.oracle_expectations_file));
  // A random program's reproduce line is this and --index; it is also what makes shards part of the same run.
  std::string random_prefix = fmt::format("{} --seed {} --max-size {}{}", prefix, args.seed, args.max_size,
                                          args.special_values ? " --special-values" : "");
  if (!args.special_values && args.special_values_every != RunArgs{}.special_values_every)
    random_prefix += fmt::format(" --special-values-every {}", args.special_values_every);
  if (args.focus && !scope.scope->empty()) random_prefix += " --focus";
  if (report.shard) report.shard->run = random_prefix;

  auto fatal = [&]() -> bool {
    const std::string why = subject->fatal_error();
    if (why.empty()) return false;
    std::cerr << "lockstep run: " << why << not_an_engine_hint(args.engine) << "\n";
    return true;
  };

  Tally named, random;
  fmt::print("lockstep run: {} against {} ({} mode)\n", report.under_test_engine, report.oracle_engine,
             run_mode_name(options.mode));
  if (!scope.scope->empty())
    fmt::print("  scope: {} exclusion rule{} (what the implementation supports, flags, profile {}); the report's Coverage lists them\n",
               scope.scope->exclusions().size(), scope.scope->exclusions().size() == 1 ? "" : "s",
               scope.coverage.profile.empty() ? "none" : scope.coverage.profile);
  for (const AppliedRule& r : scope.coverage.rules)
    if (r.kind == "default") fmt::print("  rule {}: {}\n", r.id, r.reason);

  // Named cases: the comparison with the oracle, then the claim checks on the implementation's own trace.
  CaseRunner runner(*subject, expectations, scope);
  if (args.only_index < 0 && shard.index == 0) {
    for (const NamedCase& c : cases) {
      if (!args.only_case.empty() && c.id != args.only_case) continue;
      std::string why;
      std::optional<CaseReport> r =
          runner.named_case(c, prefix + " --case " + shell_quote(c.id) + reproduce_report_dir_flag(c.id), &why);
      if (runner.implementation_lost() && fatal()) return kExitInputError;
      if (!r) {
        if (!args.only_case.empty()) fmt::print("  left out {}: {}\n", c.id, why);
        continue;
      }
      named.add(*r);
      if (!worker) print_case_line(*r, true);
      report.cases.push_back(std::move(*r));
    }
  }
  const size_t named_cases = report.cases.size();
  if (report.shard) report.shard->named_cases = static_cast<int64_t>(named_cases);

  // Random programs: program i is a pure function of (seed, i). --index runs that one program whatever
  // --count says.
  if (args.only_case.empty()) {
    GenOptions gen;
    gen.max_size = args.max_size;
    gen.special_values = args.special_values;
    gen.special_values_every = args.special_values_every;
    if (!scope.scope->empty()) gen.scope = scope.scope;
    gen.focus = args.focus;
    gen.maximize = oracle_caps != nullptr;  // SEM-20.2: only a driver oracle can have it; its hello says whether
    RandomPrograms programs(args.seed, gen);
    const int64_t first = args.only_index >= 0 ? args.only_index : 0;
    const int64_t end = args.only_index >= 0 ? args.only_index + 1 : args.count;
    Progress progress(args.only_index >= 0 ? 1 : programs_in_shard(shard, args.count), !worker);
    int64_t done = 0;
    for (int64_t i = first; i < end; ++i) {
      if (args.only_index < 0 && !in_shard(shard, i)) continue;
      std::string id = fmt::format("random-{}", i);
      std::optional<rc::Shrinkable<Program>> generated;
      try {
        generated = programs.at(static_cast<uint64_t>(i));
      } catch (const std::runtime_error& e) {
        std::cerr << "lockstep run: " << e.what() << "\n";
        return kExitInputError;
      }
      const std::string reproduce = random_prefix + fmt::format(" --index {}", i) + reproduce_report_dir_flag(id);
      // A fatal error at the program's run ends the run now; one while it was shrunk, at the next program.
      if (fatal()) return kExitInputError;
      CaseReport r = runner.random_program(id, *generated, reproduce, args.shrink_seconds);
      if (runner.implementation_lost() && fatal()) return kExitInputError;
      if (r.status == CaseStatus::Failed) {
        progress.clear();
        if (!worker) print_case_line(r, false);
      }
      random.add(r);
      keep_only_what_a_pass_shows(r);  // counted above; a pass keeps what its reports show (docs/programs-and-limits.md "Limits")
      report.cases.push_back(std::move(r));
      progress.show(++done, random);
    }
    progress.clear();
  }

  for (AppliedRule& r : scope.coverage.rules)
    if (r.id == kZeroGradDefaultRule && !runner.default_case_ran())
      r.reason += std::string(" -- but ") + kZeroGradDefaultCase + " did not run here (left out, skipped or not "
                  "selected): the implementation's default itself was not checked in this run";
  finish_coverage(scope, report, expectations);
  if (report.cases.empty() && scope.coverage.out_of_scope > 0) {
    std::cerr << "lockstep run: nothing was tested: every selected case is out of scope (";
    for (const LeftOutCase& x : scope.coverage.left_out_cases) std::cerr << x.id << ": " << x.reason << "; ";
    std::cerr << "see --features/--exclude-features, the driver's hello, its profile)\n";
    return kExitInputError;
  }
  if (worker) {  // its JSON report is merged by the parent
    try {
      files::create_directories(args.report_dir);
      write_file_atomically(args.report_dir + "/lockstep-report.json", report_json_text(report));
    } catch (const std::exception& e) {
      std::cerr << "lockstep run: cannot write the reports: " << e.what() << "\n";
      return kExitInputError;
    }
    return named.failed + random.failed ? kExitDiscrepancies : kExitOk;
  }
  return finish_run(args, report, named_cases, t0);
}

// --jobs N: the slice runs in N worker processes (workers.h), shards shard.index + w * shard.total of
// shard.total * N (w < N), each writing its JSON report into its own directory; their reports merged are this
// slice's report, byte for byte what one process writes (report_shards.h).
int run_in_workers(const RunArgs& args, const ShardSpec& shard, int jobs, Clock::time_point t0) {
  std::vector<std::pair<std::string, RunReport>> reports;
  RunReport merged;
  size_t named_cases = 0;  // worker 0 ran them (report_shards.h)
  try {
    WorkerDir dir("lockstep-jobs");
    const std::vector<WorkerEnd> ends = run_workers(jobs, dir.path(), [&](int w, const std::string& own) {
      RunArgs worker = args;
      worker.report_dir = own + "/report";
      pin_oracle_threads();
      return run_slice(worker, {shard.index + w * shard.total, shard.total * jobs}, SliceRole::Worker, t0);
    });
    if (report_workers(ends, "lockstep run")) return kExitInputError;
    // The header is worker 0's (the handshake and the scope are the same in every worker).
    fmt::print("{}", ends.front().out);
    for (int w = 0; w < jobs; ++w) {
      const std::string file = dir.path() + "/" + std::to_string(w) + "/report/lockstep-report.json";
      reports.emplace_back(file, read_report_file(file));
    }
    named_cases = static_cast<size_t>(reports.front().second.shard->named_cases);
    merged = merge_shard_reports(std::move(reports), shard.total > 1 ? std::optional<ShardSpec>(shard) : std::nullopt);
  } catch (const std::exception& e) {
    std::cerr << "lockstep run: --jobs " << jobs << ": " << e.what() << "\n";
    return kExitInputError;
  }
  for (size_t i = 0; i < merged.cases.size(); ++i) print_case_line(merged.cases[i], i < named_cases);
  return finish_run(args, merged, named_cases, t0);
}

}  // namespace

CLI::App* add_run_command(CLI::App& app, RunArgs& args) {
  CLI::App* run = app.add_subcommand(
      "run", "Run the named cases and N random programs on the implementation under test and compare it with "
             "LibTorch action by action; write reports.");
  add_implementation_options(run, ImplementationOptions{&args.engine, &args.timeout_ms, &args.mutant, &args.variant},
                             "Implementation under test: impl, an engine this runner registers (" +
                                 registered_engines_text() +
                                 "), a driver command line (fixtures/PROTOCOL.md), or oracle (self-check: LibTorch "
                                 "against LibTorch)");
  run->add_option("--tolerance", args.tolerance_file, "Tolerance-overrides file")->check(CLI::ExistingFile);
  run->add_option("--cases", args.cases_dir, "Directory of named cases (default: the shipped ones)");
  run->add_option("--count", args.count, "Random programs after the named cases")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_program_stream_options(run, args.seed, args.max_size);
  run->add_flag("--free-running", args.free_running, "Do not re-synchronise after each action; report how the error grows");
  run->add_flag("--special-values", args.special_values, "Allow NaN and +-Inf in every random program");
  run->add_option("--special-values-every", args.special_values_every,
                  "Allow NaN and +-Inf in every n-th random program (index i with i % n == n - 1); 0: never")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_report_dir_option(run, args.report_dir, "Where the Markdown, JSON and JUnit reports go (the last one given)");
  run->add_option("--case", args.only_case, "Run only this named case (to reproduce a failure)");
  run->add_option("--expectations,--expected-failures,--known-discrepancies", args.expectations_file,
                  "Expectations file: expected failures and masks (conformance/compare/expectations.h; default for "
                  "impl: conformance/compare/expectations.json)")
      ->check(CLI::ExistingFile);
  run->add_option("--shrink-seconds", args.shrink_seconds, "Time budget to shrink one failing program")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_scope_options(run, args.features, args.exclude_features, args.profile, ScopeOf::GeneratedPrograms);
  CLI::Option* oracle = run->add_option("--oracle", args.oracle,
                  "A driver command line as the oracle instead of LibTorch's C++ API, for what that API lacks (maximize, "
                  "SEMANTICS 20.2): e.g. \"python3 tools/adapters/pytorch_driver.py\"; its hello's capabilities and API "
                  "profile narrow the run");
  run->add_option("--oracle-expectations", args.oracle_expectations_file,
                  "With --oracle: the oracle's known differences from LibTorch's C++ API, its expectations file as the "
                  "implementation under test (e.g. fixtures/expectations/pytorch-python.json), applied turned around "
                  "(SEMANTICS 20.4)")
      ->check(CLI::ExistingFile)
      ->needs(oracle);
  run->add_flag("--focus", args.focus,
                "With --features: draw element-wise ops among the listed ones, so each is exercised often (changes the "
                "programs of a seed)");
  run->add_option("--index", args.only_index, "Run only this random program (to reproduce a failure)")
      ->check(CLI::NonNegativeNumber);
  add_jobs_option(run,
                  args.jobs, "Worker processes (default: the machine's cores, one per 1000 random programs at most); "
                             "the reports are those of one process");
  run->add_option("--shard", args.shard,
                  "Run only slice INDEX/TOTAL (INDEX from 0): random program k when k % TOTAL == INDEX, the named "
                  "cases in slice 0; default: GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS when set. `lockstep merge` joins "
                  "the slices' reports");
  return run;
}

}  // namespace lockstep::tools
