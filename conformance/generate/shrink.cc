// Shrinking conformance programs (shrink.h): domain-aware candidates, repaired and re-validated.
#include "conformance/generate/shrink.h"

#include "conformance/program/op_descriptions.h"

#include "conformance/program/optimizer_descriptions.h"

#include <algorithm>
#include <functional>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>

namespace lockstep {

// ---------------------------------------------------------------------------------------------------------
// Numbers.

namespace {

int significant_bits(double x) {
  if (x == 0 || !std::isfinite(x)) return 0;
  int e = 0;
  const double m = std::frexp(std::fabs(x), &e);        // m in [0.5, 1)
  auto mantissa = static_cast<uint64_t>(std::ldexp(m, 53));  // exact: 53 bits
  int bits = 53;
  while (bits > 1 && (mantissa & 1) == 0) {
    mantissa >>= 1;
    --bits;
  }
  return bits;
}

double round_to_bits(double x, int bits) {
  int e = 0;
  const double m = std::frexp(x, &e);
  return std::ldexp(std::round(std::ldexp(m, bits)), e - bits);
}

bool representable(double x, bool float32) {
  if (!float32) return true;
  return static_cast<double>(static_cast<float>(x)) == x || std::isnan(x);
}

}  // namespace

uint64_t number_complexity(double x) {
  if (std::isnan(x)) return uint64_t{1} << 42;
  if (std::isinf(x)) return (uint64_t{1} << 41) + (x < 0 ? 1 : 0);
  const uint64_t negative = std::signbit(x) ? 1 : 0;
  if (x == 0) return negative;  // +0 simplest, then -0
  const uint64_t exponent = static_cast<uint64_t>(std::abs(std::ilogb(x)));
  return (static_cast<uint64_t>(significant_bits(x)) << 16) + (exponent << 1) + negative;
}

std::vector<double> simpler_numbers(double x, bool float32) {
  std::vector<double> raw = {0.0, 1.0};
  if (std::isfinite(x) && x != 0) {
    raw.push_back(std::fabs(x));
    raw.push_back(std::trunc(x));
    raw.push_back(std::round(x * 2) / 2);
    raw.push_back(std::round(x * 4) / 4);
    const int bits = significant_bits(x);
    for (int b : {1, 2, bits / 2, bits - 1})
      if (b >= 1 && b < bits) raw.push_back(round_to_bits(x, b));
    const int e = std::ilogb(x);
    if (e != 0) {
      raw.push_back(std::ldexp(x, -e));
      raw.push_back(std::ldexp(x, -e / 2));
      raw.push_back(std::ldexp(x, e > 0 ? -1 : 1));
    }
  }
  raw.push_back(-1.0);
  const uint64_t own = number_complexity(x);
  std::vector<double> out;
  for (double c : raw) {
    if (!std::isfinite(c) || number_complexity(c) >= own || !representable(c, float32)) continue;
    bool seen = false;
    for (double o : out) seen = seen || std::memcmp(&o, &c, sizeof c) == 0;
    if (!seen) out.push_back(c);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Expressions and options.

namespace {

std::optional<TypedShape> type_of(const ExprPtr& e, const std::vector<ParamSpec>& params) {
  if (!e) return std::nullopt;
  try {
    return infer_shape(*e, params, "");
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool same_type(const TypedShape& a, const TypedShape& b) { return a.dtype == b.dtype && a.shape == b.shape; }

std::shared_ptr<Expr> copy_of(const ExprPtr& e) { return std::make_shared<Expr>(*e); }

// Simpler variants of a vector of numbers: all zeros, then per element.
std::vector<std::vector<double>> simpler_values(const std::vector<double>& values, bool float32,
                                                size_t per_element = 3) {
  std::vector<std::vector<double>> out;
  bool all_zero = true;
  for (double v : values) all_zero = all_zero && v == 0 && !std::signbit(v);
  if (!all_zero && values.size() > 1) out.push_back(std::vector<double>(values.size(), 0.0));
  for (size_t i = 0; i < values.size(); ++i) {
    const std::vector<double> simpler = simpler_numbers(values[i], float32);
    for (size_t k = 0; k < simpler.size() && k < per_element; ++k) {
      std::vector<double> v = values;
      v[i] = simpler[k];
      out.push_back(std::move(v));
    }
  }
  return out;
}

std::vector<std::vector<int64_t>> simpler_indices(const std::vector<int64_t>& indices) {
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] == 0) continue;
    std::vector<int64_t> v = indices;
    v[i] = 0;
    out.push_back(v);
    if (indices[i] > 1) {
      v[i] = indices[i] - 1;
      out.push_back(v);
    }
  }
  return out;
}

void collect_descendants(const ExprPtr& e, std::vector<ExprPtr>& out, std::set<const Expr*>& seen) {
  // Breadth-first: big subtrees before small ones.
  std::vector<ExprPtr> frontier = e->args;
  while (!frontier.empty()) {
    std::vector<ExprPtr> next;
    for (const auto& x : frontier) {
      if (!x || !seen.insert(x.get()).second) continue;
      out.push_back(x);
      next.insert(next.end(), x->args.begin(), x->args.end());
    }
    frontier = std::move(next);
  }
}

}  // namespace

std::vector<ExprPtr> simpler_exprs(const ExprPtr& e, const std::vector<ParamSpec>& params) {
  std::vector<ExprPtr> out;
  const std::optional<TypedShape> type = type_of(e, params);
  if (!type) return out;
  const bool float32 = type->dtype == DType::Float32;

  // 1. A descendant of the same dtype and shape in place of the whole.
  std::vector<ExprPtr> descendants;
  std::set<const Expr*> seen;
  collect_descendants(e, descendants, seen);
  for (const auto& d : descendants) {
    const std::optional<TypedShape> t = type_of(d, params);
    if (t && same_type(*t, *type)) out.push_back(d);
  }

  // 2. Local simplifications.
  switch (e->op) {
    case Op::Param:
      for (const auto& p : params)
        if (p.name == e->name) out.push_back(constant(TensorValue{p.dtype, p.shape, p.values}));
      break;
    case Op::Const:
      for (auto& v : simpler_values(e->constant.data, float32)) {
        auto c = copy_of(e);
        c->constant.data = std::move(v);
        out.push_back(c);
      }
      break;
    case Op::MulScalar:
    case Op::Pow: {
      std::vector<double> simpler = simpler_numbers(e->scalar, false);
      if (e->op == Op::Pow) {
        // Keep exponents where the base's sign does not matter: 1, 2, 0, and simpler integers.
        std::vector<double> integral;
        for (double s : simpler)
          if (s == std::trunc(s) && s >= 0) integral.push_back(s);
        if (e->scalar != 2 && e->scalar != 1 && e->scalar != 0) integral.insert(integral.begin(), 2.0);
        simpler = integral;
      }
      for (double s : simpler) {
        auto c = copy_of(e);
        c->scalar = s;
        out.push_back(c);
      }
      break;
    }
    default:
      break;
  }
  if (e->op != Op::Param && e->op != Op::Const) {
    const OpDescription& d = describe(e->op);
    // Optional operands (linear's bias) dropped.
    if (e->args.size() > d.min_operands) {
      auto c = copy_of(e);
      c->args.resize(d.min_operands);
      out.push_back(c);
    }
    if (d.extra == OpExtra::Indices)
      for (auto& v : simpler_indices(e->indices)) {
        auto c = copy_of(e);
        c->indices = std::move(v);
        out.push_back(c);
      }
  }

  // 3. Recursively into the operands.
  for (size_t i = 0; i < e->args.size(); ++i) {
    if (!e->args[i]) continue;
    for (const auto& simpler_arg : simpler_exprs(e->args[i], params)) {
      auto c = copy_of(e);
      c->args[i] = simpler_arg;
      out.push_back(c);
    }
  }
  return out;
}

// Every option of every optimizer (optimizer_descriptions.h): unset (lr last), a true flag false, a number
// simpler, a pair's numbers simpler.
std::vector<OptimizerOptions> simpler_options(const OptimizerOptions& o) {
  std::vector<OptimizerOptions> out;
  std::vector<const OptionDescription*> options;  // lr last: unsetting it is rarely allowed (SGD)
  for (const std::string& name : all_option_names())
    if (name != "lr") options.push_back(&any_option(name));
  const OptionDescription& lr = any_option("lr");
  // Unset a field (back to the default; SGD's lr stays required, validate() drops that candidate).
  for (const OptionDescription* d : options) {
    if (!is_set(*d, o)) continue;
    OptimizerOptions c = o;
    unset(*d, c);
    out.push_back(c);
  }
  if (is_set(lr, o)) {
    OptimizerOptions c = o;
    unset(lr, c);
    out.push_back(c);
  }
  for (const OptionDescription* d : options) {
    if (d->type != OptionType::Flag || !(o.*d->flag).value_or(false)) continue;
    OptimizerOptions c = o;
    c.*d->flag = false;
    out.push_back(c);
  }
  auto simplify = [&](const OptionDescription& d) {
    if (d.type != OptionType::Number || !(o.*d.number).has_value()) return;
    const std::vector<double> simpler = simpler_numbers(*(o.*d.number), false);
    for (size_t k = 0, tried = 0; k < simpler.size() && tried < 3; ++k) {
      if (std::find(d.unstable_values.begin(), d.unstable_values.end(), simpler[k]) != d.unstable_values.end()) continue;
      OptimizerOptions c = o;
      c.*d.number = simpler[k];
      out.push_back(c);
      ++tried;
    }
  };
  simplify(lr);
  for (const OptionDescription* d : options) simplify(*d);
  for (const OptionDescription* d : options) {
    if (d->type != OptionType::Pair || !(o.*d->pair).has_value()) continue;
    for (int which = 0; which < 2; ++which) {
      const double b = which == 0 ? (o.*d->pair)->first : (o.*d->pair)->second;
      const std::vector<double> simpler = simpler_numbers(b, false);
      for (size_t k = 0; k < simpler.size() && k < 2; ++k) {
        OptimizerOptions c = o;
        (which == 0 ? (c.*d->pair)->first : (c.*d->pair)->second) = simpler[k];
        out.push_back(c);
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Repair.

namespace {

double to_float32(double x) { return static_cast<double>(static_cast<float>(x)); }

void round_values(std::vector<double>& values, DType dtype) {
  if (dtype == DType::Float32)
    for (double& v : values) v = to_float32(v);
}

bool has_param(const Program& p, const std::string& name) {
  for (const auto& ps : p.params)
    if (ps.name == name) return true;
  return false;
}

void keep_known(std::vector<std::string>& names, const Program& p) {
  names.erase(std::remove_if(names.begin(), names.end(), [&](const std::string& n) { return !has_param(p, n); }),
              names.end());
}

// Clamps indices into range and rounds float32 constants, bottom-up; null when the shapes do not fit.
ExprPtr repair_expr(const ExprPtr& e, const std::vector<ParamSpec>& params) {
  if (!e) return e;
  std::shared_ptr<Expr> c;
  auto mutable_copy = [&]() -> Expr& {
    if (!c) c = copy_of(e);
    return *c;
  };
  for (size_t i = 0; i < e->args.size(); ++i) {
    ExprPtr fixed = repair_expr(e->args[i], params);
    if (!fixed) return nullptr;
    if (fixed != e->args[i]) mutable_copy().args[i] = fixed;
  }
  const Expr& now = c ? *c : *e;
  if (now.op == Op::Const && now.constant.dtype == DType::Float32) {
    bool exact = true;
    for (double v : now.constant.data) exact = exact && (std::isnan(v) || to_float32(v) == v);
    if (!exact) round_values(mutable_copy().constant.data, DType::Float32);
  }
  if ((now.op == Op::CrossEntropy || now.op == Op::Embedding) && !now.args.empty()) {
    const std::optional<TypedShape> t = type_of(now.args[0], params);
    if (!t || t->shape.size() != 2) return nullptr;
    const int64_t bound = now.op == Op::CrossEntropy ? t->shape[1] : t->shape[0];
    if (bound <= 0) return nullptr;
    std::vector<int64_t> indices = now.indices;
    if (now.op == Op::CrossEntropy) indices.resize(static_cast<size_t>(t->shape[0]), 0);
    for (auto& i : indices) i = std::min<int64_t>(std::max<int64_t>(i, 0), bound - 1);
    if (indices != now.indices) mutable_copy().indices = std::move(indices);
  }
  if (c) return c;
  return e;
}

}  // namespace

bool repair_program(Program& program) {
  for (auto& p : program.params) {
    p.values.resize(static_cast<size_t>(std::max<int64_t>(0, numel(p.shape))), 0.0);
    round_values(p.values, p.dtype);
  }
  if (program.loss) {
    program.loss = repair_expr(program.loss, program.params);
    if (!program.loss || !type_of(program.loss, program.params)) return false;
  }
  if (program.optimizer) {
    for (auto& g : program.optimizer->groups) keep_known(g.params, program);
  }
  std::optional<TypedShape> output;
  std::set<std::string> saved;  // checkpoints an earlier state_dict saved (a load needs one, SEMANTICS §19.5)
  // One action, in order; a step's closure actions too (they run inside the step and hold the output after it,
  // SEMANTICS §17).
  std::function<bool(Action&)> repair_action = [&](Action& a) {
    bool keep = true;
    switch (a.kind) {
      case ActionKind::Forward:
        if (a.loss) {
          a.loss = repair_expr(a.loss, program.params);
          std::optional<TypedShape> t = type_of(a.loss, program.params);
          if (!t) keep = false;
          else output = t;
        } else if (program.loss) {
          output = type_of(program.loss, program.params);
        } else {
          keep = false;
        }
        break;
      case ActionKind::Backward:
        if (a.gradient) {
          if (!output) {
            a.gradient.reset();
          } else {
            a.gradient->resize(static_cast<size_t>(numel(output->shape)), 1.0);
            round_values(*a.gradient, output->dtype);
          }
        }
        break;
      case ActionKind::SetGradNone:
      case ActionKind::HoldGrad:
        keep = has_param(program, a.param);
        break;
      case ActionKind::SetOptions:
        keep = program.optimizer.has_value();
        break;
      case ActionKind::AddParamGroup:
        keep = program.optimizer.has_value();
        keep_known(a.new_group.params, program);
        break;
      case ActionKind::ClipGradNorm:
      case ActionKind::ClipGradValue:
        keep_known(a.params, program);
        break;
      case ActionKind::StateDict:
        saved.insert(a.checkpoint);
        break;
      case ActionKind::LoadStateDict:
        keep = saved.count(a.checkpoint) > 0;
        break;
      case ActionKind::Step:
        if (a.closure) {
          std::vector<Action> closure;
          for (Action c : *a.closure)
            if (repair_action(c)) closure.push_back(std::move(c));
          *a.closure = std::move(closure);
        }
        break;
      default:
        break;
    }
    return keep;
  };
  std::vector<Action> kept;
  for (Action a : program.actions)
    if (repair_action(a)) kept.push_back(std::move(a));
  program.actions = std::move(kept);
  return true;
}

// ---------------------------------------------------------------------------------------------------------
// Program shrinks.

namespace {

std::set<std::string> referenced_params(const Program& p) {
  std::set<std::string> names;
  std::vector<ExprPtr> stack;
  if (p.loss) stack.push_back(p.loss);
  for (const auto& a : p.actions) {
    if (a.loss) stack.push_back(a.loss);
    if (!a.param.empty()) names.insert(a.param);
    names.insert(a.new_group.params.begin(), a.new_group.params.end());
  }
  if (p.optimizer)
    for (const auto& g : p.optimizer->groups) names.insert(g.params.begin(), g.params.end());
  while (!stack.empty()) {
    ExprPtr e = stack.back();
    stack.pop_back();
    if (!e) continue;
    if (e->op == Op::Param) names.insert(e->name);
    stack.insert(stack.end(), e->args.begin(), e->args.end());
  }
  return names;
}

// A tensor's top-left block of `to` (every dim no larger than the old one), or its bottom-right block
// (`tail`): a value that makes a program fail may sit at either end.
std::vector<double> block(const Shape& from, const Shape& to, const std::vector<double>& data, bool tail) {
  std::vector<double> out;
  if (to.empty()) {
    if (!data.empty()) out.push_back(tail ? data.back() : data[0]);
    return out;
  }
  if (to.size() == 1) {
    const int64_t start = tail && !from.empty() ? std::max<int64_t>(0, from[0] - to[0]) : 0;
    for (int64_t i = start; i < start + to[0] && i < static_cast<int64_t>(data.size()); ++i) out.push_back(data[i]);
    return out;
  }
  const int64_t r0 = tail && from.size() == 2 ? std::max<int64_t>(0, from[0] - to[0]) : 0;
  const int64_t c0 = tail && from.size() == 2 ? std::max<int64_t>(0, from[1] - to[1]) : 0;
  for (int64_t r = 0; r < to[0]; ++r)
    for (int64_t c = 0; c < to[1]; ++c) {
      const size_t at = static_cast<size_t>((r0 + r) * from[1] + c0 + c);
      out.push_back(at < data.size() ? data[at] : 0.0);
    }
  return out;
}

Shape substitute(const Shape& s, int64_t from, int64_t to) {
  Shape out = s;
  for (auto& d : out)
    if (d == from) d = to;
  return out;
}

ExprPtr substitute_dim(const ExprPtr& e, int64_t from, int64_t to, bool tail) {
  if (!e) return e;
  auto c = copy_of(e);
  for (auto& a : c->args) a = substitute_dim(a, from, to, tail);
  if (c->op == Op::Const) {
    const Shape shape = substitute(c->constant.shape, from, to);
    c->constant.data = block(c->constant.shape, shape, c->constant.data, tail);
    c->constant.shape = shape;
  }
  if ((c->op == Op::CrossEntropy || c->op == Op::Embedding) && static_cast<int64_t>(c->indices.size()) == from) {
    if (tail) c->indices.erase(c->indices.begin(), c->indices.end() - to);  // the rows the tail block keeps
    else c->indices.resize(static_cast<size_t>(to));
  }
  return c;
}

// Every dimension of size `from` becomes `to`, across parameters, constants and index lists: equal dims
// stay equal, so the program keeps fitting (indices are clamped by repair_program). Values keep the first
// block, or the last one (`tail`).
Program substitute_dim(const Program& p, int64_t from, int64_t to, bool tail = false) {
  Program q = p;
  for (auto& ps : q.params) {
    const Shape shape = substitute(ps.shape, from, to);
    ps.values = block(ps.shape, shape, ps.values, tail);
    ps.shape = shape;
  }
  q.loss = substitute_dim(q.loss, from, to, tail);
  for (auto& a : q.actions) a.loss = substitute_dim(a.loss, from, to, tail);
  return q;
}

void collect_dims(const ExprPtr& e, std::set<int64_t>& dims) {
  if (!e) return;
  if (e->op == Op::Const) dims.insert(e->constant.shape.begin(), e->constant.shape.end());
  if (e->op == Op::CrossEntropy || e->op == Op::Embedding) dims.insert(static_cast<int64_t>(e->indices.size()));
  for (const auto& a : e->args) collect_dims(a, dims);
}

// Candidates in stages, computed only when the previous stages are used up.
class ProgramShrinkSeq {
 public:
  explicit ProgramShrinkSeq(const Program& program) : program_(std::make_shared<const Program>(program)) {}

  rc::Maybe<Program> operator()() {
    while (true) {
      if (next_ < buffer_.size()) {
        Program candidate = buffer_[next_++];
        try {
          if (!repair_program(candidate)) continue;
          validate(candidate);
        } catch (const std::exception&) {
          continue;
        }
        return candidate;
      }
      if (stage_ > kLastStage) return rc::Nothing;
      buffer_ = candidates(stage_++);
      next_ = 0;
    }
  }

 private:
  static constexpr int kLastStage = 7;

  std::vector<Program> candidates(int stage) const {
    const Program& p = *program_;
    std::vector<Program> out;
    const size_t n = p.actions.size();
    switch (stage) {
      case 0:  // drop chunks of actions, biggest first
        for (size_t chunk = n; chunk >= 1; chunk /= 2) {
          for (size_t start = 0; start + chunk <= n; start += chunk) {
            Program q = p;
            q.actions.erase(q.actions.begin() + static_cast<std::ptrdiff_t>(start),
                            q.actions.begin() + static_cast<std::ptrdiff_t>(start + chunk));
            out.push_back(std::move(q));
          }
          if (chunk == 1) break;
        }
        break;
      case 1: {  // drop the program's loss, the optimizer, its groups, unused parameters
        if (p.loss) {
          bool needed = false;
          for (const auto& a : p.actions) needed = needed || (a.kind == ActionKind::Forward && !a.loss);
          if (!needed) {
            Program q = p;
            q.loss = nullptr;
            out.push_back(std::move(q));
          }
        }
        if (p.optimizer) {
          Program q = p;
          q.optimizer.reset();
          out.push_back(std::move(q));
          for (size_t g = 0; g < p.optimizer->groups.size(); ++g) {
            Program r = p;
            r.optimizer->groups.erase(r.optimizer->groups.begin() + static_cast<std::ptrdiff_t>(g));
            out.push_back(std::move(r));
          }
        }
        const std::set<std::string> used = referenced_params(p);
        for (size_t i = 0; i < p.params.size(); ++i) {
          if (used.count(p.params[i].name)) continue;
          Program q = p;
          q.params.erase(q.params.begin() + static_cast<std::ptrdiff_t>(i));
          out.push_back(std::move(q));
        }
        break;
      }
      case 2:  // forwards use the program's loss; simpler losses
        if (p.loss)
          for (size_t i = 0; i < n; ++i)
            if (p.actions[i].loss) {
              Program q = p;
              q.actions[i].loss = nullptr;
              out.push_back(std::move(q));
            }
        if (p.loss)
          for (const auto& e : simpler_exprs(p.loss, p.params)) {
            Program q = p;
            q.loss = e;
            out.push_back(std::move(q));
          }
        for (size_t i = 0; i < n; ++i)
          if (p.actions[i].loss)
            for (const auto& e : simpler_exprs(p.actions[i].loss, p.params)) {
              Program q = p;
              q.actions[i].loss = e;
              out.push_back(std::move(q));
            }
        break;
      case 3:  // shrink dimensions: every dim of size d becomes 1, or d - 1
        {
          std::set<int64_t> dims;
          for (const auto& ps : p.params) dims.insert(ps.shape.begin(), ps.shape.end());
          collect_dims(p.loss, dims);
          for (const auto& a : p.actions) collect_dims(a.loss, dims);
          for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
            const int64_t d = *it;
            if (d <= 1) continue;
            out.push_back(substitute_dim(p, d, 1));
            if (d > 2) out.push_back(substitute_dim(p, d, d - 1));
            out.push_back(substitute_dim(p, d, 1, /*tail=*/true));
          }
        }
        break;
      case 4:  // plainer actions
        for (size_t i = 0; i < n; ++i) {
          const Action& a = p.actions[i];
          auto with = [&](auto change) {
            Program q = p;
            change(q.actions[i]);
            out.push_back(std::move(q));
          };
          if (a.no_grad) with([](Action& x) { x.no_grad = false; });
          if (a.retain_graph) with([](Action& x) { x.retain_graph.reset(); });
          if (a.create_graph) with([](Action& x) { x.create_graph = false; });
          if (a.gradient) with([](Action& x) { x.gradient.reset(); });
          if (a.set_to_none && *a.set_to_none) with([](Action& x) { x.set_to_none = false; });
          if (a.kind == ActionKind::SetOptions) {
            if (a.group > 0) with([](Action& x) { x.group = 0; });
            for (const auto& o : simpler_options(a.options)) with([&](Action& x) { x.options = o; });
          }
          if (a.kind == ActionKind::AddParamGroup) {
            if (a.new_group.options) with([](Action& x) { x.new_group.options.reset(); });
            for (size_t k = 0; k < a.new_group.params.size() && a.new_group.params.size() > 1; ++k)
              with([&](Action& x) { x.new_group.params.erase(x.new_group.params.begin() + static_cast<std::ptrdiff_t>(k)); });
            if (a.new_group.options)
              for (const auto& o : simpler_options(*a.new_group.options))
                with([&](Action& x) { x.new_group.options = o; });
          }
          if (a.kind == ActionKind::ClipGradNorm || a.kind == ActionKind::ClipGradValue) {  // SEMANTICS §18
            for (size_t k = 0; k < a.params.size(); ++k)
              with([&](Action& x) { x.params.erase(x.params.begin() + static_cast<std::ptrdiff_t>(k)); });
            if (a.error_if_nonfinite) with([](Action& x) { x.error_if_nonfinite = false; });
            if (a.kind == ActionKind::ClipGradNorm && a.norm_type != 2) with([](Action& x) { x.norm_type = 2; });
            for (double v : simpler_numbers(a.kind == ActionKind::ClipGradNorm ? a.max_norm : a.clip_value, false))
              with([&](Action& x) { (x.kind == ActionKind::ClipGradNorm ? x.max_norm : x.clip_value) = v; });
          }
          if (a.kind == ActionKind::LoadStateDict && a.fresh) with([](Action& x) { x.fresh = false; });
          if (a.gradient) {
            const bool float32 = true;  // conservative: float32-representable numbers fit both dtypes
            for (auto& g : simpler_values(*a.gradient, float32, 2)) with([&](Action& x) { x.gradient = g; });
          }
        }
        break;
      case 5:  // a plainer optimizer
        if (p.optimizer) {
          const OptimizerSpec& o = *p.optimizer;
          auto with = [&](auto change) {
            Program q = p;
            change(*q.optimizer);
            out.push_back(std::move(q));
          };
          for (size_t g = 0; g < o.groups.size(); ++g) {
            if (o.groups[g].options) with([&](OptimizerSpec& x) { x.groups[g].options.reset(); });
            for (size_t k = 0; k < o.groups[g].params.size(); ++k)
              with([&](OptimizerSpec& x) {
                x.groups[g].params.erase(x.groups[g].params.begin() + static_cast<std::ptrdiff_t>(k));
              });
          }
          if (o.groups.size() > 1)
            with([](OptimizerSpec& x) { x.groups.resize(1); });
          for (const auto& d : simpler_options(o.defaults)) with([&](OptimizerSpec& x) { x.defaults = d; });
          for (size_t g = 0; g < o.groups.size(); ++g)
            if (o.groups[g].options)
              for (const auto& d : simpler_options(*o.groups[g].options))
                with([&](OptimizerSpec& x) { x.groups[g].options = d; });
        }
        break;
      case 6:  // simpler parameter values
        for (size_t i = 0; i < p.params.size(); ++i)
          for (auto& v : simpler_values(p.params[i].values, p.params[i].dtype == DType::Float32)) {
            Program q = p;
            q.params[i].values = std::move(v);
            out.push_back(std::move(q));
          }
        break;
      case 7:  // rank: a 1-element parameter of rank >= 1 becomes 0-d when the program still fits
        for (size_t i = 0; i < p.params.size(); ++i)
          if (!p.params[i].shape.empty() && numel(p.params[i].shape) == 1) {
            Program q = p;
            q.params[i].shape = {};
            out.push_back(std::move(q));
          }
        break;
      default:
        break;
    }
    return out;
  }

  std::shared_ptr<const Program> program_;
  int stage_ = 0;
  std::vector<Program> buffer_;
  size_t next_ = 0;
};

}  // namespace

rc::Seq<Program> program_shrinks(const Program& program) { return rc::Seq<Program>(ProgramShrinkSeq(program)); }

rc::Shrinkable<Program> shrinkable_program(Program program) {
  return rc::shrinkable::shrinkRecur(std::move(program), [](const Program& p) { return program_shrinks(p); });
}

// ---------------------------------------------------------------------------------------------------------
// Sizes and the greedy shrinker.

namespace {
int count_nodes(const ExprPtr& e) {
  if (!e) return 0;
  int n = 1;
  for (const auto& a : e->args) n += count_nodes(a);
  return n;
}
int64_t count_const_elements(const ExprPtr& e) {
  if (!e) return 0;
  int64_t n = e->op == Op::Const ? static_cast<int64_t>(e->constant.data.size()) : 0;
  for (const auto& a : e->args) n += count_const_elements(a);
  return n;
}
}  // namespace

ProgramSize program_size(const Program& program) {
  ProgramSize s;
  const std::vector<Action> actions = actions_as_run(program);  // a step's closure actions count too (SEMANTICS §17)
  s.actions = static_cast<int>(actions.size());
  s.params = static_cast<int>(program.params.size());
  s.expr_nodes = count_nodes(program.loss);
  s.elements = count_const_elements(program.loss);
  for (const auto& a : actions) {
    s.expr_nodes += count_nodes(a.loss);
    s.elements += count_const_elements(a.loss);
  }
  for (const auto& p : program.params) s.elements += static_cast<int64_t>(p.values.size());
  return s;
}

std::string describe(const ProgramSize& size) {
  return std::to_string(size.actions) + " actions, " + std::to_string(size.params) + " params, " +
         std::to_string(size.expr_nodes) + " nodes, " + std::to_string(size.elements) + " elements";
}

Program shrink_failure(const rc::Shrinkable<Program>& failing,
                       const std::function<bool(const Program&)>& still_fails, ShrinkStats* stats,
                       std::chrono::milliseconds budget) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  ShrinkStats local;
  ShrinkStats& s = stats ? *stats : local;
  s = ShrinkStats{};
  rc::Shrinkable<Program> current = failing;
  bool progressed = true;
  while (progressed) {
    progressed = false;
    rc::Seq<rc::Shrinkable<Program>> shrinks = current.shrinks();
    while (rc::Maybe<rc::Shrinkable<Program>> candidate = shrinks.next()) {
      if (Clock::now() - start >= budget) {
        s.budget_exhausted = true;
        break;
      }
      ++s.tries;
      bool fails = true;
      try {
        fails = still_fails(candidate->value());
      } catch (...) {
        fails = true;
      }
      if (fails) {
        current = std::move(*candidate);
        ++s.steps;
        progressed = true;
        break;
      }
    }
    if (s.budget_exhausted) break;
  }
  s.time = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return current.value();
}

}  // namespace lockstep
