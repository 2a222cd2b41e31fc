// `lockstep trace PROGRAM.json [--engine oracle|impl] [--table]`: one program, its trace on stdout.
#include <iostream>

#include "conformance/run/interpreter.h"
#include "conformance/program/program_json.h"
#include "conformance/program/trace_json.h"
#include "tools/commands.h"
#include "tools/engines.h"
#include "tools/trace_table.h"

namespace lockstep::tools {

int command_trace(const TraceArgs& args) {
  Program program;
  try {
    program = read_program_file(args.program_file);
  } catch (const InputError& e) {
    std::cerr << "lockstep trace: " << e.what() << "\n";
    return kExitInputError;
  }
  auto engine = make_engine(args.engine);
  Trace trace = run_program(program, *engine);
  if (args.table) std::cout << format_trace_table(program, trace);
  else std::cout << trace_to_json(trace).dump(2) << "\n";
  return kExitOk;
}

}  // namespace lockstep::tools
