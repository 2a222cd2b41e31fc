// In-process engines and drivers as the implementation under test (see under_test.h).
#include "conformance/run/tested_implementation.h"

#include <exception>
#include <utility>

#include <fmt/format.h>

#include "conformance/compare/trace_comparison.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/program_json.h"
#include "conformance/run/interpreter.h"
#include "conformance/run/zero_grad_default.h"

namespace lockstep {

LockstepResult compare_recorded_traces(const Program& program, const Trace& expected, const Trace& actual,
                                       const Tolerance& tolerance, const FieldMask& mask) {
  LockstepResult r;
  r.oracle_engine = expected.engine;
  r.under_test_engine = actual.engine;
  r.mode = RunMode::FreeRunning;
  TraceComparison comparison(program, tolerance, mask);
  auto done = [&]() -> LockstepResult {
    r.masked = comparison.masked();
    r.optional_fields = comparison.optional_fields();
    r.imprecision = comparison.imprecision();
    return std::move(r);
  };
  auto record = [&](std::optional<size_t> index, const std::string& action, std::vector<Difference> d,
                    const ErrorStats& stats) {
    r.growth.push_back(GrowthRow{index, action, stats});
    if (d.empty()) return true;
    const bool structural = has_structural_difference(d);
    if (r.passed) {
      r.passed = false;
      r.failed_at_setup = !index;
      r.failed_action = index;
      r.failed_action_name = action;
      r.differences = std::move(d);
    } else if (structural) {
      r.stop_reason = fmt::format("structural difference at {}: {}: expected {}, actual {}",
                                  index ? fmt::format("action {} ({})", *index, action) : std::string("setup"),
                                  d.front().path, d.front().expected_text, d.front().actual_text);
    }
    return !structural;
  };
  ErrorStats stats;
  if (!record(std::nullopt, "init", comparison.compare_init(expected.init, actual.init, &stats), stats))
    return done();
  for (size_t i = 0; i < program.actions.size(); ++i) {
    const std::string name = action_name(program.actions[i].kind);
    if (i >= actual.records.size() || i >= expected.records.size()) {
      if (r.passed) {
        r.passed = false;
        r.failed_action = i;
        r.failed_action_name = name;
      }
      r.engine_failure = fmt::format("the trace has {} records for a program of {} actions", actual.records.size(),
                                     program.actions.size());
      return done();
    }
    stats = ErrorStats{};
    r.actions_run = i + 1;
    if (!record(i, name, comparison.compare_action(i, expected.records[i], actual.records[i], &stats), stats))
      return done();
    if (!comparison.ended_at().empty()) {  // SEMANTICS §9.2: the later records follow from it
      r.stop_reason = comparison.ended_why() + " at " + comparison.ended_at() +
                      ": the later records follow from it and are not compared";
      return done();
    }
  }
  if (actual.records.size() > program.actions.size() && r.passed) {
    r.passed = false;
    r.engine_failure = fmt::format("the trace has {} records for a program of {} actions", actual.records.size(),
                                   program.actions.size());
  }
  return done();
}

std::string TestedImplementation::pytorch_version() {
  const Capabilities& caps = capabilities();
  if (!caps.pytorch_version.empty()) return caps.pytorch_version;
  const bool mine = zero_grad_default_none(), theirs = oracle_zero_grad_default_none();
  if (mine != theirs) return mine ? "2.0" : "1.13";
  return oracle_version();
}

std::string TestedImplementation::zero_grad_rule() {
  const bool mine = zero_grad_default_none(), theirs = oracle_zero_grad_default_none();
  return mine == theirs ? std::string() : zero_grad_default_rule_text(mine, theirs);
}

namespace {

std::string exception_text(const std::exception& e) {
  if (const auto* ee = dynamic_cast<const EngineError*>(&e)) return fmt::format("{} [{}]", e.what(), ee->kind());
  return e.what();
}

// LibTorch's trace of `program` (`make_oracle`), its zero_grad() default spelled out as `mine` where they differ.
std::optional<Trace> libtorch_trace(const EngineFactory& make_oracle, bool mine, const Program& program,
                                    std::string& why) {
  try {
    auto oracle = make_oracle();
    if (mine != oracle->zero_grad_sets_to_none_by_default()) oracle = with_zero_grad_default(std::move(oracle), mine);
    return run_program(program, *oracle);
  } catch (const std::exception& e) {
    why = "the oracle threw: " + exception_text(e);
    return std::nullopt;
  }
}

class InProcess : public TestedImplementation {
 public:
  InProcess(EngineFactory make_oracle, EngineFactory make_under_test, LockstepOptions options)
      : make_oracle_(std::move(make_oracle)), make_under_test_(std::move(make_under_test)), options_(options) {}

  std::string name() override { return make_under_test_()->name(); }
  RunMode mode() const override { return options_.mode; }

  LockstepResult run(const std::string&, const Program& program, const FieldMask& mask) override {
    auto under_test = make_under_test_();
    auto oracle = make_oracle_();
    const bool mine = under_test->zero_grad_sets_to_none_by_default();
    if (mine != oracle->zero_grad_sets_to_none_by_default()) oracle = with_zero_grad_default(std::move(oracle), mine);
    return run_lockstep(program, *oracle, *under_test, options_, mask);
  }

  const Capabilities& capabilities() override {
    if (caps_.name.empty()) caps_.name = make_under_test_()->name();
    return caps_;
  }
  bool zero_grad_default_none() override { return make_under_test_()->zero_grad_sets_to_none_by_default(); }
  bool oracle_zero_grad_default_none() override { return make_oracle_()->zero_grad_sets_to_none_by_default(); }

  std::optional<Trace> trace(const std::string&, const Program& program, std::string& why) override {
    try {
      auto engine = make_under_test_();
      return run_program(program, *engine);
    } catch (const std::exception& e) {
      why = exception_text(e);
      return std::nullopt;
    }
  }
  std::optional<Trace> oracle_trace(const std::string&, const Program& program, std::string& why) override {
    return libtorch_trace(make_oracle_, zero_grad_default_none(), program, why);
  }

 protected:
  std::string oracle_version() override { return make_oracle_()->name(); }

 private:
  EngineFactory make_oracle_, make_under_test_;
  LockstepOptions options_;
  Capabilities caps_;
};

class Driver : public TestedImplementation {
 public:
  Driver(EngineFactory make_oracle, std::string command, DriverOptions driver_options, Tolerance tolerance)
      : make_oracle_(std::move(make_oracle)), driver_(std::move(command), driver_options), tolerance_(tolerance) {}

  std::string name() override { return driver_.command(); }
  RunMode mode() const override { return RunMode::FreeRunning; }

  LockstepResult run(const std::string& id, const Program& program, const FieldMask& mask) override {
    LockstepResult r;
    r.mode = RunMode::FreeRunning;
    r.under_test_engine = driver_.command();
    Trace expected;
    try {
      auto oracle = make_oracle_();
      r.oracle_engine = oracle->name();
      const bool mine = zero_grad_default_none();
      if (mine != oracle->zero_grad_sets_to_none_by_default()) oracle = with_zero_grad_default(std::move(oracle), mine);
      expected = run_program(program, *oracle);
    } catch (const std::exception& e) {
      r.passed = false;
      r.engine_failure = "the oracle threw: " + exception_text(e);
      return r;
    }
    std::string why;
    std::optional<Trace> actual = trace(id, program, why);
    if (!actual) {
      if (!skipped_.empty()) {
        r.skipped = skipped_;
        return r;
      }
      r.passed = false;
      r.engine_failure = why;
      return r;
    }
    LockstepResult compared = compare_recorded_traces(program, expected, *actual, tolerance_, mask);
    compared.oracle_engine = r.oracle_engine;
    compared.under_test_engine = driver_.command();
    compared.driver_stderr = stderr_excerpt_;
    return compared;
  }

  // The driver's answer to the last request is kept: a named case's claim checks read the trace its
  // comparison already asked for, instead of sending the program twice.
  std::optional<Trace> trace(const std::string& id, const Program& program, std::string& why) override {
    nlohmann::ordered_json program_json = program_to_json(program);
    std::string request = driver_request_line(id, program_json);
    if (last_trace_ && request == last_request_) return last_trace_;
    skipped_.clear();
    stderr_excerpt_.clear();
    last_trace_.reset();
    last_request_ = request;
    DriverOutcome out = run_on_driver(driver_, id, program_json);
    stderr_excerpt_ = out.stderr_excerpt;
    switch (out.kind) {
      case DriverOutcome::Kind::Trace:
        last_trace_ = std::move(out.trace);
        return last_trace_;
      case DriverOutcome::Kind::Unsupported:
        skipped_ = fmt::format("the driver answered unsupported '{}'", out.feature);
        why = skipped_;
        return std::nullopt;
      case DriverOutcome::Kind::Failure:
        why = fmt::format("driver failure ({}): {}", out.failure_category, out.failure);
        if (!out.stderr_excerpt.empty()) why += "\ndriver stderr:\n" + out.stderr_excerpt;
        return std::nullopt;
    }
    return std::nullopt;
  }

  std::string declined() const override { return skipped_; }

  std::optional<Trace> oracle_trace(const std::string&, const Program& program, std::string& why) override {
    return libtorch_trace(make_oracle_, zero_grad_default_none(), program, why);
  }

  std::string fatal_error() const override {
    if (!hello_error_.empty()) return hello_error_;
    return driver_.startup_failed() ? driver_.startup_failure() : std::string();
  }

  const Capabilities& capabilities() override {
    if (caps_read_) return caps_;
    caps_read_ = true;
    if (!driver_.ensure_started()) return caps_;
    try {
      caps_ = driver_capabilities(driver_.hello());
    } catch (const JsonError& e) {
      hello_error_ = fmt::format("the driver '{}' answered the hello with capabilities lockstep cannot read: {}: {}",
                                 driver_.command(), e.pointer(), e.message());
    }
    return caps_;
  }
  bool zero_grad_default_none() override {
    return resolved_zero_grad_default_none(capabilities(), oracle_zero_grad_default_none());
  }
  bool oracle_zero_grad_default_none() override {
    if (!oracle_default_) oracle_default_ = make_oracle_()->zero_grad_sets_to_none_by_default();
    return *oracle_default_;
  }

 protected:
  std::string oracle_version() override { return make_oracle_()->name(); }

 private:
  bool caps_read_ = false;
  Capabilities caps_;
  std::string hello_error_;
  std::optional<bool> oracle_default_;
  EngineFactory make_oracle_;
  ExternalDriver driver_;
  Tolerance tolerance_;
  std::string skipped_;
  std::string stderr_excerpt_;
  std::string last_request_;
  std::optional<Trace> last_trace_;
};

class AgainstDriverOracle : public TestedImplementation {
 public:
  AgainstDriverOracle(std::unique_ptr<TestedImplementation> subject, std::string command, DriverOptions driver_options,
                      Tolerance tolerance)
      : subject_(std::move(subject)), oracle_(std::move(command), driver_options), tolerance_(tolerance) {}

  std::string name() override { return subject_->name(); }
  RunMode mode() const override { return RunMode::FreeRunning; }

  LockstepResult run(const std::string& id, const Program& program, const FieldMask& mask) override {
    LockstepResult r;
    r.mode = RunMode::FreeRunning;
    r.oracle_engine = oracle_.command();
    r.under_test_engine = subject_->name();
    const DriverOutcome& expected = oracle_outcome(id, program);
    if (expected.kind == DriverOutcome::Kind::Unsupported) {
      r.skipped = fmt::format("the oracle driver answered unsupported '{}'", expected.feature);
      return r;
    }
    if (expected.kind == DriverOutcome::Kind::Failure) {
      r.passed = false;
      r.engine_failure = fmt::format("the oracle driver failed ({}): {}", expected.failure_category, expected.failure);
      if (!expected.stderr_excerpt.empty()) r.engine_failure += "\noracle driver stderr:\n" + expected.stderr_excerpt;
      return r;
    }
    std::string why;
    std::optional<Trace> actual = subject_->trace(id, program, why);
    if (!actual) {
      r.skipped = subject_->declined();
      if (r.skipped.empty()) {
        r.passed = false;
        r.engine_failure = why;
      }
      return r;
    }
    LockstepResult compared = compare_recorded_traces(program, expected.trace, *actual, tolerance_, mask);
    compared.oracle_engine = r.oracle_engine;
    compared.under_test_engine = r.under_test_engine;
    return compared;
  }

  std::optional<Trace> trace(const std::string& id, const Program& program, std::string& why) override {
    return subject_->trace(id, program, why);
  }
  std::optional<Trace> oracle_trace(const std::string& id, const Program& program, std::string& why) override {
    const DriverOutcome& out = oracle_outcome(id, program);
    if (out.kind == DriverOutcome::Kind::Trace) return out.trace;
    why = out.kind == DriverOutcome::Kind::Unsupported
              ? fmt::format("the oracle driver answered unsupported '{}'", out.feature)
              : fmt::format("the oracle driver failed ({}): {}", out.failure_category, out.failure);
    return std::nullopt;
  }
  std::string declined() const override { return subject_->declined(); }

  std::string fatal_error() const override {
    if (!oracle_error_.empty()) return oracle_error_;
    if (oracle_.startup_failed()) return "the oracle driver cannot start: " + oracle_.startup_failure();
    return subject_->fatal_error();
  }

  const Capabilities& capabilities() override { return subject_->capabilities(); }
  const Capabilities* oracle_capabilities() override {
    if (!oracle_read_) {
      oracle_read_ = true;
      if (oracle_.ensure_started()) {
        try {
          oracle_caps_ = driver_capabilities(oracle_.hello());
        } catch (const JsonError& e) {
          oracle_error_ = fmt::format("the oracle driver '{}' answered the hello with capabilities lockstep cannot read: "
                                      "{}: {}", oracle_.command(), e.pointer(), e.message());
        }
      }
    }
    return &oracle_caps_;
  }
  bool zero_grad_default_none() override { return subject_->zero_grad_default_none(); }
  // As the oracle declares it; nothing declared: LibTorch 1.13's, as an oracle without a version is taken to be.
  bool oracle_zero_grad_default_none() override {
    return resolved_zero_grad_default_none(*oracle_capabilities(), false);
  }

 protected:
  std::string oracle_version() override {
    const Capabilities& caps = *oracle_capabilities();
    return caps.pytorch_version.empty() ? oracle_.command() : caps.pytorch_version;
  }

 private:
  // The oracle driver's answer for `program` (its zero_grad() default spelled out as the subject's, SEM-12.1). The last
  // answer is kept: oracle_trace() of the program run() just compared sends nothing.
  const DriverOutcome& oracle_outcome(const std::string& id, const Program& program) {
    const bool mine = zero_grad_default_none();
    const Program for_oracle = mine != oracle_zero_grad_default_none() ? spell_out_zero_grad(program, mine) : program;
    const nlohmann::ordered_json program_json = program_to_json(for_oracle);
    std::string key = program_json.dump();
    if (!last_outcome_ || key != last_program_) {
      last_outcome_ = run_on_driver(oracle_, id, program_json);
      last_program_ = std::move(key);
    }
    return *last_outcome_;
  }

  std::unique_ptr<TestedImplementation> subject_;
  ExternalDriver oracle_;
  std::optional<DriverOutcome> last_outcome_;
  std::string last_program_;  // the JSON text last_outcome_ answers
  Tolerance tolerance_;
  bool oracle_read_ = false;
  Capabilities oracle_caps_;
  std::string oracle_error_;
};

}  // namespace

std::unique_ptr<TestedImplementation> against_driver_oracle(std::unique_ptr<TestedImplementation> subject,
                                                            std::string oracle_command, DriverOptions driver_options,
                                                            Tolerance tolerance) {
  return std::make_unique<AgainstDriverOracle>(std::move(subject), std::move(oracle_command), driver_options, tolerance);
}

std::unique_ptr<TestedImplementation> in_process_implementation(EngineFactory make_oracle, EngineFactory make_under_test,
                                                 LockstepOptions options) {
  return std::make_unique<InProcess>(std::move(make_oracle), std::move(make_under_test), options);
}

std::unique_ptr<TestedImplementation> driver_implementation(EngineFactory make_oracle, std::string command,
                                             DriverOptions driver_options, Tolerance tolerance) {
  return std::make_unique<Driver>(std::move(make_oracle), std::move(command), driver_options, tolerance);
}

}  // namespace lockstep
