// The Engine interface: what an implementation under test provides.
//
// A C++ framework author implements this class to hold their framework against LibTorch in-process
// (oracle/torch_engine.h is LibTorch's implementation, impl/engine_adapter.h the clean-room one). The
// interpreter (interpreter.h) drives an engine through a validated Program: it calls add_parameter for every
// parameter, make_optimizer if the program has one, then one method per action, and observe() once after
// the setup and once after every action.
//
// Contract:
//  - Programs are validated before they reach an engine (program.h): names exist, shapes fit, indices are in
//    range. An engine need not re-check those.
//  - An action that fails throws EngineError with a normalised kind (trace.h, error_kind) and the engine's
//    own message. The engine's state after a failed action is whatever its framework leaves (that is
//    observed and compared too). Any other exception is recorded with kind "other".
//  - A step with a closure (SEMANTICS §17) comes as step_with_closure(): the closure runs the closure's actions
//    through this same engine, each observed. Its default calls the closure once, then step() (SEM-17.1).
//  - observe() returns the whole observable state (SEMANTICS §8). GradObservation::same_as_previous compares
//    each grad with the one seen at the previous observe() call: the engine keeps a reference to it.
//
// Example:
//   class MyEngine : public lockstep::Engine { ... };
//   MyEngine engine;
//   lockstep::Trace trace = lockstep::run_program(program, engine);
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "conformance/program/program.h"
#include "conformance/program/trace.h"

namespace lockstep {

class EngineError : public std::runtime_error {
 public:
  EngineError(std::string kind, const std::string& message)
      : std::runtime_error(message), kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
};

struct BackwardArgs {
  std::optional<bool> retain_graph;              // unset: = create_graph (SEM-2.5)
  bool create_graph = false;
  const std::vector<double>* gradient = nullptr;  // explicit gradient, shaped and typed like the output
};

// A step's closure (SEMANTICS §17), as the interpreter hands it to Engine::step_with_closure.
class StepClosure {
 public:
  virtual ~StepClosure() = default;
  // One call: runs the closure's actions on the engine in order, observing it after each (the interpreter records the
  // call). Throws EngineError with the kind and message of an action that fails; the framework's step must end with
  // it. After it, the engine's held output is what the call returns; call() returns its value as observed after the
  // call's last action (unset: none held).
  virtual std::optional<TensorValue> call() = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;

  // A short name for reports: "libtorch-1.13.1", "impl", ...
  virtual std::string name() const = 0;

  // Setup: a leaf tensor with requires_grad and an undefined grad (SEM-2.1).
  virtual void add_parameter(const ParamSpec& spec) = 0;
  // Constructs the optimizer; validates the defaults as the framework does (SEM-5.2, SEM-6.1).
  virtual void make_optimizer(const OptimizerSpec& spec) = 0;

  // Actions.
  virtual void forward(const Expr& loss, bool no_grad) = 0;        // holds the output
  virtual void backward(const BackwardArgs& args) = 0;              // of the held output
  // SEM-4.1, SEM-4.2; unset: optimizer.zero_grad() with no argument, the framework's default (SEM-12.1)
  virtual void zero_grad(std::optional<bool> set_to_none) = 0;
  // What zero_grad() with no argument does on this engine: true sets grads to none (PyTorch >= 2.0), false
  // zeroes them in place (1.x). Drivers declare it in their hello (PROTOCOL.md 2a).
  virtual bool zero_grad_sets_to_none_by_default() const = 0;
  virtual void set_grad_none(const std::string& param) = 0;         // p.grad = None
  virtual void hold_grad(const std::string& param, const std::string& handle) = 0;
  virtual void step() = 0;                                          // SEM-5.3, SEM-6.3
  // optimizer.step(closure), SEM-17: calls `closure` (call() in process) as the framework's step does and returns
  // what the step returned (unset: an undefined tensor). The default is SEM-17.1 spelled out on this engine's own
  // step(): the closure once, then step(), returning the closure's loss. Override it when the framework has a
  // step(closure) of its own, so that it is the framework's that is tested (LibTorch's and impl's engines do). It is
  // called only when the setup built an optimizer (without one, the interpreter records no_optimizer).
  virtual std::optional<TensorValue> step_with_closure(StepClosure& closure) {
    std::optional<TensorValue> loss = closure.call();
    step();
    return loss;
  }
  virtual void set_group_options(int group, const OptimizerOptions& changes) = 0;  // SEM-7.5
  virtual void add_param_group(const ParamGroupSpec& group) = 0;    // SEM-7.4
  // torch::nn::utils::clip_grad_norm_ over the named parameters, in order (a name may repeat, SEM-18.4), and what it
  // returned: the total norm as a 0-d tensor, float64 when a counted grad is float64, else float32 (SEM-18.1).
  // Fails with error_kind::kNonfiniteNorm when error_if_nonfinite and the total is not finite (SEM-18.3). The default
  // fails: an engine written before SEMANTICS §18 does not clip.
  virtual TensorValue clip_grad_norm(const std::vector<std::string>& params, double max_norm, double norm_type,
                                     bool error_if_nonfinite) {
    (void)params, (void)max_norm, (void)norm_type, (void)error_if_nonfinite;
    throw EngineError(error_kind::kOther, name() + " does not implement clip_grad_norm (SEMANTICS §18)");
  }
  // torch::nn::utils::clip_grad_value_ (SEM-18.5).
  virtual void clip_grad_value(const std::vector<std::string>& params, double clip_value) {
    (void)params, (void)clip_value;
    throw EngineError(error_kind::kOther, name() + " does not implement clip_grad_value (SEMANTICS §18)");
  }

  // optimizer.state_dict() kept under `checkpoint` as a saved copy (torch::save to memory): later steps do not change
  // it (SEMANTICS §19.5). Called only when the setup built an optimizer. The default fails: an engine written before
  // SEMANTICS §19 does not checkpoint.
  virtual void state_dict(const std::string& checkpoint) {
    (void)checkpoint;
    throw EngineError(error_kind::kOther, name() + " does not implement state_dict (SEMANTICS §19)");
  }
  // optimizer.load_state_dict() of a checkpoint state_dict() saved (SEM-19.2, 19.3): into the optimizer as it is, or,
  // with `fresh`, into one constructed anew from the program's optimizer spec, which replaces it (a resumed run). A
  // saved state whose groups do not fit fails with error_kind::kStateDictMismatch.
  virtual void load_state_dict(const std::string& checkpoint, bool fresh) {
    (void)checkpoint, (void)fresh;
    throw EngineError(error_kind::kOther, name() + " does not implement load_state_dict (SEMANTICS §19)");
  }

  virtual EngineState observe() = 0;

  // Lockstep mode: overwrite every number of the engine's state (parameter values, grad values, optimizer
  // state tensors, held handles' values) with `target`'s, keeping identities and structure as they are.
  // Only engines under test need it; the oracle never is re-synchronised.
  virtual void synchronise(const EngineState& target) {
    (void)target;
    throw EngineError(error_kind::kOther, name() + " does not support synchronise()");
  }
};

}  // namespace lockstep
