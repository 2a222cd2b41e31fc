#include "tiny_engine.h"

#include "impl/engine_adapter.h"

namespace {

class TinyEngine : public lockstep::Engine {
 public:
  explicit TinyEngine(bool steps_twice) : steps_twice_(steps_twice), framework_(lockstep::make_impl_engine()) {}

  std::string name() const override { return steps_twice_ ? "tiny (steps twice)" : "tiny"; }
  void add_parameter(const lockstep::ParamSpec& spec) override { framework_->add_parameter(spec); }
  void make_optimizer(const lockstep::OptimizerSpec& spec) override { framework_->make_optimizer(spec); }
  void forward(const lockstep::Expr& loss, bool no_grad) override { framework_->forward(loss, no_grad); }
  void backward(const lockstep::BackwardArgs& args) override { framework_->backward(args); }
  void zero_grad(std::optional<bool> set_to_none) override { framework_->zero_grad(set_to_none); }
  bool zero_grad_sets_to_none_by_default() const override { return framework_->zero_grad_sets_to_none_by_default(); }
  void set_grad_none(const std::string& param) override { framework_->set_grad_none(param); }
  void hold_grad(const std::string& param, const std::string& handle) override { framework_->hold_grad(param, handle); }
  void step() override {
    framework_->step();
    if (steps_twice_) framework_->step();
  }
  // A step with a closure (SEMANTICS §17): the framework's own step(closure). Engine's default (the closure once, then
  // step()) suits every optimizer that calls its closure once before updating; L-BFGS (§16) calls it between moves.
  std::optional<lockstep::TensorValue> step_with_closure(lockstep::StepClosure& closure) override {
    std::optional<lockstep::TensorValue> returned = framework_->step_with_closure(closure);
    if (steps_twice_) framework_->step();
    return returned;
  }
  void set_group_options(int group, const lockstep::OptimizerOptions& changes) override {
    framework_->set_group_options(group, changes);
  }
  void add_param_group(const lockstep::ParamGroupSpec& group) override { framework_->add_param_group(group); }
  // Gradient clipping (SEMANTICS §18): the framework's own.
  lockstep::TensorValue clip_grad_norm(const std::vector<std::string>& params, double max_norm, double norm_type,
                             bool error_if_nonfinite) override {
    return framework_->clip_grad_norm(params, max_norm, norm_type, error_if_nonfinite);
  }
  void clip_grad_value(const std::vector<std::string>& params, double clip_value) override {
    framework_->clip_grad_value(params, clip_value);
  }
  void state_dict(const std::string& checkpoint) override { framework_->state_dict(checkpoint); }
  void load_state_dict(const std::string& checkpoint, bool fresh) override {
    framework_->load_state_dict(checkpoint, fresh);
  }
  lockstep::EngineState observe() override { return framework_->observe(); }
  void synchronise(const lockstep::EngineState& target) override { framework_->synchronise(target); }

 private:
  bool steps_twice_;
  std::unique_ptr<lockstep::Engine> framework_;
};

}  // namespace

std::unique_ptr<lockstep::Engine> make_tiny_engine(bool steps_twice) { return std::make_unique<TinyEngine>(steps_twice); }
