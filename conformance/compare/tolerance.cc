// The tolerance model: ULPs, k per quantity and the operand scales of a loss expression (see tolerance.h).
#include "conformance/compare/tolerance.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

namespace lockstep {

const char* quantity_name(Quantity q) {
  switch (q) {
    case Quantity::Param: return "param";
    case Quantity::Grad: return "grad";
    case Quantity::MomentumBuffer: return "momentum_buffer";
    case Quantity::ExpAvg: return "exp_avg";
    case Quantity::ExpAvgSq: return "exp_avg_sq";
    case Quantity::MaxExpAvgSq: return "max_exp_avg_sq";
    case Quantity::SquareAvg: return "square_avg";
    case Quantity::GradAvg: return "grad_avg";
    case Quantity::Sum: return "sum";
    case Quantity::Output: return "output";
    case Quantity::Handle: return "handle";
  }
  return "?";
}

const std::vector<Quantity>& all_quantities() {
  static const std::vector<Quantity> all = {Quantity::Param,    Quantity::Grad,        Quantity::MomentumBuffer,
                                            Quantity::ExpAvg,   Quantity::ExpAvgSq,    Quantity::MaxExpAvgSq,
                                            Quantity::SquareAvg, Quantity::GradAvg,    Quantity::Sum,
                                            Quantity::Output,   Quantity::Handle};
  return all;
}

std::optional<Quantity> quantity_from_name(const std::string& name) {
  for (Quantity q : all_quantities())
    if (name == quantity_name(q)) return q;
  return std::nullopt;
}

double& Tolerance::k(Quantity q) {
  switch (q) {
    case Quantity::Param: return param;
    case Quantity::Grad: return grad;
    case Quantity::MomentumBuffer: return momentum_buffer;
    case Quantity::ExpAvg: return exp_avg;
    case Quantity::ExpAvgSq: return exp_avg_sq;
    case Quantity::MaxExpAvgSq: return max_exp_avg_sq;
    case Quantity::SquareAvg: return square_avg;
    case Quantity::GradAvg: return grad_avg;
    case Quantity::Sum: return sum;
    case Quantity::Output: return output;
    case Quantity::Handle: return handle;
  }
  return param;
}

double Tolerance::k(Quantity q) const { return const_cast<Tolerance*>(this)->k(q); }

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
// Operand scales: the loss expression evaluated in double, each node with its value v and its scale B
// (tolerance.h), then the backward on absolute values.

namespace {

struct Node {
  const Expr* expr = nullptr;
  Shape shape;
  std::vector<double> v;  // value
  std::vector<double> b;  // scale B >= |v|
  std::vector<int> args;  // tape indices of the operands
  std::vector<double> s;  // backward scale (filled by the backward)
};

// Thrown inside the evaluator for anything it cannot evaluate; operand_scales() then returns empty scales.
struct CannotEvaluate {};

constexpr double kInf = std::numeric_limits<double>::infinity();

// The smallest normal number of the narrowest dtype among the parameters (subnormal floor, tolerance.h).
double smallest_normal(const EngineState& state) {
  for (const ParamObservation& p : state.params)
    if (p.value.dtype == DType::Float32) return static_cast<double>(std::numeric_limits<float>::min());
  return std::numeric_limits<double>::min();
}

class ScaleTape {
 public:
  // `floor_subnormals` false: scales exactly as computed, 0 where every operand was 0 (OperandScales' exact zeros).
  explicit ScaleTape(const EngineState& state, const ExpressionVariant* variant = nullptr, bool floor_subnormals = true)
      : state_(state), min_normal_(floor_subnormals ? smallest_normal(state) : 0.0), variant_(variant) {}

  std::vector<Node> nodes;
  int64_t longest_reduction = 1;  // the most terms any one value of the forward or backward sums

  int eval(const Expr& e) {
    std::vector<int> args;
    for (const ExprPtr& a : e.args) {
      if (!a) throw CannotEvaluate{};
      args.push_back(eval(*a));
    }
    Node n;
    n.expr = &e;
    n.args = args;
    compute(e, n);
    if (n.v.size() != n.b.size() || static_cast<int64_t>(n.v.size()) != numel(n.shape)) throw CannotEvaluate{};
    const bool leaf = e.op == Op::Param || e.op == Op::Const;
    for (size_t i = 0; i < n.v.size(); ++i) {
      // Per element: a finite value whose scale came out non-finite was produced from non-finite operands by
      // a saturating op (x / inf, exp(-inf), tanh(inf)): exact, so its own magnitude is its scale. Only this
      // element is affected, never the whole tensor's scale.
      if (!std::isfinite(n.b[i])) n.b[i] = std::isfinite(n.v[i]) ? std::fabs(n.v[i]) : kInf;
      // A rounded intermediate in the subnormal range carries an absolute error of up to one denormal,
      // whatever its magnitude: its scale is at least the smallest normal number of the dtype.
      if (!leaf) n.b[i] = std::max(n.b[i], min_normal_);
    }
    longest_reduction = std::max(longest_reduction, reduction_length(e, n));
    nodes.push_back(std::move(n));
    return static_cast<int>(nodes.size()) - 1;
  }

  double min_normal() const { return min_normal_; }

 private:
  const EngineState& state_;
  double min_normal_;
  const ExpressionVariant* variant_;  // formula_variants.h: only exact_evaluation() gives one

  // The longest sum node `n` takes part in, forward or backward: a reduction's operand size; matmul and
  // linear sum over the inner dimension forward and over the rows or columns in their backward; a 0-d
  // operand broadcast against a tensor collects the whole tensor's gradient; embedding rows accumulate
  // repeated indices.
  int64_t reduction_length(const Expr& e, const Node& n) const {
    auto numel_of = [&](size_t i) { return static_cast<int64_t>(arg(n, i).v.size()); };
    switch (e.op) {
      case Op::Sum:
      case Op::Mean:
      case Op::MseLoss:
        return numel_of(0);
      case Op::Matmul:
      case Op::Linear:
        return std::max({arg(n, 0).shape[0], arg(n, 0).shape[1], n.shape[1]});
      case Op::CrossEntropy:
        return std::max(arg(n, 0).shape[0], arg(n, 0).shape[1]);
      case Op::Embedding:
        return static_cast<int64_t>(e.indices.size());
      case Op::Add:
      case Op::Sub:
      case Op::Mul:
      case Op::Div:  // a broadcast 0-d operand's gradient sums the whole result's
        return (arg(n, 0).shape.empty() || arg(n, 1).shape.empty()) ? static_cast<int64_t>(n.v.size()) : 1;
      default:
        return 1;
    }
  }

  const Node& arg(const Node& n, size_t i) const {
    if (i >= n.args.size()) throw CannotEvaluate{};
    return nodes[n.args[i]];
  }

  static std::vector<double> abs_of(const std::vector<double>& x) {
    std::vector<double> r(x.size());
    for (size_t i = 0; i < x.size(); ++i) r[i] = std::fabs(x[i]);
    return r;
  }

  // Element-wise unary op: value f(a) and scale B = |f(a)| + |f'(a)| * B(a).
  void unary_op(Node& n, const std::function<double(double)>& f, const std::function<double(double)>& df) {
    const Node& a = arg(n, 0);
    n.shape = a.shape;
    n.v.resize(a.v.size());
    n.b.resize(a.v.size());
    for (size_t i = 0; i < a.v.size(); ++i) {
      n.v[i] = f(a.v[i]);
      n.b[i] = std::fabs(n.v[i]) + std::fabs(df(a.v[i])) * a.b[i];
    }
  }

  // Element-wise binary op with 0-d broadcast.
  void binary_op(Node& n, const std::function<void(double, double, double, double, double&, double&)>& f) {
    const Node& a = arg(n, 0);
    const Node& c = arg(n, 1);
    const bool a_scalar = a.v.size() == 1 && a.shape.empty();
    const bool c_scalar = c.v.size() == 1 && c.shape.empty();
    n.shape = a_scalar ? c.shape : a.shape;
    const size_t count = static_cast<size_t>(numel(n.shape));
    if (!a_scalar && a.v.size() != count) throw CannotEvaluate{};
    if (!c_scalar && c.v.size() != count) throw CannotEvaluate{};
    n.v.resize(count);
    n.b.resize(count);
    for (size_t i = 0; i < count; ++i) {
      const size_t ia = a_scalar ? 0 : i, ic = c_scalar ? 0 : i;
      f(a.v[ia], a.b[ia], c.v[ic], c.b[ic], n.v[i], n.b[i]);
    }
  }

  // (rows x inner) @ (inner x cols) on values and on scales; transpose_right: right is (cols x inner).
  static void matmul(const std::vector<double>& l, const std::vector<double>& r, int64_t rows, int64_t inner,
                     int64_t cols, bool transpose_right, std::vector<double>& out) {
    out.assign(static_cast<size_t>(rows * cols), 0.0);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < inner; ++k)
          acc += l[i * inner + k] * (transpose_right ? r[j * inner + k] : r[k * cols + j]);
        out[i * cols + j] = acc;
      }
  }

  void compute(const Expr& e, Node& n) {
    switch (e.op) {
      case Op::Param: {
        const ParamObservation* p = state_.param(e.name);
        if (!p) throw CannotEvaluate{};
        n.shape = p->value.shape;
        n.v = p->value.data;
        n.b = abs_of(n.v);
        return;
      }
      case Op::Const:
        n.shape = e.constant.shape;
        n.v = e.constant.data;
        n.b = abs_of(n.v);
        return;
      case Op::Add:
        return binary_op(n, [](double a, double ba, double c, double bc, double& v, double& b) {
          v = a + c;
          b = std::max(std::fabs(v), ba + bc);
        });
      case Op::Sub:
        return binary_op(n, [](double a, double ba, double c, double bc, double& v, double& b) {
          v = a - c;
          b = std::max(std::fabs(v), ba + bc);
        });
      case Op::Mul:
        return binary_op(n, [](double a, double ba, double c, double bc, double& v, double& b) {
          v = a * c;
          b = std::max(std::fabs(v), ba * bc);
        });
      case Op::Div:
        return binary_op(n, [](double a, double ba, double c, double bc, double& v, double& b) {
          v = a / c;
          b = std::fabs(v) + ba / std::fabs(c) + std::fabs(a) * bc / (c * c);
        });
      case Op::Neg:
        return unary_op(n, [](double a) { return -a; }, [](double) { return 1.0; });
      case Op::MulScalar: {
        const double s = e.scalar;
        return unary_op(n, [s](double a) { return a * s; }, [s](double) { return s; });
      }
      case Op::Square:
        return unary_op(n, [](double a) { return a * a; }, [](double a) { return 2 * a; });
      case Op::Pow: {
        const double p = e.scalar;
        if (variant_ && variant_->pow_by_repeated_multiplication)
          return unary_op(n, [p](double a) { return std::pow(a, 1 + std::max(0.0, std::ceil(p - 1))); },
                          [](double a) { return 2 * a; });
        return unary_op(n, [p](double a) { return std::pow(a, p); },
                        [p](double a) { return p == 0 ? 0.0 : p * std::pow(a, p - 1); });
      }
      case Op::Exp:
        return unary_op(n, [](double a) { return std::exp(a); }, [](double a) { return std::exp(a); });
      case Op::Log:
        return unary_op(n, [](double a) { return std::log(a); }, [](double a) { return 1 / a; });
      case Op::Tanh:
        return unary_op(n, [](double a) { return std::tanh(a); },
                        [](double a) { return 1 - std::tanh(a) * std::tanh(a); });
      case Op::Sigmoid:
        return unary_op(n, [](double a) { return 1 / (1 + std::exp(-a)); },
                        [](double a) {
                          const double s = 1 / (1 + std::exp(-a));
                          return s * (1 - s);
                        });
      case Op::Relu: {
        const double slope = variant_ ? variant_->relu_negative_slope : 0;
        // relu(NaN) = NaN (SEM-2.11); a variant's slope multiplies it like any x <= 0
        return unary_op(n, [slope](double a) { return a > 0 || std::isnan(a) ? a : (slope != 0 ? slope * a : 0.0); },
                        [](double) { return 1.0; });
      }
      case Op::Abs:
        return unary_op(n, [](double a) { return std::fabs(a); }, [](double) { return 1.0; });
      case Op::Sum:
      case Op::Mean: {
        const Node& a = arg(n, 0);
        double v = 0, b = 0;
        for (size_t i = 0; i < a.v.size(); ++i) {
          v += a.v[i];
          b += a.b[i];
        }
        const double count = e.op == Op::Mean ? std::max<double>(1, static_cast<double>(a.v.size())) : 1;
        n.shape = {};
        n.v = {v / count};
        n.b = {std::max(std::fabs(v / count), b / count)};
        return;
      }
      case Op::MseLoss: {
        const Node& a = arg(n, 0);
        const Node& c = arg(n, 1);
        if (a.v.size() != c.v.size() || a.v.empty()) throw CannotEvaluate{};
        double v = 0, b = 0;
        for (size_t i = 0; i < a.v.size(); ++i) {
          const double d = a.v[i] - c.v[i];
          const double bd = a.b[i] + c.b[i];
          v += d * d;
          b += std::max(bd * bd, d * d + 2 * std::fabs(d) * bd);  // as Square: d^2 + |2d| * B(d)
        }
        double count = static_cast<double>(a.v.size());
        if (variant_ && variant_->mse_loss_divided_by_rows_squared) {
          const double rows = a.shape.size() < 2 ? 1.0 : static_cast<double>(a.shape[0]);
          count = rows * rows;
        }
        n.shape = {};
        n.v = {v / count};
        n.b = {std::max(v, b) / count};
        return;
      }
      case Op::Matmul: {
        const Node& a = arg(n, 0);
        const Node& c = arg(n, 1);
        if (a.shape.size() != 2 || c.shape.size() != 2 || a.shape[1] != c.shape[0]) throw CannotEvaluate{};
        n.shape = {a.shape[0], c.shape[1]};
        matmul(a.v, c.v, a.shape[0], a.shape[1], c.shape[1], false, n.v);
        matmul(a.b, c.b, a.shape[0], a.shape[1], c.shape[1], false, n.b);
        return;
      }
      case Op::Linear: {
        const Node& x = arg(n, 0);
        const Node& w = arg(n, 1);
        if (x.shape.size() != 2 || w.shape.size() != 2 || x.shape[1] != w.shape[1]) throw CannotEvaluate{};
        const int64_t rows = x.shape[0], inner = x.shape[1], cols = w.shape[0];
        n.shape = {rows, cols};
        matmul(x.v, w.v, rows, inner, cols, true, n.v);
        matmul(x.b, w.b, rows, inner, cols, true, n.b);
        if (n.args.size() > 2) {
          const Node& bias = arg(n, 2);
          if (static_cast<int64_t>(bias.v.size()) != cols) throw CannotEvaluate{};
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j) {
              n.v[i * cols + j] += bias.v[j];
              n.b[i * cols + j] += bias.b[j];
            }
        }
        return;
      }
      case Op::Embedding: {
        const Node& w = arg(n, 0);
        if (w.shape.size() != 2) throw CannotEvaluate{};
        const int64_t rows = w.shape[0], dim = w.shape[1];
        n.shape = {static_cast<int64_t>(e.indices.size()), dim};
        for (int64_t index : e.indices) {
          if (index < 0 || index >= rows) throw CannotEvaluate{};
          for (int64_t j = 0; j < dim; ++j) {
            n.v.push_back(w.v[index * dim + j]);
            n.b.push_back(w.b[index * dim + j]);
          }
        }
        return;
      }
      case Op::CrossEntropy: {
        const bool computed_logits = !e.args.empty() && e.args[0] && e.args[0]->op != Op::Param && e.args[0]->op != Op::Const;
        // loss_i = log z_i - (x[i, t_i] - mx_i), z_i = sum_j exp(x_ij - mx_i): the max is subtracted first
        // (SEMANTICS §2.11), so the local rounding is that of the shifted logit and of log z (each exp term's
        // relative error adds up to about `classes` ulps of 1), not of the raw logits: B_i = |x_it - mx_i| +
        // |log z_i| + classes. Raw magnitudes (|lse| + |x_it|) would let a wrong loss of 10^12 pass as rounding
        // when logits reach 2^60 (found by the wrong-driver battery on op-cross-entropy-large-f32).
        const Node& x = arg(n, 0);
        if (x.shape.size() != 2 || static_cast<int64_t>(e.indices.size()) != x.shape[0] || x.shape[0] == 0)
          throw CannotEvaluate{};
        const int64_t rows = x.shape[0], classes = x.shape[1];
        double v = 0, b = 0;
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t t = e.indices[i];
          if (t < 0 || t >= classes) throw CannotEvaluate{};
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < classes; ++j) mx = std::max(mx, x.v[i * classes + j]);
          double z = 0;
          for (int64_t j = 0; j < classes; ++j) z += std::exp(x.v[i * classes + j] - mx);
          const double lse = mx + std::log(z);
          // Errors of computed logits propagate (bounded by softmax_j B_j + B_t, which stays sound when the
          // softmax saturates); logits that are parameters or constants are inputs, exact on both sides; a
          // one-class row is exactly 0 whatever its logits.
          double spread = 0;
          if (classes > 1 && computed_logits) {
            // A -inf logit's softmax is exactly 0 and carries no rounding: only finite scales count.
            for (int64_t j = 0; j < classes; ++j)
              if (std::isfinite(x.b[i * classes + j])) spread += std::exp(x.v[i * classes + j] - lse) * x.b[i * classes + j];
            spread += x.b[i * classes + t];
          }
          v += lse - x.v[i * classes + t];
          b += std::fabs(x.v[i * classes + t] - mx) + std::fabs(std::log(z)) + static_cast<double>(classes) + spread;
        }
        n.shape = {};
        n.v = {v / static_cast<double>(rows)};
        n.b = {b / static_cast<double>(rows)};
        return;
      }
    }
    throw CannotEvaluate{};
  }
};

// Adds `add` into `into`, summing everything into a single element when `into` is a 0-d broadcast operand.
void accumulate(std::vector<double>& into, const std::vector<double>& add) {
  if (into.size() == add.size()) {
    for (size_t i = 0; i < add.size(); ++i) into[i] += add[i];
  } else if (into.size() == 1) {
    for (double x : add) into[0] += x;
  } else {
    throw CannotEvaluate{};
  }
}

// The backward of the ops whose local derivative is the other operand, shared by the scale backward (operands
// stand in as their scales B) and the signed backward (as their values): matmul (dA += G C^T, dC += A^T G),
// linear (x W^T + b), embedding (rows gathered: their gradients scattered back).
void matmul_backward(const Node& n, Node& a, Node& c, const std::vector<double>& a_factor,
                     const std::vector<double>& c_factor) {
  const int64_t rows = a.shape[0], inner = a.shape[1], cols = c.shape[1];
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const double g = n.s[i * cols + j];
      for (int64_t k2 = 0; k2 < inner; ++k2) {
        a.s[i * inner + k2] += g * c_factor[k2 * cols + j];
        c.s[k2 * cols + j] += g * a_factor[i * inner + k2];
      }
    }
}

void linear_backward(const Node& n, Node& x, Node& w, Node* bias, const std::vector<double>& x_factor,
                     const std::vector<double>& w_factor) {
  const int64_t rows = x.shape[0], inner = x.shape[1], cols = w.shape[0];
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const double g = n.s[i * cols + j];
      for (int64_t k2 = 0; k2 < inner; ++k2) {
        x.s[i * inner + k2] += g * w_factor[j * inner + k2];
        w.s[j * inner + k2] += g * x_factor[i * inner + k2];
      }
      if (bias) bias->s[j] += g;
    }
}

void embedding_backward(const Node& n, const Expr& e, Node& w) {
  const int64_t dim = w.shape[1];
  for (size_t l = 0; l < e.indices.size(); ++l)
    for (int64_t j = 0; j < dim; ++j) w.s[e.indices[l] * dim + j] += n.s[l * dim + j];
}

// The backward on absolute values: each node's scale S is distributed to its operands through the local
// derivative's magnitude plus its sensitivity to the operands' rounding, |f'| + |f''| * B (tolerance.h).
void backward_scales(std::vector<Node>& nodes, const std::vector<double>& seed, double min_normal,
                     OperandScales& out) {
  for (Node& n : nodes) n.s.assign(n.v.size(), 0.0);
  nodes.back().s = seed;
  for (size_t k = nodes.size(); k-- > 0;) {
    Node& n = nodes[k];
    const Expr& e = *n.expr;
    auto child = [&](size_t i) -> Node& { return nodes[n.args.at(i)]; };
    auto elementwise = [&](size_t i, const std::function<double(size_t)>& local) {
      Node& c = child(i);
      std::vector<double> g(n.s.size());
      for (size_t j = 0; j < n.s.size(); ++j) {
        g[j] = n.s[j] * local(j);
        // A non-finite scale for one element (0 * inf where an operand is infinite) drops that element's
        // contribution only; the engines' value there is non-finite or exact.
        if (!std::isfinite(g[j])) g[j] = 0;
      }
      accumulate(c.s, g);
    };
    // A gradient flowing through the subnormal range is rounded to an absolute denormal (tolerance.h).
    if (e.op != Op::Param && e.op != Op::Const && k + 1 != nodes.size())
      for (double& x : n.s) x = std::max(x, min_normal);
    auto at = [](const Node& c, size_t j) { return c.v.size() == 1 ? size_t{0} : j; };
    switch (e.op) {
      case Op::Param: {
        std::vector<double>& g = out.grad[e.name];
        if (g.empty()) g.assign(n.s.size(), 0.0);
        accumulate(g, n.s);
        break;
      }
      case Op::Const:
        break;
      case Op::Add:
      case Op::Sub:
        elementwise(0, [](size_t) { return 1.0; });
        elementwise(1, [](size_t) { return 1.0; });
        break;
      case Op::Mul: {
        const Node& a = child(0);
        const Node& c = child(1);
        elementwise(0, [&](size_t j) { return c.b[at(c, j)]; });
        elementwise(1, [&](size_t j) { return a.b[at(a, j)]; });
        break;
      }
      case Op::Div: {
        const Node& a = child(0);
        const Node& c = child(1);
        elementwise(0, [&](size_t j) {
          const double d = c.v[at(c, j)];
          return 1 / std::fabs(d) + c.b[at(c, j)] / (d * d);
        });
        elementwise(1, [&](size_t j) {
          const double d = c.v[at(c, j)];
          const double num = std::fabs(a.v[at(a, j)]);
          return num / (d * d) + a.b[at(a, j)] / (d * d) + 2 * num * c.b[at(c, j)] / std::fabs(d * d * d);
        });
        break;
      }
      case Op::Neg:
      case Op::Relu:
      case Op::Abs:
        elementwise(0, [](size_t) { return 1.0; });
        break;
      case Op::MulScalar:
        elementwise(0, [&](size_t) { return std::fabs(e.scalar); });
        break;
      case Op::Square: {
        const Node& a = child(0);
        elementwise(0, [&](size_t j) { return 2 * std::fabs(a.v[j]) + 2 * a.b[j]; });
        break;
      }
      case Op::Pow: {
        const Node& a = child(0);
        const double p = e.scalar;
        elementwise(0, [&](size_t j) {
          const double x = std::fabs(a.v[j]);
          if (p == 0) return 0.0;
          // The second-order term only where the operand carries rounding (b > 0): pow(0, p - 2) is
          // infinite for p < 2, and 0 * inf would poison the whole scale.
          const double second = p == 1 || a.b[j] == 0 ? 0.0 : std::fabs(p * (p - 1)) * std::pow(x, p - 2) * a.b[j];
          return std::fabs(p) * std::pow(x, p - 1) + second;
        });
        break;
      }
      case Op::Exp: {
        const Node& a = child(0);
        elementwise(0, [&](size_t j) { return std::fabs(n.v[j]) * (1 + a.b[j]); });
        break;
      }
      case Op::Log: {
        const Node& a = child(0);
        elementwise(0, [&](size_t j) { return 1 / std::fabs(a.v[j]) + a.b[j] / (a.v[j] * a.v[j]); });
        break;
      }
      case Op::Tanh: {
        const Node& a = child(0);
        elementwise(0, [&](size_t j) {
          // 1 - t*t is computed from the rounded output t: near saturation it cancels, and one ULP of t
          // (LibTorch's vectorised tanh and libm's differ by that much) moves it by ~2t*ulp(t). Its
          // operands 1 and t*t set the scale.
          const double t = n.v[j];
          return std::max((1 - t * t) * (1 + 2 * std::fabs(t) * a.b[j]), 1 + t * t);
        });
        break;
      }
      case Op::Sigmoid: {
        const Node& a = child(0);
        elementwise(0, [&](size_t j) {
          // s * (1 - s) from the rounded output s: 1 - s cancels as s -> 1, so its operands set the scale.
          const double s = n.v[j];
          return std::max(s * (1 - s) * (1 + std::fabs(1 - 2 * s) * a.b[j]), s * (1 + s));
        });
        break;
      }
      case Op::Sum:
      case Op::Mean: {
        Node& a = child(0);
        const double scale = e.op == Op::Mean ? 1 / std::max<double>(1, static_cast<double>(a.v.size())) : 1;
        for (double& x : a.s) x += n.s[0] * scale;
        break;
      }
      case Op::MseLoss: {
        Node& a = child(0);
        Node& c = child(1);
        const double scale = 2 / static_cast<double>(a.v.size());
        for (size_t j = 0; j < a.v.size(); ++j) {
          const double g = n.s[0] * scale * (a.b[j] + c.b[j]);
          a.s[j] += g;
          c.s[j] += g;
        }
        break;
      }
      case Op::Matmul:
        matmul_backward(n, child(0), child(1), child(0).b, child(1).b);
        break;
      case Op::Linear:
        linear_backward(n, child(0), child(1), n.args.size() > 2 ? &child(2) : nullptr, child(0).b, child(1).b);
        break;
      case Op::Embedding:
        embedding_backward(n, e, child(0));
        break;
      case Op::CrossEntropy: {
        Node& x = child(0);
        const int64_t rows = x.shape[0], classes = x.shape[1];
        for (int64_t i = 0; i < rows; ++i) {
          double mx = -std::numeric_limits<double>::infinity(), bmax = 0;
          for (int64_t j = 0; j < classes; ++j) {
            mx = std::max(mx, x.v[i * classes + j]);
            // An infinite logit's own scale is infinite, but its softmax is exactly 0 or 1 (or NaN): it
            // carries no rounding into the other classes' gradients, so only finite scales count.
            if (std::isfinite(x.b[i * classes + j])) bmax = std::max(bmax, x.b[i * classes + j]);
          }
          double z = 0;
          for (int64_t j = 0; j < classes; ++j) z += std::exp(x.v[i * classes + j] - mx);
          for (int64_t j = 0; j < classes; ++j) {
            const double softmax = std::exp(x.v[i * classes + j] - mx) / z;
            const double target = j == e.indices[i] ? 1.0 : 0.0;
            x.s[i * classes + j] +=
                n.s[0] * (softmax * (1 + 2 * bmax) + target) / static_cast<double>(rows);
          }
        }
        break;
      }
    }
  }
}

void zero_non_finite(std::vector<double>& v) {
  for (double& x : v)
    if (!std::isfinite(x)) x = 0;
}

// The signed backward (below); with `straddles`, it also marks per parameter the grad elements whose class hangs on a
// rounding (OperandScales::grad_straddle).
void backward_values(std::vector<Node>& nodes, const std::vector<double>& seed,
                     std::map<std::string, std::vector<double>>& grads, DType dtype,
                     std::map<std::string, std::vector<char>>* straddles, const ExpressionVariant* variant = nullptr);

}  // namespace

OperandScales operand_scales(const Expr& loss, const EngineState& params_state,
                             const std::vector<double>* gradient) {
  OperandScales out;
  try {
    {  // The scales without the subnormal floor: exactly 0 where every operand was 0 (SEMANTICS §9.5). A tape of its
       // own, freed before the main one is built (the two never coexist: bounded memory for the largest programs).
      auto zero_flags = [](const std::vector<double>& b) {
        std::vector<char> z(b.size());
        for (size_t i = 0; i < b.size(); ++i) z[i] = b[i] == 0;
        return z;
      };
      ScaleTape exact(params_state, nullptr, /*floor_subnormals=*/false);
      exact.eval(loss);
      out.output_exact_zero = zero_flags(exact.nodes.back().b);
      OperandScales unfloored;
      std::vector<double> seed(exact.nodes.back().v.size(), 1.0);
      if (gradient && gradient->size() == seed.size())
        for (size_t i = 0; i < seed.size(); ++i) seed[i] = std::fabs((*gradient)[i]);
      backward_scales(exact.nodes, seed, 0.0, unfloored);
      for (const auto& [name, g] : unfloored.grad) out.grad_exact_zero[name] = zero_flags(g);
    }
    ScaleTape tape(params_state);
    tape.eval(loss);
    out.reduction_length = tape.longest_reduction;
    Node& root = tape.nodes.back();
    out.output = root.b;
    // Seed: |gradient| (explicit), else 1 for every element (a non-scalar output without a gradient fails
    // in both engines anyway).
    std::vector<double> seed(root.v.size(), 1.0);
    if (gradient && gradient->size() == root.v.size())
      for (size_t i = 0; i < seed.size(); ++i) seed[i] = std::fabs((*gradient)[i]);
    backward_scales(tape.nodes, seed, tape.min_normal(), out);
    zero_non_finite(out.output);
    for (auto& [name, g] : out.grad) zero_non_finite(g);
    // The signed backward, for the grads whose class (NaN or ±inf) a rounding decides (tolerance.h); where it cannot
    // run, no element is straddled.
    try {
      const DType dtype = tape.min_normal() == static_cast<double>(std::numeric_limits<float>::min()) ? DType::Float32
                                                                                                       : DType::Float64;
      std::vector<double> signed_seed(root.v.size(), 1.0);
      if (gradient && gradient->size() == root.v.size()) signed_seed = *gradient;
      std::map<std::string, std::vector<double>> values;
      std::map<std::string, std::vector<char>> straddles;
      backward_values(tape.nodes, signed_seed, values, dtype, &straddles);
      for (const auto& [name, marked] : straddles) {
        const std::vector<double>& v = values[name];
        if (v.size() != marked.size() || std::none_of(marked.begin(), marked.end(), [](char c) { return c != 0; }))
          continue;
        std::vector<double>& to = out.grad_straddle[name];
        to.assign(v.size(), 0.0);
        for (size_t i = 0; i < v.size(); ++i)
          if (marked[i] && std::isinf(v[i])) to[i] = v[i];
      }
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

namespace {

// How close to saturation (in ULPs of its scale, the default k of tolerance.h) tanh's or sigmoid's output may be
// rounded to exactly +-1 (or 0, 1) by an engine: LibTorch's tanh and libm's differ by an ULP there (SEMANTICS §9.1).
constexpr double kStraddleUlps = 4;

// The backward with signed values: each node's gradient `s` distributed to its operands through the local
// derivative (reuses Node::s for the signed gradient). With `straddles` (dtype: the parameters' narrowest), each
// element is also marked where an infinite incoming gradient met a local derivative that is 0 within the rounding
// of its operand (tanh's 1 - y^2, sigmoid's y (1 - y) at saturation: inf * 0 is NaN on an engine whose y rounded to
// exactly 1, ±inf on the other), and the mark follows the gradient down to the parameters: element by element
// through element-wise ops, to every element of the operands of the others.
void backward_values(std::vector<Node>& nodes, const std::vector<double>& seed,
                     std::map<std::string, std::vector<double>>& grads, DType dtype,
                     std::map<std::string, std::vector<char>>* straddles, const ExpressionVariant* variant) {
  for (Node& n : nodes) n.s.assign(n.v.size(), 0.0);
  nodes.back().s = seed;
  std::vector<std::vector<char>> marks;
  if (straddles)
    for (const Node& n : nodes) marks.emplace_back(n.v.size(), 0);
  for (size_t k = nodes.size(); k-- > 0;) {
    Node& n = nodes[k];
    const Expr& e = *n.expr;
    auto child = [&](size_t i) -> Node& { return nodes[n.args.at(i)]; };
    auto at = [](const Node& c, size_t j) { return c.v.size() == 1 ? size_t{0} : j; };
    bool routed = false;  // the marks went to the operands element by element
    auto elementwise = [&](size_t i, const std::function<double(size_t)>& local,
                           const std::function<bool(size_t)>& zero_within_rounding = nullptr) {
      std::vector<double> g(n.s.size());
      for (size_t j = 0; j < n.s.size(); ++j) g[j] = n.s[j] == 0 ? 0.0 : n.s[j] * local(j);
      accumulate(child(i).s, g);
      if (!straddles) return;
      routed = true;
      std::vector<char>& to = marks[n.args.at(i)];
      for (size_t j = 0; j < n.s.size() && !to.empty(); ++j)
        if (marks[k][j] || (zero_within_rounding && std::isinf(n.s[j]) && zero_within_rounding(j)))
          to[to.size() == n.s.size() ? j : 0] = 1;
    };
    auto within_rounding = [&](double distance, double scale) { return distance <= kStraddleUlps * ulp(scale, dtype); };
    switch (e.op) {
      case Op::Param: {
        std::vector<double>& g = grads[e.name];
        if (g.empty()) g.assign(n.s.size(), 0.0);
        accumulate(g, n.s);
        if (straddles) {
          std::vector<char>& m = (*straddles)[e.name];
          if (m.empty()) m.assign(n.s.size(), 0);
          for (size_t j = 0; j < m.size() && j < marks[k].size(); ++j) m[j] = m[j] || marks[k][j];
        }
        routed = true;
        break;
      }
      case Op::Const: break;
      case Op::Add:
        elementwise(0, [](size_t) { return 1.0; });
        elementwise(1, [](size_t) { return 1.0; });
        break;
      case Op::Sub:
        elementwise(0, [](size_t) { return 1.0; });
        elementwise(1, [](size_t) { return -1.0; });
        break;
      case Op::Mul: {
        const Node& a = child(0);
        const Node& c = child(1);
        elementwise(0, [&](size_t j) { return c.v[at(c, j)]; });
        elementwise(1, [&](size_t j) { return a.v[at(a, j)]; });
        break;
      }
      case Op::Div: {
        const Node& a = child(0);
        const Node& c = child(1);
        elementwise(0, [&](size_t j) { return 1 / c.v[at(c, j)]; });
        elementwise(1, [&](size_t j) {
          const double d = c.v[at(c, j)];
          return -a.v[at(a, j)] / (d * d);
        });
        break;
      }
      case Op::Neg: elementwise(0, [](size_t) { return -1.0; }); break;
      case Op::MulScalar: elementwise(0, [&](size_t) { return e.scalar; }); break;
      case Op::Square: {
        const Node& a = child(0);
        elementwise(0, [&](size_t j) { return 2 * a.v[j]; });
        break;
      }
      case Op::Pow: {
        const Node& a = child(0);
        const double p = e.scalar;
        if (variant && variant->pow_by_repeated_multiplication) {
          elementwise(0, [&](size_t j) { return 2 * a.v[j]; });
          break;
        }
        elementwise(0, [&](size_t j) { return p == 0 ? 0.0 : p * std::pow(a.v[j], p - 1); });
        break;
      }
      case Op::Exp: elementwise(0, [&](size_t j) { return n.v[j]; }); break;
      case Op::Log: {
        const Node& a = child(0);
        elementwise(0, [&](size_t j) { return 1 / a.v[j]; });
        break;
      }
      case Op::Tanh:
        elementwise(0, [&](size_t j) { return 1 - n.v[j] * n.v[j]; },
                    [&](size_t j) { return within_rounding(1 - std::fabs(n.v[j]), n.b[j]); });
        break;
      case Op::Sigmoid:
        elementwise(0, [&](size_t j) { return n.v[j] * (1 - n.v[j]); },
                    [&](size_t j) { return within_rounding(1 - n.v[j], n.b[j]) || within_rounding(n.v[j], n.b[j]); });
        break;
      case Op::Relu: {
        const Node& a = child(0);
        // LibTorch passes the gradient on where the input is not <= 0 (a NaN input too); a leaky variant's mask is
        // 1 only where x > 0
        const double slope = variant ? variant->relu_negative_slope : 0;
        elementwise(0, [&](size_t j) { return slope != 0 ? (a.v[j] > 0 ? 1.0 : slope) : (a.v[j] <= 0 ? 0.0 : 1.0); });
        break;
      }
      case Op::Abs: {
        const Node& a = child(0);
        const double at_zero = variant ? variant->abs_derivative_at_zero : 0;
        elementwise(0, [&](size_t j) { return a.v[j] > 0 ? 1.0 : a.v[j] < 0 ? -1.0 : at_zero; });
        break;
      }
      case Op::Sum:
      case Op::Mean: {
        Node& a = child(0);
        const double scale = e.op == Op::Mean ? 1 / std::max<double>(1, static_cast<double>(a.v.size())) : 1;
        for (double& x : a.s) x += n.s[0] * scale;
        break;
      }
      case Op::MseLoss: {
        Node& a = child(0);
        Node& c = child(1);
        double scale = 2 / static_cast<double>(a.v.size());
        if (variant && variant->mse_loss_divided_by_rows_squared) {
          const double rows = a.shape.size() < 2 ? 1.0 : static_cast<double>(a.shape[0]);
          scale = 2 / (rows * rows);
        }
        for (size_t j = 0; j < a.v.size(); ++j) {
          const double g = n.s[0] * scale * (a.v[j] - c.v[j]);
          a.s[j] += g;
          c.s[j] -= g;
        }
        break;
      }
      case Op::Matmul:
        matmul_backward(n, child(0), child(1), child(0).v, child(1).v);
        break;
      case Op::Linear:
        linear_backward(n, child(0), child(1), n.args.size() > 2 ? &child(2) : nullptr, child(0).v, child(1).v);
        break;
      case Op::Embedding:
        embedding_backward(n, e, child(0));
        break;
      case Op::CrossEntropy: {
        Node& x = child(0);
        const int64_t rows = x.shape[0], classes = x.shape[1];
        for (int64_t i = 0; i < rows; ++i) {
          double mx = -kInf;
          for (int64_t j = 0; j < classes; ++j) mx = std::max(mx, x.v[i * classes + j]);
          double z = 0;
          for (int64_t j = 0; j < classes; ++j) z += std::exp(x.v[i * classes + j] - mx);
          for (int64_t j = 0; j < classes; ++j) {
            const double softmax = std::exp(x.v[i * classes + j] - mx) / z;
            const double target = j == e.indices[i] ? 1.0 : 0.0;
            x.s[i * classes + j] += n.s[0] * (softmax - target) / static_cast<double>(rows);
          }
        }
        break;
      }
    }
    // Reductions, matmul, linear, embedding, cross_entropy: a marked element reaches every operand element.
    if (straddles && !routed && std::any_of(marks[k].begin(), marks[k].end(), [](char c) { return c != 0; }))
      for (int a : n.args) std::fill(marks[a].begin(), marks[a].end(), char{1});
  }
}

}  // namespace

ExactEvaluation exact_evaluation(const Expr& loss, const EngineState& params_state,
                                 const std::vector<double>* gradient, const ExpressionVariant* variant) {
  ExactEvaluation out;
  try {
    ScaleTape tape(params_state, variant);
    tape.eval(loss);
    Node& root = tape.nodes.back();
    out.output = root.v;
    std::vector<double> seed(root.v.size(), 1.0);
    if (gradient && gradient->size() == root.v.size()) seed = *gradient;
    backward_values(tape.nodes, seed, out.grad, DType::Float64, nullptr, variant);
    out.ok = true;
  } catch (const CannotEvaluate&) {
    return ExactEvaluation{};
  } catch (const std::exception&) {
    return ExactEvaluation{};
  }
  return out;
}

}  // namespace lockstep
