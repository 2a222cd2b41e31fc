// The tolerance model: ULPs, k per quantity and the operand scales of a loss expression (see tolerance.h).
#include "conformance/compare/tolerance.h"

#include "conformance/program/op_evaluator.h"
#include "conformance/program/optimizer_descriptions.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>

namespace lockstep {

// Quantities past the fixed four are the state tensors, in all_state_tensors() order.
struct QuantityIndex {
  static Quantity at(size_t index) { return Quantity(index); }
};

size_t quantity_count() { return kFixedQuantities + all_state_tensors().size(); }

Quantity Quantity::state(const std::string& name) {
  const std::vector<StateTensorDescription>& states = all_state_tensors();
  for (size_t i = 0; i < states.size(); ++i)
    if (name == states[i].name) return Quantity(kFixedQuantities + i);
  throw std::invalid_argument("no optimizer state tensor is named '" + name + "'");
}

const char* quantity_name(Quantity q) {
  static const char* const fixed[kFixedQuantities] = {"param", "grad", "output", "handle"};
  if (q.index() < kFixedQuantities) return fixed[q.index()];
  return all_state_tensors().at(q.index() - kFixedQuantities).name;
}

const std::vector<Quantity>& all_quantities() {
  static const std::vector<Quantity> all = [] {
    std::vector<Quantity> v = {Quantity::Param, Quantity::Grad};
    for (size_t i = 0; i < all_state_tensors().size(); ++i) v.push_back(QuantityIndex::at(kFixedQuantities + i));
    v.push_back(Quantity::Output);
    v.push_back(Quantity::Handle);
    return v;
  }();
  return all;
}

std::optional<Quantity> quantity_from_name(const std::string& name) {
  for (Quantity q : all_quantities())
    if (name == quantity_name(q)) return q;
  return std::nullopt;
}

double ulp(double x, DType dtype) {
  if (std::isnan(x)) return x;
  const double a = std::fabs(x);
  if (std::isinf(a)) return a;
  const int precision = dtype == DType::Float32 ? 24 : 53;  // significand bits, hidden bit included
  const int min_exponent = dtype == DType::Float32 ? -126 : -1022;
  if (a == 0) return std::ldexp(1.0, min_exponent - precision + 1);  // the smallest denormal
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)  =>  2^(e-1) <= a < 2^e
  e -= 1;
  if (e < min_exponent) e = min_exponent;  // denormals: a fixed spacing
  return std::ldexp(1.0, e - precision + 1);
}

double reduction_factor(int64_t n) {
  if (n <= 2) return 1;
  return std::max(1.0, std::ceil(std::log2(static_cast<double>(n))));
}

// ---------------------------------------------------------------------------------------------------------
// Operand scales: the loss expression evaluated in double (op_evaluator.h), each node with its value v and its
// scale B (tolerance.h), then the backward on absolute values.

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The smallest normal number of the narrowest dtype among the parameters (subnormal floor, tolerance.h).
double smallest_normal(const EngineState& state) {
  for (const ParamObservation& p : state.params)
    if (p.value.dtype == DType::Float32) return static_cast<double>(std::numeric_limits<float>::min());
  return std::numeric_limits<double>::min();
}

std::vector<double> abs_of(const std::vector<double>& x) {
  std::vector<double> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = std::fabs(x[i]);
  return r;
}

// The parameters' values (as the state holds them) and the constants, exact on both sides: their scale is their
// magnitude.
ForwardPass leaves_from(const EngineState& state) {
  ForwardPass pass;
  pass.leaf = [&state](const Expr& e, EvalNode& n) {
    const TensorValue* value = &e.constant;
    if (e.op == Op::Param) {
      const ParamObservation* p = state.param(e.name);
      if (!p) throw CannotEvaluate{};
      value = &p->value;
    }
    n.dtype = value->dtype;
    n.shape = value->shape;
    n.v = value->data;
    n.b = abs_of(n.v);
  };
  return pass;
}

// The expression's nodes with their scales. `min_normal` 0: scales exactly as computed, 0 where every operand was 0
// (OperandScales' exact zeros); else the subnormal floor of tolerance.h. `longest_reduction`: the most terms any one
// value of the forward or backward sums.
std::vector<EvalNode> scaled_nodes(const Expr& loss, const EngineState& state, double min_normal,
                                   int64_t* longest_reduction) {
  ForwardPass pass = leaves_from(state);
  pass.scales = true;
  pass.after_node = [&](OpCall& call) {
    EvalNode& n = call.out;
    const bool leaf = call.expr.op == Op::Param || call.expr.op == Op::Const;
    for (size_t i = 0; i < n.v.size(); ++i) {
      // Per element: a finite value whose scale came out non-finite was produced from non-finite operands by a
      // saturating op (x / inf, exp(-inf), tanh(inf)): exact, so its own magnitude is its scale. Only this element
      // is affected, never the whole tensor's scale.
      if (!std::isfinite(n.b[i])) n.b[i] = std::isfinite(n.v[i]) ? std::fabs(n.v[i]) : kInf;
      // A rounded intermediate in the subnormal range carries an absolute error of up to one denormal, whatever
      // its magnitude: its scale is at least the smallest normal number of the dtype.
      if (!leaf) n.b[i] = std::max(n.b[i], min_normal);
      // The exact scales (min_normal 0, SEMANTICS §9.5): an element-wise op's zero made from a computed operand that
      // was not an exact zero (its sign rounding's, as in (x y - z) * 0) is not a zero of zero operands.
      if (min_normal == 0 && !leaf && n.b[i] == 0 && describe(call.expr.op).elementwise &&
          computed_nonzero_operand_at(call, i, n.b.size()))
        n.b[i] = kSignFreeMark;
    }
    if (longest_reduction) *longest_reduction = std::max(*longest_reduction, reduction_length(call));
  };
  return evaluate_forward(loss, pass);
}

// The backward's seed: |gradient| (explicit, `magnitudes`) or the gradient itself, else 1 for every element (a
// non-scalar output without a gradient fails in both engines anyway).
std::vector<double> seed_of(const EvalNode& root, const std::vector<double>* gradient, bool magnitudes) {
  std::vector<double> seed(root.v.size(), 1.0);
  if (gradient && gradient->size() == root.v.size())
    for (size_t i = 0; i < seed.size(); ++i) seed[i] = magnitudes ? std::fabs((*gradient)[i]) : (*gradient)[i];
  return seed;
}

void zero_non_finite(std::vector<double>& v) {
  for (double& x : v)
    if (!std::isfinite(x)) x = 0;
}

// How close to saturation (in ULPs of its scale, the default k of tolerance.h) tanh's or sigmoid's output may be
// rounded to exactly +-1 (or 0, 1) by an engine: LibTorch's tanh and libm's differ by an ULP there (SEMANTICS §9.1).
constexpr double kStraddleUlps = 4;

// The grads whose class (NaN or ±inf) a rounding decides (tolerance.h): the signed backward with straddle marks,
// each parameter's marked elements where its gradient is infinite.
std::map<std::string, std::vector<double>> grad_straddles(std::vector<EvalNode>& nodes,
                                                          const std::vector<double>& seed, DType dtype) {
  StraddleMarks straddles;
  straddles.within_rounding = [dtype](double distance, double scale) {
    return distance <= kStraddleUlps * ulp(scale, dtype);
  };
  backward_values(nodes, seed, nullptr, &straddles);
  const std::map<std::string, std::vector<double>> values = parameter_gradients(nodes);
  std::map<std::string, std::vector<char>> marked;
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (nodes[k].expr->op != Op::Param) continue;
    std::vector<char>& m = marked[nodes[k].expr->name];
    if (m.empty()) m.assign(nodes[k].s.size(), 0);
    for (size_t j = 0; j < m.size() && j < straddles.marks[k].size(); ++j) m[j] = m[j] || straddles.marks[k][j];
  }
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, m] : marked) {
    const std::vector<double>& v = values.at(name);
    if (v.size() != m.size() || std::none_of(m.begin(), m.end(), [](char c) { return c != 0; })) continue;
    std::vector<double>& to = out[name];
    to.assign(v.size(), 0.0);
    for (size_t i = 0; i < v.size(); ++i)
      if (m[i] && std::isinf(v[i])) to[i] = v[i];
  }
  return out;
}

}  // namespace

OperandScales operand_scales(const Expr& loss, const EngineState& params_state,
                             const std::vector<double>* gradient) {
  OperandScales out;
  try {
    {  // The scales without the subnormal floor: exactly 0 where every operand was 0 (SEMANTICS §9.5). Nodes of their
       // own, freed before the main ones are built (the two never coexist: bounded memory for the largest programs).
      auto zero_flags = [](const std::vector<double>& b) {
        std::vector<char> z(b.size());
        for (size_t i = 0; i < b.size(); ++i) z[i] = b[i] == 0;
        return z;
      };
      std::vector<EvalNode> exact = scaled_nodes(loss, params_state, 0.0, nullptr);
      out.output_exact_zero = zero_flags(exact.back().b);
      backward_scales(exact, seed_of(exact.back(), gradient, true), 0.0);
      for (const auto& [name, g] : parameter_gradients(exact)) out.grad_exact_zero[name] = zero_flags(g);
    }
    const double min_normal = smallest_normal(params_state);
    std::vector<EvalNode> nodes = scaled_nodes(loss, params_state, min_normal, &out.reduction_length);
    out.output = nodes.back().b;
    backward_scales(nodes, seed_of(nodes.back(), gradient, true), min_normal);
    out.grad = parameter_gradients(nodes);
    zero_non_finite(out.output);
    for (auto& [name, g] : out.grad) zero_non_finite(g);
    // The signed backward, for the grads whose class a rounding decides; where it cannot run, no element is
    // straddled.
    try {
      const DType dtype =
          min_normal == static_cast<double>(std::numeric_limits<float>::min()) ? DType::Float32 : DType::Float64;
      out.grad_straddle = grad_straddles(nodes, seed_of(nodes.back(), gradient, false), dtype);
    } catch (const CannotEvaluate&) {
      out.grad_straddle.clear();
    } catch (const std::exception&) {
      out.grad_straddle.clear();
    }
  } catch (const CannotEvaluate&) {
    return OperandScales{};
  } catch (const std::exception&) {
    return OperandScales{};
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// The expression evaluated in double with its signed gradient (exact_evaluation in tolerance.h).

ExactEvaluation exact_evaluation(const Expr& loss, const EngineState& params_state,
                                 const std::vector<double>* gradient, const ExpressionVariant* variant) {
  ExactEvaluation out;
  try {
    ForwardPass pass = leaves_from(params_state);
    pass.variant = variant;
    std::vector<EvalNode> nodes = evaluate_forward(loss, pass);
    out.output = nodes.back().v;
    backward_values(nodes, seed_of(nodes.back(), gradient, false), variant);
    out.grad = parameter_gradients(nodes);
    out.ok = true;
  } catch (const CannotEvaluate&) {
    return ExactEvaluation{};
  } catch (const std::exception&) {
    return ExactEvaluation{};
  }
  return out;
}

}  // namespace lockstep
