// The trace: what a conformance run observes after every action (SEMANTICS §8).
//
// A Trace has one Record for the setup (parameters created, optimizer constructed) and one per action.
// Each record holds the error the action raised, if any, and the engine's whole observable state after
// it: every parameter's values, grad (definedness, values, requires_grad, grad_fn, identity), optimizer
// state, the param groups' options, every held grad handle, and the held forward output.
//
// Example:
//   Trace t = run_program(program, engine);
//   const ParamObservation* x = t.records[1].state.param("x");
//   if (x->grad.defined) ... x->grad.value.data ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "conformance/program/program.h"

namespace lockstep {

// Normalised error kinds (SEMANTICS §8). The engine's own message travels beside the kind.
namespace error_kind {
inline constexpr const char* kInvalidOption = "invalid_option";                    // SEM-5.2, SEM-6.1
inline constexpr const char* kBackwardThroughFreedGraph = "backward_through_freed_graph";  // SEM-2.5
inline constexpr const char* kNoGradFn = "no_grad_fn";                             // SEM-2.3
inline constexpr const char* kNonscalarBackward = "nonscalar_backward";            // SEM-2.4
inline constexpr const char* kNonLeafParameter = "non_leaf_parameter";             // SEM-7.3
inline constexpr const char* kDuplicateParameter = "duplicate_parameter";          // SEM-7.4
inline constexpr const char* kGradientShape = "gradient_shape";    // explicit gradient does not fit
inline constexpr const char* kInplaceModified = "inplace_modified";  // a saved tensor changed in place (Adam step)
inline constexpr const char* kNoOptimizer = "no_optimizer";        // step/zero_grad/... without one
inline constexpr const char* kNoOutput = "no_output";              // backward before any forward
inline constexpr const char* kNoSuchGroup = "no_such_group";       // set_options on a missing group
inline constexpr const char* kNonfiniteNorm = "nonfinite_norm";    // clip_grad_norm, error_if_nonfinite (SEM-18.3)
inline constexpr const char* kStateDictMismatch = "state_dict_mismatch";  // load_state_dict: groups differ (SEM-19.3)
inline constexpr const char* kOther = "other";                     // anything else the engine threw
}  // namespace error_kind

// Every kind above, for validating names that refer to them.
const std::vector<const char*>& all_error_kinds();

struct ErrorObservation {
  std::string kind;     // one of error_kind
  std::string message;  // the engine's own message (not compared)
};

struct GradObservation {
  bool defined = false;
  TensorValue value;               // meaningful when defined
  bool requires_grad = false;
  bool has_grad_fn = false;
  bool same_as_previous = false;   // the same tensor (identity) as at the previous observation (SEM-1.1)
};

// Per-parameter optimizer state (SEMANTICS §5.3, §6.2, §14.2, §15.2). `exists` is false until the
// parameter's first step with a defined grad (Adagrad: from the optimizer's construction); for SGD without
// momentum it stays false. Which tensors each optimizer keeps: optimizer_descriptions.h.
struct OptimizerStateObservation {
  bool exists = false;
  std::optional<int64_t> step;                 // Adam, AdamW, RMSprop, Adagrad
  std::optional<TensorValue> momentum_buffer;  // SGD and RMSprop with momentum
  std::optional<TensorValue> exp_avg, exp_avg_sq, max_exp_avg_sq;  // Adam, AdamW (max only with amsgrad)
  std::optional<TensorValue> square_avg, grad_avg;  // RMSprop (grad_avg only when centered)
  std::optional<TensorValue> sum;                   // Adagrad
  // L-BFGS: closure calls and iterations over every step, kept once for the optimizer under its first parameter
  // (SEMANTICS §16.2).
  std::optional<int64_t> func_evals, n_iter;
};

struct ParamObservation {
  std::string name;
  TensorValue value;
  // The parameter is the same tensor (identity) as at the previous observation; at init, the tensor created for
  // it (SEM-1.6: an optimizer updates it in place). Optional field "param.same_as_previous" (optional_fields.h):
  // nullopt when the trace does not report it.
  std::optional<bool> same_as_previous;
  GradObservation grad;
  OptimizerStateObservation state;
};

struct HandleObservation {
  std::string name;
  bool defined = false;  // false when the grad was undefined when the handle was taken
  TensorValue value;
};

// A param group as the optimizer holds it: its parameters by name and every option resolved.
struct GroupObservation {
  std::vector<std::string> params;
  OptimizerOptions options;  // every field of the optimizer's kind set
};

struct OutputObservation {
  TensorValue value;
  bool requires_grad = false;
  bool has_grad_fn = false;
};

struct EngineState {
  std::vector<ParamObservation> params;    // in the program's order
  std::vector<HandleObservation> handles;  // in the order they were first taken
  std::vector<GroupObservation> groups;    // empty without an optimizer
  std::optional<OutputObservation> output; // the held forward output, if any

  const ParamObservation* param(const std::string& name) const;
  const HandleObservation* handle(const std::string& name) const;
};

struct Record;

// One call of a step's closure (SEMANTICS §17.3): a record after each of the closure's actions that ran, in order
// (a failed action's record is the call's last).
struct ClosureCall {
  std::vector<Record> records;
};

struct Record {
  std::string action;                     // "init" for the setup record, else action_name(kind)
  std::optional<ErrorObservation> error;
  EngineState state;
  // A step with a closure (SEMANTICS §17.3): every call, in call order, and the value the step returned (unset when
  // it returned an undefined tensor). A clip_grad_norm that succeeded returns the total norm (SEMANTICS §18.1): a 0-d
  // tensor, float64 when a counted grad is float64, else float32. Empty and unset for every other record.
  std::vector<ClosureCall> calls;
  std::optional<TensorValue> returned;
};

struct Trace {
  std::string engine;          // Engine::name()
  Record init;                 // after creating the parameters and the optimizer
  std::vector<Record> records; // records[i] follows program.actions[i]
};

}  // namespace lockstep
