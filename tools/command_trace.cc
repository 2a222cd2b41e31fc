// `lockstep trace PROGRAM.json [--engine oracle|impl|COMMAND] [--mutant NAME | --variant NAME] [--table]`: one
// program (a program file, or a fixture's or named case's "program"), its trace on stdout. A driver command (fixtures/PROTOCOL.md) gets the program as one request, so a
// driver author sees the per-action table of their own driver beside the oracle's.
#include <iostream>

#include <nlohmann/json.hpp>

#include "conformance/run/driver_protocol.h"
#include "conformance/run/interpreter.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/program_json.h"
#include "conformance/program/trace_json.h"
#include "tools/commands.h"
#include "tools/engines.h"
#include "tools/trace_table.h"
#include <CLI/CLI.hpp>
#include "tools/cli_options.h"

namespace lockstep::tools {

namespace {

// The driver's trace, or a message on stderr and the exit status: 1 when it answered `unsupported` (the program
// is out of its scope), 2 when it failed (it could not start, crashed, timed out or wrote garbage).
int trace_on_driver(const TraceArgs& args, const Program& program, Trace& trace) {
  DriverOptions options;
  options.timeout = std::chrono::milliseconds(args.timeout_ms);
  ExternalDriver driver(args.engine, options);
  DriverOutcome out = run_on_driver(driver, "trace", program_to_json(program));
  switch (out.kind) {
    case DriverOutcome::Kind::Trace:
      trace = std::move(out.trace);
      return kExitOk;
    case DriverOutcome::Kind::Unsupported:
      std::cerr << "lockstep trace: the driver answered unsupported '" << out.feature << "'\n";
      return kExitDiscrepancies;
    case DriverOutcome::Kind::Failure:
      break;
  }
  if (driver.startup_failed()) {  // the message names the command, how it ended and its stderr
    std::cerr << "lockstep trace: " << driver.startup_failure() << "\n";
    return kExitInputError;
  }
  std::cerr << "lockstep trace: the driver '" << args.engine << "' failed on the program: " << out.failure;
  if (!out.stderr_excerpt.empty()) std::cerr << "\n  driver stderr: " << out.stderr_excerpt.substr(0, 1000);
  std::cerr << "\n";
  return kExitInputError;
}

}  // namespace

int command_trace(const TraceArgs& args) {
  Program program;
  try {
    program = read_program_file(args.program_file);
  } catch (const InputError& e) {
    // A fixture or a named case holds its program in "program": trace that one (what a driver author has at hand).
    nlohmann::ordered_json doc;
    try {
      doc = parse_json_text(read_text_file(args.program_file), 512);
    } catch (const std::exception&) {
    }
    if (!doc.is_object() || !doc.contains("program") || doc.contains("params")) {
      std::cerr << "lockstep trace: " << e.what() << "\n";
      return kExitInputError;
    }
    try {
      program = program_from_text(doc["program"].dump(), args.program_file + " (its \"program\")");
    } catch (const InputError& inner) {
      std::cerr << "lockstep trace: " << inner.what() << "\n";
      return kExitInputError;
    }
  }
  Trace trace;
  if (is_engine_name(args.engine)) {
    auto engine = make_engine(args.engine, args.mutant, args.variant);
    trace = run_program(program, *engine);
  } else {
    if (!args.mutant.empty() || !args.variant.empty()) {
      std::cerr << "lockstep trace: --mutant and --variant apply to the impl engine only (a driver command got "
                   "them; for impl's driver write them into the command: 'lockstep-impl-driver --mutant NAME')\n";
      return kExitInputError;
    }
    if (int status = trace_on_driver(args, program, trace); status != kExitOk) return status;
  }
  if (args.table) std::cout << format_trace_table(program, trace);
  else std::cout << trace_to_json(trace).dump(2) << "\n";
  return kExitOk;
}

CLI::App* add_trace_command(CLI::App& app, TraceArgs& args) {
  CLI::App* trace = app.add_subcommand("trace", "Run one program and print its trace (JSON, or --table)");
  trace->add_option("program", args.program_file, "Program JSON file")->required();
  add_implementation_options(trace, ImplementationOptions{&args.engine, &args.timeout_ms, &args.mutant, &args.variant},
                             "oracle, impl, a registered engine, or a driver command line (run by /bin/sh -c; "
                             "fixtures/PROTOCOL.md): its own trace",
                             "A driver command: the program's timeout");
  trace->add_flag("--table", args.table, "A readable per-action table instead of JSON");
  return trace;
}

}  // namespace lockstep::tools
