// Random programs (generators.h): shape-directed loss expressions, optimizers with groups, and action
// sequences from a small model of the training loop. Generation is imperative (a Picker draws from an
// rc::Random); shrinking is program-level and domain-aware (shrink.h), so every shrink is a valid program.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

#include "conformance/generate/generators.h"
#include "conformance/program/program_json.h"
#include "conformance/generate/shrink.h"
#include "conformance/program/features.h"
#include "conformance/program/optimizer_descriptions.h"
#include "conformance/program/program_cost.h"

namespace lockstep {
namespace {

// Draws choices from an rc::Random. Component generators are evaluated at the nominal size (their values
// do not depend on the program's size); the program's size is size().
class Picker {
 public:
  Picker(const rc::Random& random, int size) : random_(random), size_(size) {}

  template <typename T>
  T operator()(const rc::Gen<T>& gen) {
    return gen(random_.split(), rc::kNominalSize).value();
  }
  uint64_t raw() {
    rc::Random r = random_.split();
    return r.next();
  }
  int below(int n) { return n <= 1 ? 0 : static_cast<int>(raw() % static_cast<uint64_t>(n)); }
  int between(int lo, int hi) { return lo + below(hi - lo + 1); }  // inclusive
  bool chance(int percent) { return below(100) < percent; }
  // Index of a weighted choice.
  size_t weighted(std::initializer_list<int> weights) {
    int total = 0;
    for (int w : weights) total += w;
    int r = below(total);
    size_t i = 0;
    for (int w : weights) {
      if (r < w) return i;
      r -= w;
      ++i;
    }
    return 0;
  }
  template <typename T>
  const T& element(const std::vector<T>& items) {
    return items[static_cast<size_t>(below(static_cast<int>(items.size())))];
  }
  int size() const { return size_; }
  // Scales `at_max` by size/100, at least `at_least`.
  int scaled(int at_least, int at_max) const {
    return std::max(at_least, at_least + (at_max - at_least) * size_ / 100);
  }

 private:
  rc::Random random_;
  int size_;
};

// Whether the run's scope allows a single feature (generators.h, GenOptions::scope).
bool allowed(const GenOptions& options, const std::string& feature) {
  return !options.scope || options.scope->allows(feature);
}

bool ops_allowed(const GenOptions& options, const Expr& e) {
  if (!options.scope) return true;
  if (e.op != Op::Param && e.op != Op::Const && !options.scope->allows(std::string("op:") + op_name(e.op)))
    return false;
  for (const ExprPtr& a : e.args)
    if (a && !ops_allowed(options, *a)) return false;
  return true;
}

TensorValue filled(DType dtype, const Shape& shape, double v) {
  TensorValue t;
  t.dtype = dtype;
  t.shape = shape;
  t.data.assign(static_cast<size_t>(numel(shape)), v);
  return t;
}

bool uses_param(const ExprPtr& e) {
  if (!e) return false;
  if (e->op == Op::Param) return true;
  for (const auto& a : e->args)
    if (uses_param(a)) return true;
  return false;
}

// One of `n` kinds whose op is `op_of(k)`: under GenOptions::focus, drawn among the kinds the scope allows (none
// allowed: the usual draw, which the caller then rejects); else uniformly, as always.
template <class OpOf>
int draw_op_kind(Picker& pick, const GenOptions& options, int n, OpOf op_of) {
  if (!options.focus || !options.scope) return pick.below(n);
  std::vector<int> kinds;
  for (int k = 0; k < n; ++k)
    if (allowed(options, std::string("op:") + op_name(op_of(k)))) kinds.push_back(k);
  return kinds.empty() ? pick.below(n) : pick.element(kinds);
}

// Builds expressions of a requested dtype and shape over a pool of parameters that may grow.
class ExprBuilder {
 public:
  ExprBuilder(Picker& pick, const GenOptions& options, std::vector<ParamSpec>& params)
      : pick_(pick), options_(options), params_(params) {}

  bool may_add_params = true;
  int param_limit = 4;

  // An expression of this dtype and shape using only ops the scope allows: a node out of scope is drawn
  // again (three times), then a leaf is taken (parameters and constants need no op).
  ExprPtr expr(DType dtype, const Shape& shape, int depth) {
    for (int attempt = 0; attempt < 4; ++attempt) {
      ExprPtr e = any_expr(dtype, shape, depth);
      if (ops_allowed(options_, *e)) return e;
    }
    return leaf(dtype, shape);
  }

  ExprPtr any_expr(DType dtype, const Shape& shape, int depth) {
    if (depth <= 0 || pick_.chance(20)) return leaf(dtype, shape);
    const size_t rank = shape.size();
    if (rank == 0) {
      switch (pick_.weighted({14, 14, 10, 8, 10, 10})) {
        case 0: return sum(expr(dtype, operand_shape(), depth - 1));
        case 1: return mean(expr(dtype, operand_shape(), depth - 1));
        case 2: return mse(dtype, depth);
        case 3: return cross_entropy_loss(dtype, depth);
        case 4: return elementwise_binary(dtype, shape, depth);
        default: return elementwise_unary(dtype, shape, depth);
      }
    }
    if (rank == 1) return pick_.chance(50) ? elementwise_binary(dtype, shape, depth)
                                           : elementwise_unary(dtype, shape, depth);
    switch (pick_.weighted({25, 25, 10, 10, 6})) {
      case 0: return elementwise_binary(dtype, shape, depth);
      case 1: return elementwise_unary(dtype, shape, depth);
      case 2: {  // SEM-2.5: matmul saves its operands
        const int64_t k = small_dim();
        // The right operand first: the order GCC evaluated the arguments in, kept so that programs stay as they were
        // (function arguments are evaluated in an unspecified order: each draw in a statement of its own).
        ExprPtr right = expr(dtype, {k, shape[1]}, depth - 1);
        ExprPtr left = expr(dtype, {shape[0], k}, depth - 1);
        return binary(Op::Matmul, std::move(left), std::move(right));
      }
      case 3: return linear_of(dtype, shape[0], shape[1], depth);
      default: {
        const int64_t rows = pick_.between(1, 5);
        ExprPtr w = weight(dtype, {rows, shape[1]}, depth);
        std::vector<int64_t> indices;
        for (int64_t i = 0; i < shape[0]; ++i) indices.push_back(pick_.below(static_cast<int>(rows)));
        return embedding(std::move(w), std::move(indices));  // repeated rows accumulate
      }
    }
  }

  // A leaf: a parameter of this dtype and shape (reused: weight tying; or new) or a constant.
  ExprPtr leaf(DType dtype, const Shape& shape) {
    if (pick_.chance(65)) {
      if (ExprPtr p = param_leaf(dtype, shape)) return p;
    }
    return constant(pick_(gen_tensor(dtype, shape, options_)));
  }

  ExprPtr param_leaf(DType dtype, const Shape& shape) {
    std::vector<std::string> fitting;
    for (const auto& p : params_)
      if (p.dtype == dtype && p.shape == shape) fitting.push_back(p.name);
    const bool can_add = may_add_params && static_cast<int>(params_.size()) < param_limit;
    if (!fitting.empty() && (!can_add || pick_.chance(50))) return param(pick_.element(fitting));
    if (!can_add) return nullptr;
    return param(add_param(dtype, shape));
  }

  // Most losses depend on a parameter (else backward fails with no_grad_fn, SEM-2.3, a case kept rare):
  // add a reduction of one (broadcast as a 0-d operand), tying into an existing parameter when possible.
  ExprPtr depending_on_a_param(ExprPtr loss, DType dtype, const Shape& shape, int keep_percent = 92) {
    if (uses_param(loss) || !pick_.chance(keep_percent)) return loss;
    ExprPtr with = with_a_param(loss, dtype, shape);
    return ops_allowed(options_, *with) ? with : loss;
  }

  ExprPtr with_a_param(ExprPtr loss, DType dtype, const Shape& shape) {
    if (ExprPtr p = param_leaf(dtype, shape)) return add(loss, std::move(p));
    std::vector<std::string> same_dtype;
    for (const auto& p : params_)
      if (p.dtype == dtype) same_dtype.push_back(p.name);
    if (same_dtype.empty()) return loss;
    ExprPtr reduced = pick_.chance(50) ? sum(param(pick_.element(same_dtype))) : mean(param(pick_.element(same_dtype)));
    return add(loss, std::move(reduced));
  }

  std::string add_param(DType dtype, const Shape& shape) {
    ParamSpec spec;
    spec.name = "p" + std::to_string(params_.size());
    spec.dtype = dtype;
    spec.shape = shape;
    spec.values = pick_(gen_tensor(dtype, shape, options_)).data;
    params_.push_back(spec);
    return spec.name;
  }

  // A shape for the operand of a reduction or loss: an existing parameter's shape when there is one (so
  // leaves can tie to it), else a fresh one.
  Shape operand_shape() {
    if (!params_.empty() && pick_.chance(60)) return pick_.element(params_).shape;
    return pick_(gen_shape());
  }

 private:
  int64_t small_dim() { return pick_.between(1, 4); }

  // A weight operand: a parameter when possible.
  ExprPtr weight(DType dtype, const Shape& shape, int depth) {
    if (pick_.chance(75)) {
      if (ExprPtr p = param_leaf(dtype, shape)) return p;
    }
    return expr(dtype, shape, depth - 1);
  }

  ExprPtr linear_of(DType dtype, int64_t n, int64_t out, int depth) {
    const int64_t in = small_dim();
    ExprPtr x = pick_.chance(60) ? constant(pick_(gen_tensor(dtype, {n, in}, options_)))
                                 : expr(dtype, {n, in}, depth - 1);
    ExprPtr w = weight(dtype, {out, in}, depth);
    ExprPtr b = pick_.chance(60) ? weight(dtype, {out}, depth) : nullptr;
    return linear(std::move(x), std::move(w), std::move(b));
  }

  ExprPtr mse(DType dtype, int depth) {
    const Shape s = operand_shape();
    ExprPtr a = expr(dtype, s, depth - 1);
    ExprPtr b = pick_.chance(60) ? constant(pick_(gen_tensor(dtype, s, options_))) : expr(dtype, s, depth - 1);
    if (pick_.chance(20)) std::swap(a, b);
    return binary(Op::MseLoss, std::move(a), std::move(b));
  }

  ExprPtr cross_entropy_loss(DType dtype, int depth) {
    const int64_t n = small_dim(), classes = small_dim();
    ExprPtr logits = pick_.chance(40) ? linear_of(dtype, n, classes, depth) : expr(dtype, {n, classes}, depth - 1);
    std::vector<int64_t> targets;
    for (int64_t i = 0; i < n; ++i) targets.push_back(pick_.below(static_cast<int>(classes)));
    return cross_entropy(std::move(logits), std::move(targets));
  }

  template <class OpOf>
  int draw_kind(int n, OpOf op_of) { return draw_op_kind(pick_, options_, n, op_of); }

  ExprPtr elementwise_binary(DType dtype, const Shape& shape, int depth) {
    static const Op ops[] = {Op::Add, Op::Sub, Op::Mul, Op::Div};
    const Op op = ops[draw_kind(4, [](int k) { return ops[k]; })];
    // One operand 0-d: broadcast (program.h).
    const bool broadcast = !shape.empty() && pick_.chance(15);
    const Shape b_shape = broadcast ? Shape{} : shape;
    ExprPtr a = expr(dtype, shape, depth - 1);
    ExprPtr b = op == Op::Div ? nonzero(dtype, b_shape, depth - 1) : expr(dtype, b_shape, depth - 1);
    if (op != Op::Div && broadcast && pick_.chance(40)) std::swap(a, b);
    return binary(op, std::move(a), std::move(b));
  }

  ExprPtr elementwise_unary(DType dtype, const Shape& shape, int depth) {
    static const Op kinds[] = {Op::Neg,  Op::MulScalar, Op::Square, Op::Pow, Op::Exp, Op::Log,     Op::Tanh,
                               Op::Sigmoid, Op::Relu,   Op::Abs,    Op::Pow, Op::Pow, Op::Softplus};
    const int k = draw_kind(13, [](int i) { return kinds[i]; });
    if (k == 12) return unary(Op::Softplus, expr(dtype, shape, depth - 1));
    switch (k >= 10 ? 3 : k) {  // pow three times as often: five rows of the coverage table
      case 0: return unary(Op::Neg, expr(dtype, shape, depth - 1));
      case 1: {
        static const std::vector<double> factors = {2, 0.5, -1, 0.25, 3, -0.5, 1.5};
        const double factor = pick_.element(factors);  // before the operand, as GCC evaluated the arguments
        return mul_scalar(expr(dtype, shape, depth - 1), factor);
      }
      case 2: return unary(Op::Square, expr(dtype, shape, depth - 1));
      case 3: {
        static const std::vector<double> exponents = {2, 3, 1, 0, -1, 0.5, 1.5, -0.5};
        const double e = pick_.element(exponents);
        const bool needs_positive_base = e < 0 || e != static_cast<int>(e);
        if (needs_positive_base) return pow_scalar(positive(dtype, shape, depth - 1), e);
        // A leaf base often: its raw values (exact zeros, tiny, large, NaN) reach pow's edge points.
        return pow_scalar(pick_.chance(50) ? leaf(dtype, shape) : expr(dtype, shape, depth - 1), e);
      }
      case 4: return unary(Op::Exp, bounded(dtype, shape, depth - 1));
      case 5: return unary(Op::Log, positive(dtype, shape, depth - 1));
      case 6: return unary(Op::Tanh, expr(dtype, shape, depth - 1));
      case 7: return unary(Op::Sigmoid, expr(dtype, shape, depth - 1));
      case 8: return unary(Op::Relu, expr(dtype, shape, depth - 1));
      default: return unary(Op::Abs, expr(dtype, shape, depth - 1));
    }
  }

  // Values in a modest range, for exp (keeps exp finite in float32).
  ExprPtr bounded(DType dtype, const Shape& shape, int depth) {
    switch (pick_.below(4)) {
      case 0: return unary(Op::Tanh, expr(dtype, shape, depth));
      case 1: return mul_scalar(unary(Op::Tanh, expr(dtype, shape, depth)), 2);
      case 2: return unary(Op::Sigmoid, expr(dtype, shape, depth));
      default: return leaf(dtype, shape);  // leaf values stay below ~16
    }
  }

  // Strictly positive values (mostly), for log, division and fractional powers.
  ExprPtr positive(DType dtype, const Shape& shape, int depth) {
    switch (pick_.below(6)) {
      case 0: return unary(Op::Sigmoid, expr(dtype, shape, depth));
      case 1: return unary(Op::Exp, unary(Op::Tanh, expr(dtype, shape, depth)));
      case 2: return add(unary(Op::Abs, expr(dtype, shape, depth)), constant(filled(dtype, {}, 1)));
      case 3: return add(unary(Op::Square, expr(dtype, shape, depth)), constant(filled(dtype, shape, 0.5)));
      case 4:  // may hit 0 (log -> -inf) or a tiny value: a leaf's raw values often
        return unary(Op::Abs, pick_.chance(50) ? leaf(dtype, shape) : expr(dtype, shape, depth));
      default: {
        TensorValue t = pick_(gen_tensor(dtype, shape, options_));
        for (double& v : t.data) v = std::abs(v) + 0.5;
        if (dtype == DType::Float32)
          for (double& v : t.data) v = static_cast<double>(static_cast<float>(v));
        return constant(std::move(t));
      }
    }
  }

  ExprPtr nonzero(DType dtype, const Shape& shape, int depth) {
    ExprPtr p = positive(dtype, shape, depth);
    return pick_.chance(25) ? unary(Op::Neg, std::move(p)) : p;
  }

  Picker& pick_;
  const GenOptions& options_;
  std::vector<ParamSpec>& params_;
};

// ---------------------------------------------------------------------------------------------------------
// Optimizer options.

// The values come from the optimizers' descriptions (optimizer_descriptions.h). SGD and the Adam family keep
// their own hand-written mix below (the order of picks decides every seeded program); every other optimizer
// is generated from its description alone.

// The description's generator hooks draw from the program's stream (optimizer_descriptions.h).
class PickerDraws : public OptionDraws {
 public:
  explicit PickerDraws(Picker& pick) : pick_(pick) {}
  int below(int n) override { return pick_.below(n); }

 private:
  Picker& pick_;
};

// A learning rate of `kind`, or now and then 0 (OptionDraws::lr).
double pick_lr(Picker& pick, OptimizerKind kind) {
  PickerDraws draw(pick);
  return draw.lr(describe(kind).lr_values);
}

// Unsets the options the scope excludes (features.h names them "sgd.momentum", ...) where they differ from
// the option type's default, and what that leaves invalid together when invalid options are excluded.
void fit_options(OptimizerKind kind, OptimizerOptions& o, const GenOptions& options) {
  if (!options.scope) return;
  const std::string k = std::string(optimizer_name(kind)) + ".";
  for (const OptionDescription& d : describe(kind).options) {
    if (!d.has_default) continue;  // SGD's lr is required: SGD is out of scope without it
    if (is_set(d, o) && !is_default(d, o) && !allowed(options, k + d.name)) unset(d, o);
  }
  if (describe(kind).unset_invalid_combinations && !allowed(options, "invalid_options"))
    describe(kind).unset_invalid_combinations(o);
}

// Sets in `group` every option the optimizer's defaults set and the group leaves unset, so that the 1.13 rule
// (the option type's defaults) and Python's (the optimizer's defaults) agree (SEM-7.1): used when the scope
// excludes group_options_partial.
void complete_from_defaults(OptimizerOptions& group, const OptimizerOptions& defaults) {
  for (const std::string& name : all_option_names())
    if (!is_set(any_option(name), group)) copy_if_set(any_option(name), defaults, group);
}

// Options of an optimizer without a generator of its own: each option now and then at one of its values, and
// (for error cases) one option at a value the constructor rejects.
void generate_described_options(OptionDraws& draw, const OptimizerDescription& d, bool for_defaults,
                                bool invalid_allowed, OptimizerOptions& o) {
  for (const OptionDescription& od : d.options) {
    if (std::string(od.name) == "lr") {
      if (!od.has_default || draw.chance(70)) o.lr = draw.lr(d.lr_values);
      continue;
    }
    if (od.not_in_cpp_api || !draw.chance(35)) continue;  // drawn by add_maximize
    switch (od.type) {
      case OptionType::Number:
        o.*od.number = od.values.empty() || draw.chance(20) ? od.default_number : draw.element(od.values);
        break;
      case OptionType::Flag: o.*od.flag = draw.chance(50); break;
      case OptionType::Pair:
        o.*od.pair = od.pair_values.empty() || draw.chance(20) ? od.default_pair : draw.element(od.pair_values);
        break;
      case OptionType::Text:
        if (!od.text_values.empty()) o.*od.text = draw.element(od.text_values);
        break;
    }
  }
  if (invalid_allowed && draw.chance(for_defaults ? 4 : 10)) {
    std::vector<const OptionDescription*> rejectable;
    for (const OptionDescription& od : d.options)
      if (!od.invalid_values.empty() || !od.invalid_pair_values.empty()) rejectable.push_back(&od);
    if (!rejectable.empty()) {
      const OptionDescription& od = *draw.element(rejectable);
      if (od.type == OptionType::Pair) o.*od.pair = draw.element(od.invalid_pair_values);
      else o.*od.number = draw.element(od.invalid_values);
    }
  }
}

OptimizerOptions make_options(Picker& pick, OptimizerKind kind, bool for_defaults, const GenOptions& options) {
  const OptimizerDescription& d = describe(kind);
  PickerDraws draw(pick);
  const bool invalid_allowed = options.error_cases && allowed(options, "invalid_options");
  OptimizerOptions o;
  if (d.generate_options) d.generate_options(draw, for_defaults, invalid_allowed, o);
  else generate_described_options(draw, d, for_defaults, invalid_allowed, o);
  fit_options(kind, o, options);
  return o;
}

// A change for set_options: mostly an lr schedule (SEM-5.4, SEM-7.5), sometimes other fields.
OptimizerOptions make_option_change(Picker& pick, OptimizerKind kind, const GenOptions& options) {
  OptimizerOptions change;
  if (pick.chance(75)) change.lr = pick_lr(pick, kind);
  if (!change.lr || pick.chance(30)) {
    OptimizerOptions other = make_options(pick, kind, false, options);
    const OptimizerDescription& d = describe(kind);
    if (d.carry_into_change) {
      PickerDraws draw(pick);
      d.carry_into_change(draw, other, change);
    } else {
      for (const OptionDescription& od : d.options)
        if (std::string(od.name) != "lr" && std::string(od.name) != "weight_decay") copy_if_set(od, other, change);
    }
    if (other.weight_decay) change.weight_decay = other.weight_decay;
    if (!change.lr && other.lr && pick.chance(50)) change.lr = other.lr;
  }
  fit_options(kind, change, options);
  if (!allowed(options, "amsgrad_change")) change.amsgrad.reset();
  return change;
}

std::vector<std::string> names_of(const std::vector<ParamSpec>& params) {
  std::vector<std::string> names;
  for (const auto& p : params) names.push_back(p.name);
  return names;
}

OptimizerSpec make_optimizer(Picker& pick, OptimizerKind kind, const std::vector<ParamSpec>& params,
                             const GenOptions& options) {
  OptimizerSpec spec;
  spec.kind = kind;
  spec.defaults = make_options(pick, kind, true, options);
  const std::vector<std::string> names = names_of(params);
  const bool groups_ok = allowed(options, "param_groups");
  auto own_options = [&]() {
    OptimizerOptions o = make_options(pick, kind, false, options);
    if (!allowed(options, "group_options_partial")) complete_from_defaults(o, spec.defaults);
    return o;
  };
  auto group_options = [&]() -> std::optional<OptimizerOptions> {
    if (pick.chance(50) || !groups_ok) return std::nullopt;
    return own_options();
  };
  size_t structure = pick.weighted({60, 16, 6, 5, 5, 3, 5});
  // An optimizer of one group (L-BFGS, SEM-16.1): its parameters as a list, or one group with its own options (where
  // its constructor may replace some, SEM-16.1), now and then (error cases) two groups.
  if (describe(kind).one_group)
    structure = options.error_cases && pick.chance(5) ? 1 : (pick.chance(25) ? 6 : 0);
  // Structures the scope excludes fall back to the plain one (SEM-7.1).
  if ((structure == 1 && !groups_ok) || (structure == 3 && !allowed(options, "duplicate_param_in_group")) ||
      (structure == 4 && (!groups_ok || !allowed(options, "param_in_two_groups"))) ||
      (structure == 5 && !allowed(options, "empty_param_list")) || (structure == 6 && !groups_ok))
    structure = 0;
  switch (structure) {
    case 0:  // constructed from the list of parameters (SEM-7.1)
      spec.groups.push_back({names, std::nullopt});
      break;
    case 1: {  // split into 2-3 groups, in order, some with their own options
      const int count = std::min<int>(static_cast<int>(names.size()), pick.between(2, 3));
      size_t start = 0;
      for (int g = 0; g < count; ++g) {
        const size_t end = g + 1 == count ? names.size()
                                          : start + 1 + static_cast<size_t>(pick.below(static_cast<int>(
                                                            names.size() - start - (count - g - 1))));
        ParamGroupSpec group{{names.begin() + start, names.begin() + end}, group_options()};
        spec.groups.push_back(group);
        start = end;
      }
      if (spec.groups.empty()) spec.groups.push_back({names, group_options()});
      break;
    }
    case 2: {  // only some parameters are optimized
      ParamGroupSpec group;
      for (const auto& n : names)
        if (pick.chance(50)) group.params.push_back(n);
      group.options = group_options();
      spec.groups.push_back(group);
      break;
    }
    case 3: {  // a parameter listed twice in one group: updated twice per step (SEM-7.4)
      ParamGroupSpec group{names, group_options()};
      if (!names.empty()) group.params.push_back(pick.element(names));
      spec.groups.push_back(group);
      break;
    }
    case 4: {  // a parameter in two groups before any step: accepted in 1.13 (SEM-7.4)
      spec.groups.push_back({names, std::nullopt});
      ParamGroupSpec second;
      if (!names.empty()) second.params.push_back(pick.element(names));
      second.options = group_options();
      spec.groups.push_back(second);
      break;
    }
    case 5:  // an empty parameter list (SEM-7.2)
      break;
    default:  // one group with its own options
      spec.groups.push_back({names, own_options()});
      break;
  }
  if (describe(kind).fit_spec) describe(kind).fit_spec(spec);
  return spec;
}

// ---------------------------------------------------------------------------------------------------------
// Actions, from a small model of the training loop.

class ActionBuilder {
 public:
  ActionBuilder(Picker& pick, const GenOptions& options, Program& program, ExprBuilder& exprs, DType main,
                std::optional<DType> secondary, const TypedShape& loss_shape, int depth)
      : pick_(pick), options_(options), program_(program), exprs_(exprs), main_(main), secondary_(secondary),
        loss_shape_(loss_shape), depth_(depth) {
    if (program.optimizer) groups_ = static_cast<int>(program.optimizer->groups.size());
  }

  void episode() {
    switch (pick_.weighted({30, 12, 7, 5, 7, 4, 5, 5, 4, 14, 6, 4, 4, 4, 4})) {
      case 0:  // the usual loop: zero_grad, forward, backward, step (SEM-4.4)
        if (pick_.chance(80)) zero_grad();
        forward();
        backward();
        step();
        break;
      case 1: {  // accumulation over micro-batches (SEM-3.4, SEM-3.5)
        const int k = pick_.between(2, 3);
        for (int i = 0; i < k; ++i) {
          forward();
          backward();
        }
        step();
        if (pick_.chance(50)) zero_grad();
        break;
      }
      case 2: {  // a second backward through the same graph (SEM-2.5)
        forward();
        Action b = backward_action();
        b.retain_graph = pick_.chance(70) ? std::optional<bool>(true) : std::nullopt;
        push(b);
        backward();
        if (pick_.chance(30)) backward();
        break;
      }
      case 3: {  // create_graph: out-of-place accumulation (SEM-3.3)
        forward();
        Action b = backward_action();
        b.create_graph = true;
        push(b);
        if (pick_.chance(50)) hold_grad();
        forward();
        backward();
        if (pick_.chance(50)) zero_grad();
        break;
      }
      case 4:  // a held grad handle across zeroing (SEM-3.2, SEM-4.1, SEM-4.2)
        hold_grad();
        if (pick_.chance(50)) {
          forward();
          backward();
        }
        zero_grad();
        if (pick_.chance(60)) {
          forward();
          backward();
        }
        break;
      case 5: {  // backward of a no_grad forward fails (SEM-2.3)
        Action f = forward_action();
        f.no_grad = true;
        push(f);
        backward();
        break;
      }
      case 6: {  // a non-scalar output with an explicit gradient (SEM-2.4)
        Action f;
        f.kind = ActionKind::Forward;
        const DType dtype = loss_dtype();
        const Shape shape = pick_.chance(50) ? exprs_.operand_shape() : pick_(gen_shape());
        f.loss = exprs_.depending_on_a_param(exprs_.expr(dtype, shape, depth_), dtype, shape);
        output_ = TypedShape{dtype, shape};
        push(f);
        Action b = backward_action();
        if (pick_.chance(85)) b.gradient = gradient_values();
        push(b);
        if (pick_.chance(50)) step();
        break;
      }
      case 7:  // an lr schedule or other option change between steps (SEM-5.4, SEM-7.5)
        set_options();
        if (pick_.chance(70)) step();
        break;
      case 8:  // add_param_group, possibly with a parameter that already has state (SEM-7.4)
        add_param_group();
        break;
      case 10: {  // a retained graph, stepped, then backpropagated again without a new forward (SEM-2.5, 2.8):
                  // ops that save their output must use the forward's values, those that save a parameter see
                  // the step's change
        Action f = forward_action();
        if (pick_.chance(60)) {
          if (ExprPtr loss = activation_of_a_param()) {
            f.loss = std::move(loss);
            f.no_grad = false;
            output_ = infer_shape(*f.loss, program_.params, "");
          }
        }
        push(f);
        retained_backward();
        step();
        Action again = backward_action();
        if (pick_.chance(40)) again.retain_graph = true;
        push(again);
        if (pick_.chance(50)) step();
        break;
      }
      case 11:  // zero_grad between two backwards of one graph (SEM-4.1, SEM-3.2)
        forward();
        retained_backward();
        zero_grad();
        backward();
        if (pick_.chance(50)) step();
        break;
      case 12:  // a held grad across set_to_none, then a new grad (SEM-4.2, SEM-3.1)
        hold_grad();
        {
          Action z;
          z.kind = ActionKind::ZeroGrad;
          z.set_to_none = true;
          push(z);
        }
        forward();
        backward();
        if (pick_.chance(50)) step();
        break;
      case 13:  // 0-d grads that share storage (SEM-3.7: sum over a 0-d input), accumulated again (SEM-3.2)
        if (ExprPtr loss = sums_of_two_0d_params()) {
          const Action f = backward_sharing_0d_grads(loss, /*retain_graph=*/true).first;
          if (pick_.chance(50)) push(f);  // a new graph, or the retained one again
          Action again = backward_action();
          again.gradient.reset();
          again.create_graph = false;
          push(again);
          if (pick_.chance(50)) step();
        } else {
          single();
        }
        break;
      case 14:  // one parameter reached by several edges of one loss while its grad exists (SEM-3.2)
        several_edges_of_one_param();
        break;
      default:
        single();
        break;
    }
  }

  bool full() const { return static_cast<int>(program_.actions.size()) >= limit; }
  int limit = 48;

 private:
  // Appends `a`, fitted to the scope: flags of a feature out of scope are dropped, and an action whose
  // feature is out of scope is left out.
  void push(Action a) {
    if (full()) return;
    const GenOptions& o = options_;
    switch (a.kind) {
      case ActionKind::Forward:
        if (a.no_grad && !allowed(o, "no_grad")) a.no_grad = false;
        break;
      case ActionKind::Backward:
        if (a.retain_graph && *a.retain_graph && !allowed(o, "retain_graph")) a.retain_graph.reset();
        if (a.create_graph && !allowed(o, "create_graph")) a.create_graph = false;
        if (a.gradient && !allowed(o, "explicit_gradient")) a.gradient.reset();
        break;
      case ActionKind::ZeroGrad: {
        auto feature = [](const std::optional<bool>& s) {
          return !s ? "zero_grad_default" : *s ? "set_to_none" : "zero_grad";
        };
        if (!allowed(o, feature(a.set_to_none))) {
          const std::optional<bool> choices[] = {std::nullopt, false, true};
          bool found = false;
          for (const auto& c : choices)
            if (allowed(o, feature(c))) { a.set_to_none = c; found = true; break; }
          if (!found) return;
        }
        break;
      }
      case ActionKind::SetGradNone: if (!allowed(o, "set_grad_none")) return; break;
      case ActionKind::HoldGrad: if (!allowed(o, "hold_grad")) return; break;
      case ActionKind::SetOptions: if (!allowed(o, "set_options")) return; break;
      case ActionKind::AddParamGroup: if (!allowed(o, "add_param_group")) return; break;
      case ActionKind::ClipGradNorm: if (!allowed(o, "clip_grad_norm")) return; break;
      case ActionKind::ClipGradValue: if (!allowed(o, "clip_grad_value")) return; break;
      case ActionKind::StateDict: if (!allowed(o, "state_dict")) return; break;
      case ActionKind::LoadStateDict: if (!allowed(o, "load_state_dict")) return; break;
      case ActionKind::Step: break;
    }
    program_.actions.push_back(std::move(a));
  }

  DType loss_dtype() { return secondary_ && pick_.chance(40) ? *secondary_ : main_; }

  // sum or mean of one element-wise unary op applied to a parameter whose initial values hold an edge value
  // (exact zero, negative, tiny, large, and NaN/+-Inf where allowed): the op's edge points (the coverage
  // table's ops rows, SEMANTICS §2.11), each reached a few dozen times in the default run, not by chance of
  // depth. The edge value goes into a new parameter (no earlier expression relies on its values: exp's
  // bounded leaves, positive divisors). NaN and +-Inf are planted only where special values are allowed, but
  // the other edges make them anyway (log 0, pow(0, -1), exp of 2^60): results, not inputs (SEMANTICS §9).
  // Null when the scope has none of these ops.
  ExprPtr spotlight() {
    static const Op unary_ops[] = {Op::Neg, Op::MulScalar, Op::Square, Op::Pow,  Op::Pow,  Op::Pow,    Op::Exp,
                                   Op::Log, Op::Tanh,      Op::Sigmoid, Op::Relu, Op::Abs, Op::Softplus};
    const Op op = unary_ops[draw_op_kind(pick_, options_, 13, [](int k) { return unary_ops[k]; })];
    const bool reduce_by_sum = pick_.chance(50);
    if (!allowed(options_, std::string("op:") + op_name(op)) || !allowed(options_, reduce_by_sum ? "op:sum" : "op:mean"))
      return nullptr;
    const DType dtype = loss_dtype();
    const std::string name = exprs_.add_param(dtype, pick_.chance(30) ? Shape{} : pick_(gen_shape()));
    ParamSpec& target = program_.params.back();
    if (target.name != name || target.values.empty()) return nullptr;
    const bool f32 = target.dtype == DType::Float32;
    std::vector<double> edges = {0.0, -pick_.element(std::vector<double>{0.5, 2, 3.25}),
                                 std::ldexp(1.0, f32 ? -130 : -1030), std::ldexp(3.0, pick_.between(20, 60))};
    if (options_.special_values)
      for (double v : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                       -std::numeric_limits<double>::infinity()})
        edges.push_back(v);
    double& slot = target.values[static_cast<size_t>(pick_.below(static_cast<int>(target.values.size())))];
    slot = pick_.element(edges);
    if (f32) slot = static_cast<double>(static_cast<float>(slot));
    ExprPtr a = param(name);
    ExprPtr applied;
    switch (op) {
      case Op::MulScalar: applied = mul_scalar(a, pick_.element(std::vector<double>{2, -0.5, 3})); break;
      case Op::Pow: applied = pow_scalar(a, pick_.element(std::vector<double>{0, 1, 2, 3, 0.5, -1})); break;
      default: applied = unary(op, a); break;
    }
    return reduce_by_sum ? sum(std::move(applied)) : mean(std::move(applied));
  }

  // sum or mean of exp, tanh, sigmoid or relu applied directly to a parameter; null when none fits the scope.
  ExprPtr activation_of_a_param() {
    if (program_.params.empty()) return nullptr;
    static const Op activations[] = {Op::Exp, Op::Tanh, Op::Sigmoid, Op::Relu};
    const Op op = activations[draw_op_kind(pick_, options_, 4, [](int k) { return activations[k]; })];
    const bool reduce_by_sum = pick_.chance(50);
    if (!allowed(options_, std::string("op:") + op_name(op)) ||
        !allowed(options_, reduce_by_sum ? "op:sum" : "op:mean"))
      return nullptr;
    ExprPtr a = unary(op, param(pick_.element(program_.params).name));
    return reduce_by_sum ? sum(std::move(a)) : mean(std::move(a));
  }

  // Both grads of `pair` (add(sum(P), sum(Q)), 0-d) set to None, then its forward and a backward without an explicit
  // gradient or create_graph: the two grads are taken over from one storage (SEM-3.7). Returns the forward and the
  // backward.
  std::pair<Action, Action> backward_sharing_0d_grads(const ExprPtr& pair, bool retain_graph) {
    for (const ExprPtr& term : pair->args) {
      Action none;
      none.kind = ActionKind::SetGradNone;
      none.param = term->args[0]->name;
      push(none);
    }
    Action f;
    f.kind = ActionKind::Forward;
    f.loss = pair;
    output_ = TypedShape{main_, {}};
    push(f);
    Action b = backward_action();
    b.gradient.reset();
    b.create_graph = false;
    if (retain_graph) b.retain_graph = true;
    push(b);
    return {f, b};
  }

  // add(sum(a), sum(b)) of two 0-d parameters of the main dtype (made when there are not two); null when the
  // scope has no add or sum.
  ExprPtr sums_of_two_0d_params() {
    if (!allowed(options_, "op:add") || !allowed(options_, "op:sum")) return nullptr;
    std::vector<std::string> scalars;
    for (const auto& p : program_.params)
      if (p.dtype == main_ && p.shape.empty()) scalars.push_back(p.name);
    while (scalars.size() < 2) scalars.push_back(exprs_.add_param(main_, {}));
    const size_t first = static_cast<size_t>(pick_.below(static_cast<int>(scalars.size())));
    size_t second = static_cast<size_t>(pick_.below(static_cast<int>(scalars.size()) - 1));
    if (second >= first) ++second;
    return add(sum(param(scalars[first])), sum(param(scalars[second])));
  }

  // A parameter reached by several edges of one loss while its grad exists: their contributions are summed,
  // then added to the grad once, in place (SEM-2.6, SEM-3.2). Either 0-d grads that share storage (SEM-3.7: made
  // by add(sum(P), sum(Q))), then add(add(sum(P), sum(Q)), sum(mul(P, c))), whose accumulation Q's grad sees;
  // or a grad that exists, often held, and two edges whose contributions cancel exactly (K and -K, large).
  // An accumulation per edge into a new tensor shows in the grad's identity, the handle or the partner; one in
  // place differs in the low bits of (grad + K) - K only, which the tolerance (bounded by |K|) lists as imprecise.
  void several_edges_of_one_param() {
    if (program_.params.empty() || !allowed(options_, "op:add") || !allowed(options_, "op:sum") ||
        !allowed(options_, "op:mul"))
      return single();
    auto big_constant = [&](DType dtype, const Shape& shape, bool negated) {
      TensorValue k{dtype, shape, {}};
      Picker same = pick_;  // a copy: K and -K get the same magnitudes, then the stream moves on
      for (int64_t i = 0, n = numel(shape); i < n; ++i) {
        const int e = dtype == DType::Float32 ? same.between(12, 30) : same.between(30, 60);
        const double v = std::ldexp(1.0 + same.below(8) / 8.0, e) * (same.chance(50) ? 1 : -1);
        k.data.push_back(negated ? -v : v);
      }
      if (negated) pick_.raw();
      return constant(k);
    };
    if (pick_.chance(35)) {
      ExprPtr pair = sums_of_two_0d_params();
      if (!pair) return single();
      const std::string p = pair->args[0]->args[0]->name;
      auto [f, b] = backward_sharing_0d_grads(pair, /*retain_graph=*/false);  // P's and Q's grads share a storage
      f.loss = add(pair, sum(mul(param(p), big_constant(main_, {}, true))));
      push(f);
      push(b);  // the same backward again
      if (pick_.chance(50)) step();
      return;
    }
    const ParamSpec p = pick_.element(program_.params);
    // Its grad first (the usual loss, or one that surely reaches it), then maybe a handle on it.
    Action first;
    first.kind = ActionKind::Forward;
    first.loss = pick_.chance(50) ? sum(param(p.name)) : sum(mul(param(p.name), big_constant(p.dtype, p.shape, true)));
    output_ = TypedShape{p.dtype, {}};
    push(first);
    Action b = backward_action();
    b.gradient.reset();
    push(b);
    if (pick_.chance(60)) {
      Action h;
      h.kind = ActionKind::HoldGrad;
      h.param = p.name;
      h.handle = "h" + std::to_string(handles_++);
      push(h);
    }
    Action f;
    f.kind = ActionKind::Forward;
    // K before -K: big_constant(.., true) moves the stream on (in one argument list the order is unspecified).
    ExprPtr k = big_constant(p.dtype, p.shape, false);
    ExprPtr minus_k = big_constant(p.dtype, p.shape, true);
    f.loss = add(sum(mul(param(p.name), std::move(k))), sum(mul(param(p.name), std::move(minus_k))));
    output_ = TypedShape{p.dtype, {}};
    push(f);
    Action again = backward_action();
    again.gradient.reset();
    push(again);
    if (pick_.chance(50)) step();
  }

  Action forward_action() {
    Action f;
    f.kind = ActionKind::Forward;
    if (program_.loss && pick_.chance(75)) {
      output_ = loss_shape_;
    } else if (ExprPtr spot = pick_.chance(30) ? spotlight() : nullptr) {
      f.loss = std::move(spot);
      output_ = infer_shape(*f.loss, program_.params, "");
    } else {
      const DType dtype = loss_dtype();
      const Shape shape = pick_.chance(90) ? Shape{} : pick_(gen_shape());
      f.loss = exprs_.depending_on_a_param(exprs_.expr(dtype, shape, depth_), dtype, shape);
      output_ = TypedShape{dtype, shape};
    }
    if (pick_.chance(4)) f.no_grad = true;  // SEM-2.3
    return f;
  }
  void forward() { push(forward_action()); }

  std::vector<double> gradient_values() {
    TensorValue g = pick_(gen_tensor(output_->dtype, output_->shape, options_));
    return g.data;
  }

  Action backward_action() {
    Action b;
    b.kind = ActionKind::Backward;
    switch (pick_.weighted({80, 10, 10})) {
      case 1: b.retain_graph = true; break;
      case 2: b.retain_graph = false; break;
      default: break;
    }
    if (pick_.chance(5)) b.create_graph = true;
    if (output_ && pick_.chance(6)) b.gradient = gradient_values();  // scalar outputs too (length 1)
    return b;
  }
  void backward() { push(backward_action()); }
  void retained_backward() {
    Action b = backward_action();
    b.retain_graph = true;
    push(b);
  }

  void zero_grad() {
    Action z;
    z.kind = ActionKind::ZeroGrad;
    // SEM-4.2 (true), SEM-4.1 (false), SEM-12.1 (unset: the framework's default) from one draw.
    const int r = pick_.below(100);
    if (r < 40) z.set_to_none = true;
    else if (r < 70) z.set_to_none = false;
    push(z);
  }

  void step() {
    Action s;
    s.kind = ActionKind::Step;
    // An optimizer that needs a closure (L-BFGS, SEM-16.2) steps with the usual loop as one, now and then (error
    // cases) without: the step then fails.
    if (program_.optimizer && describe(program_.optimizer->kind).needs_closure &&
        !(options_.error_cases && pick_.chance(4)) && allowed(options_, "closure")) {
      std::vector<Action> closure;
      if (pick_.chance(85)) {
        Action z;
        z.kind = ActionKind::ZeroGrad;
        // As zero_grad() draws it: SEM-4.2, SEM-4.1, or the default (SEM-12.1); fitted to the scope as push() fits
        // it (the closure's actions do not pass through push()), left out where no spelling is allowed.
        const int r = pick_.below(100);
        if (r < 40) z.set_to_none = true;
        else if (r < 70) z.set_to_none = false;
        auto feature = [](const std::optional<bool>& v) {
          return !v ? "zero_grad_default" : *v ? "set_to_none" : "zero_grad";
        };
        bool fits = allowed(options_, feature(z.set_to_none));
        for (const std::optional<bool>& c : {std::optional<bool>(), std::optional<bool>(false), std::optional<bool>(true)})
          if (!fits && allowed(options_, feature(c))) {
            z.set_to_none = c;
            fits = true;
          }
        if (fits) closure.push_back(z);
      }
      Action f = forward_action();
      f.no_grad = false;
      // The step reads the closure's loss as a number (SEM-16.2): a loss of several elements only fails it, which an
      // error case does now and then; otherwise it is summed.
      if (output_ && !output_->shape.empty() && allowed(options_, "op:sum") &&
          !(options_.error_cases && pick_.chance(10))) {
        f.loss = sum(f.loss ? std::move(f.loss) : program_.loss);
        output_ = TypedShape{output_->dtype, {}};
      }
      closure.push_back(std::move(f));
      Action b = backward_action();
      b.create_graph = false;
      closure.push_back(std::move(b));
      s.closure = std::move(closure);
    }
    push(s);
  }

  void hold_grad() {
    if (program_.params.empty()) return;
    Action h;
    h.kind = ActionKind::HoldGrad;
    h.param = pick_.element(program_.params).name;
    h.handle = "h" + std::to_string(handles_++);
    push(h);
  }

  void set_grad_none() {
    if (program_.params.empty()) return;
    Action a;
    a.kind = ActionKind::SetGradNone;
    a.param = pick_.element(program_.params).name;
    push(a);
  }

  void set_options() {
    if (!program_.optimizer) return;  // validate(): set_options needs an optimizer
    Action a;
    a.kind = ActionKind::SetOptions;
    const OptimizerKind kind = program_.optimizer->kind;
    // Mostly an existing group; sometimes one past the end (no_such_group).
    a.group = groups_ > 0 && (!options_.error_cases || pick_.chance(92)) ? pick_.below(groups_) : groups_;
    a.options = make_option_change(pick_, kind, options_);
    push(a);
  }

  void add_param_group() {
    if (program_.params.empty() || !program_.optimizer) return;  // validate(): needs an optimizer
    // One group only (L-BFGS, SEM-16.1): a second makes every later step fail; now and then, in error cases.
    if (describe(program_.optimizer->kind).one_group && !(options_.error_cases && pick_.chance(10))) return;
    Action a;
    a.kind = ActionKind::AddParamGroup;
    std::set<std::string> grouped;
    if (program_.optimizer)
      for (const auto& g : program_.optimizer->groups) grouped.insert(g.params.begin(), g.params.end());
    for (const auto& g : added_) grouped.insert(g.begin(), g.end());
    std::vector<std::string> free;
    for (const auto& p : program_.params)
      if (!grouped.count(p.name)) free.push_back(p.name);
    const bool duplicates_ok = options_.error_cases && allowed(options_, "param_in_two_groups");
    if (free.empty() && !duplicates_ok) return;
    if (!free.empty() && (!duplicates_ok || pick_.chance(70))) {
      for (const auto& n : free)
        if (a.new_group.params.empty() || pick_.chance(50)) a.new_group.params.push_back(n);
    } else {
      a.new_group.params.push_back(pick_.element(program_.params).name);  // may be a duplicate
    }
    const OptimizerKind kind = program_.optimizer->kind;
    bool must_give_options = false;  // an option without a default (SGD's lr, SEM-5.1)
    for (const OptionDescription& d : describe(kind).options) must_give_options = must_give_options || !d.has_default;
    if (must_give_options || pick_.chance(50)) {
      a.new_group.options = make_options(pick_, kind, false, options_);
      if (!allowed(options_, "group_options_partial")) complete_from_defaults(*a.new_group.options, program_.optimizer->defaults);
    }
    added_.push_back(a.new_group.params);
    ++groups_;
    push(a);
  }

  void single() {
    switch (pick_.below(8)) {
      case 0: forward(); break;
      case 1: backward(); break;
      case 2: zero_grad(); break;
      case 3: set_grad_none(); break;
      case 4: hold_grad(); break;
      case 5: step(); break;
      case 6: set_options(); break;
      default: add_param_group(); break;
    }
  }

  Picker& pick_;
  const GenOptions& options_;
  Program& program_;
  ExprBuilder& exprs_;
  DType main_;
  std::optional<DType> secondary_;
  TypedShape loss_shape_;
  int depth_;
  std::optional<TypedShape> output_;  // of the latest forward, for explicit gradients
  int groups_ = 0;
  int handles_ = 0;
  std::vector<std::vector<std::string>> added_;
};

DType other_dtype(DType d) { return d == DType::Float32 ? DType::Float64 : DType::Float32; }

Program generate_program(Picker& pick, const GenOptions& options) {
  Program program;
  DType main = pick(gen_dtype());
  if (!allowed(options, dtype_name(main))) main = other_dtype(main);
  const bool both_dtypes = allowed(options, "float32") && allowed(options, "float64");
  const int depth = pick.scaled(1, std::max(1, options.max_expr_depth));
  ExprBuilder exprs(pick, options, program.params);
  exprs.param_limit = pick.scaled(1, std::max(1, options.max_params));

  // The loss: mostly a scalar that depends on some parameter.
  const Shape loss_shape = pick.chance(92) ? Shape{} : pick(gen_shape());
  ExprPtr loss = exprs.depending_on_a_param(exprs.expr(main, loss_shape, depth), main, loss_shape);
  if (!pick.chance(4)) program.loss = loss;  // else every forward names its own loss

  // Unused parameters (SEM-2.7) and, sometimes, parameters of the other dtype for per-action losses.
  if (pick.chance(30)) {
    const int extra = pick.between(1, 2);
    for (int i = 0; i < extra; ++i) {
      const Shape shape = pick(gen_shape());  // before the dtype, as GCC evaluated the arguments
      exprs.add_param(pick.chance(80) || !both_dtypes ? main : other_dtype(main), shape);
    }
  }
  std::optional<DType> secondary;
  if (pick.chance(8) && both_dtypes) {
    secondary = main == DType::Float32 ? DType::Float64 : DType::Float32;
    exprs.add_param(*secondary, pick(gen_shape()));
  }
  // Per-action losses: tie into the parameters that exist (and a few new ones).
  exprs.param_limit = static_cast<int>(program.params.size()) + (pick.chance(30) ? 1 : 0);

  if (options.optimizer || pick.chance(95)) {
    // The kinds drawn: those whose steps need no closure (an optimizer that needs one, L-BFGS, is chosen per program by
    // RandomPrograms::at, so that adding it left every other program of a seed as it was).
    std::vector<OptimizerKind> drawn, closure_kinds;
    for (const OptimizerDescription& d : optimizer_descriptions())
      (d.needs_closure ? closure_kinds : drawn).push_back(d.kind);
    OptimizerKind kind = options.optimizer ? *options.optimizer : drawn[static_cast<size_t>(pick.below(static_cast<int>(drawn.size())))];
    // The next kind the scope allows, with its lr where the lr has no default (SGD, SEM-5.1), and a closure where its
    // steps need one; none: no optimizer.
    auto kind_ok = [&](OptimizerKind k) {
      const bool lr_required = !describe(k).options.front().has_default;
      return allowed(options, optimizer_name(k)) && (!lr_required || allowed(options, std::string(optimizer_name(k)) + ".lr")) &&
             (!describe(k).needs_closure || allowed(options, "closure"));
    };
    // Out of scope: the next drawn kind the scope allows, in order, then those that need a closure (a run of
    // --features lbfgs).
    auto at = [&](const std::vector<OptimizerKind>& kinds) {
      return static_cast<size_t>(std::find(kinds.begin(), kinds.end(), kind) - kinds.begin());
    };
    for (size_t i = 0, start = at(drawn); i < drawn.size() && !kind_ok(kind); ++i)
      kind = drawn[(start + i + 1) % drawn.size()];
    for (size_t i = 0; i < closure_kinds.size() && !kind_ok(kind); ++i) kind = closure_kinds[i];
    if (kind_ok(kind)) program.optimizer = make_optimizer(pick, kind, program.params, options);
  }
  // Parameters created by per-action losses below are in no group unless added later: a case in itself.

  ActionBuilder actions(pick, options, program, exprs, main, secondary, TypedShape{main, loss_shape}, depth);
  actions.limit = pick.scaled(3, std::max(3, options.max_actions));
  const int episodes = pick.between(1, pick.scaled(2, 12));
  for (int i = 0; i < episodes && !actions.full(); ++i) actions.episode();
  return program;
}

// SEMANTICS §18: gradient clipping, in one program of 5 where the scope allows it: one to three clip_grad_norm or
// clip_grad_value actions, mostly right after a backward (between backward and step, where training loops clip),
// else anywhere. Drawn from a stream of its own after the program is made, so that adding clipping left every
// other program of a seed as it was.
void add_clipping(Program& p, Picker& pick, const GenOptions& options) {
  const bool norm_ok = allowed(options, "clip_grad_norm"), value_ok = allowed(options, "clip_grad_value");
  if ((!norm_ok && !value_ok) || p.params.empty() || !pick.chance(20)) return;
  const bool special = options.special_values && allowed(options, "special_values");
  const int count = static_cast<int>(pick.weighted({60, 30, 10})) + 1;
  for (int c = 0; c < count; ++c) {
    Action a;
    a.kind = norm_ok && (!value_ok || pick.chance(65)) ? ActionKind::ClipGradNorm : ActionKind::ClipGradValue;
    const std::vector<std::string> all = names_of(p.params);
    switch (pick.weighted({60, 22, 9, 6, 3})) {
      case 0: a.params = all; break;
      case 1:  // some of them, in a shuffled order
        for (const std::string& name : all)
          if (pick.chance(50)) a.params.insert(a.params.begin() + pick.below(static_cast<int>(a.params.size()) + 1), name);
        if (a.params.empty()) a.params.push_back(pick.element(all));
        break;
      case 2:  // one listed twice: counted and scaled twice (SEM-18.4)
        a.params = all;
        a.params.push_back(pick.element(all));
        break;
      case 3: a.params = {pick.element(all)}; break;
      default: break;  // none: the total is 0
    }
    if (a.kind == ActionKind::ClipGradNorm) {
      const double norm_types[] = {2, 2, 2, 1, INFINITY};
      a.norm_type = norm_types[pick.below(5)];
      const std::vector<double> max_norms = {1e-3, 0.01, 0.1, 0.5, 1, 2, 5, 100};
      a.max_norm = pick.element(max_norms);
      switch (pick.weighted({90, 5, 3, special ? 2 : 0})) {
        case 1: a.max_norm = 0; break;   // zeroes the grads (SEM-18.2)
        case 2: a.max_norm = -1; break;  // flips their signs
        case 3: a.max_norm = pick.chance(50) ? INFINITY : NAN; break;
        default: break;
      }
      a.error_if_nonfinite = pick.chance(25);
    } else {
      const std::vector<double> values = {1e-3, 0.01, 0.1, 0.5, 1, 10};
      a.clip_value = pick.element(values);
      switch (pick.weighted({88, 6, 4, special ? 2 : 0})) {
        case 1: a.clip_value = 0; break;
        case 2: a.clip_value = -0.5; break;  // every number becomes -0.5 (SEM-18.5)
        case 3: a.clip_value = pick.chance(50) ? INFINITY : NAN; break;
        default: break;
      }
    }
    std::vector<size_t> after_backward;
    for (size_t i = 0; i < p.actions.size(); ++i)
      if (p.actions[i].kind == ActionKind::Backward) after_backward.push_back(i + 1);
    const size_t at = !after_backward.empty() && pick.chance(70)
                          ? pick.element(after_backward)
                          : static_cast<size_t>(pick.below(static_cast<int>(p.actions.size()) + 1));
    p.actions.insert(p.actions.begin() + static_cast<std::ptrdiff_t>(at), std::move(a));
  }
}

// SEMANTICS §20: maximize in one program of 4 whose optimizer has it (GenOptions::maximize): on the defaults
// mostly, on a group's own options, in a set_options change (switched on or off between steps), on an added group.
void add_maximize(Program& p, Picker& pick, const GenOptions& options) {
  if (!options.maximize || !p.optimizer) return;
  const OptimizerKind kind = p.optimizer->kind;
  const OptionDescription* d = find_option(kind, "maximize");
  if (!d || !allowed(options, std::string(optimizer_name(kind)) + ".maximize") || !pick.chance(25)) return;
  bool on = false;
  auto draw = [&](std::optional<bool>& field, int percent, int true_percent) {
    if (!pick.chance(percent)) return;
    field = pick.chance(true_percent);
    on = on || *field;
  };
  draw(p.optimizer->defaults.maximize, 70, 90);
  for (ParamGroupSpec& g : p.optimizer->groups)
    if (g.options) draw(g.options->maximize, 50, 80);
  for (Action& a : p.actions) {
    if (a.kind == ActionKind::SetOptions) draw(a.options.maximize, 30, 50);
    if (a.kind == ActionKind::AddParamGroup && a.new_group.options) draw(a.new_group.options->maximize, 50, 80);
  }
  if (!on) p.optimizer->defaults.maximize = true;
  if (!allowed(options, "group_options_partial"))  // as make_program completes them (SEM-7.1)
    for (ParamGroupSpec& g : p.optimizer->groups)
      if (g.options && !g.options->maximize) g.options->maximize = p.optimizer->defaults.maximize;
}

// SEMANTICS §19: checkpoints, in one program of 6 with an optimizer where the scope allows them: one or two
// state_dict actions, each mostly followed by a load of it somewhere later (into a fresh optimizer half the time, a
// resumed run), now and then loaded twice. Where the saves and loads fall decides what they meet: steps since the
// save, a set_options or add_param_group between (SEM-19.2, 19.3), no step before the save. Drawn from a stream of
// its own after the program is made, like clipping.
void add_checkpoints(Program& p, Picker& pick, const GenOptions& options) {
  if (!p.optimizer || p.optimizer->kind == OptimizerKind::LBFGS || !allowed(options, "state_dict") || !pick.chance(17))
    return;  // validate() refuses L-BFGS's checkpoints
  const bool load_ok = allowed(options, "load_state_dict") && !lists_a_param_twice(p);  // validate() refuses those
  const int count = pick.chance(75) ? 1 : 2;
  for (int c = 0; c < count; ++c) {
    Action save;
    save.kind = ActionKind::StateDict;
    save.checkpoint = "c" + std::to_string(c);
    std::vector<size_t> after_step;  // right after a step: where training loops save
    for (size_t i = 0; i < p.actions.size(); ++i)
      if (p.actions[i].kind == ActionKind::Step) after_step.push_back(i + 1);
    const size_t at = !after_step.empty() && pick.chance(55)
                          ? pick.element(after_step)
                          : static_cast<size_t>(pick.below(static_cast<int>(p.actions.size()) + 1));
    p.actions.insert(p.actions.begin() + static_cast<std::ptrdiff_t>(at), save);
    if (!load_ok || !pick.chance(85)) continue;
    const int loads = pick.chance(85) ? 1 : 2;
    for (int l = 0; l < loads; ++l) {
      Action load;
      load.kind = ActionKind::LoadStateDict;
      load.checkpoint = save.checkpoint;
      load.fresh = pick.chance(50);
      const int room = static_cast<int>(p.actions.size() - at);  // positions after the save
      const size_t where = at + 1 + static_cast<size_t>(pick.below(room));
      p.actions.insert(p.actions.begin() + static_cast<std::ptrdiff_t>(where), std::move(load));
      // Now and then the optimizer changes between the save and the load: its options (SEM-19.2) or its groups
      // (SEM-19.3, with a parameter no group lists, so that the group is added).
      Action between;
      switch (pick.weighted({80, 10, 10})) {
        case 1:
          if (!allowed(options, "set_options") ||
              !allowed(options, std::string(optimizer_name(p.optimizer->kind)) + ".lr"))
            continue;
          between.kind = ActionKind::SetOptions;
          between.options.lr = pick.element(std::vector<double>{0.001, 0.01, 0.5});
          break;
        case 2: {
          if (!allowed(options, "add_param_group")) continue;
          between.kind = ActionKind::AddParamGroup;
          std::set<std::string> grouped;  // listed by a group already: listed again, validate() refuses the load
          for (const ParamGroupSpec& g : p.optimizer->groups) grouped.insert(g.params.begin(), g.params.end());
          for (const Action& a : p.actions)
            if (a.kind == ActionKind::AddParamGroup) grouped.insert(a.new_group.params.begin(), a.new_group.params.end());
          for (const ParamSpec& param : p.params)
            if (!grouped.count(param.name)) between.new_group.params = {param.name};
          if (between.new_group.params.empty()) continue;
          break;
        }
        default: continue;
      }
      p.actions.insert(p.actions.begin() + static_cast<std::ptrdiff_t>(at + 1 + pick.below(static_cast<int>(where - at))),
                       std::move(between));
    }
  }
  // What validate() refuses (check_checkpoints: a crash of LibTorch 1.13 or what lockstep does not model) goes again,
  // one action at a time: a save dropped takes its loads with it at the next look.
  for (;;) {
    try {
      check_checkpoints(p);
      return;
    } catch (const ProgramError& e) {
      const size_t at = std::stoul(e.path().substr(std::string("/actions/").size()));
      p.actions.erase(p.actions.begin() + static_cast<std::ptrdiff_t>(at));
    }
  }
}

// Generators that wrap the imperative builders; their shrink trees come from shrink.h.

int clamp_size(int size, const GenOptions& options) {
  return std::max(0, std::min({size, options.max_size, 100}));
}

}  // namespace

rc::Gen<ExprPtr> gen_expr(DType dtype, Shape shape, std::vector<ParamSpec> params, const GenOptions& options) {
  return [=](const rc::Random& random, int size) {
    Picker pick(random, std::min(size, 100));
    std::vector<ParamSpec> pool = params;
    ExprBuilder exprs(pick, options, pool);
    exprs.may_add_params = false;
    ExprPtr e = exprs.expr(dtype, shape, pick.scaled(1, std::max(1, options.max_expr_depth)));
    return rc::shrinkable::shrinkRecur(e, [params](const ExprPtr& x) {
      return rc::seq::fromContainer(simpler_exprs(x, params));
    });
  };
}

rc::Gen<OptimizerOptions> gen_optimizer_options(OptimizerKind kind, bool for_defaults, const GenOptions& options) {
  return [=](const rc::Random& random, int size) {
    Picker pick(random, size);
    OptimizerOptions o = make_options(pick, kind, for_defaults, options);
    return rc::shrinkable::shrinkRecur(o, [](const OptimizerOptions& x) {
      return rc::seq::fromContainer(simpler_options(x));
    });
  };
}

rc::Gen<Program> gen_program(const GenOptions& given) {
  GenOptions options = given;
  if (!allowed(options, "special_values")) options.special_values = false;
  return [=](const rc::Random& random, int size) {
    Picker pick(random, clamp_size(size, options));
    Program program = generate_program(pick, options);
    rc::Random side = random;  // a stream the program's draws (all from splits) never read
    Picker clip_pick(rc::Random(side.next() ^ 0xC11B6EADu), clamp_size(size, options));
    add_clipping(program, clip_pick, options);
    Picker checkpoint_pick(rc::Random(side.next() ^ 0x5A7ED1C7u), clamp_size(size, options));
    add_checkpoints(program, checkpoint_pick, options);
    Picker maximize_pick(rc::Random(side.next() ^ 0x3A81312Eu), clamp_size(size, options));
    add_maximize(program, maximize_pick, options);
    // A long program under L-BFGS (up to 1 + 26 max_iter closure calls a step) can pass the limits validate() sets on
    // what a run observes and computes; the generator keeps the actions that fit (a prefix stays valid). A program
    // repair could not mend is left as it is, for validate() to name.
    if (repair_program(program)) {
      try {
        program.actions.resize(actions_within_cost(program));
      } catch (const ProgramError&) {
      }
    }
    return shrinkable_program(std::move(program));
  };
}

namespace {
uint64_t mix(uint64_t seed, uint64_t i) {
  // splitmix64 of seed and index: independent streams per program.
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

RandomPrograms::RandomPrograms(uint64_t seed, GenOptions options) : seed_(seed), options_(options) {
  options_.max_size = std::max(0, std::min(options_.max_size, 100));
}

int RandomPrograms::size_of(uint64_t i) const {
  return static_cast<int>(i % static_cast<uint64_t>(options_.max_size + 1));
}

bool RandomPrograms::special_values_at(uint64_t i) const {
  const auto every = static_cast<uint64_t>(std::max(0, options_.special_values_every));
  return options_.special_values || (every > 0 && i % every == every - 1);
}

namespace {

// SEMANTICS §17: the first step that follows a forward and a backward (and a zero_grad before them, if any) takes
// them as its closure: the same actions, now run by the step. A rewrite of the generated program rather than a
// draw of the generator, so that the programs it leaves alone stay what they were.
Program fold_into_closure(Program p) {
  for (size_t k = 2; k < p.actions.size(); ++k) {
    if (p.actions[k].kind != ActionKind::Step || p.actions[k - 1].kind != ActionKind::Backward ||
        p.actions[k - 2].kind != ActionKind::Forward)
      continue;
    const size_t first = k >= 3 && p.actions[k - 3].kind == ActionKind::ZeroGrad ? k - 3 : k - 2;
    Program folded = p;
    folded.actions[k].closure.emplace(p.actions.begin() + static_cast<std::ptrdiff_t>(first),
                                      p.actions.begin() + static_cast<std::ptrdiff_t>(k));
    folded.actions.erase(folded.actions.begin() + static_cast<std::ptrdiff_t>(first),
                         folded.actions.begin() + static_cast<std::ptrdiff_t>(k));
    try {
      validate(folded);
      return folded;
    } catch (const ProgramError&) {
      return p;
    }
  }
  return p;
}

}  // namespace

rc::Shrinkable<Program> RandomPrograms::at(uint64_t i) const {
  // One program in 8 has its first step take a closure (SEMANTICS §17), unless the scope leaves closures out.
  const bool closure = mix(mix(seed_, i), 0xC105u) % 8 == 0 &&
                       (!options_.scope || options_.scope->excluded({"closure"}) == nullptr);
  if (!closure) return at_unfolded(i);
  // The folded program stays within the scope as a whole (an exclusion may name closure with other features).
  return rc::shrinkable::map(at_unfolded(i), [scope = options_.scope](const Program& p) {
    Program folded = fold_into_closure(p);
    return scope && scope->excluded(program_features(folded)) ? p : folded;
  });
}

rc::Shrinkable<Program> RandomPrograms::at_unfolded(uint64_t i) const {
  GenOptions options = options_;
  // One program in 16 has an optimizer whose steps need a closure (L-BFGS, SEMANTICS §16), where the run may choose
  // the optimizer and the scope allows it: chosen by a hash, not a draw, so that every other program of a seed stays
  // as it was.
  const uint64_t h = mix(mix(seed_, i), 0x1BF65u);
  std::vector<const OptimizerDescription*> closure_kinds;
  for (const OptimizerDescription& d : optimizer_descriptions())
    if (d.needs_closure) closure_kinds.push_back(&d);
  if (!options.optimizer && h % 16 == 0 && !closure_kinds.empty()) {
    const OptimizerDescription& d = *closure_kinds[(h / 16) % closure_kinds.size()];
    if (!options_.scope || options_.scope->excluded({d.name, "closure"}) == nullptr) options.optimizer = d.kind;
  }
  options.special_values = special_values_at(i);
  const rc::Gen<Program> gen = gen_program(options);
  if (!options_.scope) return gen(rc::Random(mix(seed_, i)), size_of(i));
  const FeatureScope& scope = *options_.scope;
  auto in_scope = [kept_scope = options_.scope](const Program& p) {
    return kept_scope->excluded(program_features(p)) == nullptr;
  };
  std::string last;
  for (uint64_t attempt = 0; attempt < 1000; ++attempt) {
    const uint64_t s = attempt == 0 ? mix(seed_, i) : mix(mix(seed_, i), attempt);
    rc::Shrinkable<Program> program = gen(rc::Random(s), size_of(i));
    if (const FeatureExclusion* x = scope.excluded(program_features(program.value()))) {
      last = x->reason;
      continue;
    }
    // Shrinks stay within the scope too (a simpler group may leave an option unset, ...).
    rc::Maybe<rc::Shrinkable<Program>> kept = rc::shrinkable::filter(program, in_scope);
    return *kept;
  }
  throw std::runtime_error("no random program " + std::to_string(i) + " within the scope after 1000 attempts (the last was out because: " + last + ")");
}

rc::Shrinkable<Program> RandomPrograms::next() { return at(index_++); }

void showValue(const Program& program, std::ostream& os) { os << program_to_json(program).dump(); }

}  // namespace lockstep
