#include "conformance/run/zero_grad_default.h"

namespace lockstep {

// A step's closure actions are the program's actions too (SEMANTICS §17.2): a zero_grad() there is spelled out alike.
Program spell_out_zero_grad(const Program& program, bool set_to_none) {
  Program p = program;
  for (Action& a : p.actions) {
    if (a.kind == ActionKind::ZeroGrad && !a.set_to_none) a.set_to_none = set_to_none;
    if (a.closure)
      for (Action& c : *a.closure)
        if (c.kind == ActionKind::ZeroGrad && !c.set_to_none) c.set_to_none = set_to_none;
  }
  return p;
}

bool uses_zero_grad_default(const Program& program) {
  for (const Action& a : program.actions) {
    if (a.kind == ActionKind::ZeroGrad && !a.set_to_none) return true;
    if (a.closure)
      for (const Action& c : *a.closure)
        if (c.kind == ActionKind::ZeroGrad && !c.set_to_none) return true;
  }
  return false;
}

namespace {

class ZeroGradDefaultAs : public Engine {
 public:
  ZeroGradDefaultAs(std::unique_ptr<Engine> inner, bool set_to_none)
      : inner_(std::move(inner)), set_to_none_(set_to_none) {}
  std::string name() const override { return inner_->name(); }
  void add_parameter(const ParamSpec& spec) override { inner_->add_parameter(spec); }
  void make_optimizer(const OptimizerSpec& spec) override { inner_->make_optimizer(spec); }
  void forward(const Expr& loss, bool no_grad) override { inner_->forward(loss, no_grad); }
  void backward(const BackwardArgs& args) override { inner_->backward(args); }
  void zero_grad(std::optional<bool> set_to_none) override { inner_->zero_grad(set_to_none.value_or(set_to_none_)); }
  bool zero_grad_sets_to_none_by_default() const override { return set_to_none_; }
  void set_grad_none(const std::string& param) override { inner_->set_grad_none(param); }
  void hold_grad(const std::string& param, const std::string& handle) override { inner_->hold_grad(param, handle); }
  void step() override { inner_->step(); }
  // The closure's actions come back through this engine (the interpreter's), so its zero_grad rule holds in them.
  std::optional<TensorValue> step_with_closure(StepClosure& closure) override {
    return inner_->step_with_closure(closure);
  }
  void set_group_options(int group, const OptimizerOptions& changes) override { inner_->set_group_options(group, changes); }
  void add_param_group(const ParamGroupSpec& group) override { inner_->add_param_group(group); }
  TensorValue clip_grad_norm(const std::vector<std::string>& params, double max_norm, double norm_type,
                             bool error_if_nonfinite) override {
    return inner_->clip_grad_norm(params, max_norm, norm_type, error_if_nonfinite);
  }
  void clip_grad_value(const std::vector<std::string>& params, double clip_value) override {
    inner_->clip_grad_value(params, clip_value);
  }
  void state_dict(const std::string& checkpoint) override { inner_->state_dict(checkpoint); }
  void load_state_dict(const std::string& checkpoint, bool fresh) override {
    inner_->load_state_dict(checkpoint, fresh);
  }
  EngineState observe() override { return inner_->observe(); }
  void synchronise(const EngineState& target) override { inner_->synchronise(target); }

 private:
  std::unique_ptr<Engine> inner_;
  bool set_to_none_;
};

const char* what(bool none) { return none ? "sets grads to none (PyTorch >= 2.0)" : "zeroes grads in place (PyTorch 1.x)"; }

}  // namespace

std::unique_ptr<Engine> with_zero_grad_default(std::unique_ptr<Engine> inner, bool set_to_none) {
  return std::make_unique<ZeroGradDefaultAs>(std::move(inner), set_to_none);
}

std::string zero_grad_default_rule_text(bool implementation_none, bool oracle_none) {
  return std::string("SEM-12.1: the implementation's zero_grad() ") + what(implementation_none) +
         ", the oracle's " + what(oracle_none) + "; the oracle's zero_grad() was spelled out as the implementation's "
         "default, and named case sem12-zero-grad-default-by-version checks the default itself";
}

std::string zero_grad_default_replay_rule_text(bool implementation_none, bool recorder_none) {
  return std::string("SEM-12.1: the implementation's zero_grad() ") + what(implementation_none) +
         ", the recording oracle's " + what(recorder_none) + "; replay sent every zero_grad() spelled out as the "
         "recording oracle's (set_to_none=" + (recorder_none ? "true" : "false") + "), so replay did not test the "
         "implementation's own default: `lockstep run` does (named case " + kZeroGradDefaultCase + ")";
}

}  // namespace lockstep
