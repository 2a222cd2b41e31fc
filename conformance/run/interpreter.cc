#include "conformance/run/interpreter.h"

#include <new>
#include <exception>

namespace lockstep {

namespace {

// Runs `body` and returns the error it raised, normalised: an EngineError keeps its kind, anything else is
// "other" (SEMANTICS §8: an error is a kind plus the engine's own message).
template <class F>
std::optional<ErrorObservation> capture_error(F&& body) {
  try {
    body();
    return std::nullopt;
  } catch (const EngineError& e) {
    return ErrorObservation{e.kind(), e.what()};
  } catch (const std::bad_alloc&) {
    throw;  // the machine's fault, not the engine's: lockstep says "out of memory" (tools/main.cc)
  } catch (const std::exception& e) {
    return ErrorObservation{error_kind::kOther, e.what()};
  } catch (...) {
    return ErrorObservation{error_kind::kOther, "unknown exception"};
  }
}

}  // namespace

Record ProgramRunner::setup() {
  Record record;
  record.action = "init";
  record.error = capture_error([&] {
    for (const ParamSpec& p : program_.params) engine_.add_parameter(p);
  });
  if (!record.error && program_.optimizer) {
    record.error = capture_error([&] { engine_.make_optimizer(*program_.optimizer); });
  }
  record.state = engine_.observe();
  return record;
}

Record ProgramRunner::run_action(size_t i) {
  const Action& a = program_.actions.at(i);
  Record record;
  record.action = action_name(a.kind);
  record.error = capture_error([&] {
    switch (a.kind) {
      case ActionKind::Forward: {
        const Expr* loss = a.loss ? a.loss.get() : program_.loss.get();
        if (!loss) throw EngineError(error_kind::kOther, "forward without a loss expression");
        engine_.forward(*loss, a.no_grad);
        break;
      }
      case ActionKind::Backward: {
        BackwardArgs args;
        args.retain_graph = a.retain_graph;
        args.create_graph = a.create_graph;
        args.gradient = a.gradient ? &*a.gradient : nullptr;
        engine_.backward(args);
        break;
      }
      case ActionKind::ZeroGrad: engine_.zero_grad(a.set_to_none); break;
      case ActionKind::SetGradNone: engine_.set_grad_none(a.param); break;
      case ActionKind::HoldGrad: engine_.hold_grad(a.param, a.handle); break;
      case ActionKind::Step: engine_.step(); break;
      case ActionKind::SetOptions: engine_.set_group_options(a.group, a.options); break;
      case ActionKind::AddParamGroup: engine_.add_param_group(a.new_group); break;
    }
  });
  record.state = engine_.observe();
  return record;
}

Trace run_program(const Program& program, Engine& engine) {
  Trace trace;
  trace.engine = engine.name();
  ProgramRunner runner(program, engine);
  trace.init = runner.setup();
  trace.records.reserve(program.actions.size());
  for (size_t i = 0; i < program.actions.size(); ++i) trace.records.push_back(runner.run_action(i));
  return trace;
}

const ParamObservation* EngineState::param(const std::string& name) const {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

const HandleObservation* EngineState::handle(const std::string& name) const {
  for (const auto& h : handles)
    if (h.name == name) return &h;
  return nullptr;
}

}  // namespace lockstep
