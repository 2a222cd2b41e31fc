// The element-wise ops (SEMANTICS §2): binary ops with a 0-d operand broadcast, and unary ops. Each gives its
// value, its scale B (tolerance.h) and its local derivatives, signed and as the scales' magnitudes.
#include <algorithm>
#include <cmath>
#include <utility>

#include "conformance/program/op_descriptions.h"

namespace lockstep {
namespace {

// The element of a possibly broadcast (0-d) operand that meets output element j.
size_t at(const EvalNode& operand, size_t j) { return operand.v.size() == 1 ? 0 : j; }

// ---------------------------------------------------------------------------------------------------------
// Binary: a (op) c, same shapes or one 0-d side.

using BinaryValue = double (*)(double a, double c);
using BinaryScale = double (*)(double a, double ba, double c, double bc, double v);

OpDescription binary(Op op, const char* name, BinaryValue value, BinaryScale scale, LocalDerivative local,
                     LocalDerivative local_scale) {
  OpDescription d = op_entry(op, name, 2, 2);
  d.broadcasts = true;
  d.elementwise = true;
  d.result_shape = [name](const Expr&, const std::vector<TypedShape>& in, const std::string& path) -> Shape {
    if (in[0].shape == in[1].shape || in[1].shape.empty()) return in[0].shape;
    if (in[0].shape.empty()) return in[1].shape;
    throw ProgramError(path, std::string(name) + ": operand shapes do not match (" + shape_string(in[0].shape) +
                                 " vs " + shape_string(in[1].shape) +
                                 "); only equal shapes or a 0-d operand are supported");
  };
  d.forward = [value](OpCall& c) {
    const EvalNode& a = c.arg(0);
    const EvalNode& b = c.arg(1);
    const bool a_scalar = a.v.size() == 1 && a.shape.empty();
    const bool b_scalar = b.v.size() == 1 && b.shape.empty();
    c.out.shape = a_scalar ? b.shape : a.shape;
    const size_t count = static_cast<size_t>(numel(c.out.shape));
    if ((!a_scalar && a.v.size() != count) || (!b_scalar && b.v.size() != count)) throw CannotEvaluate{};
    c.out.v.resize(count);
    for (size_t i = 0; i < count; ++i) c.out.v[i] = value(a.v[at(a, i)], b.v[at(b, i)]);
  };
  d.forward_scale = [scale](OpCall& c) {
    const EvalNode& a = c.arg(0);
    const EvalNode& b = c.arg(1);
    c.out.b.resize(c.out.v.size());
    for (size_t i = 0; i < c.out.v.size(); ++i)
      c.out.b[i] = scale(a.v[at(a, i)], a.b[at(a, i)], b.v[at(b, i)], b.b[at(b, i)], c.out.v[i]);
  };
  d.local_derivative = std::move(local);
  d.local_scale = std::move(local_scale);
  // A broadcast 0-d operand's gradient sums the whole result's.
  d.reduction_length = [](const OpCall& c) -> int64_t {
    return (c.arg(0).shape.empty() || c.arg(1).shape.empty()) ? static_cast<int64_t>(c.out.v.size()) : 1;
  };
  return d;
}

LocalDerivative constant_derivative(double first, double second) {
  return [first, second](const OpCall&, size_t operand, size_t) { return operand == 0 ? first : second; };
}

// ---------------------------------------------------------------------------------------------------------
// Unary: value f(a), scale B = |f(a)| + |f'(a)| * B(a).

using UnaryFunction = std::function<double(const Expr&, double a)>;

OpDescription unary(Op op, const char* name, UnaryFunction f, UnaryFunction df, LocalDerivative local,
                    LocalDerivative local_scale) {
  OpDescription d = op_entry(op, name, 1, 1);
  d.elementwise = true;
  d.result_shape = [](const Expr&, const std::vector<TypedShape>& in, const std::string&) { return in[0].shape; };
  d.forward = [f](OpCall& c) {
    const EvalNode& a = c.arg(0);
    c.out.shape = a.shape;
    c.out.v.resize(a.v.size());
    for (size_t i = 0; i < a.v.size(); ++i) c.out.v[i] = f(c.expr, a.v[i]);
  };
  d.forward_scale = [df](OpCall& c) {
    const EvalNode& a = c.arg(0);
    c.out.b.resize(a.v.size());
    for (size_t i = 0; i < a.v.size(); ++i) c.out.b[i] = std::fabs(c.out.v[i]) + std::fabs(df(c.expr, a.v[i])) * a.b[i];
  };
  d.local_derivative = std::move(local);
  d.local_scale = std::move(local_scale);
  return d;
}

// A unary op's local derivative from its operand's value (or scale) at the element.
LocalDerivative of_operand(double (*f)(const OpCall&, double a, double b)) {
  return [f](const OpCall& c, size_t, size_t j) { return f(c, c.arg(0).v[j], c.arg(0).b.empty() ? 0.0 : c.arg(0).b[j]); };
}
// ... from its own output's value at the element (exp, tanh, sigmoid differentiate through their output).
LocalDerivative of_output(double (*f)(double y, double b_operand)) {
  return [f](const OpCall& c, size_t, size_t j) { return f(c.out.v[j], c.arg(0).b.empty() ? 0.0 : c.arg(0).b[j]); };
}

double pow_value(double a, double p) { return std::pow(a, p); }
double pow_derivative(double a, double p) { return p == 0 ? 0.0 : p * std::pow(a, p - 1); }
double sigmoid(double a) { return 1 / (1 + std::exp(-a)); }

// softplus(a) = log(1 + e^a), a itself where a > 20 (LibTorch's default threshold, beta 1: SEMANTICS §2.12). Its
// derivative is e^a / (e^a + 1), 1 above the threshold.
constexpr double kSoftplusThreshold = 20;

double softplus_value(double a) { return a > kSoftplusThreshold ? a : std::log1p(std::exp(a)); }
double softplus_derivative(double a) {
  if (a > kSoftplusThreshold) return 1;
  const double z = std::exp(a);
  return z / (z + 1);
}

// At the threshold the value jumps by log1p(e^-20) ~ 2.1e-9 and the derivative by as much (in float64 above an ULP of
// 20). An operand whose rounding (its scale B, at 8 ULPs) reaches across the threshold may take either branch on an
// engine: the scale then covers the jump, at a dtype's ULP of it.
double softplus_jump_scale(double a, double b, DType dtype) {
  const double eps = dtype == DType::Float32 ? 0x1p-23 : 0x1p-52;
  if (!(std::fabs(a - kSoftplusThreshold) <= 8 * eps * b)) return 0;
  return std::log1p(std::exp(-kSoftplusThreshold)) / eps;
}

OpDescription softplus() {
  OpDescription d = unary(
      Op::Softplus, "softplus", [](const Expr&, double a) { return softplus_value(a); },
      [](const Expr&, double a) { return softplus_derivative(a); },
      of_operand([](const OpCall&, double a, double) { return softplus_derivative(a); }),
      [](const OpCall& c, size_t, size_t j) {
        const EvalNode& a = c.arg(0);
        const double x = a.v[j], s = softplus_derivative(x);
        // |f'| + |f''| B, f'' = s (1 - s) below the threshold
        return s + (x > kSoftplusThreshold ? 0.0 : s * (1 - s) * a.b[j]) + softplus_jump_scale(x, a.b[j], a.dtype);
      });
  const OpStep own_scale = d.forward_scale;
  d.forward_scale = [own_scale](OpCall& c) {
    own_scale(c);
    const EvalNode& a = c.arg(0);
    for (size_t i = 0; i < a.v.size(); ++i) c.out.b[i] = std::max(c.out.b[i], softplus_jump_scale(a.v[i], a.b[i], a.dtype));
  };
  d.exponentiates = true;
  d.since_protocol = 3;
  // e^a / (e^a + 1) underflows to 0 in one engine and to a subnormal in another near e^a's underflow: an infinite
  // incoming gradient is NaN on one side, infinite on the other.
  // Judged at most at the scale of 1 (the derivative's own): where it is exactly 1 nothing straddles.
  d.zero_within_rounding = [](const OpCall& c, size_t j, const OpDescription::WithinRounding& within) {
    return within(softplus_derivative(c.arg(0).v[j]), std::min(c.out.b[j], 1.0));
  };
  return d;
}

}  // namespace

std::vector<OpDescription> elementwise_op_descriptions() {
  std::vector<OpDescription> ops;
  ops.push_back(binary(
      Op::Add, "add", [](double a, double c) { return a + c; },
      [](double, double ba, double, double bc, double v) { return std::max(std::fabs(v), ba + bc); },
      constant_derivative(1, 1), constant_derivative(1, 1)));
  ops.push_back(binary(
      Op::Sub, "sub", [](double a, double c) { return a - c; },
      [](double, double ba, double, double bc, double v) { return std::max(std::fabs(v), ba + bc); },
      constant_derivative(1, -1), constant_derivative(1, 1)));
  ops.push_back(binary(
      Op::Mul, "mul", [](double a, double c) { return a * c; },
      [](double, double ba, double, double bc, double v) { return std::max(std::fabs(v), ba * bc); },
      [](const OpCall& c, size_t operand, size_t j) {
        const EvalNode& other = c.arg(1 - operand);
        return other.v[at(other, j)];
      },
      [](const OpCall& c, size_t operand, size_t j) {
        const EvalNode& other = c.arg(1 - operand);
        return other.b[at(other, j)];
      }));
  ops.push_back(binary(
      Op::Div, "div", [](double a, double c) { return a / c; },
      [](double a, double ba, double c, double bc, double v) {
        return std::fabs(v) + ba / std::fabs(c) + std::fabs(a) * bc / (c * c);
      },
      [](const OpCall& c, size_t operand, size_t j) {
        const EvalNode& a = c.arg(0);
        const double d = c.arg(1).v[at(c.arg(1), j)];
        return operand == 0 ? 1 / d : -a.v[at(a, j)] / (d * d);
      },
      [](const OpCall& c, size_t operand, size_t j) {
        const EvalNode& a = c.arg(0);
        const EvalNode& divisor = c.arg(1);
        const double d = divisor.v[at(divisor, j)];
        if (operand == 0) return 1 / std::fabs(d) + divisor.b[at(divisor, j)] / (d * d);
        const double num = std::fabs(a.v[at(a, j)]);
        return num / (d * d) + a.b[at(a, j)] / (d * d) + 2 * num * divisor.b[at(divisor, j)] / std::fabs(d * d * d);
      }));

  auto constant = [](double k) { return [k](const OpCall&, size_t, size_t) { return k; }; };
  ops.push_back(unary(
      Op::Neg, "neg", [](const Expr&, double a) { return -a; }, [](const Expr&, double) { return 1.0; },
      constant(-1), constant(1)));
  {
    OpDescription d = unary(
        Op::MulScalar, "mul_scalar", [](const Expr& e, double a) { return a * e.scalar; },
        [](const Expr& e, double) { return e.scalar; },
        [](const OpCall& c, size_t, size_t) { return c.expr.scalar; },
        [](const OpCall& c, size_t, size_t) { return std::fabs(c.expr.scalar); });
    d.extra = OpExtra::Scalar;
    d.extra_key = "scalar";
    ops.push_back(std::move(d));
  }
  ops.push_back(unary(
      Op::Square, "square", [](const Expr&, double a) { return a * a; }, [](const Expr&, double a) { return 2 * a; },
      of_operand([](const OpCall&, double a, double) { return 2 * a; }),
      of_operand([](const OpCall&, double a, double b) { return 2 * std::fabs(a) + 2 * b; })));
  {
    OpDescription d = unary(
        Op::Pow, "pow", [](const Expr& e, double a) { return pow_value(a, e.scalar); },
        [](const Expr& e, double a) { return pow_derivative(a, e.scalar); },
        of_operand([](const OpCall& c, double a, double) { return pow_derivative(a, c.expr.scalar); }),
        of_operand([](const OpCall& c, double a, double b) {
          const double p = c.expr.scalar;
          const double x = std::fabs(a);
          if (p == 0) return 0.0;
          // The second-order term only where the operand carries rounding (b > 0): pow(0, p - 2) is infinite
          // for p < 2, and 0 * inf would poison the whole scale.
          const double second = p == 1 || b == 0 ? 0.0 : std::fabs(p * (p - 1)) * std::pow(x, p - 2) * b;
          return std::fabs(p) * std::pow(x, p - 1) + second;
        }));
    d.extra = OpExtra::Scalar;
    d.extra_key = "exponent";
    OpFormulaVariant v;
    v.name = "pow.repeated_multiplication";
    v.applies_to = "forward outputs, backward grads and the handles holding them";
    v.description = "x^n = x * x * ... with 1 + max(0, ceil(n - 1)) factors, derivative 2 x for every n: js-pytorch's "
                    "Tensor.pow";
    v.forward = [](OpCall& c) {
      const EvalNode& a = c.arg(0);
      const double factors = 1 + std::max(0.0, std::ceil(c.expr.scalar - 1));
      c.out.shape = a.shape;
      c.out.v.resize(a.v.size());
      for (size_t i = 0; i < a.v.size(); ++i) c.out.v[i] = std::pow(a.v[i], factors);
    };
    v.local_derivative = [](const OpCall& c, size_t, size_t j) { return 2 * c.arg(0).v[j]; };
    d.variants.push_back(std::move(v));
    ops.push_back(std::move(d));
  }
  {
    OpDescription d = unary(
        Op::Exp, "exp", [](const Expr&, double a) { return std::exp(a); },
        [](const Expr&, double a) { return std::exp(a); }, of_output([](double y, double) { return y; }),
        of_output([](double y, double b) { return std::fabs(y) * (1 + b); }));
    d.exponentiates = true;
    ops.push_back(std::move(d));
  }
  ops.push_back(unary(
      Op::Log, "log", [](const Expr&, double a) { return std::log(a); }, [](const Expr&, double a) { return 1 / a; },
      of_operand([](const OpCall&, double a, double) { return 1 / a; }),
      of_operand([](const OpCall&, double a, double b) { return 1 / std::fabs(a) + b / (a * a); })));
  {
    OpDescription d = unary(
        Op::Tanh, "tanh", [](const Expr&, double a) { return std::tanh(a); },
        [](const Expr&, double a) { return 1 - std::tanh(a) * std::tanh(a); },
        of_output([](double t, double) { return 1 - t * t; }),
        // 1 - t*t is computed from the rounded output t: near saturation it cancels, and one ULP of t (LibTorch's
        // vectorised tanh and libm's differ by that much) moves it by ~2t*ulp(t). Its operands 1 and t*t set the
        // scale.
        of_output([](double t, double b) { return std::max((1 - t * t) * (1 + 2 * std::fabs(t) * b), 1 + t * t); }));
    d.exponentiates = true;
    d.zero_within_rounding = [](const OpCall& c, size_t j, const OpDescription::WithinRounding& within) {
      return within(1 - std::fabs(c.out.v[j]), c.out.b[j]);
    };
    ops.push_back(std::move(d));
  }
  {
    OpDescription d = unary(
        Op::Sigmoid, "sigmoid", [](const Expr&, double a) { return sigmoid(a); },
        [](const Expr&, double a) { return sigmoid(a) * (1 - sigmoid(a)); },
        of_output([](double s, double) { return s * (1 - s); }),
        // s * (1 - s) from the rounded output s: 1 - s cancels as s -> 1, so its operands set the scale.
        of_output([](double s, double b) { return std::max(s * (1 - s) * (1 + std::fabs(1 - 2 * s) * b), s * (1 + s)); }));
    d.exponentiates = true;
    d.zero_within_rounding = [](const OpCall& c, size_t j, const OpDescription::WithinRounding& within) {
      return within(1 - c.out.v[j], c.out.b[j]) || within(c.out.v[j], c.out.b[j]);
    };
    ops.push_back(std::move(d));
  }
  {
    // relu(NaN) = NaN (SEM-2.11); LibTorch passes the gradient on where the input is not <= 0 (a NaN input too).
    OpDescription d = unary(
        Op::Relu, "relu", [](const Expr&, double a) { return a > 0 || std::isnan(a) ? a : 0.0; },
        [](const Expr&, double) { return 1.0; },
        of_operand([](const OpCall&, double a, double) { return a <= 0 ? 0.0 : 1.0; }), constant(1));
    OpFormulaVariant v;
    v.name = "relu.leaky_0.001";
    v.applies_to = "forward outputs, backward grads and the handles holding them";
    v.description = "relu(x) = 0.001 x for x <= 0 (derivative 0.001): js-pytorch's nn.ReLU";
    v.forward = [](OpCall& c) {
      const EvalNode& a = c.arg(0);
      c.out.shape = a.shape;
      c.out.v.resize(a.v.size());
      for (size_t i = 0; i < a.v.size(); ++i) c.out.v[i] = a.v[i] > 0 || std::isnan(a.v[i]) ? a.v[i] : 0.001 * a.v[i];
    };
    v.local_derivative = [](const OpCall& c, size_t, size_t j) { return c.arg(0).v[j] > 0 ? 1.0 : 0.001; };
    d.variants.push_back(std::move(v));
    ops.push_back(std::move(d));
  }
  {
    OpDescription d = unary(
        Op::Abs, "abs", [](const Expr&, double a) { return std::fabs(a); }, [](const Expr&, double) { return 1.0; },
        of_operand([](const OpCall&, double a, double) { return a > 0 ? 1.0 : a < 0 ? -1.0 : 0.0; }), constant(1));
    OpFormulaVariant v;
    v.name = "abs.grad_of_zero_is_minus_one";
    v.applies_to = "backward grads and the handles holding them";
    v.description = "abs'(0) = -1 (step(x, -1)): TensorFlow.js's Abs gradient";
    v.local_derivative = [](const OpCall& c, size_t, size_t j) {
      const double a = c.arg(0).v[j];
      return a > 0 ? 1.0 : a < 0 ? -1.0 : -1.0;
    };
    d.variants.push_back(std::move(v));
    ops.push_back(std::move(d));
  }
  ops.push_back(softplus());
  return ops;
}

}  // namespace lockstep
