// The clean-room implementation as a conformance Engine (see engine_adapter.h).
#include "impl/engine_adapter.h"

#include "conformance/program/pytorch_version.h"

#include <map>
#include <optional>
#include <typeinfo>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "conformance/program/optimizer_descriptions.h"
#include "impl/adagrad.h"
#include "impl/adam.h"
#include "impl/adamw.h"
#include "impl/autograd.h"
#include "impl/clip_grad.h"
#include "impl/lbfgs.h"
#include "impl/ops.h"
#include "impl/optimizer.h"
#include "impl/rmsprop.h"
#include "impl/sgd.h"
#include "impl/tensor.h"

namespace lockstep {
namespace {

// ---------------------------------------------------------------------------------------------------------
// Errors: impl::Error keeps its kind and message (trace.h, error_kind).

template <class Body>
auto guarded(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const EngineError&) {
    throw;
  } catch (const impl::Error& e) {
    throw EngineError(impl::error_kind_name(e.kind), e.what());
  } catch (const std::bad_alloc&) {
    throw;  // not an engine error (interpreter.cc)
  } catch (const std::exception& e) {
    throw EngineError(error_kind::kOther, e.what());
  }
}

// ---------------------------------------------------------------------------------------------------------
// Values in and out.

impl::DType to_impl(DType d) { return d == DType::Float32 ? impl::DType::Float32 : impl::DType::Float64; }
DType from_impl(impl::DType d) { return d == impl::DType::Float32 ? DType::Float32 : DType::Float64; }

impl::Tensor make_tensor(const std::vector<double>& values, DType dtype, const Shape& shape) {
  if (static_cast<int64_t>(values.size()) != numel(shape)) {
    throw EngineError(error_kind::kOther, "a tensor of " + std::to_string(numel(shape)) + " elements was given " +
                                              std::to_string(values.size()) + " values");
  }
  return impl::Tensor::from_values(to_impl(dtype), shape, values);
}

TensorValue to_value(const impl::Tensor& t) {
  TensorValue v;
  v.dtype = from_impl(t.dtype());
  v.shape = t.shape();
  v.data = t.to_values();
  return v;
}

std::optional<TensorValue> optional_value(const impl::Tensor& t) {
  if (!t.defined()) return std::nullopt;
  return to_value(t);
}

// Lockstep: `t`'s numbers become `v`'s, in place (identity kept). Nothing happens when either is absent.
void overwrite(const impl::Tensor& t, const TensorValue* v, const std::string& what) {
  if (!t.defined() || !v) return;
  if (static_cast<int64_t>(v->data.size()) != t.numel()) {
    throw EngineError(error_kind::kOther, "synchronise: " + what + " has " + std::to_string(t.numel()) +
                                              " elements, the target " + std::to_string(v->data.size()));
  }
  impl::Tensor alias = t;
  for (int64_t i = 0; i < alias.numel(); ++i) alias.set_at(i, v->data[i]);
}

// ---------------------------------------------------------------------------------------------------------
// Options (SEMANTICS §5.1, §6.1, §7.1), as the oracle engine decides them.

void apply(impl::SGDOptions& to, const OptimizerOptions& o) {
  if (o.lr) to.lr = *o.lr;
  if (o.momentum) to.momentum = *o.momentum;
  if (o.dampening) to.dampening = *o.dampening;
  if (o.weight_decay) to.weight_decay = *o.weight_decay;
  if (o.nesterov) to.nesterov = *o.nesterov;
  if (o.maximize) to.maximize = *o.maximize;
}

template <class AdamLikeOptions>
void apply(AdamLikeOptions& to, const OptimizerOptions& o) {
  if (o.lr) to.lr = *o.lr;
  if (o.betas) to.betas = *o.betas;
  if (o.eps) to.eps = *o.eps;
  if (o.weight_decay) to.weight_decay = *o.weight_decay;
  if (o.amsgrad) to.amsgrad = *o.amsgrad;
  if (o.maximize) to.maximize = *o.maximize;
}

void apply(impl::RMSpropOptions& to, const OptimizerOptions& o) {
  if (o.lr) to.lr = *o.lr;
  if (o.alpha) to.alpha = *o.alpha;
  if (o.eps) to.eps = *o.eps;
  if (o.weight_decay) to.weight_decay = *o.weight_decay;
  if (o.momentum) to.momentum = *o.momentum;
  if (o.centered) to.centered = *o.centered;
  if (o.maximize) to.maximize = *o.maximize;
}

void apply(impl::AdagradOptions& to, const OptimizerOptions& o) {
  if (o.lr) to.lr = *o.lr;
  if (o.lr_decay) to.lr_decay = *o.lr_decay;
  if (o.weight_decay) to.weight_decay = *o.weight_decay;
  if (o.initial_accumulator_value) to.initial_accumulator_value = *o.initial_accumulator_value;
  if (o.eps) to.eps = *o.eps;
  if (o.maximize) to.maximize = *o.maximize;
}

// SEM-16.1: the counts are whole numbers (validated by the program model).
void apply(impl::LBFGSOptions& to, const OptimizerOptions& o) {
  if (o.lr) to.lr = *o.lr;
  if (o.max_iter) to.max_iter = static_cast<int64_t>(*o.max_iter);
  if (o.max_eval) to.max_eval = static_cast<int64_t>(*o.max_eval);
  if (o.tolerance_grad) to.tolerance_grad = *o.tolerance_grad;
  if (o.tolerance_change) to.tolerance_change = *o.tolerance_change;
  if (o.history_size) to.history_size = static_cast<int64_t>(*o.history_size);
  if (o.line_search_fn) to.line_search_fn = *o.line_search_fn;
}

// impl's option type of `kind` with its defaults, the given fields set (1.13 rule, SEM-7.1).
template <class Options>
std::unique_ptr<impl::OptionsBase> options_of(const OptimizerOptions& o) {
  auto options = std::make_unique<Options>();
  apply(*options, o);
  return options;
}

impl::SGDOptions sgd_options(const OptimizerOptions& o, const std::string& where) {
  // SEM-5.1: SGD has no default lr; a validated program always gives one.
  if (!o.lr) throw EngineError(error_kind::kInvalidOption, where + ": SGD options need lr (no default)");
  impl::SGDOptions options(*o.lr);
  apply(options, o);
  return options;
}

// The option type's defaults with the given fields set (1.13 rule, SEM-7.1).
std::unique_ptr<impl::OptionsBase> make_options(OptimizerKind kind, const OptimizerOptions& o,
                                                const std::string& where) {
  check_option_fields(kind, o, where);  // engine_glue.h
  switch (kind) {
    case OptimizerKind::SGD: return std::make_unique<impl::SGDOptions>(sgd_options(o, where));
    case OptimizerKind::Adam: {
      auto options = std::make_unique<impl::AdamOptions>();
      apply(*options, o);
      return options;
    }
    case OptimizerKind::AdamW: return options_of<impl::AdamWOptions>(o);
    case OptimizerKind::RMSprop: return options_of<impl::RMSpropOptions>(o);
    case OptimizerKind::Adagrad: return options_of<impl::AdagradOptions>(o);
    case OptimizerKind::LBFGS: return options_of<impl::LBFGSOptions>(o);
  }
  throw EngineError(error_kind::kOther, "unknown optimizer kind");
}

// Every field of the kind, resolved; maximize only where it is on (optimizer_descriptions.h, not_in_cpp_api).
OptimizerOptions observe_options(OptimizerKind kind, const impl::OptionsBase& options) {
  OptimizerOptions o;
  auto maximize = [&o](bool on) {
    if (on) o.maximize = true;
  };
  auto adam_like = [&o, &maximize](const auto& a) {
    o.lr = a.lr;
    o.betas = a.betas;
    o.eps = a.eps;
    o.weight_decay = a.weight_decay;
    o.amsgrad = a.amsgrad;
    maximize(a.maximize);
  };
  switch (kind) {
    case OptimizerKind::SGD: {
      const auto& s = static_cast<const impl::SGDOptions&>(options);
      o.lr = s.lr;
      o.momentum = s.momentum;
      o.dampening = s.dampening;
      o.weight_decay = s.weight_decay;
      o.nesterov = s.nesterov;
      maximize(s.maximize);
      break;
    }
    case OptimizerKind::Adam: adam_like(static_cast<const impl::AdamOptions&>(options)); break;
    case OptimizerKind::AdamW: adam_like(static_cast<const impl::AdamWOptions&>(options)); break;
    case OptimizerKind::RMSprop: {
      const auto& r = static_cast<const impl::RMSpropOptions&>(options);
      o.lr = r.lr;
      o.alpha = r.alpha;
      o.eps = r.eps;
      o.weight_decay = r.weight_decay;
      o.momentum = r.momentum;
      o.centered = r.centered;
      maximize(r.maximize);
      break;
    }
    case OptimizerKind::Adagrad: {
      const auto& a = static_cast<const impl::AdagradOptions&>(options);
      o.lr = a.lr;
      o.lr_decay = a.lr_decay;
      o.weight_decay = a.weight_decay;
      o.initial_accumulator_value = a.initial_accumulator_value;
      o.eps = a.eps;
      maximize(a.maximize);
      break;
    }
    case OptimizerKind::LBFGS: {
      const auto& l = static_cast<const impl::LBFGSOptions&>(options);
      o.lr = l.lr;
      o.max_iter = static_cast<double>(l.max_iter);
      if (l.max_eval) o.max_eval = static_cast<double>(*l.max_eval);
      o.tolerance_grad = l.tolerance_grad;
      o.tolerance_change = l.tolerance_change;
      o.history_size = static_cast<double>(l.history_size);
      o.line_search_fn = l.line_search_fn;
      break;
    }
  }
  return o;
}

// The optimizer's state of one parameter: its step count and its tensors by the names of
// optimizer_descriptions.h (SEM-5.3, SEM-6.2, SEM-14.2, SEM-15.2). None without state.
template <class State>
const State* state_as(const impl::ParamState* s) {
  return dynamic_cast<const State*>(s);
}

}  // namespace

struct ImplEngine::StateView {
  bool exists = false;
  const int64_t* step = nullptr;
  std::vector<std::pair<const char*, const impl::Tensor*>> tensors;
  const impl::LBFGSState* lbfgs = nullptr;  // SEM-16.2: its counts
};

ImplVersion oracle_build_version() {
#ifdef LOCKSTEP_ORACLE_VERSION
  static const ImplVersion built = impl_version_of(LOCKSTEP_ORACLE_VERSION);
  return built;
#else
  return ImplVersion{};
#endif
}

ImplVersion impl_version_of(const std::string& pytorch_version) {
  if (const auto v = parse_pytorch_version(pytorch_version)) return ImplVersion{v->first, v->second};
  return oracle_build_version();
}

ImplEngine::ImplEngine(ImplVersion follows, std::string name)
    : ImplEngine(follows.major >= 2, std::move(name), follows) {}  // SEM-12.1: from 2.0, set to none

ImplEngine::ImplEngine(bool zero_grad_default_none, std::string name, ImplVersion follows)
    : name_(std::move(name)), zero_grad_default_none_(zero_grad_default_none), follows_(follows) {}

// create_graph makes a parameter own its grad, whose graph owns the parameter again (SEM-3.3; PyTorch's
// documentation of backward() warns of the same cycle and advises resetting .grad): the engine breaks it when it
// ends, so that nothing of a program outlives its run.
ImplEngine::~ImplEngine() {
  for (auto& p : tables_.params()) p.tensor.reset_grad();
}

void ImplEngine::add_parameter(const ParamSpec& spec) {
  guarded([&] {
    impl::Tensor t = make_tensor(spec.values, spec.dtype, spec.shape);
    t.set_requires_grad(true);  // SEM-2.1: a leaf that requires grad, its grad undefined
    tables_.add_param(spec.name, t);
  });
}

std::unique_ptr<impl::Optimizer> ImplEngine::construct_optimizer(OptimizerKind kind, std::vector<impl::ParamGroup> groups,
                                                                 const impl::OptionsBase& defaults) {
  switch (kind) {
    case OptimizerKind::SGD:
      return std::make_unique<impl::SGD>(std::move(groups), static_cast<const impl::SGDOptions&>(defaults));
    case OptimizerKind::Adam:
      return std::make_unique<impl::Adam>(std::move(groups), static_cast<const impl::AdamOptions&>(defaults));
    case OptimizerKind::AdamW:
      return std::make_unique<impl::AdamW>(std::move(groups), static_cast<const impl::AdamWOptions&>(defaults));
    case OptimizerKind::RMSprop:
      return std::make_unique<impl::RMSprop>(std::move(groups), static_cast<const impl::RMSpropOptions&>(defaults));
    case OptimizerKind::Adagrad:
      return std::make_unique<impl::Adagrad>(std::move(groups), static_cast<const impl::AdagradOptions&>(defaults));
    case OptimizerKind::LBFGS:
      return std::make_unique<impl::LBFGS>(std::move(groups), static_cast<const impl::LBFGSOptions&>(defaults));
  }
  throw EngineError(error_kind::kOther, "unknown optimizer kind");
}

void ImplEngine::make_optimizer(const OptimizerSpec& spec) {
  guarded([&] {
    std::vector<impl::ParamGroup> groups;
    for (size_t i = 0; i < spec.groups.size(); ++i) {
      groups.push_back(make_group(spec.groups[i], spec.kind, "group " + std::to_string(i)));
    }
    std::unique_ptr<impl::OptionsBase> defaults = make_options(spec.kind, spec.defaults, "defaults");
    optimizer_ = construct_optimizer(spec.kind, std::move(groups), *defaults);
    kind_ = spec.kind;
    spec_ = spec;
  });
}

void ImplEngine::state_dict(const std::string& checkpoint) {  // SEMANTICS §19.5
  guarded([&] { checkpoints_[checkpoint] = require_optimizer("state_dict").save(); });
}

void ImplEngine::load_state_dict(const std::string& checkpoint, bool fresh) {  // SEM-19.2, 19.3
  guarded([&] {
    require_optimizer("load_state_dict");
    auto it = checkpoints_.find(checkpoint);
    if (it == checkpoints_.end()) throw EngineError(error_kind::kOther, "no checkpoint '" + checkpoint + "' was saved");
    if (fresh) {
      optimizer_.reset();
      make_optimizer(*spec_);  // it succeeded at the setup, with the same parameters
    }
    // SEM-19.2: LibTorch 1.13's torch::load keeps the options the groups have; 2.x restores the saved ones.
    optimizer_->load(it->second, load_restores_options());
  });
}

void ImplEngine::forward(const Expr& loss, bool no_grad) {
  guarded([&] {
    impl::GradModeGuard mode(!no_grad);  // SEM-2.3: under no_grad nothing is recorded
    output_ = evaluate(loss);            // a failed forward keeps the previous output
  });
}

void ImplEngine::backward(const BackwardArgs& args) {
  guarded([&] {
    if (!output_.defined()) throw EngineError(error_kind::kNoOutput, "backward before any forward");
    const bool create_graph = args.create_graph;
    const bool retain_graph = args.retain_graph.value_or(create_graph);  // SEM-2.5
    impl::Tensor gradient;
    if (args.gradient) {
      const std::vector<double>& g = *args.gradient;
      // Shaped like the output when the count fits; otherwise 1-D, and autograd reports the mismatch.
      Shape shape = static_cast<int64_t>(g.size()) == output_.numel() ? output_.shape()
                                                                      : Shape{static_cast<int64_t>(g.size())};
      gradient = impl::Tensor::from_values(output_.dtype(), shape, g);
    }
    impl::backward(output_, gradient.defined() ? &gradient : nullptr, retain_graph, create_graph);
  });
}

void ImplEngine::zero_grad(std::optional<bool> set_to_none) {  // SEM-4.1, SEM-4.2, SEM-12.1
  guarded([&] { require_optimizer("zero_grad").zero_grad(set_to_none.value_or(zero_grad_default_none_)); });
}

void ImplEngine::set_grad_none(const std::string& param) {
  guarded([&] { tensor_of(param).reset_grad(); });
}

void ImplEngine::hold_grad(const std::string& param, const std::string& handle) {
  guarded([&] {
    tables_.hold(handle, tensor_of(param).grad());  // an alias (SEM-1.1); may be undefined
  });
}

// SEMANTICS §18: torch::nn::utils' clipping over the named parameters, in the order named.
TensorValue ImplEngine::clip_grad_norm(const std::vector<std::string>& params, double max_norm, double norm_type,
                                       bool error_if_nonfinite) {
  return guarded([&] {
    std::vector<impl::Tensor> tensors;
    for (const std::string& name : params) tensors.push_back(tensor_of(name));
    // SEM-18.1: how a 2-norm squares its elements depends on the version followed.
    const impl::NormSquares squares =
        follows_.major >= 2 ? impl::NormSquares::InDtypeButOneElementExact : impl::NormSquares::InDtype;
    impl::Tensor total = impl::clip_grad_norm_(tensors, max_norm, norm_type, error_if_nonfinite, squares);
    TensorValue out;
    out.dtype = from_impl(total.dtype());
    out.data = total.to_values();
    return out;
  });
}

void ImplEngine::clip_grad_value(const std::vector<std::string>& params, double clip_value) {
  guarded([&] {
    std::vector<impl::Tensor> tensors;
    for (const std::string& name : params) tensors.push_back(tensor_of(name));
    impl::clip_grad_value_(tensors, clip_value);
  });
}

void ImplEngine::step() {
  guarded([&] { require_optimizer("step").step(); });
}

// SEM-17: the optimizer's step calls the closure, which runs the closure's actions here and returns the held output.
std::optional<TensorValue> ImplEngine::step_with_closure(StepClosure& closure) {
  return guarded([&]() -> std::optional<TensorValue> {
    impl::Tensor returned = require_optimizer("step").step([&]() -> impl::Tensor {
      closure.call();
      return output_;
    });
    return optional_value(returned);
  });
}

void ImplEngine::set_group_options(int group, const OptimizerOptions& changes) {
  guarded([&] {
    impl::Optimizer& optimizer = require_optimizer("set_options");
    auto& groups = optimizer.param_groups();
    check_group_index(group, groups.size());
    check_option_fields(kind_, changes, "set_options");
    impl::OptionsBase& options = *groups[group].options;
    switch (kind_) {
      case OptimizerKind::SGD: apply(static_cast<impl::SGDOptions&>(options), changes); break;
      case OptimizerKind::Adam: apply(static_cast<impl::AdamOptions&>(options), changes); break;
      case OptimizerKind::AdamW: apply(static_cast<impl::AdamWOptions&>(options), changes); break;
      case OptimizerKind::RMSprop: apply(static_cast<impl::RMSpropOptions&>(options), changes); break;
      case OptimizerKind::Adagrad: apply(static_cast<impl::AdagradOptions&>(options), changes); break;
      case OptimizerKind::LBFGS: apply(static_cast<impl::LBFGSOptions&>(options), changes); break;
    }
  });
}

void ImplEngine::add_param_group(const ParamGroupSpec& group) {
  guarded([&] {
    impl::Optimizer& optimizer = require_optimizer("add_param_group");
    optimizer.add_param_group(make_group(group, kind_, "new group"));
  });
}

EngineState ImplEngine::observe() {
  return guarded([&] {
    EngineState state;
    std::unordered_map<const impl::TensorImpl*, std::string> names;
    for (Param& p : tables_.params()) {
      names[p.tensor.impl()] = p.name;
      state.params.push_back(observe_param(p));
    }
    state.handles = tables_.observe_handles([](const impl::Tensor& t) { return t.defined(); }, to_value);
    if (optimizer_) {
      for (const impl::ParamGroup& group : optimizer_->param_groups()) {
        GroupObservation g;
        for (const impl::Tensor& t : group.params) {
          auto it = names.find(t.impl());
          g.params.push_back(it == names.end() ? "?" : it->second);
        }
        g.options = observe_options(kind_, group.options ? *group.options : optimizer_->defaults());
        state.groups.push_back(std::move(g));
      }
    }
    if (output_.defined()) {
      OutputObservation o;
      o.value = to_value(output_);
      o.requires_grad = output_.requires_grad();
      o.has_grad_fn = output_.grad_fn() != nullptr;
      state.output = std::move(o);
    }
    return state;
  });
}

void ImplEngine::synchronise(const EngineState& target) {
  guarded([&] {
    for (const ParamObservation& t : target.params) {
      if (!tables_.has_param(t.name))
        throw EngineError(error_kind::kOther, "synchronise: unknown parameter '" + t.name + "'");
      const impl::Tensor& p = tables_.tensor_of(t.name);
      overwrite(p, &t.value, t.name);
      if (t.grad.defined) overwrite(p.grad(), &t.grad.value, t.name + ".grad");
      if (optimizer_ && t.state.exists) synchronise_state(p, t.state, t.name);
    }
    for (const HandleObservation& t : target.handles) {
      if (!t.defined) continue;
      for (const auto& [name, grad] : tables_.handles()) {
        if (name == t.name) overwrite(grad, &t.value, "handle " + name);
      }
    }
    if (target.output && output_.defined()) overwrite(output_, &target.output->value, "output");
  });
}

impl::Optimizer& ImplEngine::require_optimizer(const char* action) const {
  if (!optimizer_) throw EngineError(error_kind::kNoOptimizer, std::string(action) + " without an optimizer");
  return *optimizer_;
}

impl::Tensor& ImplEngine::tensor_of(const std::string& name) { return tables_.tensor_of(name); }

std::vector<std::string> ImplEngine::parameter_names() const {
  std::vector<std::string> out;
  for (const Param& p : tables_.params()) out.push_back(p.name);
  return out;
}

std::vector<impl::Tensor> ImplEngine::parameters() const {
  std::vector<impl::Tensor> out;
  for (const Param& p : tables_.params()) out.push_back(p.tensor);
  return out;
}

impl::ParamGroup ImplEngine::make_group(const ParamGroupSpec& spec, OptimizerKind kind, const std::string& where) {
  std::vector<impl::Tensor> tensors;
  for (const auto& name : spec.params) tensors.push_back(tensor_of(name));
  if (!spec.options) return impl::ParamGroup(std::move(tensors));  // a copy of the defaults (SEM-7.1)
  return impl::ParamGroup(std::move(tensors), make_options(kind, *spec.options, where));
}

impl::Tensor ImplEngine::evaluate(const Expr& e) {
  // Operands first to last, as Python evaluates them (SEM-2.10): the order the nodes are created in decides
  // which grads a backward that fails part-way has already accumulated. (In `f(arg(0), arg(1))` C++ leaves
  // the order unspecified; GCC evaluates the right operand first.)
  std::vector<impl::Tensor> operands;
  for (size_t i = 0; i < e.args.size(); ++i) {
    if (!e.args[i]) break;
    operands.push_back(evaluate(*e.args[i]));
  }
  return apply_op(e, operands);
}

impl::Tensor ImplEngine::apply_op(const Expr& e, const std::vector<impl::Tensor>& operands) {
  auto arg = [&](size_t i) -> impl::Tensor {
    if (i >= operands.size()) {
      throw EngineError(error_kind::kOther, "operand " + std::to_string(i) + " of an expression is missing");
    }
    return operands[i];
  };
  namespace ops = impl::ops;
  switch (e.op) {
    case Op::Param: return tensor_of(e.name);  // the leaf itself
    case Op::Const: return make_tensor(e.constant.data, e.constant.dtype, e.constant.shape);
    case Op::Add: return ops::add(arg(0), arg(1));
    case Op::Sub: return ops::sub(arg(0), arg(1));
    case Op::Mul: return ops::mul(arg(0), arg(1));
    case Op::Div: return ops::div(arg(0), arg(1));
    case Op::Neg: return ops::neg(arg(0));
    case Op::MulScalar: return ops::mul_scalar(arg(0), e.scalar);
    case Op::Square: return ops::square(arg(0));
    case Op::Pow: return ops::pow_scalar(arg(0), e.scalar);
    case Op::Exp: return ops::exp(arg(0));
    case Op::Log: return ops::log(arg(0));
    case Op::Tanh: return ops::tanh(arg(0));
    case Op::Sigmoid: return ops::sigmoid(arg(0));
    case Op::Relu: return ops::relu(arg(0));
    case Op::Abs: return ops::abs(arg(0));
    case Op::Softplus: return ops::softplus(arg(0));
    case Op::Matmul: return ops::matmul(arg(0), arg(1));
    case Op::Sum: return ops::sum(arg(0));
    case Op::Mean: return ops::mean(arg(0));
    case Op::MseLoss: return ops::mse_loss(arg(0), arg(1));
    case Op::CrossEntropy: return ops::cross_entropy(arg(0), e.indices);
    case Op::Linear:
      return e.args.size() > 2 && e.args[2] ? ops::linear(arg(0), arg(1), arg(2)) : ops::linear(arg(0), arg(1));
    case Op::Embedding: return ops::embedding(arg(0), e.indices, follows_.major < 2);  // SEM-2.8
  }
  throw EngineError(error_kind::kOther, "unknown op");
}

ParamObservation ImplEngine::observe_param(Param& p) {
  ParamObservation o;
  o.name = p.name;
  o.value = to_value(p.tensor);
  o.same_as_previous = p.tensor.impl_ptr() == p.previous_tensor.impl_ptr();  // SEM-1.6: updated in place
  p.previous_tensor = p.tensor;
  impl::Tensor grad = p.tensor.grad();
  o.grad.defined = grad.defined();
  if (grad.defined()) {
    o.grad.value = to_value(grad);
    o.grad.requires_grad = grad.requires_grad();
    o.grad.has_grad_fn = grad.grad_fn() != nullptr;
  }
  o.grad.same_as_previous = grad.defined() && grad.impl_ptr() == p.previous_grad;  // SEM-1.1
  p.previous_grad = grad.impl_ptr();
  if (optimizer_) o.state = observe_state(p.tensor);
  return o;
}

ImplEngine::StateView ImplEngine::state_view(const impl::Tensor& p) const {
  StateView v;
  const impl::ParamState* s = optimizer_ ? optimizer_->state(p) : nullptr;
  if (!s) return v;
  v.exists = true;
  if (auto* t = state_as<impl::SGDParamState>(s)) {
    v.tensors = {{"momentum_buffer", &t->momentum_buffer}};
  } else if (auto* t = state_as<impl::AdamParamState>(s)) {
    v.step = &t->step;
    v.tensors = {{"exp_avg", &t->exp_avg}, {"exp_avg_sq", &t->exp_avg_sq}, {"max_exp_avg_sq", &t->max_exp_avg_sq}};
  } else if (auto* t = state_as<impl::RMSpropParamState>(s)) {
    v.step = &t->step;
    v.tensors = {{"square_avg", &t->square_avg}, {"momentum_buffer", &t->momentum_buffer}, {"grad_avg", &t->grad_avg}};
  } else if (auto* t = state_as<impl::AdagradParamState>(s)) {
    v.step = &t->step;
    v.tensors = {{"sum", &t->sum}};
  } else if (auto* t = state_as<impl::LBFGSState>(s)) {
    v.lbfgs = t;
  }
  return v;
}

namespace {
std::optional<TensorValue> OptimizerStateObservation::*field_of(const std::string& name) {
  for (const StateTensorDescription& t : all_state_tensors())
    if (name == t.name) return t.field;
  throw EngineError(error_kind::kOther, "internal: no state tensor named " + name);
}
}  // namespace

OptimizerStateObservation ImplEngine::observe_state(const impl::Tensor& p) const {
  OptimizerStateObservation o;
  const StateView v = state_view(p);
  o.exists = v.exists;
  if (v.step) o.step = *v.step;
  if (v.lbfgs) {
    o.func_evals = v.lbfgs->func_evals;
    o.n_iter = v.lbfgs->n_iter;
  }
  for (const auto& [name, tensor] : v.tensors) o.*field_of(name) = optional_value(*tensor);
  return o;
}

// Overwrites the state tensors' numbers; the step count is structure, not rounding, and is left alone.
void ImplEngine::synchronise_state(const impl::Tensor& p, const OptimizerStateObservation& t, const std::string& name) {
  for (const auto& [field, tensor] : state_view(p).tensors) {
    const std::optional<TensorValue>& target = t.*field_of(field);
    overwrite(*tensor, target ? &*target : nullptr, name + "." + field);
  }
}

std::unique_ptr<Engine> make_impl_engine() { return std::make_unique<ImplEngine>(); }

std::unique_ptr<Engine> make_impl_engine(bool zero_grad_default_none) {
  return std::make_unique<ImplEngine>(zero_grad_default_none, "impl");
}

std::unique_ptr<Engine> make_impl_engine_following(ImplVersion follows) {
  return std::make_unique<ImplEngine>(follows);
}

}  // namespace lockstep
