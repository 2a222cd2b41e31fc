// The command line (run_main.h): `lockstep --help` lists the subcommands; each has its own --help. tools/main.cc is
// `lockstep` itself; a C++ framework's own runner calls run_main() with its engines.
#include "tools/run_main.h"

#include <signal.h>

#include <csignal>
#include <new>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "conformance/program/cleanup_guard.h"
#include "conformance/program/data_dir.h"
#include "conformance/program/features.h"
#include "conformance/program/optional_fields.h"

#include "tools/command_mutants.h"
#include "tools/commands.h"
#include "tools/commands_fixtures.h"
#include "conformance/program/did_you_mean.h"
#include "tools/engines.h"
#include "tools/workers.h"

namespace lockstep {

namespace {

// After a failed parse: "did you mean ...?" for the first word that names no subcommand or flag of the command
// line given (`lockstep rnu` -> run, `lockstep run --cout 5` -> --count), or "" when nothing is near.
std::string did_you_mean_hint(const CLI::App& app, int argc, char** argv) {
  const CLI::App* command = &app;
  int i = 1;
  for (; i < argc && argv[i][0] != '-'; ++i) {  // the subcommands named, outermost first
    std::vector<std::string> names;
    for (const CLI::App* sub : command->get_subcommands([](const CLI::App*) { return true; }))
      names.push_back(sub->get_name());
    if (names.empty()) break;  // a positional argument of a command without subcommands
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : command->get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == argv[i]) next = sub;
    if (!next) {
      const std::string near = nearest_name(argv[i], names);
      return fmt::format("'{}' is no subcommand{}{} (subcommands: {})", argv[i],
                         command == &app ? "" : " of '" + command->get_name() + "'",
                         near.empty() ? "" : ": did you mean '" + near + "'?", fmt::join(names, ", "));
    }
    command = next;
  }
  std::vector<std::string> flags;
  for (const CLI::Option* o : command->get_options())
    for (const std::string& n : o->get_lnames()) flags.push_back("--" + n);
  for (; i < argc; ++i) {
    const std::string word(argv[i]);
    if (word.rfind("--", 0) != 0 || word == "--") continue;
    const std::string flag = word.substr(0, word.find('='));
    if (std::find(flags.begin(), flags.end(), flag) != flags.end()) continue;
    const std::string near = nearest_name(flag, flags);
    if (!near.empty()) return fmt::format("'{}' is no flag of '{}': did you mean '{}'?", flag, command->get_name(), near);
  }
  return "";
}

}  // namespace

int run_main_with_data(int argc, char** argv, const std::vector<EngineRegistration>& engines, const char* data) {
  using namespace lockstep::tools;
  // A --jobs worker knows it is one before anything starts a thread or a child (workers.h).
  claim_worker_role();
  // Then the process that cleans up after this one however it ends (drivers, temporaries; cleanup_guard.h).
  cleanup_guard::start();
  // LibTorch 2.x catches SIGHUP when it is loaded (and counts it): a run must end on SIGHUP, SIGINT and SIGTERM as
  // their default actions do (issue 29). A signal inherited as ignored (nohup) stays ignored.
  for (int s : {SIGHUP, SIGINT, SIGTERM}) {
    struct sigaction current {};
    if (::sigaction(s, nullptr, &current) == 0 && !(current.sa_flags & SA_SIGINFO) &&
        current.sa_handler == SIG_IGN)
      continue;
    if (current.sa_handler != SIG_DFL || (current.sa_flags & SA_SIGINFO)) std::signal(s, SIG_DFL);
  }
  if (data) set_data_dir(data);
  try {
    register_engines(engines);
  } catch (const std::exception& e) {
    std::cerr << "lockstep: " << e.what() << "\n";
    return kExitInputError;
  }
  CLI::App app{"lockstep: holds implementations of training-step semantics (grad accumulation, zero_grad, "
               "SGD, Adam, AdamW, RMSprop, Adagrad) against LibTorch, action by action.\n"
               "Exit codes: 0 success, 1 discrepancies found, 2 usage or input error."};
  app.require_subcommand(1);

  RunArgs run_args;
  CLI::App* run = app.add_subcommand(
      "run", "Run the named cases and N random programs on the implementation under test and compare it with "
             "LibTorch action by action; write reports.");
  run->add_option("--engine", run_args.engine,
                  "Implementation under test: impl, an engine this runner registers (" + registered_engines_text() +
                  "), a driver command line (fixtures/PROTOCOL.md), or oracle (self-check: LibTorch against LibTorch)")
      ->capture_default_str();
  run->add_option("--tolerance", run_args.tolerance_file, "Tolerance-overrides file")
      ->check(CLI::ExistingFile);
  run->add_option("--timeout-ms", run_args.timeout_ms, "Driver commands: per-program timeout")
      ->check(CLI::PositiveNumber)->capture_default_str();
  run->add_option("--cases", run_args.cases_dir, "Directory of named cases (default: the shipped ones)");
  run->add_option("--count", run_args.count, "Random programs after the named cases")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--seed", run_args.seed, "Seed of the random programs")->capture_default_str();
  run->add_option("--max-size", run_args.max_size, "Largest RapidCheck size (1..100)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  run->add_flag("--free-running", run_args.free_running,
                "Do not re-synchronise after each action; report how the error grows");
  run->add_flag("--special-values", run_args.special_values, "Allow NaN and +-Inf in every random program");
  run->add_option("--special-values-every", run_args.special_values_every,
                  "Allow NaN and +-Inf in every n-th random program (index i with i % n == n - 1); 0: never")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--report-dir", run_args.report_dir, "Where the Markdown, JSON and JUnit reports go (the last one given)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str();
  run->add_option("--case", run_args.only_case, "Run only this named case (to reproduce a failure)");
  run->add_option("--mutant", run_args.mutant, "Select a mutant of impl (see `lockstep mutants --list`)");
  run->add_option("--variant", run_args.variant,
                  "Select a legitimate variant of impl (rounds differently, must pass; tools/variants/variants.h)");
  run->add_option("--expectations,--expected-failures,--known-discrepancies", run_args.expectations_file,
                  "Expectations file: expected failures and masks (conformance/compare/expectations.h; default for "
                  "impl: conformance/compare/expectations.json)")
      ->check(CLI::ExistingFile);
  run->add_option("--shrink-seconds", run_args.shrink_seconds, "Time budget to shrink one failing program")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--features", run_args.features,
                  "Comma-separated feature names or globs: within each category they name (dtype, op, optimizer, "
                  "option, feature), only these are generated (`lockstep features` lists them)");
  run->add_option("--exclude-features", run_args.exclude_features,
                  "Comma-separated feature names or globs never generated (e.g. float64,adamw,'*.weight_decay')");
  run->add_option("--profile", run_args.profile,
                  "API profile (fixtures/profiles/NAME.json or a file; 'none': no profile). Default: the one the "
                  "driver's hello names");
  run->add_option("--index", run_args.only_index, "Run only this random program (to reproduce a failure)")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--jobs,-j", run_args.jobs,
                  "Worker processes (default: the machine's cores, one per 1000 random programs at most); the "
                  "reports are those of one process")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  run->add_option("--shard", run_args.shard,
                  "Run only slice INDEX/TOTAL (INDEX from 0): random program k when k % TOTAL == INDEX, the named "
                  "cases in slice 0; default: GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS when set. `lockstep merge` joins "
                  "the slices' reports");

  MergeArgs merge_args;
  CLI::App* merge = app.add_subcommand(
      "merge", "Merge the lockstep-report.json of every shard of one run (run --shard) into the reports of the "
               "whole run; exit 1 when the run failed");
  merge->add_option("reports", merge_args.reports, "lockstep-report.json of each shard")->required()
      ->check(CLI::ExistingFile);
  merge->add_option("--report-dir", merge_args.report_dir, "Where the merged Markdown, JSON and JUnit reports go")
      ->capture_default_str();

  TraceArgs trace_args;
  CLI::App* trace = app.add_subcommand("trace", "Run one program and print its trace (JSON, or --table)");
  trace->add_option("program", trace_args.program_file, "Program JSON file")->required();
  trace->add_option("--engine", trace_args.engine,
                    "oracle, impl, a registered engine, or a driver command line (run by /bin/sh -c; "
                    "fixtures/PROTOCOL.md): its own trace")
      ->capture_default_str();
  trace->add_option("--mutant", trace_args.mutant, "With --engine impl: a mutant of impl (lockstep mutants --list)");
  trace->add_option("--variant", trace_args.variant, "With --engine impl: a legitimate variant of impl");
  trace->add_option("--timeout-ms", trace_args.timeout_ms, "A driver command: the program's timeout")
      ->check(CLI::PositiveNumber)->capture_default_str();
  trace->add_flag("--table", trace_args.table, "A readable per-action table instead of JSON");


  // --- fixtures (fixtures/README.md, fixtures/PROTOCOL.md) ---
  ReplayArgs replay_args;
  CLI::App* replay = app.add_subcommand(
      "replay", "Check an engine against the golden fixtures offline (no LibTorch at run time): impl, oracle, "
                "or a driver command speaking fixtures/PROTOCOL.md");
  replay->add_option("--fixtures", replay_args.fixtures_dir, "Fixture directory (default: the shipped corpus)");
  replay->add_option("--engine", replay_args.engine,
                     "impl, oracle, a registered engine, or a driver command line (run by /bin/sh -c)")
      ->capture_default_str();
  replay->add_option("--expectations,--expected-failures", replay_args.expected_failures_file,
                     "Expected-failures file (id pattern, reason, category)")->check(CLI::ExistingFile);
  replay->add_option("--tolerance", replay_args.tolerance_file, "Tolerance-overrides file")
      ->check(CLI::ExistingFile);
  replay->add_option("--report-dir", replay_args.report_dir,
                     "Where replay-report.{md,json,xml} go (the last one given)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str();
  replay->add_option("--timeout-ms", replay_args.timeout_ms, "Per-program timeout of a driver command")
      ->check(CLI::PositiveNumber)->capture_default_str();
  replay->add_option("--only", replay_args.only, "Only fixtures whose id matches one of these comma-separated globs");
  replay->add_option("--tags", replay_args.tags, "Only fixtures carrying every one of these comma-separated tags");
  replay->add_option("--exclude-tags", replay_args.exclude_tags, "No fixture carrying any of these comma-separated tags");
  replay->add_option("--features", replay_args.features,
                     "Within each category named, only fixtures whose programs use only these features");
  replay->add_option("--exclude-features", replay_args.exclude_features,
                     "No fixture whose program uses one of these features (names or globs)");
  replay->add_option("--profile", replay_args.profile,
                     "API profile (NAME, FILE or none); default: the one the driver's hello names");
  replay->add_flag("--verbose", replay_args.verbose, "A line per fixture, passes included");
  replay->add_option("--jobs,-j", replay_args.jobs,
                     "Worker processes, each with its own engine or driver (default: the machine's cores, one per "
                     "200 fixtures at most); the output and reports are those of one process")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));

  FixturesGenerateArgs generate_args;
  CLI::App* fixtures = app.add_subcommand("fixtures", "The golden fixture corpus");
  fixtures->require_subcommand(1);
  CLI::App* generate = fixtures->add_subcommand(
      "generate", "Regenerate fixtures/corpus from the oracle (deterministic) and the coverage table");
  generate->add_option("--out", generate_args.out_dir, "Output directory (default: the source tree's fixtures/)");
  generate->add_option("--seed", generate_args.seed, "Seed of the random corpus")->capture_default_str();
  generate->add_option("--max-random", generate_args.max_random, "At most this many random fixtures")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  generate->add_flag("--version-dependent-only", generate_args.version_dependent_only,
                     "Write only the named cases whose checks depend on the PyTorch version, as this oracle's "
                     "recordings (LibTorch 2.x: corpus/cases-torch2/ID-torch2.json; SEMANTICS 12.5)");

  MutantsArgs mutants_args;
  CLI::App* mutants = app.add_subcommand(
      "mutants", "Run the suite against every mutant of impl (tools/mutants/mutants.h) and print the kill table; exit 1 "
                 "if any mutant survives");
  mutants->add_option("--count", mutants_args.count, "Random programs per mutant, at most (stops at the first kill)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}))
      ->capture_default_str();
  mutants->add_option("--seed", mutants_args.seed, "Seed of the random programs")->capture_default_str();
  mutants->add_option("--max-size", mutants_args.max_size, "Largest RapidCheck size (1..100)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  mutants->add_option("--report-dir", mutants_args.report_dir, "Where mutants-report.md and .json go")
      ->capture_default_str();
  mutants->add_flag("--list", mutants_args.list, "List the mutants and exit");
  mutants->add_option("--only", mutants_args.only, "Run only this mutant");
  mutants->add_option("--shrink-seconds", mutants_args.shrink_seconds, "Time budget to shrink one killing program")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  mutants->add_option("--cases", mutants_args.cases_dir, "Directory of named cases (default: the shipped ones)");
  mutants->add_option("--paths", mutants_args.paths,
                      "Where the suite reaches each mutant: in-process (lockstep), driver (impl's protocol driver, "
                      "free-running), or both")
      ->check(CLI::IsMember({"both", "in-process", "driver"}))
      ->capture_default_str();
  mutants->add_flag("--no-replay", [&](int64_t) { mutants_args.replay = false; },
                    "Do not replay the fixture corpus on each mutant");
  mutants->add_option("--fixtures", mutants_args.fixtures_dir, "Fixture corpus to replay (default: the shipped one)");
  mutants->add_option("--jobs,-j", mutants_args.jobs,
                      "Worker processes, the mutants split over them (default: the machine's cores)")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  mutants->add_option("--impl-driver", mutants_args.impl_driver,
                      "lockstep-impl-driver to use for the driver path (default: beside this binary)");

  MatrixArgs matrix_args;
  CLI::App* matrix = app.add_subcommand(
      "matrix", "The conformance matrix (implementations x feature areas: passed / failed / unsupported) from the JSON "
                "reports of run and replay, as conformance-matrix.md and a self-contained conformance-matrix.html "
                "that plots the ULP error per action of every failing case");
  matrix->add_option("reports", matrix_args.reports, "lockstep-report.json and replay-report.json files")
      ->required()
      ->check(CLI::ExistingFile);
  matrix->add_option("--out-dir", matrix_args.out_dir, "Where conformance-matrix.md and .html go")->capture_default_str();
  matrix->add_option("--max-plots", matrix_args.max_plots, "Plots per implementation in the HTML page")
      ->capture_default_str();
  matrix->add_flag("--strict", matrix_args.strict,
                   "Exit 1 when a case failed that no expectation explains (known deviations do not count)");

  bool features_json = false;
  CLI::App* features = app.add_subcommand(
      "features", "List the feature names a driver's hello, --features, --exclude-features and profiles use "
                  "(SEMANTICS §13); --optional-fields: the optional trace fields its \"observes\" may name");
  features->add_flag("--json", features_json, "As a JSON array of {name, category, meaning}");
  bool features_optional_fields = false;
  features->add_flag("--optional-fields", features_optional_fields,
                     "List the optional trace fields a hello's \"observes\" may name instead (fixtures/PROTOCOL.md 4a)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A mistyped subcommand or flag: said with the nearest name instead of CLI11's "A subcommand is required".
    const std::string hint = e.get_exit_code() == 0 ? "" : did_you_mean_hint(app, argc, argv);
    if (!hint.empty()) {
      std::cerr << "lockstep: " << hint << "\nRun with --help for more information.\n";
      return kExitInputError;
    }
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitInputError;
  }

  try {
    if (*run) {
      return command_run(run_args);
    }
    if (*trace) return command_trace(trace_args);
    if (*mutants) return command_mutants(mutants_args);
    if (*replay) return command_replay(replay_args);
    if (*matrix) return command_matrix(matrix_args);
    if (*merge) return command_merge(merge_args);
    if (*generate) return command_fixtures_generate(generate_args);
    if (*features) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      auto add = [&](const std::string& category, const std::string& name, const std::string& meaning) {
        if (features_json) list.push_back({{"name", name}, {"category", category}, {"meaning", meaning}});
        else std::cout << category << "\t" << name << "\t" << meaning << "\n";
      };
      if (features_optional_fields) {
        // The optional trace fields a hello's "observes" names (conformance/program/optional_fields.h).
        for (const lockstep::OptionalField& f : lockstep::optional_fields())
          add("observes", f.name, std::string(f.what) + " (" + f.semantics + ")");
      } else {
        for (const lockstep::FeatureInfo& f : lockstep::all_features()) add(f.category, f.name, f.meaning);
      }
      if (features_json) std::cout << list.dump(2) << "\n";
      return kExitOk;
    }
  } catch (const std::bad_alloc&) {
    // The program limits keep every accepted input within bounded memory (docs/programs-and-limits.md "Limits"); this is a machine
    // with less than that, or a bug: said as such, never an abort.
    std::cerr << "lockstep: out of memory: this machine could not hold what the run needed (docs/programs-and-limits.md \"Limits\" "
                 "gives the memory the limits allow)\n";
    return kExitInputError;
  } catch (const std::exception& e) {
    std::cerr << "lockstep: " << e.what() << "\n";
    return kExitInputError;
  }
  return kExitInputError;
}

}  // namespace lockstep
