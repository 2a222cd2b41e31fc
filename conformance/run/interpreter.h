// The interpreter: runs a Program on an Engine and records a Trace (SEMANTICS §8).
//
// An action that fails does not end the program: its record holds the error (a normalised kind and the
// engine's own message) and the state after it, and the next action runs.
//
// Example, whole program:
//   lockstep::Trace trace = lockstep::run_program(program, engine);
// Example, action by action (the lockstep comparator interleaves two engines this way):
//   lockstep::ProgramRunner runner(program, engine);
//   Record init = runner.setup();
//   for (size_t i = 0; i < program.actions.size(); ++i) Record r = runner.run_action(i);
#pragma once

#include "conformance/run/engine.h"
#include "conformance/program/program.h"
#include "conformance/program/trace.h"

namespace lockstep {

class ProgramRunner {
 public:
  // `program` must be validated (validate()) and outlive the runner.
  ProgramRunner(const Program& program, Engine& engine) : program_(program), engine_(engine) {}

  // Creates the parameters and the optimizer; the record after it.
  Record setup();
  // Runs program.actions[i]; the record after it.
  Record run_action(size_t i);

  Engine& engine() { return engine_; }

 private:
  const Program& program_;
  Engine& engine_;
  bool has_optimizer_ = false;  // setup() built the program's optimizer
};

Trace run_program(const Program& program, Engine& engine);

}  // namespace lockstep
