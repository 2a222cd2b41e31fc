// lockstep: the command line. `lockstep --help` lists the subcommands; each has its own --help.
#include <CLI/CLI.hpp>

#include <iostream>

#include "tools/commands.h"

int main(int argc, char** argv) {
  using namespace lockstep::tools;
  CLI::App app{"lockstep: holds implementations of training-step semantics (grad accumulation, zero_grad, "
               "SGD, Adam, AdamW) against LibTorch, action by action.\n"
               "Exit codes: 0 success, 1 discrepancies found, 2 usage or input error."};
  app.require_subcommand(1);

  RunArgs run_args;
  CLI::App* run = app.add_subcommand(
      "run", "Run the named cases and N random programs on an engine; on any engine but the oracle, compare "
             "it with LibTorch action by action and write reports.");
  run->add_option("--engine", run_args.engine, "Engine under test: oracle or impl")
      ->check(CLI::IsMember({"oracle", "impl"}))
      ->capture_default_str();
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
  run->add_flag("--special-values", run_args.special_values, "Allow NaN and +-Inf in random programs");
  run->add_option("--report-dir", run_args.report_dir, "Where the Markdown, JSON and JUnit reports go")
      ->capture_default_str();
  run->add_option("--case", run_args.only_case, "Run only this named case (to reproduce a failure)");
  run->add_option("--index", run_args.only_index, "Run only this random program (to reproduce a failure)")
      ->check(CLI::NonNegativeNumber);

  TraceArgs trace_args;
  CLI::App* trace = app.add_subcommand("trace", "Run one program and print its trace (JSON, or --table)");
  trace->add_option("program", trace_args.program_file, "Program JSON file")->required();
  trace->add_option("--engine", trace_args.engine, "oracle or impl")
      ->check(CLI::IsMember({"oracle", "impl"}))
      ->capture_default_str();
  trace->add_flag("--table", trace_args.table, "A readable per-action table instead of JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitInputError;
  }

  try {
    if (*run) return command_run(run_args);
    if (*trace) return command_trace(trace_args);
  } catch (const std::exception& e) {
    std::cerr << "lockstep: " << e.what() << "\n";
    return kExitInputError;
  }
  return kExitInputError;
}
