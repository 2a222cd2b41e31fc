// impl/engine_adapter.h: the clean-room implementation (impl/) as a conformance Engine (conformance/run/engine.h).
//
// Every action runs on impl's own tensors, autograd (autograd.h), ops (ops.h) and optimizers (sgd.h, adam.h,
// adamw.h, rmsprop.h, adagrad.h); impl::Error leaves as EngineError with the same kind and message. The adapter
// makes the same decisions as the oracle engine where neither framework has an action of its own:
//  - zero_grad(set_to_none = true) resets every grad of every group (SEM-4.2); zero_grad, step,
//    set_group_options and add_param_group without an optimizer throw no_optimizer;
//  - a group whose options are given starts from the option type's defaults and sets the given fields
//    (1.13 rule, SEM-7.1); SGD options without lr, or options foreign to the kind, throw invalid_option;
//  - an explicit gradient whose size differs from the output's fails with gradient_shape.
// synchronise() overwrites every number (parameters, grads, optimizer state tensors, handles, output) in
// place, keeping identities (lockstep mode).
//
// ImplEngine is also the base of engines built on impl that change one thing (the mutants of
// tools/mutants/mutants.h): they override an Engine method and call this one, or one of the protected hooks
// (one op of a loss expression, the optimizer's construction), and reach impl's tensors and optimizer through
// the protected accessors. impl itself has no hooks for them.
//
// Example:
//   std::unique_ptr<lockstep::Engine> engine = lockstep::make_impl_engine();   // name() == "impl"
//   lockstep::Trace trace = lockstep::run_program(program, *engine);
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conformance/run/engine.h"
#include "conformance/run/engine_glue.h"
#include "impl/optimizer.h"
#include "impl/tensor.h"

namespace lockstep {

// The PyTorch version whose behaviour impl follows where versions differ (SEM-12): zero_grad()'s default (SEM-12.1)
// and what embedding saves (SEM-2.8, SEM-12.5). By default the LibTorch this lockstep was built with, the oracle
// impl is compared with (LOCKSTEP_ORACLE_VERSION); 1.13 in a replay-only build, the version the corpus was recorded
// with.
struct ImplVersion {
  int major = 1;
  int minor = 13;
};
ImplVersion oracle_build_version();
// "2.6", "2.1.0+cu118", "libtorch-1.13.0" -> that version; oracle_build_version() when none is found.
ImplVersion impl_version_of(const std::string& pytorch_version);

class ImplEngine : public Engine {
 public:
  // impl following `follows`: its zero_grad() default and its semantics (above).
  explicit ImplEngine(ImplVersion follows = oracle_build_version(), std::string name = "impl");
  // `zero_grad_default_none`: what zero_grad() with no argument does (SEM-12.1), whatever `follows` says: false
  // zeroes in place as PyTorch 1.x does, true sets grads to none as PyTorch >= 2.0 does.
  ImplEngine(bool zero_grad_default_none, std::string name, ImplVersion follows = oracle_build_version());
  ~ImplEngine() override;

  std::string name() const override { return name_; }
  void add_parameter(const ParamSpec& spec) override;
  void make_optimizer(const OptimizerSpec& spec) override;
  void forward(const Expr& loss, bool no_grad) override;
  void backward(const BackwardArgs& args) override;
  void zero_grad(std::optional<bool> set_to_none) override;
  bool zero_grad_sets_to_none_by_default() const override { return zero_grad_default_none_; }
  void set_grad_none(const std::string& param) override;
  void hold_grad(const std::string& param, const std::string& handle) override;
  void step() override;
  std::optional<TensorValue> step_with_closure(StepClosure& closure) override;
  void set_group_options(int group, const OptimizerOptions& changes) override;
  void add_param_group(const ParamGroupSpec& group) override;
  TensorValue clip_grad_norm(const std::vector<std::string>& params, double max_norm, double norm_type,
                             bool error_if_nonfinite) override;
  void clip_grad_value(const std::vector<std::string>& params, double clip_value) override;
  void state_dict(const std::string& checkpoint) override;
  void load_state_dict(const std::string& checkpoint, bool fresh) override;
  EngineState observe() override;
  void synchronise(const EngineState& target) override;

 protected:
  // One node of a loss expression from its evaluated operands (operands first to last, SEM-2.10): Param
  // gives the leaf itself, Const a new constant, every other op impl's op (ops.h).
  virtual impl::Tensor apply_op(const Expr& e, const std::vector<impl::Tensor>& operands);
  // impl's optimizer of `kind` over `groups` with `defaults` (impl's option type of that kind).
  virtual std::unique_ptr<impl::Optimizer> construct_optimizer(OptimizerKind kind, std::vector<impl::ParamGroup> groups,
                                                               const impl::OptionsBase& defaults);

  impl::Tensor& tensor_of(const std::string& name);       // throws EngineError for an unknown name
  std::vector<impl::Tensor> parameters() const;           // the program's parameters, in order (aliases)
  std::vector<std::string> parameter_names() const;       // their names, in the same order
  impl::Optimizer* optimizer() const { return optimizer_.get(); }  // null before make_optimizer
  OptimizerKind optimizer_kind() const { return kind_; }
  const impl::Tensor& output() const { return output_; }  // the held forward output (undefined before one)
  // The checkpoints state_dict saved, by name (SEMANTICS §19.5); a mutant may change one before it is loaded.
  std::map<std::string, impl::OptimizerCheckpoint>& checkpoints() { return checkpoints_; }
  // SEM-19.2: whether a load gives the groups the saved options (LibTorch 2.x) or keeps theirs (1.13).
  virtual bool load_restores_options() const { return follows_.major >= 2; }

 private:
  // Parameters, handles (engine_glue.h); a grad's identity is its impl, kept alive (SEM-1.1).
  using Tables = EngineTables<impl::Tensor, std::shared_ptr<impl::TensorImpl>>;
  using Param = Tables::Param;
  struct StateView;  // a parameter's optimizer state as impl holds it (engine_adapter.cc)

  impl::Optimizer& require_optimizer(const char* action) const;
  impl::ParamGroup make_group(const ParamGroupSpec& spec, OptimizerKind kind, const std::string& where);
  impl::Tensor evaluate(const Expr& e);
  ParamObservation observe_param(Param& p);
  StateView state_view(const impl::Tensor& p) const;
  OptimizerStateObservation observe_state(const impl::Tensor& p) const;
  void synchronise_state(const impl::Tensor& p, const OptimizerStateObservation& t, const std::string& name);

  std::string name_;
  Tables tables_;
  std::unique_ptr<impl::Optimizer> optimizer_;
  std::optional<OptimizerSpec> spec_;  // what make_optimizer built from: load_state_dict's `fresh` builds it anew
  std::map<std::string, impl::OptimizerCheckpoint> checkpoints_;
  OptimizerKind kind_ = OptimizerKind::SGD;
  impl::Tensor output_;  // the held forward output; undefined before the first forward
  bool zero_grad_default_none_ = false;  // SEM-12.1
  ImplVersion follows_;
};

// impl as an engine (the mutants: tools/mutants/mutants.h, make_mutant_engine), following oracle_build_version().
std::unique_ptr<Engine> make_impl_engine();
// impl following that version's semantics, with zero_grad()'s default said explicitly.
std::unique_ptr<Engine> make_impl_engine(bool zero_grad_default_none);
// impl following `follows` in everything (a replay of fixtures recorded by another version, a test that states it).
std::unique_ptr<Engine> make_impl_engine_following(ImplVersion follows);

}  // namespace lockstep
