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
    has_optimizer_ = !record.error;
  }
  record.state = engine_.observe();
  return record;
}

namespace {

Record run_one(const Program& program, Engine& engine, bool has_optimizer, const Action& a);

// A step's closure as the interpreter runs it (SEMANTICS §17.2): each call runs the actions on the engine and
// records each; the first that fails ends the call, and its error leaves the call to end the step.
class InterpretedClosure : public StepClosure {
 public:
  InterpretedClosure(const Program& program, Engine& engine, const std::vector<Action>& actions,
                     std::vector<ClosureCall>& calls)
      : program_(program), engine_(engine), actions_(actions), calls_(calls) {}

  std::optional<TensorValue> call() override {
    calls_.emplace_back();  // recorded as it runs: a call the step ends early keeps what it did
    for (const Action& a : actions_) {
      calls_.back().records.push_back(run_one(program_, engine_, true, a));
      const Record& r = calls_.back().records.back();
      if (r.error) throw EngineError(r.error->kind, r.error->message);
    }
    const Record& last = calls_.back().records.back();  // validate(): a closure is never empty
    if (!last.state.output) return std::nullopt;
    return last.state.output->value;
  }

 private:
  const Program& program_;
  Engine& engine_;
  const std::vector<Action>& actions_;
  std::vector<ClosureCall>& calls_;
};

// `has_optimizer`: the setup built the program's optimizer.
Record run_one(const Program& program, Engine& engine, bool has_optimizer, const Action& a) {
  Record record;
  record.action = action_name(a.kind);
  record.error = capture_error([&] {
    switch (a.kind) {
      case ActionKind::Forward: {
        const Expr* loss = a.loss ? a.loss.get() : program.loss.get();
        if (!loss) throw EngineError(error_kind::kOther, "forward without a loss expression");
        engine.forward(*loss, a.no_grad);
        break;
      }
      case ActionKind::Backward: {
        BackwardArgs args;
        args.retain_graph = a.retain_graph;
        args.create_graph = a.create_graph;
        args.gradient = a.gradient ? &*a.gradient : nullptr;
        engine.backward(args);
        break;
      }
      case ActionKind::ZeroGrad: engine.zero_grad(a.set_to_none); break;
      case ActionKind::SetGradNone: engine.set_grad_none(a.param); break;
      case ActionKind::HoldGrad: engine.hold_grad(a.param, a.handle); break;
      case ActionKind::Step:
        if (a.closure) {
          // Without an optimizer there is no step to call the closure (SEMANTICS §8: no_optimizer), whatever the
          // engine's step_with_closure would do first.
          if (!has_optimizer) throw EngineError(error_kind::kNoOptimizer, "step without an optimizer");
          InterpretedClosure closure(program, engine, *a.closure, record.calls);
          record.returned = engine.step_with_closure(closure);
        } else {
          engine.step();
        }
        break;
      case ActionKind::SetOptions: engine.set_group_options(a.group, a.options); break;
      case ActionKind::AddParamGroup: engine.add_param_group(a.new_group); break;
      case ActionKind::ClipGradNorm:
        record.returned = engine.clip_grad_norm(a.params, a.max_norm, a.norm_type, a.error_if_nonfinite);
        break;
      case ActionKind::ClipGradValue: engine.clip_grad_value(a.params, a.clip_value); break;
      case ActionKind::StateDict:
      case ActionKind::LoadStateDict:
        // SEMANTICS §19.5: both need the optimizer (no_optimizer, as a step without one).
        if (!has_optimizer)
          throw EngineError(error_kind::kNoOptimizer, std::string(action_name(a.kind)) + " without an optimizer");
        if (a.kind == ActionKind::StateDict) engine.state_dict(a.checkpoint);
        else engine.load_state_dict(a.checkpoint, a.fresh);
        break;
    }
  });
  record.state = engine.observe();
  return record;
}

}  // namespace

Record ProgramRunner::run_action(size_t i) { return run_one(program_, engine_, has_optimizer_, program_.actions.at(i)); }

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
