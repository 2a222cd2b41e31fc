#include "impl/optimizer.h"

#include <sstream>
#include <typeinfo>

#include "impl/autograd.h"

namespace lockstep::impl {

Tensor gradient_for_step(const Tensor& grad, bool maximize) {
  if (!maximize || !grad.defined()) return grad;
  Tensor negated = grad.clone();
  dispatch_dtype(negated.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* g = negated.data<T>();
    for (int64_t i = 0; i < negated.numel(); ++i) g[i] = -g[i];
  });
  return negated;
}

Optimizer::Optimizer(std::vector<ParamGroup> groups, std::unique_ptr<OptionsBase> defaults)
    : defaults_(std::move(defaults)) {
  for (const ParamGroup& g : groups) add_param_group(g);
}

void Optimizer::add_param_group(const ParamGroup& group) {
  // Check everything first so that a rejected group leaves the optimizer unchanged (black-box: LibTorch's
  // add_param_group is atomic). Black-box: every leaf check comes before any duplicate check.
  for (const Tensor& p : group.params) {
    if (!p.defined()) throw Error(ErrorKind::Other, "can't optimize an undefined Tensor");
    if (!p.is_leaf()) throw Error(ErrorKind::NonLeafParameter, "can't optimize a non-leaf Tensor");  // SEM-7.3
  }
  for (const Tensor& p : group.params) {
    if (has_state(p))  // SEM-7.4 [1.13]: only a parameter that already has state counts as a duplicate
      throw Error(ErrorKind::DuplicateParameter, "some parameters appear in more than one parameter group");
  }
  if (group.options) {
    const OptionsBase& given = *group.options;
    const OptionsBase& defaults = *defaults_;
    if (typeid(given) != typeid(defaults))
      throw Error(ErrorKind::Other, "a param group's options are not this optimizer's option type");
  }
  ParamGroup added(group.params, group.options ? group.options->clone() : defaults_->clone());  // SEM-7.1
  groups_.push_back(std::move(added));
}

Tensor Optimizer::step(const Closure& closure) {  // SEM-17.1
  Tensor loss;
  {
    GradModeGuard enabled(true);
    loss = closure();
  }
  step();
  return loss;
}

void Optimizer::zero_grad(bool set_to_none) {
  for (ParamGroup& g : groups_) {
    for (Tensor& p : g.params) {
      if (set_to_none) {  // SEM-4.2
        p.reset_grad();
        continue;
      }
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      grad.detach_();  // SEM-4.1: drops grad_fn and requires_grad, keeps identity
      grad.zero_();
    }
  }
}

OptimizerCheckpoint Optimizer::save() const {  // SEMANTICS §19.5
  OptimizerCheckpoint c;
  size_t position = 0;
  for (const ParamGroup& g : groups_) {
    c.group_options.push_back(g.options->clone());
    c.group_sizes.push_back(g.params.size());
    for (const Tensor& p : g.params) {
      c.shapes.emplace_back(p.dtype(), p.shape());
      auto it = state_.find(p.impl());
      if (it != state_.end()) c.states.emplace_back(position, it->second ? it->second->clone() : nullptr);
      ++position;
    }
  }
  return c;
}

void Optimizer::load(const OptimizerCheckpoint& c, bool restore_options) {  // SEM-19.2, 19.3
  if (c.group_sizes.size() != groups_.size())
    throw Error(ErrorKind::StateDictMismatch, "loaded state dict has a different number of parameter groups");
  for (size_t g = 0; g < groups_.size(); ++g)
    if (c.group_sizes[g] != groups_[g].params.size())
      throw Error(ErrorKind::StateDictMismatch,
                  "loaded state dict contains a parameter group that has a different size than the optimizer's "
                  "parameter group");
  std::vector<const Tensor*> at;  // flat position -> parameter
  for (const ParamGroup& g : groups_)
    for (const Tensor& p : g.params) at.push_back(&p);
  // A state saved for a parameter of another dtype or shape would not fit the one at its position now (lockstep's
  // programs never load one: validate() refuses loads into groups that list other parameters, SEM-19.5).
  for (const auto& entry : c.states)
    if (c.shapes.at(entry.first).first != at[entry.first]->dtype() || c.shapes.at(entry.first).second != at[entry.first]->shape())
      throw Error(ErrorKind::Other, "loaded state of a parameter of another dtype or shape");
  for (const auto& [position, state] : c.states) state_[at[position]->impl()] = state ? state->clone() : nullptr;
  if (restore_options)
    for (size_t g = 0; g < groups_.size(); ++g) groups_[g].options = c.group_options[g]->clone();
}

ParamState* Optimizer::find_state(const Tensor& param) const {
  auto it = state_.find(param.impl());
  return it == state_.end() ? nullptr : it->second.get();
}

ParamState& Optimizer::set_state(const Tensor& param, std::unique_ptr<ParamState> state) {
  auto& slot = state_[param.impl()];
  slot = std::move(state);
  return *slot;
}

std::vector<ParamGroup> single_group(std::vector<Tensor> params) {
  std::vector<ParamGroup> groups;
  groups.emplace_back(std::move(params));
  return groups;
}

std::string format_option_value(double v) {
  std::ostringstream out;  // default formatting: precision 6, like LibTorch's messages
  out << v;
  return out.str();
}

}  // namespace lockstep::impl
