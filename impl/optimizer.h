// impl/optimizer.h: the optimizer base shared by SGD, Adam and AdamW (SEMANTICS §4, §7).
//
// An Optimizer holds parameter groups (each a list of parameters plus its own options) and lazily created
// per-parameter state keyed by the parameter's TensorImpl. The rules are LibTorch 1.13's C++ rules:
//  - from a flat list of tensors: one group with a copy of the defaults (SEM-7.1); an empty list is fine
//    (SEM-7.2);
//  - from groups: a group without options gets a copy of the defaults, a group with options keeps its own
//    entirely (SEM-7.1 [1.13]); only the defaults are validated (SEM-5.2, SEM-6.1);
//  - every parameter must be a leaf: "can't optimize a non-leaf Tensor" (SEM-7.3);
//  - add_param_group rejects a parameter that already has state: "some parameters appear in more than one
//    parameter group"; a parameter listed twice in one group is updated twice per step (SEM-7.4);
//  - zero_grad(): detach_() then zero_() every defined grad in place; zero_grad(true) resets the grad slot
//    (SEM-4.1, SEM-4.2).
//
// Example:
//   SGD sgd({ParamGroup({w}), ParamGroup({b}, SGDOptions(0.5))}, SGDOptions(0.1).set_momentum(0.9));
//   sgd.step();
//   sgd.group_options(1).lr = 0.05;           // takes effect at the next step (SEM-7.5)
//   if (const SGDParamState* s = sgd.state_of(w)) s->momentum_buffer ...
//   sgd.zero_grad();
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "impl/error.h"
#include "impl/tensor.h"

namespace lockstep::impl {

// The options of one group (or an optimizer's defaults). Each optimizer derives its own (SGDOptions, ...)
// with public fields and fluent set_ setters.
struct OptionsBase {
  virtual ~OptionsBase() = default;
  virtual std::unique_ptr<OptionsBase> clone() const = 0;
};

// One parameter group. `options` null means "not given": the optimizer fills in a copy of its defaults
// when the group is added (SEM-7.1). Copying a group copies its options (deep) and aliases its params.
struct ParamGroup {
  std::vector<Tensor> params;
  std::unique_ptr<OptionsBase> options;

  ParamGroup() = default;
  explicit ParamGroup(std::vector<Tensor> params) : params(std::move(params)) {}
  ParamGroup(std::vector<Tensor> params, const OptionsBase& options)
      : params(std::move(params)), options(options.clone()) {}
  ParamGroup(std::vector<Tensor> params, std::unique_ptr<OptionsBase> options)
      : params(std::move(params)), options(std::move(options)) {}

  ParamGroup(const ParamGroup& o) : params(o.params), options(o.options ? o.options->clone() : nullptr) {}
  ParamGroup& operator=(const ParamGroup& o) {
    if (this != &o) { params = o.params; options = o.options ? o.options->clone() : nullptr; }
    return *this;
  }
  ParamGroup(ParamGroup&&) = default;
  ParamGroup& operator=(ParamGroup&&) = default;
};

// Per-parameter optimizer state (SEM-5.3, SEM-6.2). Each optimizer derives its own.
struct ParamState {
  virtual ~ParamState() = default;
  // A copy whose tensors have storage of their own (a checkpoint, SEMANTICS §19).
  virtual std::unique_ptr<ParamState> clone() const = 0;
};

// An undefined tensor stays undefined; a defined one is copied into new storage.
inline Tensor copy_of(const Tensor& t) { return t.defined() ? t.clone() : Tensor(); }

// SEM-20.1: the gradient a step reads. Under maximize it is -grad in new storage, so that .grad keeps its values and
// its identity and the step goes on as it does when minimizing; negation is exact, so this is the same arithmetic.
Tensor gradient_for_step(const Tensor& grad, bool maximize);

// What optimizer.state_dict() saves (SEMANTICS §19.5): every group's options and size, and the state of each
// parameter position that has state (a parameter listed twice is saved at both positions). Its own copies: later
// steps do not change it.
struct OptimizerCheckpoint {
  std::vector<std::unique_ptr<OptionsBase>> group_options;
  std::vector<size_t> group_sizes;
  // Flat position over every group in order -> a copy of the state there (null: an entry without state, SEM-15.2).
  std::vector<std::pair<size_t, std::unique_ptr<ParamState>>> states;
  // Each flat position's parameter's dtype and shape at the save: what its saved state tensors are shaped like.
  std::vector<std::pair<DType, Shape>> shapes;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  using Closure = std::function<Tensor()>;

  // One update of every parameter with a defined grad (SEM-5.3, SEM-6.3, SEM-6.4).
  virtual void step() = 0;
  // SEM-17.1: calls `closure` once, with grad mode enabled, then step(); returns the closure's loss. An exception
  // leaving the closure ends the step before anything moves. L-BFGS overrides it (SEM-16).
  virtual Tensor step(const Closure& closure);

  // SEM-4.1 (set_to_none = false) and SEM-4.2 (set_to_none = true).
  void zero_grad(bool set_to_none = false);

  // Adds a group (SEM-7.4). Throws Error(non_leaf_parameter) or Error(duplicate_parameter); on a throw the
  // optimizer is unchanged. A group without options gets a copy of the defaults.
  void add_param_group(const ParamGroup& group);

  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  const OptionsBase& defaults() const { return *defaults_; }

  // Whether `param` has optimizer state (created at its first step with a defined grad), and that state (null
  // without); each optimizer's own type (SGDParamState, ...).
  bool has_state(const Tensor& param) const { return state_.count(param.impl()) != 0; }

  // optimizer.state_dict(), saved (SEMANTICS §19.5).
  OptimizerCheckpoint save() const;
  // optimizer.load_state_dict() (SEM-19.2, 19.3): refuses a checkpoint whose number of groups or a group's size
  // differs (Error(state_dict_mismatch), the optimizer unchanged); else gives each saved position's parameter a copy of
  // the saved state (a parameter without saved state keeps its own) and, with `restore_options` (LibTorch 2.x), every
  // group the saved options; 1.13 keeps the options the groups have.
  void load(const OptimizerCheckpoint& checkpoint, bool restore_options);
  const ParamState* state(const Tensor& param) const { return find_state(param); }

 protected:
  // Adds every group through add_param_group (so the leaf rule applies). `defaults` is not null.
  Optimizer(std::vector<ParamGroup> groups, std::unique_ptr<OptionsBase> defaults);

  // The state of `param`, null when it has none.
  ParamState* find_state(const Tensor& param) const;
  // Stores `state` as param's state and returns it.
  ParamState& set_state(const Tensor& param, std::unique_ptr<ParamState> state);
  // An entry without state for `param`: has_state() is true from now on (add_param_group rejects it as a
  // duplicate), state() stays null. LibTorch 1.13's Adagrad leaves one behind when its step finds a parameter
  // without state (SEM-15.2).
  void set_empty_state(const Tensor& param) { state_[param.impl()] = nullptr; }

 private:
  std::unique_ptr<OptionsBase> defaults_;
  std::vector<ParamGroup> groups_;
  std::unordered_map<const TensorImpl*, std::unique_ptr<ParamState>> state_;
};

// The groups of a flat parameter list: one group without options (it gets the defaults, SEM-7.1).
std::vector<ParamGroup> single_group(std::vector<Tensor> params);

// A double formatted like C++ ostream's default (LibTorch's messages): -0.1, 1e-08, 1.5, inf, nan.
std::string format_option_value(double v);

}  // namespace lockstep::impl
