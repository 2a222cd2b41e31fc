// The implementation under test as `lockstep run` and `lockstep mutants` hold it against the oracle: an
// in-process Engine (compared in lockstep or free-running, engine.h) or a driver command speaking
// fixtures/PROTOCOL.md (whole programs, compared without re-synchronisation). Both give a LockstepResult from
// the same comparison (compare/trace_comparison.h), so one loop runs named cases and random programs on
// either, shrinks failures by re-running candidate programs through it, and writes the same reports.
//
// Example:
//   auto subject = driver_implementation([] { return make_torch_engine(); }, "python3 my_driver.py", {}, {});
//   LockstepResult r = subject->run("random-7", program);
//   if (!subject->fatal_error().empty()) ... the driver could not start: end the run ...
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "conformance/compare/tolerance.h"
#include "conformance/program/program.h"
#include "conformance/program/trace.h"
#include "conformance/run/capabilities.h"
#include "conformance/run/engine.h"
#include "conformance/run/driver_protocol.h"
#include "conformance/run/lockstep_runner.h"

namespace lockstep {

using EngineFactory = std::function<std::unique_ptr<Engine>()>;

class TestedImplementation {
 public:
  virtual ~TestedImplementation() = default;
  virtual std::string name() = 0;
  virtual RunMode mode() const = 0;
  // `program` against a fresh oracle; `id` names it to a driver. A program the implementation declines
  // (a driver's "unsupported") passes with LockstepResult::skipped set.
  // `mask`: the case's masks (expectations.h).
  virtual LockstepResult run(const std::string& id, const Program& program, const FieldMask& mask = {}) = 0;
  // The trace of `program` alone (the claims of named cases are checked on it); nullopt, with `why`, when
  // the implementation gave none.
  virtual std::optional<Trace> trace(const std::string& id, const Program& program, std::string& why) = 0;
  // The oracle's trace of `program`, the one run() compares with (its zero_grad() default spelled out as the
  // implementation's where they differ, SEM-12.1); nullopt, with `why`, when the oracle gave none. A driver oracle
  // answers from its last run() when that was the same program (lockstep mutants' allclose column reads it after).
  virtual std::optional<Trace> oracle_trace(const std::string& id, const Program& program, std::string& why) = 0;
  // Non-empty when the implementation cannot run at all (a driver that fails to start): the run must end.
  virtual std::string fatal_error() const { return ""; }
  // After trace() gave nullopt: non-empty when the implementation declined the program (a driver's "unsupported").
  virtual std::string declined() const { return ""; }
  // The oracle's own announcement where the oracle is a driver (against_driver_oracle); null: LibTorch in-process.
  virtual const Capabilities* oracle_capabilities() { return nullptr; }

  // What the implementation announced about itself (capabilities.h). A driver is started for its hello on the
  // first call (check fatal_error() after it); an in-process engine supports everything.
  virtual const Capabilities& capabilities() = 0;
  // SEM-12.1: what the implementation's zero_grad() does, and what the oracle's does.
  virtual bool zero_grad_default_none() = 0;
  virtual bool oracle_zero_grad_default_none() = 0;
  // The PyTorch version named case checks with "when": {"pytorch": ...} are evaluated against: the declared one;
  // else, when the defaults differ, "2.0" or "1.13" as the implementation's default says; else the oracle's.
  std::string pytorch_version();
  // The rule text when the oracle's zero_grad() is spelled out as the implementation's default
  // (zero_grad_default.h); empty when both follow the same default.
  std::string zero_grad_rule();

 protected:
  virtual std::string oracle_version() = 0;
};

std::unique_ptr<TestedImplementation> in_process_implementation(EngineFactory make_oracle, EngineFactory make_under_test,
                                                 LockstepOptions options);

std::unique_ptr<TestedImplementation> driver_implementation(EngineFactory make_oracle, std::string command,
                                             DriverOptions driver_options, Tolerance tolerance);

// `subject` judged against a driver as the oracle (`lockstep run --oracle CMD`): what LibTorch's C++ API lacks
// (maximize, SEMANTICS 20.2) is checked against PyTorch's Python API through its adapter. Each program goes to the
// oracle driver and to the subject (its trace() alone), and the two traces are compared as recorded ones
// (free-running). Where their zero_grad() defaults differ, the oracle's program spells out the subject's (SEM-12.1).
//
//   auto subject = against_driver_oracle(in_process_implementation(make_oracle, make_impl, {}),
//                                        "python3 tools/adapters/pytorch_driver.py", {}, {});
std::unique_ptr<TestedImplementation> against_driver_oracle(std::unique_ptr<TestedImplementation> subject,
                                                            std::string oracle_command, DriverOptions driver_options,
                                                            Tolerance tolerance);

// Two recorded traces of `program` compared as in free-running mode (lockstep_runner.h): every record, the
// first failing one reported, a structural difference stops the comparison, growth rows per record.
LockstepResult compare_recorded_traces(const Program& program, const Trace& expected, const Trace& actual,
                                       const Tolerance& tolerance, const FieldMask& mask = {});

}  // namespace lockstep
