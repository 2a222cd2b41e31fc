// The variant catalogue (see variants.h): impl with different, correct rounding.
//
// Every variant is a wrapper around a plain impl engine. An action the variant changes runs on impl between
// two observations (`before`, impl's `after`); the variant then computes its own numbers, writes them into
// a copy of `after` and hands that to impl's synchronise(), which overwrites numbers in place and keeps
// every identity. Identity flags: impl's observe() remembers each grad it reports and answers
// same_as_previous relative to the previous call, so an observation inside an action would hide a new
// grad from the next outer observe(). The wrapper folds every observation's flags (a grad is the same
// tensor as at the previous outer observe() when it was the same at every observation in between: impl
// keeps the grads it saw alive, so no tensor can come back after it was replaced) and reports the fold.
#include "tools/variants/variants.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>

#include "conformance/program/optimizer_descriptions.h"
#include "conformance/compare/tolerance.h"
#include "impl/engine_adapter.h"

namespace lockstep {
namespace {

// ---------------------------------------------------------------------------------------------------------
// Values.

bool same_number(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}

bool same_layout(const TensorValue& a, const TensorValue& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.data.size() == b.data.size();
}

// Element i of `now` differs from the same element `before` (a tensor absent or shaped differently before
// counts as changed everywhere).
bool changed_at(const TensorValue* before, const TensorValue& now, size_t i) {
  if (!before || !same_layout(*before, now)) return true;
  return !same_number(before->data[i], now.data[i]);
}

TensorValue zeros_like(const TensorValue& v) {
  TensorValue z = v;
  for (double& x : z.data) x = 0;
  return z;
}

double round_to(double x, DType dtype) {
  return dtype == DType::Float32 ? static_cast<double>(static_cast<float>(x)) : x;
}

// The neighbour of x one ULP away in its dtype, up or down; x itself where that would leave the finite range.
double one_ulp(double x, DType dtype, bool up) {
  const double inf = std::numeric_limits<double>::infinity();
  double y;
  if (dtype == DType::Float32) {
    y = std::nextafter(static_cast<float>(x), static_cast<float>(up ? inf : -inf));
  } else {
    y = std::nextafter(x, up ? inf : -inf);
  }
  return std::isfinite(y) ? y : x;
}

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hash_text(const std::string& s) {  // FNV-1a
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Handles and the output are aliases of tensors that the state also shows elsewhere (a handle holds a
// parameter's grad, SEM-1.1; a forward of a bare parameter holds the parameter itself), and impl's
// synchronise() writes them after the parameters. So wherever an action changed a handle (or, outside a
// forward, the output) in place, it takes the variant's numbers of the grad (value) it aliases: the one
// whose numbers before and after the action are the handle's (output's).
void propagate_to_aliases(const EngineState& before, const EngineState& impl_after, EngineState& after,
                          bool output_may_alias) {
  for (size_t h = 0; h < after.handles.size() && h < impl_after.handles.size(); ++h) {
    const HandleObservation& now = impl_after.handles[h];
    const HandleObservation* then = before.handle(now.name);
    if (!now.defined || !then || !then->defined || !same_layout(then->value, now.value) ||
        then->value == now.value)
      continue;
    for (size_t j = 0; j < impl_after.params.size(); ++j) {
      const ParamObservation& pa = impl_after.params[j];
      const ParamObservation* pb = before.param(pa.name);
      if (!pb || !pa.grad.defined || !pb->grad.defined) continue;
      if (pb->grad.value == then->value && pa.grad.value == now.value) {
        after.handles[h].value = after.params[j].grad.value;
        break;
      }
    }
  }
  if (output_may_alias && before.output && impl_after.output && after.output &&
      !(before.output->value == impl_after.output->value)) {
    for (size_t j = 0; j < impl_after.params.size(); ++j) {
      const ParamObservation* pb = before.param(impl_after.params[j].name);
      if (pb && pb->value == before.output->value && impl_after.params[j].value == impl_after.output->value) {
        after.output->value = after.params[j].value;
        break;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// The wrapper.

class VariantEngine : public Engine {
 public:
  explicit VariantEngine(const std::string& variant) : name_("impl~" + variant), inner_(make_impl_engine()) {}

  std::string name() const override { return name_; }

  void add_parameter(const ParamSpec& spec) override { inner_->add_parameter(spec); }
  void make_optimizer(const OptimizerSpec& spec) override {
    kind_ = spec.kind;
    inner_->make_optimizer(spec);
  }
  void forward(const Expr& loss, bool no_grad) override { inner_->forward(loss, no_grad); }
  void backward(const BackwardArgs& args) override { inner_->backward(args); }
  void zero_grad(std::optional<bool> set_to_none) override { inner_->zero_grad(set_to_none); }
  bool zero_grad_sets_to_none_by_default() const override { return inner_->zero_grad_sets_to_none_by_default(); }
  void set_grad_none(const std::string& param) override { inner_->set_grad_none(param); }
  void hold_grad(const std::string& param, const std::string& handle) override {
    inner_->hold_grad(param, handle);
  }
  void step() override { inner_->step(); }
  // step_with_closure: Engine's own (the closure once, then this engine's step(), SEM-17.1), so that a variant's
  // step arithmetic holds in a step with a closure too; impl's own for an optimizer that calls its closure between
  // moves (L-BFGS, SEM-16.3), which no variant concerns.
  std::optional<TensorValue> step_with_closure(StepClosure& closure) override {
    if (describe(kind_).needs_closure) return inner_->step_with_closure(closure);
    return Engine::step_with_closure(closure);
  }
  void set_group_options(int group, const OptimizerOptions& changes) override {
    inner_->set_group_options(group, changes);
  }
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

  EngineState observe() override {
    EngineState s = look();
    for (ParamObservation& p : s.params) {
      p.grad.same_as_previous = unchanged_[p.name];
      p.same_as_previous = param_unchanged_.count(p.name) ? param_unchanged_[p.name] : p.same_as_previous;
    }
    unchanged_.clear();
    param_unchanged_.clear();
    return s;
  }

  void synchronise(const EngineState& target) override { inner_->synchronise(target); }

 protected:
  // impl's observation, its identity flags folded into the next outer observe()'s (header comment).
  EngineState look() {
    EngineState s = inner_->observe();
    for (const ParamObservation& p : s.params) {
      auto it = unchanged_.emplace(p.name, true).first;
      it->second = it->second && p.grad.same_as_previous;
      auto pt = param_unchanged_.emplace(p.name, true).first;
      pt->second = pt->second && p.same_as_previous.value_or(true);
    }
    return s;
  }

  // Runs `body` on impl between two observations; `adjust(before, impl_after, after, failed)` rewrites
  // after's numbers and says whether it changed any; they are then written into impl. impl's exception,
  // if any, leaves afterwards (the numbers a failed action computed are the variant's too).
  template <class Body, class Adjust>
  void around(Body&& body, Adjust&& adjust) {
    const EngineState before = look();
    std::exception_ptr error;
    try {
      body();
    } catch (...) {
      error = std::current_exception();
    }
    const EngineState impl_after = look();
    EngineState after = impl_after;
    if (adjust(before, impl_after, after, error != nullptr)) inner_->synchronise(after);
    if (error) std::rethrow_exception(error);
  }

  Engine& inner() { return *inner_; }
  OptimizerKind kind() const { return kind_; }

 private:
  std::string name_;
  std::unique_ptr<Engine> inner_;
  OptimizerKind kind_ = OptimizerKind::SGD;
  // Per parameter: its grad kept its identity at every observation since the last observe().
  std::map<std::string, bool> unchanged_;
  std::map<std::string, bool> param_unchanged_;  // the parameter's identity, folded the same way
};

// ---------------------------------------------------------------------------------------------------------
// Step arithmetic: SEMANTICS §5.3, §6.3, §6.4 in the parameter's dtype T, each variant's own way.

enum class Arithmetic { Unfused, Reciprocal, SqrtRatio };

const char* arithmetic_name(Arithmetic a) {
  switch (a) {
    case Arithmetic::Unfused:
      return "unfused";
    case Arithmetic::Reciprocal:
      return "reciprocal";
    case Arithmetic::SqrtRatio:
      return "sqrt-ratio";
  }
  return "?";
}

struct SgdLine {
  bool weight_decay_on, momentum_on, first, nesterov;
  double weight_decay, momentum, dampening, lr;
};

// SEM-5.3 over one parameter. unfused: every line a multiply and an add, each rounded; reciprocal: only the
// last line (p + (-lr) * d) unfused; sqrt-ratio: SGD has no square root, impl's fused lines.
template <class T>
void sgd_elements(Arithmetic a, const SgdLine& o, std::vector<double>& p, const std::vector<double>& grad,
                  std::vector<double>* buf) {
  const bool unfused = a == Arithmetic::Unfused;
  const T wd = static_cast<T>(o.weight_decay), mom = static_cast<T>(o.momentum);
  const T one_minus_dampening = static_cast<T>(1 - o.dampening), neg_lr = static_cast<T>(-o.lr);
  for (size_t i = 0; i < p.size(); ++i) {
    T param = static_cast<T>(p[i]);
    T d = static_cast<T>(grad[i]);                                                 // d = p.grad
    if (o.weight_decay_on) d = unfused ? d + wd * param : std::fma(wd, param, d);  // d + weight_decay * p
    if (o.momentum_on) {
      T b;
      if (o.first) {
        b = d;  // buf = copy of d (no dampening)
      } else {
        T kept = static_cast<T>((*buf)[i]) * mom;  // buf * momentum + (1 - dampening) * d
        b = unfused ? kept + one_minus_dampening * d : std::fma(one_minus_dampening, d, kept);
      }
      (*buf)[i] = b;
      d = o.nesterov ? (unfused ? d + mom * b : std::fma(mom, b, d)) : b;  // d + momentum * buf, or buf
    }
    if (a == Arithmetic::SqrtRatio) {
      param = std::fma(neg_lr, d, param);  // p - lr * d, fused as impl
    } else {
      T step = neg_lr * d;  // p + (-lr) * d: the multiply, then the add
      param = param + step;
    }
    p[i] = param;
  }
}

struct AdamLine {
  bool l2_on, decoupled_on, moments_only;
  double l2, decoupled, lr, beta1, beta2, eps, bc1, bc2;
};

// SEM-6.3/6.4 over one parameter; `moments_only`: impl's failing step (amsgrad over a state without
// max_exp_avg_sq) stops after the decay and the moments.
template <class T>
void adam_elements(Arithmetic a, const AdamLine& o, std::vector<double>& p, const std::vector<double>& grad,
                   std::vector<double>& exp_avg, std::vector<double>& exp_avg_sq,
                   std::vector<double>* max_sq) {
  const bool unfused = a == Arithmetic::Unfused;
  const T decay_factor = static_cast<T>(1 - o.lr * o.decoupled), l2 = static_cast<T>(o.l2);
  const T beta1 = static_cast<T>(o.beta1), one_minus_beta1 = static_cast<T>(1 - o.beta1);
  const T beta2 = static_cast<T>(o.beta2), one_minus_beta2 = static_cast<T>(1 - o.beta2);
  const T eps = static_cast<T>(o.eps), bc2 = static_cast<T>(o.bc2),
          sqrt_bc2 = static_cast<T>(std::sqrt(o.bc2));
  const T step_size = static_cast<T>(o.lr / o.bc1);
  for (size_t i = 0; i < p.size(); ++i) {
    T param = static_cast<T>(p[i]);
    if (o.decoupled_on) param = param * decay_factor;  // AdamW: p * (1 - lr * weight_decay), first
    T g = static_cast<T>(grad[i]);
    if (o.l2_on) g = unfused ? g + l2 * param : std::fma(l2, param, g);  // Adam: g + weight_decay * p
    T m_kept = static_cast<T>(exp_avg[i]) * beta1;                       // exp_avg * beta1 + (1 - beta1) * g
    T m = unfused ? m_kept + one_minus_beta1 * g : std::fma(one_minus_beta1, g, m_kept);
    T v_kept = static_cast<T>(exp_avg_sq[i]) * beta2;  // exp_avg_sq * beta2 + (1 - beta2) * g * g
    T v_scaled = one_minus_beta2 * g;
    T v = unfused ? v_kept + v_scaled * g : std::fma(v_scaled, g, v_kept);
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    if (o.moments_only) {
      p[i] = param;
      continue;
    }
    T second = v;
    if (max_sq) {  // max(max_exp_avg_sq, exp_avg_sq), NaN propagates
      T old_max = static_cast<T>((*max_sq)[i]);
      second = (v > old_max || v != v) ? v : old_max;
      (*max_sq)[i] = second;
    }
    T update;
    if (a == Arithmetic::SqrtRatio) {
      T denom = std::sqrt(second / bc2) + eps;  // sqrt(v / bc2) + eps
      update = (m / denom) * step_size;         // (exp_avg / denom) * (lr / bc1)
    } else {
      T root = std::sqrt(second);
      T denom = root / sqrt_bc2 + eps;  // sqrt(v) / sqrt(bc2) + eps
      if (a == Arithmetic::Reciprocal) {
        T inverse = T(1) / denom;
        update = step_size * (m * inverse);  // (lr / bc1) * (exp_avg * (1 / denom))
      } else {
        update = (step_size * m) / denom;  // ((lr / bc1) * exp_avg) / denom
      }
    }
    p[i] = param - update;
  }
}

// One parameter's numbers while a step is replayed.
struct Replayed {
  TensorValue value;
  OptimizerStateObservation state;
  const GradObservation* grad = nullptr;
};

// Replays impl's step over `before` with the variant's arithmetic: every group in order, every occurrence
// of a parameter in it (twice in a group: twice, SEM-7.4), parameters with an undefined grad skipped
// (SEM-4.3). Returns true when it stopped where impl's step fails (an amsgrad group over Adam state created
// without max_exp_avg_sq: step counted, decay and moments done, nothing after; impl/adam.cc).
bool replay_step(Arithmetic a, OptimizerKind kind, const EngineState& before,
                 std::map<std::string, Replayed>& ps) {
  for (const GroupObservation& group : before.groups) {
    const OptimizerOptions& o = group.options;
    for (const std::string& name : group.params) {
      auto it = ps.find(name);
      if (it == ps.end()) throw std::logic_error("variant: group parameter '" + name + "' is not observed");
      Replayed& r = it->second;
      if (!r.grad || !r.grad->defined) continue;
      std::vector<double> grad = r.grad->value.data;
      if (o.maximize.value_or(false))  // SEM-20.1: the step reads -grad (exact), as impl
        for (double& g : grad) g = -g;
      if (grad.size() != r.value.data.size())
        throw std::logic_error("variant: grad of '" + name + "' has another size");
      const bool f32 = r.value.dtype == DType::Float32;
      if (kind == OptimizerKind::SGD) {
        SgdLine line{};
        line.weight_decay = o.weight_decay.value_or(0);
        line.momentum = o.momentum.value_or(0);
        line.dampening = o.dampening.value_or(0);
        line.lr = o.lr.value_or(0);
        line.weight_decay_on = line.weight_decay != 0;
        line.momentum_on = line.momentum != 0;
        line.nesterov = line.momentum_on && o.nesterov.value_or(false);  // SEM-5.2: ignored without momentum
        if (line.momentum_on && !r.state.exists) {                       // created lazily (SEM-5.3)
          r.state.exists = true;
          r.state.momentum_buffer = zeros_like(r.value);
          line.first = true;
        }
        std::vector<double>* buf = line.momentum_on ? &r.state.momentum_buffer->data : nullptr;
        if (f32)
          sgd_elements<float>(a, line, r.value.data, grad, buf);
        else
          sgd_elements<double>(a, line, r.value.data, grad, buf);
        continue;
      }
      const bool amsgrad = o.amsgrad.value_or(false);
      if (!r.state.exists) {  // SEM-6.2
        r.state.exists = true;
        r.state.step = 0;
        r.state.exp_avg = zeros_like(r.value);
        r.state.exp_avg_sq = zeros_like(r.value);
        if (amsgrad) r.state.max_exp_avg_sq = zeros_like(r.value);
      }
      const int64_t step = ++*r.state.step;
      AdamLine line{};
      line.lr = o.lr.value_or(0);
      line.beta1 = o.betas ? o.betas->first : 0.9;
      line.beta2 = o.betas ? o.betas->second : 0.999;
      line.eps = o.eps.value_or(0);
      const double weight_decay = o.weight_decay.value_or(0);
      if (kind == OptimizerKind::AdamW)
        line.decoupled = weight_decay;
      else
        line.l2 = weight_decay;
      line.l2_on = line.l2 != 0;
      line.decoupled_on = line.decoupled != 0;
      line.bc1 = 1 - std::pow(line.beta1, static_cast<double>(step));  // double (SEM-1.3)
      line.bc2 = 1 - std::pow(line.beta2, static_cast<double>(step));
      line.moments_only = amsgrad && !r.state.max_exp_avg_sq;
      std::vector<double>* max_sq =
          amsgrad && r.state.max_exp_avg_sq ? &r.state.max_exp_avg_sq->data : nullptr;
      if (f32)
        adam_elements<float>(a, line, r.value.data, grad, r.state.exp_avg->data, r.state.exp_avg_sq->data,
                             max_sq);
      else
        adam_elements<double>(a, line, r.value.data, grad, r.state.exp_avg->data, r.state.exp_avg_sq->data,
                              max_sq);
      if (line.moments_only) return true;
    }
  }
  return false;
}

void copy_numbers(const std::optional<TensorValue>& from, std::optional<TensorValue>& to,
                  const std::string& what) {
  if (from.has_value() != to.has_value())
    throw std::logic_error("variant: " + what + " exists in one of impl's step and the replay only");
  if (from) {
    if (!same_layout(*from, *to))
      throw std::logic_error("variant: " + what + " has another layout in the replay");
    to->data = from->data;
  }
}

class StepVariant : public VariantEngine {
 public:
  explicit StepVariant(Arithmetic a) : VariantEngine(arithmetic_name(a)), arithmetic_(a) {}

  void step() override {
    // The arithmetic variants concern SGD's and the Adam family's lines; other optimizers step as impl does.
    if (kind() != OptimizerKind::SGD && kind() != OptimizerKind::Adam && kind() != OptimizerKind::AdamW) {
      inner().step();
      return;
    }
    around([&] { inner().step(); },
           [&](const EngineState& before, const EngineState& impl_after, EngineState& after, bool failed) {
             std::map<std::string, Replayed> ps;
             for (const ParamObservation& p : before.params) ps[p.name] = Replayed{p.value, p.state, &p.grad};
             const bool stopped = replay_step(arithmetic_, kind(), before, ps);
             if (failed && !stopped) return false;  // impl failed before any number (no optimizer, ...)
             if (stopped && !failed)
               throw std::logic_error("variant: the replayed step fails where impl's does not");
             for (ParamObservation& p : after.params) {
               const Replayed& r = ps.at(p.name);
               if (!same_layout(r.value, p.value))
                 throw std::logic_error("variant: '" + p.name + "' changed layout");
               p.value.data = r.value.data;
               if (r.state.exists != p.state.exists || r.state.step != p.state.step)
                 throw std::logic_error("variant: the replayed state of '" + p.name +
                                        "' differs from impl's in structure");
               copy_numbers(r.state.momentum_buffer, p.state.momentum_buffer, p.name + ".momentum_buffer");
               copy_numbers(r.state.exp_avg, p.state.exp_avg, p.name + ".exp_avg");
               copy_numbers(r.state.exp_avg_sq, p.state.exp_avg_sq, p.name + ".exp_avg_sq");
               copy_numbers(r.state.max_exp_avg_sq, p.state.max_exp_avg_sq, p.name + ".max_exp_avg_sq");
             }
             propagate_to_aliases(before, impl_after, after, /*output_may_alias=*/true);
             return true;
           });
  }

 private:
  Arithmetic arithmetic_;
};

// ---------------------------------------------------------------------------------------------------------
// ulp-noise: every number an action computed, one ULP up or down.

class UlpNoise : public VariantEngine {
 public:
  UlpNoise() : VariantEngine("ulp-noise") {}

  void forward(const Expr& loss, bool no_grad) override {
    noisy(ActionKind::Forward, [&] { inner().forward(loss, no_grad); });
  }
  void backward(const BackwardArgs& args) override {
    noisy(ActionKind::Backward, [&] { inner().backward(args); });
  }
  void zero_grad(std::optional<bool> set_to_none) override {
    noisy(ActionKind::ZeroGrad, [&] { inner().zero_grad(set_to_none); });
  }
  void set_grad_none(const std::string& param) override {
    noisy(ActionKind::SetGradNone, [&] { inner().set_grad_none(param); });
  }
  void hold_grad(const std::string& param, const std::string& handle) override {
    noisy(ActionKind::HoldGrad, [&] { inner().hold_grad(param, handle); });
  }
  void step() override {
    noisy(ActionKind::Step, [&] { inner().step(); });
  }
  void set_group_options(int group, const OptimizerOptions& changes) override {
    noisy(ActionKind::SetOptions, [&] { inner().set_group_options(group, changes); });
  }
  void add_param_group(const ParamGroupSpec& group) override {
    noisy(ActionKind::AddParamGroup, [&] { inner().add_param_group(group); });
  }
  TensorValue clip_grad_norm(const std::vector<std::string>& params, double max_norm, double norm_type,
                             bool error_if_nonfinite) override {
    TensorValue total;
    noisy(ActionKind::ClipGradNorm,
          [&] { total = inner().clip_grad_norm(params, max_norm, norm_type, error_if_nonfinite); });
    return total;
  }
  void clip_grad_value(const std::vector<std::string>& params, double clip_value) override {
    noisy(ActionKind::ClipGradValue, [&] { inner().clip_grad_value(params, clip_value); });
  }
  // A checkpoint computes nothing: saved and loaded as they are, without noise (SEMANTICS §19.5).
  void state_dict(const std::string& checkpoint) override { inner().state_dict(checkpoint); }
  void load_state_dict(const std::string& checkpoint, bool fresh) override { inner().load_state_dict(checkpoint, fresh); }

 private:
  uint64_t action_ = 0;  // actions run so far

  template <class Body>
  void noisy(ActionKind kind, Body&& body) {
    const uint64_t action = action_++;
    around(body, [&](const EngineState& before, const EngineState& impl_after, EngineState& after, bool) {
      bool any = false;
      for (ParamObservation& p : after.params) {
        const ParamObservation* b = before.param(p.name);
        any |= nudge(action, p.name + ".value", b ? &b->value : nullptr, p.value);
        if (p.grad.defined)
          any |=
              nudge(action, p.name + ".grad", b && b->grad.defined ? &b->grad.value : nullptr, p.grad.value);
        OptimizerStateObservation& s = p.state;
        auto before_of =
            [&](std::optional<TensorValue> OptimizerStateObservation::*field) -> const TensorValue* {
          return b && (b->state.*field) ? &*(b->state.*field) : nullptr;
        };
        if (s.momentum_buffer) {
          // A first step without weight decay copies the grad into the buffer: a copy rounds nothing.
          const ParamObservation* ia = impl_after.param(p.name);
          const TensorValue* copy_of = ia && ia->grad.defined ? &ia->grad.value : nullptr;
          any |= nudge(action, p.name + ".momentum_buffer",
                       before_of(&OptimizerStateObservation::momentum_buffer), *s.momentum_buffer, copy_of);
        }
        if (s.exp_avg)
          any |=
              nudge(action, p.name + ".exp_avg", before_of(&OptimizerStateObservation::exp_avg), *s.exp_avg);
        const TensorValue* impl_sq = nullptr;
        if (const ParamObservation* ia = impl_after.param(p.name); ia && ia->state.exp_avg_sq)
          impl_sq = &*ia->state.exp_avg_sq;
        if (s.exp_avg_sq)
          any |= nudge(action, p.name + ".exp_avg_sq", before_of(&OptimizerStateObservation::exp_avg_sq),
                       *s.exp_avg_sq);
        if (s.max_exp_avg_sq && s.exp_avg_sq && impl_sq && same_layout(*s.max_exp_avg_sq, *impl_sq)) {
          // max(max_exp_avg_sq, exp_avg_sq) rounds nothing: where it took exp_avg_sq it takes the nudged one.
          const TensorValue* old = before_of(&OptimizerStateObservation::max_exp_avg_sq);
          for (size_t i = 0; i < s.max_exp_avg_sq->data.size(); ++i) {
            if (changed_at(old, *s.max_exp_avg_sq, i) &&
                same_number(s.max_exp_avg_sq->data[i], impl_sq->data[i])) {
              s.max_exp_avg_sq->data[i] = s.exp_avg_sq->data[i];
              any = true;
            }
          }
        }
      }
      if (kind == ActionKind::Forward && after.output && !output_is_a_parameter(after)) {
        any |= nudge(action, "output", before.output ? &before.output->value : nullptr, after.output->value);
      }
      propagate_to_aliases(before, impl_after, after, /*output_may_alias=*/kind != ActionKind::Forward);
      return any;
    });
  }

  // A forward of a bare parameter holds the parameter itself: its numbers are the parameter's, not computed.
  static bool output_is_a_parameter(const EngineState& s) {
    for (const ParamObservation& p : s.params)
      if (p.value == s.output->value) return true;
    return false;
  }

  // Nudges every element of `now` that changed since `before`, is finite and not zero (exact zeros stay
  // exact: zero_grad's, relu's), has more than 8 significant bits (-1, 2, 0.375 are exact results: the grad
  // of -p is -1 in every rounding, and -1 + 1 must stay 0, or Adam with eps 0 turns 0/0 into a step), and is
  // not bitwise the element of `copy_of`.
  static bool nudge(uint64_t action, const std::string& field, const TensorValue* before, TensorValue& now,
                    const TensorValue* copy_of = nullptr) {
    bool any = false;
    const uint64_t field_hash = hash_text(field);
    for (size_t i = 0; i < now.data.size(); ++i) {
      const double x = now.data[i];
      if (!changed_at(before, now, i) || !std::isfinite(x) || x == 0) continue;
      int exponent = 0;
      const double mantissa = std::frexp(x, &exponent);
      if (std::ldexp(mantissa, 8) == std::trunc(std::ldexp(mantissa, 8))) continue;  // at most 8 significant bits
      if (copy_of && same_layout(*copy_of, now) && same_number(copy_of->data[i], x)) continue;
      const bool up = mix(mix(action * 0x100000001b3ull ^ field_hash) ^ static_cast<uint64_t>(i)) & 1;
      const double y = one_ulp(x, now.dtype, up);
      if (!same_number(x, y)) {
        now.data[i] = y;
        any = true;
      }
    }
    return any;
  }
};

// ---------------------------------------------------------------------------------------------------------
// double-accumulate: forward and backward in float64 on a shadow impl engine, rounded once.

ExprPtr in_float64(const Expr& e) {
  auto copy = std::make_shared<Expr>(e);
  if (copy->op == Op::Const) copy->constant.dtype = DType::Float64;  // float32 constants are exact doubles
  for (ExprPtr& a : copy->args)
    if (a) a = in_float64(*a);
  return copy;
}

class DoubleAccumulate : public VariantEngine {
 public:
  DoubleAccumulate() : VariantEngine("double-accumulate") {}

  void add_parameter(const ParamSpec& spec) override {
    VariantEngine::add_parameter(spec);
    specs_.push_back(spec);
  }

  // The shadow is built afresh for each forward, on float64 copies of impl's parameters at that moment.
  void forward(const Expr& loss, bool no_grad) override {
    shadow_.reset();
    around([&] { inner().forward(loss, no_grad); },
           [&](const EngineState& before, const EngineState&, EngineState& after, bool failed) {
             if (failed || !after.output) return false;
             auto shadow = make_impl_engine();
             for (ParamSpec spec : specs_) {
               const ParamObservation* p = before.param(spec.name);
               if (!p) return false;
               spec.dtype = DType::Float64;
               spec.values = p->value.data;
               shadow->add_parameter(spec);
             }
             try {
               shadow->forward(*in_float64(loss), no_grad);
             } catch (...) {
               return false;  // impl's numbers stand
             }
             EngineState s = shadow->observe();
             if (!s.output) return false;
             shadow_ = std::move(shadow);
             return round_into(s.output->value, after.output->value);
           });
  }

  // The shadow's grads are cleared first, so that after its backward they hold exactly this backward's
  // incoming gradients (every path of a parameter summed in float64, SEM-2.6); impl's new grad is then
  // old + incoming (SEM-3.1-3.3: in place or not, the same sum) rounded once.
  void backward(const BackwardArgs& args) override {
    around([&] { inner().backward(args); },
           [&](const EngineState& before, const EngineState&, EngineState& after, bool failed) {
             if (failed)
               shadow_.reset();  // the graphs may have parted: impl's numbers until the next forward
             if (failed || !shadow_) return false;
             EngineState target = shadow_->observe();
             for (ParamObservation& p : target.params) {
               const ParamObservation* b = before.param(p.name);
               if (!b || b->value.data.size() != p.value.data.size()) return false;
               p.value.data = b->value.data;  // saved tensors alias the parameters, in both engines
               p.grad.defined = false;
               p.state = {};
             }
             target.handles.clear();
             target.output.reset();
             try {
               shadow_->synchronise(target);
               for (const ParamSpec& spec : specs_) shadow_->set_grad_none(spec.name);
               shadow_->backward(args);
             } catch (...) {
               shadow_.reset();
               return false;
             }
             const EngineState s = shadow_->observe();
             bool any = false;
             for (ParamObservation& p : after.params) {
               const ParamObservation* incoming = s.param(p.name);
               const ParamObservation* b = before.param(p.name);
               if (!p.grad.defined || !incoming || !incoming->grad.defined || !b) continue;
               if (may_share_grad_storage(p, before, after)) continue;
               TensorValue sum = incoming->grad.value;
               if (sum.data.size() != p.grad.value.data.size()) continue;
               if (b->grad.defined) {
                 if (b->grad.value.data.size() != sum.data.size()) continue;
                 for (size_t i = 0; i < sum.data.size(); ++i) sum.data[i] += b->grad.value.data[i];
               }
               any |= round_into(sum, p.grad.value, /*near_only=*/true);
             }
             return any;
           });
  }

 private:
  std::vector<ParamSpec> specs_;
  std::unique_ptr<Engine> shadow_;  // float64 twin of the held forward; null: none (impl's numbers stand)

  // Whether p's grad may share its storage with another parameter's (0-d grads, SEMANTICS §3.7): then each
  // sees the other's accumulation, which old + incoming does not model. Told from the observations: another
  // parameter whose grad held the same values before and after. A coincidence only leaves impl's numbers.
  static bool may_share_grad_storage(const ParamObservation& p, const EngineState& before, const EngineState& after) {
    const ParamObservation* pb = before.param(p.name);
    if (!pb || !pb->grad.defined || !p.grad.value.shape.empty()) return false;  // only 0-d grads share (SEM-3.7)
    for (const ParamObservation& q : after.params) {
      if (q.name == p.name || !q.grad.defined || !(q.grad.value == p.grad.value)) continue;
      const ParamObservation* qb = before.param(q.name);
      if (qb && qb->grad.defined && qb->grad.value == pb->grad.value) return true;
    }
    return false;
  }

  // `to`'s finite elements take `from`'s rounded to to's dtype where that is finite too (an overflow or a
  // NaN in one precision only is not a rounding difference: impl's number stands). With `near_only` (grads),
  // only within a few ULPs of impl's: farther is not rounding but a semantic the old + incoming model does
  // not see (two 0-d grads on one storage, SEMANTICS §3.7, see each other's accumulation).
  static bool round_into(const TensorValue& from, TensorValue& to, bool near_only = false) {
    if (from.data.size() != to.data.size()) return false;
    bool any = false;
    for (size_t i = 0; i < to.data.size(); ++i) {
      const double r = round_to(from.data[i], to.dtype);
      if (!std::isfinite(r) || !std::isfinite(to.data[i]) || same_number(r, to.data[i])) continue;
      if (near_only && std::fabs(r - to.data[i]) > 8 * ulp(to.data[i], to.dtype)) continue;
      to.data[i] = r;
      any = true;
    }
    return any;
  }
};

}  // namespace

const std::vector<VariantInfo>& variant_catalogue() {
  static const std::vector<VariantInfo> catalogue = {
      {"unfused",
       "every SGD/Adam/AdamW line rounded multiply by multiply and add by add (impl fuses with std::fma)"},
      {"reciprocal",
       "Adam/AdamW p - (lr/bc1) * (exp_avg * (1/denom)); SGD p + (-lr)*d as a multiply then an add"},
      {"sqrt-ratio", "Adam/AdamW denom = sqrt(v / bc2) + eps and update (exp_avg / denom) * (lr/bc1)"},
      {"ulp-noise", "every number an action changed moves one ULP up or down (deterministic hash); a stress "
                    "variant beyond correct rounding"},
      {"double-accumulate", "forward and backward of float32 programs computed in float64, rounded once"},
  };
  return catalogue;
}

std::string variant_names_joined() {
  std::string names;
  for (const VariantInfo& v : variant_catalogue()) names += (names.empty() ? "" : ", ") + v.name;
  return names;
}

std::unique_ptr<Engine> make_variant_engine(const std::string& name) {
  if (name == "unfused") return std::make_unique<StepVariant>(Arithmetic::Unfused);
  if (name == "reciprocal") return std::make_unique<StepVariant>(Arithmetic::Reciprocal);
  if (name == "sqrt-ratio") return std::make_unique<StepVariant>(Arithmetic::SqrtRatio);
  if (name == "ulp-noise") return std::make_unique<UlpNoise>();
  if (name == "double-accumulate") return std::make_unique<DoubleAccumulate>();
  throw std::invalid_argument("unknown variant '" + name + "' (known: " + variant_names_joined() + ")");
}

}  // namespace lockstep
