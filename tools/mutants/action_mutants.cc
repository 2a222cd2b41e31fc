// tools/mutants/action_mutants.cc: the mutants that change one action of impl's engine (mutants.h): zero_grad,
// backward or the optimizer's construction, wrapped around ImplEngine's own and working on impl's tensors.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "conformance/program/optimizer_descriptions.h"
#include "conformance/program/features.h"
#include "impl/adagrad.h"
#include "impl/adam.h"
#include "impl/adamw.h"
#include "impl/autograd.h"
#include "impl/ops.h"
#include "impl/rmsprop.h"
#include "impl/sgd.h"
#include "tools/mutants/mutant_engines.h"

namespace lockstep::mutants_detail {
namespace {

// A parameter and its grad before a backward.
struct Before {
  impl::Tensor param, grad;
  uint64_t version = 0;
};

// After a failed backward: every grad the mutant took away and backward did not give back is restored.
void restore_unreached(std::vector<Before>& before) {
  for (Before& b : before)
    if (!b.param.grad().defined() && b.grad.defined()) b.param.set_grad(b.grad);
}

// A group's maximize flag (SEM-20.1); null for L-BFGS, which has none.
bool* maximize_flag(impl::OptionsBase& o) {
  if (auto* x = dynamic_cast<impl::SGDOptions*>(&o)) return &x->maximize;
  if (auto* x = dynamic_cast<impl::AdamOptions*>(&o)) return &x->maximize;
  if (auto* x = dynamic_cast<impl::AdamWOptions*>(&o)) return &x->maximize;
  if (auto* x = dynamic_cast<impl::RMSpropOptions*>(&o)) return &x->maximize;
  if (auto* x = dynamic_cast<impl::AdagradOptions*>(&o)) return &x->maximize;
  return nullptr;
}

class ActionMutant : public ImplEngine {
 public:
  ActionMutant(Mutant m, bool zero_grad_default_none)
      : ImplEngine(zero_grad_default_none, std::string("impl+") + mutant_name(m)), m_(m) {}

  // SEM-4.1, SEM-4.2.
  void zero_grad(std::optional<bool> set_to_none) override {
    const bool to_none = set_to_none.value_or(zero_grad_sets_to_none_by_default());
    impl::Optimizer* o = optimizer();
    if (!o) return ImplEngine::zero_grad(set_to_none);  // no_optimizer, as impl
    switch (m_) {
      case Mutant::ZeroGradNoop: return;                                       // nothing happens
      case Mutant::SetToNoneZeroes: return ImplEngine::zero_grad(false);      // zeroes instead
      case Mutant::ZeroGradNewTensor:
      case Mutant::ZeroGradNoDetach:
        if (to_none) return ImplEngine::zero_grad(true);
        for (impl::ParamGroup& g : o->param_groups())
          for (impl::Tensor& p : g.params) {
            impl::Tensor grad = p.grad();
            if (!grad.defined()) continue;
            if (m_ == Mutant::ZeroGradNewTensor) p.set_grad(impl::Tensor::zeros(grad.dtype(), grad.shape()));
            else grad.zero_();  // without detach_(): a create_graph grad keeps requires_grad and grad_fn
          }
        return;
      default: return ImplEngine::zero_grad(set_to_none);
    }
  }

  // SEM-18: impl's clipping with one thing changed.
  TensorValue clip_grad_norm(const std::vector<std::string>& params, double max_norm, double norm_type,
                             bool error_if_nonfinite) override {
    switch (m_) {
      case Mutant::ClipPerTensor: {
        // The total as impl computes it (and fails as impl), the grads put back, then each clipped on its own.
        std::vector<std::pair<impl::Tensor, std::vector<double>>> kept;
        for (const std::string& name : params)
          if (tensor_of(name).grad().defined()) kept.emplace_back(tensor_of(name).grad(), tensor_of(name).grad().to_values());
        TensorValue total = ImplEngine::clip_grad_norm(params, max_norm, norm_type, error_if_nonfinite);
        for (auto& [g, values] : kept)
          for (size_t i = 0; i < values.size(); ++i) g.set_at(static_cast<int64_t>(i), values[i]);
        for (const std::string& name : params) ImplEngine::clip_grad_norm({name}, max_norm, norm_type, false);
        return total;
      }
      case Mutant::ClipUndefinedGradAsZero:
        zero_undefined_grads(params);
        return ImplEngine::clip_grad_norm(params, max_norm, norm_type, error_if_nonfinite);
      case Mutant::ClipCoefficientUnclamped: {
        TensorValue total = ImplEngine::clip_grad_norm(params, max_norm, norm_type, error_if_nonfinite);
        const double ratio = max_norm / (total.data.at(0) + 1e-6);
        if (std::isfinite(ratio) && ratio > 1)
          for (const std::string& name : params) {
            impl::Tensor g = tensor_of(name).grad();
            if (!g.defined()) continue;
            for (int64_t i = 0; i < g.numel(); ++i) g.set_at(i, g.at(i) * ratio);
          }
        return total;
      }
      case Mutant::ClipNonfiniteIgnored: return ImplEngine::clip_grad_norm(params, max_norm, norm_type, false);
      case Mutant::ClipListedOnce: return ImplEngine::clip_grad_norm(once(params), max_norm, norm_type, error_if_nonfinite);
      default: return ImplEngine::clip_grad_norm(params, max_norm, norm_type, error_if_nonfinite);
    }
  }

  void clip_grad_value(const std::vector<std::string>& params, double clip_value) override {
    switch (m_) {
      case Mutant::ClipUndefinedGradAsZero:
        zero_undefined_grads(params);
        return ImplEngine::clip_grad_value(params, clip_value);
      case Mutant::ClipListedOnce: return ImplEngine::clip_grad_value(once(params), clip_value);
      case Mutant::ClipValueOneSided:
        for (const std::string& name : params) {
          impl::Tensor g = tensor_of(name).grad();
          if (!g.defined()) continue;
          for (int64_t i = 0; i < g.numel(); ++i)
            if (g.at(i) > clip_value) g.set_at(i, clip_value);
        }
        return;
      default: return ImplEngine::clip_grad_value(params, clip_value);
    }
  }

  // SEM-19.2: the other generation's rule for the options a load leaves.
  bool load_restores_options() const override {
    return m_ == Mutant::LoadOptionsOtherVersion ? !ImplEngine::load_restores_options() : ImplEngine::load_restores_options();
  }

  // SEM-19.
  void load_state_dict(const std::string& checkpoint, bool fresh) override {
    auto saved = checkpoints().find(checkpoint);
    if (m_ == Mutant::StateDictSharesState && optimizer() && saved != checkpoints().end())
      saved->second.states = optimizer()->save().states;  // what references to the live state tensors read now
    ImplEngine::load_state_dict(checkpoint, fresh);
    impl::Optimizer* o = optimizer();
    if (!o || saved == checkpoints().end()) return;
    switch (m_) {
      case Mutant::LoadResetsStepCount:
      case Mutant::LoadRecreatesMoments:
        for (const impl::ParamGroup& g : o->param_groups())
          for (const impl::Tensor& p : g.params) reset_state(const_cast<impl::ParamState*>(o->state(p)));
        return;
      default: return;
    }
  }

  // SEM-2.5 - 2.7, SEM-3.2, SEM-3.3.
  void backward(const BackwardArgs& args) override {
    const bool create_graph = args.create_graph;
    const std::vector<impl::Tensor> params = parameters();
    std::vector<Before> before;
    for (const impl::Tensor& p : params) before.push_back({p, p.grad(), p.grad().defined() ? p.grad().version() : 0});
    switch (m_) {
      case Mutant::RetainGraphIgnored: {  // the saved tensors are never freed
        BackwardArgs retained = args;
        retained.retain_graph = true;
        return ImplEngine::backward(retained);
      }
      case Mutant::UnusedParamGradZero: {  // a parameter backward did not reach gets a zero grad
        ImplEngine::backward(args);
        for (Before& b : before)
          if (!b.param.grad().defined()) b.param.set_grad(impl::Tensor::zeros(b.param.dtype(), b.param.shape()));
        return;
      }
      case Mutant::BackwardOverwrites: {  // the new gradient replaces a defined grad's values
        for (Before& b : before) b.param.reset_grad();
        try {
          ImplEngine::backward(args);
        } catch (...) {
          restore_unreached(before);
          throw;
        }
        for (Before& b : before) {
          impl::Tensor now = b.param.grad();
          if (!b.grad.defined() || !now.defined()) {
            if (!now.defined() && b.grad.defined()) b.param.set_grad(b.grad);  // not reached: kept
            continue;
          }
          if (create_graph) continue;  // a recorded copy of the new gradient, as accumulation into none
          b.grad.copy_values_from(now);
          b.param.set_grad(b.grad);  // identity kept, old values lost
        }
        return;
      }
      case Mutant::AccumulateOutOfPlace:          // grad = grad + g: a new identity
      case Mutant::AccumulateInPlaceCreateGraph: {  // under create_graph, grad += g in place
        ImplEngine::backward(args);
        for (Before& b : before) {
          impl::Tensor now = b.param.grad();
          if (!b.grad.defined() || !now.defined()) continue;
          if (m_ == Mutant::AccumulateOutOfPlace && !create_graph && now.is_same(b.grad) &&
              now.version() != b.version)
            b.param.set_grad(now.clone());
          if (m_ == Mutant::AccumulateInPlaceCreateGraph && create_graph && !now.is_same(b.grad)) {
            b.grad.copy_values_from(now);
            b.param.set_grad(b.grad);
          }
        }
        return;
      }
      case Mutant::AccumulatePerEdge: {
        // A use saved by the graph sees the in-place changes of its parameter (SEM-2.8) as the parameter would.
        for (Edge& e : edges_)
          while (e.use.version() < tensor_of(e.param).version() - e.version_at_forward) e.use.bump_version();
        try {
          ImplEngine::backward(args);
        } catch (...) {
          accumulate_each_edge(create_graph);
          throw;
        }
        return accumulate_each_edge(create_graph);
      }
      default: return ImplEngine::backward(args);
    }
  }

  // A grad that exists gets each edge's contribution as it arrives, (grad + g1) + g2: the first sum is a new
  // tensor whose storage the later edges reuse, and it becomes the grad (a held handle, an aliased 0-d grad keep
  // the old values). An undefined grad gets the edges' sum, as impl (the bug needs a grad to add into).
  void accumulate_each_edge(bool create_graph) {
    std::map<std::string, impl::Tensor> sums;  // per parameter: its grad plus the edges so far, or their sum
    std::set<std::string> existed;
    for (Edge& e : edges_)
      if (tensor_of(e.param).grad().defined()) existed.insert(e.param);
    for (Edge& e : edges_) {
      impl::Tensor g = e.use.grad();
      if (!g.defined()) continue;
      e.use.reset_grad();  // a second backward through a retained graph brings only its own contributions
      impl::Tensor& sum = sums[e.param];
      if (sum.defined() && !create_graph) impl::ops::add_in_place(sum, g);  // the storage reused per edge
      else if (sum.defined()) sum = impl::ops::add(sum, g);
      else sum = existed.count(e.param) ? impl::ops::add(tensor_of(e.param).grad(), g) : g;
    }
    for (auto& [name, sum] : sums) tensor_of(name).set_grad(sum);
  }

  // StepRebindsParameter: the step as impl's, then every parameter it updated (a defined grad, in a group) is
  // replaced by a new leaf holding its values and its grad, in the model and in the optimizer's groups: the
  // functional update of a port (p = p - lr * d). impl keys state by the tensor, so the rebound parameter
  // also loses its state (SEM-1.6).
  // MaximizeIgnored: every group steps with maximize off. MaximizeGradInPlace: each group with maximize on has its
  // grads negated in place (each storage once), then steps with maximize off; .grad keeps -g (SEM-20.1).
  void step() override {
    if (m_ == Mutant::MaximizeIgnored || m_ == Mutant::MaximizeGradInPlace) return step_without_maximize();
    ImplEngine::step();
    if (m_ != Mutant::StepRebindsParameter) return;
    impl::Optimizer* o = optimizer();
    for (impl::Tensor p : parameters()) {
      bool in_group = false;
      for (const impl::ParamGroup& g : o->param_groups())
        for (const impl::Tensor& q : g.params) in_group = in_group || q.is_same(p);
      if (!in_group || !p.grad().defined()) continue;
      impl::Tensor fresh = impl::Tensor::zeros(p.dtype(), p.shape());
      fresh.copy_values_from(p);
      fresh.set_requires_grad(true);
      fresh.set_grad(p.grad());
      for (impl::ParamGroup& g : o->param_groups())
        for (impl::Tensor& q : g.params)
          if (q.is_same(p)) q = fresh;
      for (const std::string& name : parameter_names())
        if (tensor_of(name).is_same(p)) tensor_of(name) = fresh;
      retired_.push_back(p);  // kept alive: impl keys state by address, a reused one must not find old state
    }
  }

  // TiedParamCountedOnce: a parameter used more than once in one loss contributes through its first use only
  // (later uses read its values, detached) (SEM-2.6).
  // AccumulatePerEdge: each use of a parameter used more than once is a leaf of its own on the parameter's
  // storage; after backward, each use's grad is accumulated into the parameter's, in the order of the uses.
  void forward(const Expr& loss, bool no_grad) override {
    uses_.clear();
    if (m_ == Mutant::AccumulatePerEdge && !no_grad)
      walk_expr(loss, [&](const Expr& n) {
        if (n.op == Op::Param) ++uses_[n.name];
      });
    std::vector<Edge> previous;
    previous.swap(edges_);
    try {
      ImplEngine::forward(loss, no_grad);
    } catch (...) {
      edges_ = std::move(previous);  // a failed forward leaves the previous output held, and its uses
      throw;
    }
  }

  // GroupOptionsInheritDefaults: a group's options over the optimizer's defaults (the 2.x rule, SEM-7.1).
  void make_optimizer(const OptimizerSpec& spec) override {
    if (m_ != Mutant::GroupOptionsInheritDefaults) return ImplEngine::make_optimizer(spec);
    defaults_ = spec.defaults;
    OptimizerSpec merged = spec;
    for (ParamGroupSpec& g : merged.groups)
      if (g.options) g.options = over_defaults(*g.options);
    ImplEngine::make_optimizer(merged);
  }
  void step_without_maximize() {
    impl::Optimizer* o = optimizer();
    std::vector<bool*> turned_off;
    std::vector<impl::Tensor> negated;  // each storage once: aliased grads (SEM-3.1) and a parameter listed twice
    if (o)
      for (impl::ParamGroup& g : o->param_groups()) {
        bool* maximize = g.options ? maximize_flag(*g.options) : nullptr;
        if (!maximize || !*maximize) continue;
        *maximize = false;
        turned_off.push_back(maximize);
        if (m_ != Mutant::MaximizeGradInPlace) continue;
        for (impl::Tensor& p : g.params) {
          impl::Tensor grad = p.grad();
          if (!grad.defined() ||
              std::any_of(negated.begin(), negated.end(), [&](const impl::Tensor& t) { return t.shares_storage_with(grad); }))
            continue;
          negated.push_back(grad);
          for (int64_t i = 0; i < grad.numel(); ++i) grad.set_at(i, -grad.at(i));
        }
      }
    try {
      ImplEngine::step();
    } catch (...) {
      for (bool* m : turned_off) *m = true;
      throw;
    }
    for (bool* m : turned_off) *m = true;
  }

  // SEM-17.1.
  std::optional<TensorValue> step_with_closure(StepClosure& closure) override {
    if (m_ != Mutant::ClosureCalledAfterUpdate) return ImplEngine::step_with_closure(closure);
    ImplEngine::step();  // the update first, with the grads the closure has not made yet
    return closure.call();
  }
  void add_param_group(const ParamGroupSpec& group) override {
    if (m_ != Mutant::GroupOptionsInheritDefaults || !group.options) return ImplEngine::add_param_group(group);
    ParamGroupSpec merged = group;
    merged.options = over_defaults(*group.options);
    ImplEngine::add_param_group(merged);
  }

 protected:
  impl::Tensor apply_op(const Expr& e, const std::vector<impl::Tensor>& operands) override {
    if (m_ == Mutant::TiedParamCountedOnce && e.op == Op::Param && uses_[e.name]++ > 0)
      return tensor_of(e.name).share_storage();  // same values, no autograd history
    if (m_ == Mutant::AccumulatePerEdge && e.op == Op::Param && uses_[e.name] > 1) {
      impl::Tensor use = tensor_of(e.name).share_storage();
      use.set_requires_grad(true);
      edges_.push_back({e.name, use, tensor_of(e.name).version()});
      return use;
    }
    return ImplEngine::apply_op(e, operands);
  }

 private:
  // ClipUndefinedGradAsZero: every listed parameter without a grad gets a zero one first.
  void zero_undefined_grads(const std::vector<std::string>& params) {
    for (const std::string& name : params) {
      impl::Tensor& p = tensor_of(name);
      if (!p.grad().defined()) p.set_grad(impl::Tensor::zeros(p.dtype(), p.shape()));
    }
  }
  // LoadResetsStepCount: the step count back to 0; LoadRecreatesMoments: every state tensor zeros.
  void reset_state(impl::ParamState* s) const {
    if (!s) return;
    auto zero = [](impl::Tensor& t) {
      if (t.defined()) t = impl::Tensor::zeros(t.dtype(), t.shape());
    };
    const bool steps = m_ == Mutant::LoadResetsStepCount;
    if (auto* a = dynamic_cast<impl::AdamParamState*>(s)) {
      if (steps) a->step = 0;
      else zero(a->exp_avg), zero(a->exp_avg_sq), zero(a->max_exp_avg_sq);
    } else if (auto* r = dynamic_cast<impl::RMSpropParamState*>(s)) {
      if (steps) r->step = 0;
      else zero(r->square_avg), zero(r->momentum_buffer), zero(r->grad_avg);
    } else if (auto* g = dynamic_cast<impl::AdagradParamState*>(s)) {
      if (steps) g->step = 0;
      else zero(g->sum);
    } else if (auto* m = dynamic_cast<impl::SGDParamState*>(s)) {
      if (!steps) zero(m->momentum_buffer);
    }
  }

  // ClipListedOnce: the names without repeats, in first-listed order.
  static std::vector<std::string> once(const std::vector<std::string>& params) {
    std::vector<std::string> out;
    for (const std::string& name : params)
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    return out;
  }

  OptimizerOptions over_defaults(const OptimizerOptions& given) const {
    OptimizerOptions merged = defaults_;
    for (const std::string& name : all_option_names()) copy_if_set(any_option(name), given, merged);
    return merged;
  }

  Mutant m_;
  std::map<std::string, int> uses_;  // TiedParamCountedOnce, AccumulatePerEdge: uses of each parameter in this forward
  struct Edge {
    std::string param;
    impl::Tensor use;                 // the use's own leaf, on the parameter's storage
    uint64_t version_at_forward = 0;  // the parameter's version when the use was made
  };
  std::vector<Edge> edges_;           // AccumulatePerEdge: this forward's uses of parameters used twice
  OptimizerOptions defaults_;        // GroupOptionsInheritDefaults
  std::vector<impl::Tensor> retired_;  // StepRebindsParameter: the parameters replaced so far
};

}  // namespace

std::unique_ptr<ImplEngine> make_action_mutant(Mutant m, bool zero_grad_default_none) {
  switch (m) {
    case Mutant::ZeroGradNoop:
    case Mutant::ZeroGradNewTensor:
    case Mutant::ZeroGradNoDetach:
    case Mutant::SetToNoneZeroes:
    case Mutant::BackwardOverwrites:
    case Mutant::AccumulateOutOfPlace:
    case Mutant::AccumulateInPlaceCreateGraph:
    case Mutant::TiedParamCountedOnce:
    case Mutant::AccumulatePerEdge:
    case Mutant::UnusedParamGradZero:
    case Mutant::RetainGraphIgnored:
    case Mutant::GroupOptionsInheritDefaults:
    case Mutant::StepRebindsParameter:
    case Mutant::ClosureCalledAfterUpdate:
    case Mutant::ClipPerTensor:
    case Mutant::ClipUndefinedGradAsZero:
    case Mutant::ClipCoefficientUnclamped:
    case Mutant::ClipNonfiniteIgnored:
    case Mutant::ClipListedOnce:
    case Mutant::ClipValueOneSided:
    case Mutant::LoadResetsStepCount:
    case Mutant::LoadRecreatesMoments:
    case Mutant::StateDictSharesState:
    case Mutant::LoadOptionsOtherVersion:
    case Mutant::MaximizeIgnored:
    case Mutant::MaximizeGradInPlace:
      return std::make_unique<ActionMutant>(m, zero_grad_default_none);
    default:
      return nullptr;
  }
}

}  // namespace lockstep::mutants_detail
