// `lockstep run`: the named cases, then random programs, on the engine under test.
#include <chrono>
#include <iostream>

#include <fmt/format.h>

#include "conformance/interpreter.h"
#include "conformance/named_case.h"
#include "conformance/program_json.h"
#include "tools/commands.h"
#include "tools/engines.h"

namespace lockstep::tools {

int command_run(const RunArgs& args) {
  std::vector<NamedCase> cases;
  try {
    cases = load_cases(args.cases_dir.empty() ? default_cases_dir() : args.cases_dir);
  } catch (const InputError& e) {
    std::cerr << "lockstep run: " << e.what() << "\n";
    return kExitInputError;
  }
  int failed = 0, passed = 0;
  for (const NamedCase& c : cases) {
    if (!args.only_case.empty() && c.id != args.only_case) continue;
    auto engine = make_engine(args.engine);
    Trace trace = run_program(c.program, *engine);
    std::vector<std::string> failures = check_case(c, trace);
    if (failures.empty()) {
      ++passed;
      fmt::print("  pass  {}\n", c.id);
    } else {
      ++failed;
      fmt::print("  FAIL  {}\n", c.id);
      for (const auto& f : failures) fmt::print("        {}\n", f);
      fmt::print("        reproduce: lockstep run --engine {} --case {} --count 0\n", args.engine, c.id);
    }
  }
  fmt::print("named cases on {}: {} passed, {} failed\n", args.engine, passed, failed);
  return failed ? kExitDiscrepancies : kExitOk;
}

}  // namespace lockstep::tools
