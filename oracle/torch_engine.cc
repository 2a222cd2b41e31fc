// LibTorch as the oracle Engine (see torch_engine.h). The only translation unit of the engine: it includes
// torch's headers, so it costs about a minute to compile; keep torch code here (and in torch_benchmarks.cc).
#include "oracle/torch_engine.h"

#include <c10/util/Exception.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/lbfgs.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>
#include <torch/version.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "conformance/program/optimizer_descriptions.h"
#include "conformance/run/engine_glue.h"

namespace lockstep {

#define LOCKSTEP_STR2(x) #x
#define LOCKSTEP_STR(x) LOCKSTEP_STR2(x)

std::string torch_version_string() {
  return "libtorch-" LOCKSTEP_STR(TORCH_VERSION_MAJOR) "." LOCKSTEP_STR(TORCH_VERSION_MINOR) "." LOCKSTEP_STR(
      TORCH_VERSION_PATCH);
}

namespace {

// ---------------------------------------------------------------------------------------------------------
// Error normalisation (trace.h, error_kind): LibTorch's message decides the kind.

std::string classify_message(const std::string& message) {
  struct Rule {
    const char* substring;
    const char* kind;
  };
  static const Rule rules[] = {
      {"Trying to backward through the graph a second time", error_kind::kBackwardThroughFreedGraph},  // SEM-2.5
      {"does not require grad and does not have a grad_fn", error_kind::kNoGradFn},                     // SEM-2.3
      {"grad can be implicitly created only for scalar outputs", error_kind::kNonscalarBackward},       // SEM-2.4
      {"Invalid learning rate", error_kind::kInvalidOption},                                            // SEM-5.2
      {"Invalid momentum value", error_kind::kInvalidOption},
      {"Invalid weight_decay value", error_kind::kInvalidOption},
      {"Invalid epsilon value", error_kind::kInvalidOption},                                            // SEM-6.1
      {"Invalid beta parameter", error_kind::kInvalidOption},
      {"Nesterov momentum requires", error_kind::kInvalidOption},
      {"Invalid alpha value", error_kind::kInvalidOption},                                              // SEM-14.1
      {"Invalid lr_decay value", error_kind::kInvalidOption},                                           // SEM-15.1
      {"Invalid initial_accumulator_value value", error_kind::kInvalidOption},
      {"can't optimize a non-leaf", error_kind::kNonLeafParameter},                                     // SEM-7.3
      {"more than one parameter group", error_kind::kDuplicateParameter},                               // SEM-7.4
      {"invalid gradient at index", error_kind::kGradientShape},  // explicit gradient shaped unlike the output
      {"Mismatch in shape", error_kind::kGradientShape},
      {"modified by an inplace operation", error_kind::kInplaceModified},  // a saved tensor's version moved
      {"is non-finite, so it cannot be clipped", error_kind::kNonfiniteNorm},  // SEM-18.3
      {"different number of parameter groups", error_kind::kStateDictMismatch},  // SEM-19.3
      {"different size than the optimizer's parameter group", error_kind::kStateDictMismatch},
  };
  for (const Rule& rule : rules) {
    if (message.find(rule.substring) != std::string::npos) return rule.kind;
  }
  return error_kind::kOther;
}

// Runs `body`; anything LibTorch (or the standard library) throws leaves as an EngineError.
template <class Body>
auto guarded(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const EngineError&) {
    throw;
  } catch (const c10::Error& e) {
    std::string message = e.what_without_backtrace();
    throw EngineError(classify_message(message), message);
  } catch (const std::bad_alloc&) {
    throw;  // not an engine error (interpreter.cc)
  } catch (const std::exception& e) {
    std::string message = e.what();
    throw EngineError(classify_message(message), message);
  } catch (...) {
    throw EngineError(error_kind::kOther, "unknown exception from LibTorch");
  }
}

// ---------------------------------------------------------------------------------------------------------
// Values in and out.

torch::ScalarType scalar_type(DType d) { return d == DType::Float32 ? torch::kFloat : torch::kDouble; }

// A new tensor of `dtype` and `shape` holding `values` (row-major); requires no grad.
torch::Tensor make_tensor(const std::vector<double>& values, DType dtype, const Shape& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  if (count != static_cast<int64_t>(values.size())) {
    throw EngineError(error_kind::kOther, "a tensor of " + std::to_string(count) + " elements was given " +
                                              std::to_string(values.size()) + " values");
  }
  torch::Tensor t = torch::empty(shape, torch::TensorOptions().dtype(torch::kDouble));
  if (count > 0) std::memcpy(t.data_ptr<double>(), values.data(), values.size() * sizeof(double));
  return t.to(scalar_type(dtype));  // converting to float32 rounds once; float64 returns `t` itself
}

TensorValue to_value(const torch::Tensor& t) {
  torch::NoGradGuard no_grad;
  TensorValue v;
  v.dtype = t.scalar_type() == torch::kFloat ? DType::Float32 : DType::Float64;
  v.shape = t.sizes().vec();
  torch::Tensor d = t.detach().to(torch::kDouble).contiguous();
  v.data.assign(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
  return v;
}

bool same_tensor(const torch::Tensor& a, const torch::Tensor& b) {
  return a.defined() && b.defined() && a.unsafeGetTensorImpl() == b.unsafeGetTensorImpl();
}

torch::Tensor index_tensor(const std::vector<int64_t>& indices) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(indices.size())}, torch::kLong);
  if (!indices.empty()) std::memcpy(t.data_ptr<int64_t>(), indices.data(), indices.size() * sizeof(int64_t));
  return t;
}

// ---------------------------------------------------------------------------------------------------------
// Options (SEMANTICS §5.1, §6.1, §7.1).

// SEM-20.2: LibTorch's C++ optimizers have no maximize. A run whose oracle is this engine leaves it out of its scope
// (run_scope.h); a program that still asks for it is refused here, never run as something else.
void refuse_maximize(const OptimizerOptions& o) {
  if (o.maximize.value_or(false))
    throw std::runtime_error("maximize: LibTorch's C++ optimizers have no such option (SEMANTICS 20.2); run such "
                             "programs against a driver oracle that has it (lockstep run --oracle)");
}

void apply(torch::optim::SGDOptions& to, const OptimizerOptions& o) {
  if (o.lr) to.lr(*o.lr);
  if (o.momentum) to.momentum(*o.momentum);
  if (o.dampening) to.dampening(*o.dampening);
  if (o.weight_decay) to.weight_decay(*o.weight_decay);
  if (o.nesterov) to.nesterov(*o.nesterov);
  refuse_maximize(o);
}

template <class AdamLikeOptions>
void apply(AdamLikeOptions& to, const OptimizerOptions& o) {
  if (o.lr) to.lr(*o.lr);
  if (o.betas) to.betas(std::make_tuple(o.betas->first, o.betas->second));
  if (o.eps) to.eps(*o.eps);
  if (o.weight_decay) to.weight_decay(*o.weight_decay);
  if (o.amsgrad) to.amsgrad(*o.amsgrad);
  refuse_maximize(o);
}

void apply(torch::optim::RMSpropOptions& to, const OptimizerOptions& o) {
  if (o.lr) to.lr(*o.lr);
  if (o.alpha) to.alpha(*o.alpha);
  if (o.eps) to.eps(*o.eps);
  if (o.weight_decay) to.weight_decay(*o.weight_decay);
  if (o.momentum) to.momentum(*o.momentum);
  if (o.centered) to.centered(*o.centered);
  refuse_maximize(o);
}

void apply(torch::optim::AdagradOptions& to, const OptimizerOptions& o) {
  if (o.lr) to.lr(*o.lr);
  if (o.lr_decay) to.lr_decay(*o.lr_decay);
  if (o.weight_decay) to.weight_decay(*o.weight_decay);
  if (o.initial_accumulator_value) to.initial_accumulator_value(*o.initial_accumulator_value);
  if (o.eps) to.eps(*o.eps);
  refuse_maximize(o);
}

// SEM-16.1: the counts are whole numbers (validated by the program model).
void apply(torch::optim::LBFGSOptions& to, const OptimizerOptions& o) {
  if (o.lr) to.lr(*o.lr);
  if (o.max_iter) to.max_iter(static_cast<int64_t>(*o.max_iter));
  if (o.max_eval) to.max_eval(static_cast<int64_t>(*o.max_eval));
  if (o.tolerance_grad) to.tolerance_grad(*o.tolerance_grad);
  if (o.tolerance_change) to.tolerance_change(*o.tolerance_change);
  if (o.history_size) to.history_size(static_cast<int64_t>(*o.history_size));
  if (o.line_search_fn) to.line_search_fn(*o.line_search_fn);
}

template <class Options>
std::unique_ptr<torch::optim::OptimizerOptions> options_of(const OptimizerOptions& o) {
  auto options = std::make_unique<Options>();
  apply(*options, o);
  return options;
}

// A constructed optimizer of LibTorch's type, from its option type's defaults with the given fields set.
template <class Optimizer, class Options>
std::unique_ptr<torch::optim::Optimizer> optimizer_of(std::vector<torch::optim::OptimizerParamGroup> groups,
                                                      const OptimizerOptions& o) {
  Options defaults;
  apply(defaults, o);
  return std::make_unique<Optimizer>(std::move(groups), defaults);
}

torch::optim::SGDOptions sgd_options(const OptimizerOptions& o, const std::string& where) {
  // SGDOptions has no default lr (SEM-5.1): a validated program always gives one; refuse defensively.
  if (!o.lr) throw EngineError(error_kind::kInvalidOption, where + ": SGD options need lr (no default)");
  torch::optim::SGDOptions options(*o.lr);
  apply(options, o);
  return options;
}

// Options built from the option type's defaults with the given fields set (1.13 rule, SEM-7.1).
std::unique_ptr<torch::optim::OptimizerOptions> make_options(OptimizerKind kind, const OptimizerOptions& o,
                                                             const std::string& where) {
  check_option_fields(kind, o, where);  // engine_glue.h
  switch (kind) {
    case OptimizerKind::SGD:
      return std::make_unique<torch::optim::SGDOptions>(sgd_options(o, where));
    case OptimizerKind::Adam: {
      auto options = std::make_unique<torch::optim::AdamOptions>();
      apply(*options, o);
      return options;
    }
    case OptimizerKind::AdamW: return options_of<torch::optim::AdamWOptions>(o);
    case OptimizerKind::RMSprop: return options_of<torch::optim::RMSpropOptions>(o);
    case OptimizerKind::Adagrad: return options_of<torch::optim::AdagradOptions>(o);
    case OptimizerKind::LBFGS: return options_of<torch::optim::LBFGSOptions>(o);
  }
  throw EngineError(error_kind::kOther, "unknown optimizer kind");
}

OptimizerOptions observe_options(OptimizerKind kind, const torch::optim::OptimizerOptions& options) {
  OptimizerOptions o;
  if (kind == OptimizerKind::RMSprop) {
    const auto& r = static_cast<const torch::optim::RMSpropOptions&>(options);
    o.lr = r.lr();
    o.alpha = r.alpha();
    o.eps = r.eps();
    o.weight_decay = r.weight_decay();
    o.momentum = r.momentum();
    o.centered = r.centered();
  } else if (kind == OptimizerKind::Adagrad) {
    const auto& a = static_cast<const torch::optim::AdagradOptions&>(options);
    o.lr = a.lr();
    o.lr_decay = a.lr_decay();
    o.weight_decay = a.weight_decay();
    o.initial_accumulator_value = a.initial_accumulator_value();
    o.eps = a.eps();
  } else if (kind == OptimizerKind::LBFGS) {
    const auto& l = static_cast<const torch::optim::LBFGSOptions&>(options);
    o.lr = l.lr();
    o.max_iter = static_cast<double>(l.max_iter());
    if (const auto max_eval = l.max_eval()) o.max_eval = static_cast<double>(*max_eval);
    o.tolerance_grad = l.tolerance_grad();
    o.tolerance_change = l.tolerance_change();
    o.history_size = static_cast<double>(l.history_size());
    if (const auto ls = l.line_search_fn()) o.line_search_fn = *ls;
  } else if (kind == OptimizerKind::SGD) {
    const auto& s = static_cast<const torch::optim::SGDOptions&>(options);
    o.lr = s.lr();
    o.momentum = s.momentum();
    o.dampening = s.dampening();
    o.weight_decay = s.weight_decay();
    o.nesterov = s.nesterov();
  } else {
    auto fill = [&o](const auto& a) {
      o.lr = a.lr();
      o.betas = std::make_pair(std::get<0>(a.betas()), std::get<1>(a.betas()));
      o.eps = a.eps();
      o.weight_decay = a.weight_decay();
      o.amsgrad = a.amsgrad();
    };
    if (kind == OptimizerKind::Adam) {
      fill(static_cast<const torch::optim::AdamOptions&>(options));
    } else {
      fill(static_cast<const torch::optim::AdamWOptions&>(options));
    }
  }
  return o;
}

// LibTorch reports warnings (e.g. create_graph's note on a reference cycle) on stderr through glog. The oracle
// is a measuring instrument driven by programs that do such things on purpose: its warnings are dropped, so the
// command line's output and a driver's stderr stay readable. (The handler API changed in 2.x.)
#if TORCH_VERSION_MAJOR < 2
class DropWarnings : public c10::WarningHandler {
 public:
  void process(const c10::SourceLocation&, const std::string&, const bool) override {}
};
void drop_torch_warnings() {
  static DropWarnings handler;
  c10::Warning::set_warning_handler(&handler);
}
#else
class DropWarnings : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};
void drop_torch_warnings() {
  static DropWarnings handler;
  c10::WarningUtils::set_warning_handler(&handler);
}
#endif

// ---------------------------------------------------------------------------------------------------------

class TorchEngine : public Engine {
 public:
  TorchEngine() { drop_torch_warnings(); }
  // create_graph makes a parameter own its grad, whose graph owns the parameter (PyTorch's documentation of
  // backward() warns of this cycle and advises resetting .grad): broken here, so that no program outlives its run.
  ~TorchEngine() override {
    for (auto& p : tables_.params()) p.tensor.mutable_grad().reset();
  }

  std::string name() const override { return torch_version_string(); }

  void add_parameter(const ParamSpec& spec) override {
    guarded([&] {
      // SEM-2.1: a leaf that requires grad, its grad undefined.
      tables_.add_param(spec.name, make_tensor(spec.values, spec.dtype, spec.shape).set_requires_grad(true));
    });
  }

  void make_optimizer(const OptimizerSpec& spec) override {
    guarded([&] {
      std::vector<torch::optim::OptimizerParamGroup> groups = make_groups(spec);
      check_option_fields(spec.kind, spec.defaults, "defaults");
      std::unique_ptr<torch::optim::Optimizer> optimizer;
      switch (spec.kind) {
        case OptimizerKind::SGD:
          optimizer = std::make_unique<torch::optim::SGD>(std::move(groups), sgd_options(spec.defaults, "defaults"));
          break;
        case OptimizerKind::Adam: {
          torch::optim::AdamOptions defaults;
          apply(defaults, spec.defaults);
          optimizer = std::make_unique<torch::optim::Adam>(std::move(groups), defaults);
          break;
        }
        case OptimizerKind::AdamW: {
          torch::optim::AdamWOptions defaults;
          apply(defaults, spec.defaults);
          optimizer = std::make_unique<torch::optim::AdamW>(std::move(groups), defaults);
          break;
        }
        case OptimizerKind::RMSprop:
          optimizer = optimizer_of<torch::optim::RMSprop, torch::optim::RMSpropOptions>(std::move(groups), spec.defaults);
          break;
        case OptimizerKind::Adagrad:
          optimizer = optimizer_of<torch::optim::Adagrad, torch::optim::AdagradOptions>(std::move(groups), spec.defaults);
          break;
        case OptimizerKind::LBFGS:
          optimizer = optimizer_of<torch::optim::LBFGS, torch::optim::LBFGSOptions>(std::move(groups), spec.defaults);
          break;
      }
      optimizer_ = std::move(optimizer);
      kind_ = spec.kind;
      spec_ = spec;
    });
  }

  // SEMANTICS §19.5: the C++ API's checkpoint is torch::save of the optimizer; kept as bytes, as a file would be.
  void state_dict(const std::string& checkpoint) override {
    guarded([&] {
      require_optimizer("state_dict");
      std::ostringstream out;
      torch::save(*optimizer_, out);
      checkpoints_[checkpoint] = out.str();
    });
  }

  void load_state_dict(const std::string& checkpoint, bool fresh) override {
    guarded([&] {
      require_optimizer("load_state_dict");
      auto it = checkpoints_.find(checkpoint);
      if (it == checkpoints_.end()) throw EngineError(error_kind::kOther, "no checkpoint '" + checkpoint + "' was saved");
      if (fresh) {
        optimizer_.reset();
        make_optimizer(*spec_);  // a resumed run: a new optimizer over the same parameters, then torch::load
      }
      std::istringstream in(it->second);
      torch::load(*optimizer_, in);
    });
  }

  void forward(const Expr& loss, bool no_grad) override {
    guarded([&] {
      torch::Tensor out;
      if (no_grad) {
        torch::NoGradGuard guard;  // SEM-2.3: nothing recorded
        out = evaluate(loss);
      } else {
        out = evaluate(loss);
      }
      output_ = out;  // a failed forward keeps the previous output
    });
  }

  void backward(const BackwardArgs& args) override {
    guarded([&] {
      if (!output_.defined()) throw EngineError(error_kind::kNoOutput, "backward before any forward");
      const bool create_graph = args.create_graph;
      const bool retain_graph = args.retain_graph.value_or(create_graph);  // SEM-2.5
      torch::Tensor gradient;
      if (args.gradient) {
        const std::vector<double>& g = *args.gradient;
        DType dtype = output_.scalar_type() == torch::kFloat ? DType::Float32 : DType::Float64;
        // Refused here when the count differs: LibTorch itself would accept a gradient it can sum to the
        // output's shape (n values for a 0-d output are summed), which no program means.
        if (static_cast<int64_t>(g.size()) != output_.numel()) {
          throw EngineError(error_kind::kGradientShape,
                            "explicit gradient has " + std::to_string(g.size()) + " values but the output has " +
                                std::to_string(output_.numel()) + " elements");
        }
        gradient = make_tensor(g, dtype, output_.sizes().vec());
      }
      output_.backward(gradient, retain_graph, create_graph);
    });
  }

  bool zero_grad_sets_to_none_by_default() const override { return TORCH_VERSION_MAJOR >= 2; }

  void zero_grad(std::optional<bool> set_to_none) override {
    guarded([&] {
      require_optimizer("zero_grad");
      if (!set_to_none) {
        optimizer_->zero_grad();  // SEM-12.1: the version's own default, whatever it is
      } else if (*set_to_none) {
        // SEM-4.2: 1.13's C++ API has no set_to_none; this is what the oracle does instead.
#if TORCH_VERSION_MAJOR >= 2
        optimizer_->zero_grad(true);
#else
        for (auto& group : optimizer_->param_groups()) {
          for (auto& p : group.params()) p.mutable_grad().reset();
        }
#endif
      } else {
        // SEM-4.1: detach_() and zero_() in place, identity kept.
#if TORCH_VERSION_MAJOR >= 2
        optimizer_->zero_grad(false);
#else
        optimizer_->zero_grad();
#endif
      }
    });
  }

  void set_grad_none(const std::string& param) override {
    guarded([&] { tensor_of(param).mutable_grad().reset(); });
  }

  // SEMANTICS §18: LibTorch's own clip_grad_norm_ and clip_grad_value_. The C++ API returns the total as a double;
  // the trace holds it as a 0-d tensor of the grads' dtype (float64 when a counted grad is float64, SEM-18.1), which
  // the double holds exactly.
  TensorValue clip_grad_norm(const std::vector<std::string>& params, double max_norm, double norm_type,
                             bool error_if_nonfinite) override {
    return guarded([&] {
      std::vector<torch::Tensor> tensors;
      DType dtype = DType::Float32;
      for (const std::string& name : params) {
        tensors.push_back(tensor_of(name));
        if (tensors.back().grad().defined() && tensors.back().grad().scalar_type() == torch::kFloat64)
          dtype = DType::Float64;
      }
      TensorValue total;
      total.dtype = dtype;
      total.data = {torch::nn::utils::clip_grad_norm_(tensors, max_norm, norm_type, error_if_nonfinite)};
      return total;
    });
  }

  void clip_grad_value(const std::vector<std::string>& params, double clip_value) override {
    guarded([&] {
      std::vector<torch::Tensor> tensors;
      for (const std::string& name : params) tensors.push_back(tensor_of(name));
      torch::nn::utils::clip_grad_value_(tensors, clip_value);
    });
  }

  void hold_grad(const std::string& param, const std::string& handle) override {
    guarded([&] {
      tables_.hold(handle, tensor_of(param).grad());  // an alias (SEM-1.1); may be undefined
    });
  }

  void step() override {
    guarded([&] {
      require_optimizer("step");
      optimizer_->step();
    });
  }

  // SEM-17: LibTorch's step calls the closure, which runs the closure's actions here and returns the held output.
  std::optional<TensorValue> step_with_closure(StepClosure& closure) override {
    return guarded([&]() -> std::optional<TensorValue> {
      require_optimizer("step");
      torch::Tensor returned = optimizer_->step([&]() -> torch::Tensor {
        closure.call();
        return output_;
      });
      if (!returned.defined()) return std::nullopt;
      return to_value(returned);
    });
  }

  void set_group_options(int group, const OptimizerOptions& changes) override {
    guarded([&] {
      require_optimizer("set_options");
      auto& groups = optimizer_->param_groups();
      check_group_index(group, groups.size());
      check_option_fields(kind_, changes, "set_options");
      torch::optim::OptimizerOptions& options = groups[group].options();
      switch (kind_) {
        case OptimizerKind::SGD: apply(static_cast<torch::optim::SGDOptions&>(options), changes); break;
        case OptimizerKind::Adam: apply(static_cast<torch::optim::AdamOptions&>(options), changes); break;
        case OptimizerKind::AdamW: apply(static_cast<torch::optim::AdamWOptions&>(options), changes); break;
        case OptimizerKind::RMSprop: apply(static_cast<torch::optim::RMSpropOptions&>(options), changes); break;
        case OptimizerKind::Adagrad: apply(static_cast<torch::optim::AdagradOptions&>(options), changes); break;
        case OptimizerKind::LBFGS: apply(static_cast<torch::optim::LBFGSOptions&>(options), changes); break;
      }
    });
  }

  void add_param_group(const ParamGroupSpec& group) override {
    guarded([&] {
      require_optimizer("add_param_group");
      optimizer_->add_param_group(make_group(group, kind_, "new group"));
    });
  }

  EngineState observe() override {
    return guarded([&] {
      EngineState state;
      std::unordered_map<const void*, std::string> names;  // impl -> parameter name
      for (auto& p : tables_.params()) {
        names[p.tensor.unsafeGetTensorImpl()] = p.name;
        state.params.push_back(observe_param(p));
      }
      state.handles = tables_.observe_handles([](const torch::Tensor& t) { return t.defined(); }, to_value);
      if (optimizer_) {
        for (const auto& group : optimizer_->param_groups()) {
          GroupObservation g;
          for (const auto& t : group.params()) {
            auto it = names.find(t.unsafeGetTensorImpl());
            g.params.push_back(it == names.end() ? "?" : it->second);
          }
          g.options = observe_options(kind_, group.has_options() ? group.options() : optimizer_->defaults());
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

 private:
  // Parameters and handles (engine_glue.h); a grad's identity is the grad seen at the previous observe().
  using Tables = EngineTables<torch::Tensor, torch::Tensor>;
  using Param = Tables::Param;

  void require_optimizer(const char* action) const {
    if (!optimizer_) throw EngineError(error_kind::kNoOptimizer, std::string(action) + " without an optimizer");
  }

  torch::Tensor& tensor_of(const std::string& name) { return tables_.tensor_of(name); }

  torch::optim::OptimizerParamGroup make_group(const ParamGroupSpec& spec, OptimizerKind kind,
                                               const std::string& where) {
    std::vector<torch::Tensor> tensors;
    for (const auto& name : spec.params) tensors.push_back(tensor_of(name));
    if (!spec.options) return torch::optim::OptimizerParamGroup(tensors);  // a copy of the defaults (SEM-7.1)
    return torch::optim::OptimizerParamGroup(tensors, make_options(kind, *spec.options, where));
  }

  std::vector<torch::optim::OptimizerParamGroup> make_groups(const OptimizerSpec& spec) {
    std::vector<torch::optim::OptimizerParamGroup> groups;
    for (size_t i = 0; i < spec.groups.size(); ++i) {
      groups.push_back(make_group(spec.groups[i], spec.kind, "group " + std::to_string(i)));
    }
    return groups;
  }

  torch::Tensor evaluate(const Expr& e) {
    // Operands first to last, as Python evaluates them (SEM-2.10): the order the nodes are created in decides
    // which grads a backward that fails part-way has already accumulated. (In `f(arg(0), arg(1))` C++ leaves
    // the order unspecified; GCC evaluates the right operand first.)
    std::vector<torch::Tensor> operands;
    for (size_t i = 0; i < e.args.size(); ++i) {
      if (!e.args[i]) break;
      operands.push_back(evaluate(*e.args[i]));
    }
    auto arg = [&](size_t i) -> torch::Tensor {
      if (i >= operands.size()) {
        throw EngineError(error_kind::kOther, "operand " + std::to_string(i) + " of an expression is missing");
      }
      return operands[i];
    };
    switch (e.op) {
      case Op::Param: return tensor_of(e.name);  // the leaf itself
      case Op::Const: return make_tensor(e.constant.data, e.constant.dtype, e.constant.shape);
      case Op::Add: return arg(0) + arg(1);
      case Op::Sub: return arg(0) - arg(1);
      case Op::Mul: return arg(0) * arg(1);
      case Op::Div: return arg(0) / arg(1);
      case Op::Neg: return -arg(0);
      case Op::MulScalar: return arg(0) * e.scalar;  // a C++ scalar: saves no tensor (SEM-2.5)
      case Op::Square: return torch::square(arg(0));
      case Op::Pow: return arg(0).pow(e.scalar);
      case Op::Exp: return torch::exp(arg(0));
      case Op::Log: return torch::log(arg(0));
      case Op::Tanh: return torch::tanh(arg(0));
      case Op::Sigmoid: return torch::sigmoid(arg(0));
      case Op::Relu: return torch::relu(arg(0));
      case Op::Abs: return torch::abs(arg(0));
      case Op::Softplus: return torch::softplus(arg(0));  // beta 1, threshold 20 (SEM-2.12)
      case Op::Matmul: return torch::matmul(arg(0), arg(1));
      case Op::Sum: return arg(0).sum();
      case Op::Mean: return arg(0).mean();
      case Op::MseLoss: return torch::mse_loss(arg(0), arg(1));  // mean reduction
      case Op::CrossEntropy:
        return torch::nn::functional::cross_entropy(arg(0), index_tensor(e.indices));
      case Op::Linear:
        return e.args.size() > 2 && e.args[2] ? torch::linear(arg(0), arg(1), arg(2))
                                              : torch::linear(arg(0), arg(1));
      case Op::Embedding: return torch::embedding(arg(0), index_tensor(e.indices));  // repeats accumulate
    }
    throw EngineError(error_kind::kOther, "unknown op");
  }

  ParamObservation observe_param(Param& p) {
    ParamObservation o;
    o.name = p.name;
    o.value = to_value(p.tensor);
    o.same_as_previous = same_tensor(p.tensor, p.previous_tensor);  // SEM-1.6: updated in place
    p.previous_tensor = p.tensor;
    torch::Tensor grad = p.tensor.grad();
    o.grad.defined = grad.defined();
    if (grad.defined()) {
      o.grad.value = to_value(grad);
      o.grad.requires_grad = grad.requires_grad();
      o.grad.has_grad_fn = grad.grad_fn() != nullptr;
    }
    o.grad.same_as_previous = same_tensor(grad, p.previous_grad);
    p.previous_grad = grad;  // keeping it alive also keeps its address from being reused
    if (optimizer_) o.state = observe_state(p.tensor);
    return o;
  }

  // The optimizer's state of `t`: 1.13 keys its state map by the TensorImpl address printed to a string
  // (c10::guts::to_string, i.e. operator<< of the pointer); later versions key it by the address itself.
  template <class StateMap>
  static typename StateMap::const_iterator find_state(const StateMap& states, const torch::Tensor& t) {
    using Key = typename StateMap::key_type;
    if constexpr (std::is_same_v<Key, std::string>) {
      std::ostringstream key;
      key << t.unsafeGetTensorImpl();
      return states.find(key.str());
    } else {
      return states.find(static_cast<Key>(t.unsafeGetTensorImpl()));
    }
  }

  OptimizerStateObservation observe_state(const torch::Tensor& t) {
    OptimizerStateObservation o;
    const auto& states = optimizer_->state();
    auto it = find_state(states, t);
    if (it == states.end() || !it->second) return o;
    o.exists = true;
    auto tensor = [](const torch::Tensor& x) -> std::optional<TensorValue> {
      if (!x.defined()) return std::nullopt;
      return to_value(x);
    };
    auto adam_like = [&](const auto& s) {
      o.step = s.step();
      o.exp_avg = tensor(s.exp_avg());
      o.exp_avg_sq = tensor(s.exp_avg_sq());
      o.max_exp_avg_sq = tensor(s.max_exp_avg_sq());  // defined only with amsgrad
    };
    switch (kind_) {
      case OptimizerKind::SGD:
        o.momentum_buffer = tensor(static_cast<const torch::optim::SGDParamState&>(*it->second).momentum_buffer());
        break;
      case OptimizerKind::Adam: adam_like(static_cast<const torch::optim::AdamParamState&>(*it->second)); break;
      case OptimizerKind::AdamW: adam_like(static_cast<const torch::optim::AdamWParamState&>(*it->second)); break;
      case OptimizerKind::RMSprop: {
        const auto& s = static_cast<const torch::optim::RMSpropParamState&>(*it->second);
        o.step = s.step();
        o.square_avg = tensor(s.square_avg());
        o.momentum_buffer = tensor(s.momentum_buffer());  // defined only when created with momentum
        o.grad_avg = tensor(s.grad_avg());                // defined only when created centered
        break;
      }
      case OptimizerKind::Adagrad: {
        const auto& s = static_cast<const torch::optim::AdagradParamState&>(*it->second);
        o.step = s.step();
        o.sum = tensor(s.sum());
        break;
      }
      case OptimizerKind::LBFGS: {  // SEM-16.2: once, under the first parameter
        const auto& s = static_cast<const torch::optim::LBFGSParamState&>(*it->second);
        o.func_evals = s.func_evals();
        o.n_iter = s.n_iter();
        break;
      }
    }
    return o;
  }

  Tables tables_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::optional<OptimizerSpec> spec_;                // what make_optimizer built from (load_state_dict's `fresh`)
  std::map<std::string, std::string> checkpoints_;  // torch::save's bytes, by name
  OptimizerKind kind_ = OptimizerKind::SGD;
  torch::Tensor output_;  // the held forward output; undefined before the first forward
};

}  // namespace

bool torch_zero_grad_sets_to_none_by_default() { return TORCH_VERSION_MAJOR >= 2; }

std::unique_ptr<Engine> make_torch_engine() { return std::make_unique<TorchEngine>(); }

}  // namespace lockstep
