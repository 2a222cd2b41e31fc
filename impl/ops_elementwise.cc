// Element-wise ops: forward and backward side by side (see ops.h). Shapes: a, b and the result are all
// one shape, except that a 0-d operand is broadcast; its grad is then the sum (sum_to).
#include <cmath>

#include "impl/ops.h"
#include "impl/ops_internal.h"

namespace lockstep::impl::ops {

using detail::map_binary;
using detail::map_unary;

namespace {
// The grads of a node's inputs, `count` undefined slots to fill.
std::vector<Tensor> grads(size_t count) { return std::vector<Tensor>(count); }
}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Binary. SEM-2.5: add and sub save nothing; mul and div save the operands their needed grads use (even a
// constant one), so a second backward without retain_graph fails. Black-box (LibTorch 1.13, after an Adam
// step of p through a retained graph): mul(p, c) and mul(c, p) save only c, div(p, c) only c, div(c, p)
// both (input_needs_grad, autograd.h).

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = map_binary("add", a, b, [](auto x, auto y) { return x + y; });
  return record(out, "AddBackward", {a, b}, {}, false,
                [sa = a.shape(), sb = b.shape()](const Node& self, const Tensor& g) {
                  auto gr = grads(2);
                  if (self.needs_grad(0)) gr[0] = sum_to(g, sa);  // d(a+b)/da = 1
                  if (self.needs_grad(1)) gr[1] = sum_to(g, sb);
                  return gr;
                });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = map_binary("sub", a, b, [](auto x, auto y) { return x - y; });
  return record(out, "SubBackward", {a, b}, {}, false,
                [sa = a.shape(), sb = b.shape()](const Node& self, const Tensor& g) {
                  auto gr = grads(2);
                  if (self.needs_grad(0)) gr[0] = sum_to(g, sa);
                  if (self.needs_grad(1)) gr[1] = sum_to(neg(g), sb);  // d(a-b)/db = -1
                  return gr;
                });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = map_binary("mul", a, b, [](auto x, auto y) { return x * y; });
  // saved[0] = a, for b's grad; saved[1] = b, for a's grad
  std::vector<Tensor> saved{input_needs_grad(b) ? a : Tensor(), input_needs_grad(a) ? b : Tensor()};
  return record(out, "MulBackward", {a, b}, std::move(saved), true,
                [sa = a.shape(), sb = b.shape()](const Node& self, const Tensor& g) {
                  auto gr = grads(2);
                  if (self.needs_grad(0)) gr[0] = sum_to(mul(g, self.saved[1]), sa);  // d(ab)/da = b
                  if (self.needs_grad(1)) gr[1] = sum_to(mul(g, self.saved[0]), sb);  // d(ab)/db = a
                  return gr;
                });
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = map_binary("div", a, b, [](auto x, auto y) { return x / y; });
  // saved[0] = a, for b's grad only; saved[1] = b, for both grads
  std::vector<Tensor> saved{input_needs_grad(b) ? a : Tensor(), b};
  return record(out, "DivBackward", {a, b}, std::move(saved), true,
                [sa = a.shape(), sb = b.shape()](const Node& self, const Tensor& g) {
                  const Tensor& a = self.saved[0];
                  const Tensor& b = self.saved[1];
                  auto gr = grads(2);
                  if (self.needs_grad(0)) gr[0] = sum_to(div(g, b), sa);  // d(a/b)/da = 1/b
                  // d(a/b)/db = -a/b^2, computed as -g * ((a / b) / b): black-box, this form matched the
                  // oracle on 2000 of 2000 random elements in float32 and float64 (-g * (a / b) / b: 65 %,
                  // -g * a / (b * b): 55 %), and it decides where inf, NaN and 0 appear when a/b overflows
                  // or b underflows (a / b = 2e37, / 4.7e-38 = inf in float32).
                  if (self.needs_grad(1)) gr[1] = sum_to(mul(neg(g), div(div(a, b), b)), sb);
                  return gr;
                });
}

// ---------------------------------------------------------------------------------------------------------
// Unary without saved tensors (SEM-2.5: -a and a*scalar succeed on a second backward).

Tensor neg(const Tensor& a) {
  detail::require_defined("neg", a);
  Tensor out = map_unary(a, [](auto x) { return -x; });
  return record(out, "NegBackward", {a}, {}, false,
                [](const Node&, const Tensor& g) { return std::vector<Tensor>{neg(g)}; });
}

Tensor mul_scalar(const Tensor& a, double s) {
  detail::require_defined("mul_scalar", a);
  Tensor out = map_unary(a, [s](auto x) { return x * static_cast<decltype(x)>(s); });  // SEM-1.3
  return record(out, "MulScalarBackward", {a}, {}, false,
                [s](const Node&, const Tensor& g) { return std::vector<Tensor>{mul_scalar(g, s)}; });
}

Tensor div_scalar(const Tensor& a, double s) {
  detail::require_defined("div_scalar", a);
  Tensor out = map_unary(a, [s](auto x) { return x / static_cast<decltype(x)>(s); });
  return record(out, "DivScalarBackward", {a}, {}, false,
                [s](const Node&, const Tensor& g) { return std::vector<Tensor>{div_scalar(g, s)}; });
}

Tensor add_scalar(const Tensor& a, double s) {
  detail::require_defined("add_scalar", a);
  Tensor out = map_unary(a, [s](auto x) { return x + static_cast<decltype(x)>(s); });
  return record(out, "AddScalarBackward", {a}, {}, false,
                [](const Node&, const Tensor& g) { return std::vector<Tensor>{g}; });
}

Tensor clone(const Tensor& a) {
  detail::require_defined("clone", a);
  return record(a.clone(), "CloneBackward", {a}, {}, false,
                [](const Node&, const Tensor& g) { return std::vector<Tensor>{g}; });
}

// ---------------------------------------------------------------------------------------------------------
// Unary that save a tensor (SEM-2.5): square, pow, log and abs save their operand (an alias: a parameter
// changed in place by a step is seen changed by a later backward through a retained graph); exp, tanh,
// sigmoid and relu save their output's values as of the forward (record_saving_output).

Tensor square(const Tensor& a) {
  detail::require_defined("square", a);
  Tensor out = map_unary(a, [](auto x) { return x * x; });
  return record(out, "SquareBackward", {a}, {a}, true, [](const Node& self, const Tensor& g) {
    return std::vector<Tensor>{mul(g, mul_scalar(self.saved[0], 2.0))};  // 2a
  });
}

Tensor pow_scalar(const Tensor& a, double exponent) {
  detail::require_defined("pow_scalar", a);
  // Black-box (fixtures op-pow0.5-nonfinite-*, op-pow0.5-zero-*): a^0.5 is sqrt(a) and a^-0.5 is 1 / sqrt(a),
  // so -inf gives NaN where std::pow gives +inf and +0 (SEM-2.11). a^-2 is 1 / (a * a): where a * a overflows
  // (|a| >= 2^64 in float32, 2^512 in float64) it is 0, not the subnormal std::pow gives; pow(a, -1)'s grad reads it
  // (SEM-2.11).
  Tensor out = map_unary(a, [exponent](auto x) {
    using T = decltype(x);
    if (exponent == 0.5) return std::sqrt(x);
    if (exponent == -0.5) return T(1) / std::sqrt(x);
    if (exponent == -2.0) return T(1) / (x * x);
    return std::pow(x, static_cast<T>(exponent));
  });
  return record(out, "PowBackward", {a}, {a}, true, [exponent](const Node& self, const Tensor& g) {
    const Tensor& a = self.saved[0];
    if (exponent == 0.0) return std::vector<Tensor>{Tensor::zeros(a.dtype(), a.shape())};  // a^0 is constant
    return std::vector<Tensor>{mul(g, mul_scalar(pow_scalar(a, exponent - 1.0), exponent))};  // p a^(p-1)
  });
}

Tensor exp(const Tensor& a) {
  detail::require_defined("exp", a);
  Tensor out = map_unary(a, [](auto x) { return std::exp(x); });
  return record_saving_output(out, "ExpBackward", {a}, [](const Node& self, const Tensor& g) {
    return std::vector<Tensor>{mul(g, saved_output(self))};  // d e^a = e^a
  });
}

Tensor log(const Tensor& a) {
  detail::require_defined("log", a);
  Tensor out = map_unary(a, [](auto x) { return std::log(x); });
  return record(out, "LogBackward", {a}, {a}, true, [](const Node& self, const Tensor& g) {
    return std::vector<Tensor>{div(g, self.saved[0])};  // 1/a
  });
}

Tensor tanh(const Tensor& a) {
  detail::require_defined("tanh", a);
  Tensor out = map_unary(a, [](auto x) { return std::tanh(x); });
  return record_saving_output(out, "TanhBackward", {a}, [](const Node& self, const Tensor& g) {
    return std::vector<Tensor>{tanh_grad(g, saved_output(self))};  // g (1 - tanh^2)
  });
}

Tensor tanh_grad(const Tensor& grad, const Tensor& t) {
  // 1 - t*t cancels as |t| -> 1: computed with one rounding (fma), as LibTorch's fused kernels do
  // (black-box: tanh at 3.25 in float32 agrees only this way).
  Tensor out = map_binary("tanh_grad", grad, t, [](auto g, auto y) {
    using T = decltype(y);
    return g * std::fma(-y, y, T(1));
  });
  return record(out, "TanhGradBackward", {grad, t}, {grad, t}, true, [](const Node& self, const Tensor& gg) {
    const Tensor& g = self.saved[0];
    const Tensor& t = self.saved[1];
    auto gr = grads(2);
    if (self.needs_grad(0)) gr[0] = tanh_grad(gg, t);                          // linear in g
    if (self.needs_grad(1)) gr[1] = mul(mul(gg, g), mul_scalar(t, -2.0));      // d(1 - t^2)/dt = -2t
    return gr;
  });
}

Tensor sigmoid(const Tensor& a) {
  detail::require_defined("sigmoid", a);
  Tensor out = map_unary(a, [](auto x) {
    using T = decltype(x);
    return T(1) / (T(1) + std::exp(-x));
  });
  return record_saving_output(out, "SigmoidBackward", {a}, [](const Node& self, const Tensor& g) {
    Tensor s = saved_output(self);
    return std::vector<Tensor>{mul(mul(g, add_scalar(neg(s), 1.0)), s)};  // s (1 - s)
  });
}

Tensor relu(const Tensor& a) {
  detail::require_defined("relu", a);
  // x < 0 is +0; -0 and NaN pass through (LibTorch: relu(-0) = -0, SEMANTICS §9.5)
  Tensor out = map_unary(a, [](auto x) {
    using T = decltype(x);
    return x < T(0) ? T(0) : x;
  });
  return record_saving_output(out, "ReluBackward", {a}, [](const Node& self, const Tensor& g) {
    return std::vector<Tensor>{relu_grad(g, saved_output(self))};  // relu(a) > 0 exactly where a > 0
  });
}

Tensor relu_grad(const Tensor& grad, const Tensor& a) {
  Tensor out = map_binary("relu_grad", grad, a, [](auto g, auto x) {
    using T = decltype(x);
    return x <= T(0) ? T(0) : g;  // NaN inputs pass the grad
  });
  // Linear in grad; its derivative with respect to a is zero almost everywhere (no contribution).
  return record(out, "ReluGradBackward", {grad, a}, {a}, true, [](const Node& self, const Tensor& gg) {
    auto gr = grads(2);
    if (self.needs_grad(0)) gr[0] = relu_grad(gg, self.saved[0]);
    return gr;
  });
}

Tensor abs(const Tensor& a) {
  detail::require_defined("abs", a);
  Tensor out = map_unary(a, [](auto x) { return std::abs(x); });
  return record(out, "AbsBackward", {a}, {a}, true, [](const Node& self, const Tensor& g) {
    return std::vector<Tensor>{mul(g, sign(self.saved[0]))};  // d|a|/da = sign(a), 0 at 0
  });
}

// SEM-2.12: softplus(a) = log1p(e^a), and a itself where a > 20 (LibTorch's default threshold, beta 1). It saves
// its input (a later in-place change of it fails the backward, SEM-2.8).
Tensor softplus(const Tensor& a) {
  detail::require_defined("softplus", a);
  Tensor out = map_unary(a, [](auto x) {
    using T = decltype(x);
    return x > T(20) ? x : std::log1p(std::exp(x));
  });
  return record(out, "SoftplusBackward", {a}, {a}, true, [](const Node& self, const Tensor& g) {
    return std::vector<Tensor>{softplus_grad(g, self.saved[0])};
  });
}

Tensor softplus_grad(const Tensor& grad, const Tensor& a) {
  // g z / (z + 1), z = e^a: an infinite g where z underflows to 0 is NaN (SEM-2.12).
  Tensor out = map_binary("softplus_grad", grad, a, [](auto g, auto x) {
    using T = decltype(x);
    if (x > T(20)) return g;
    const T z = std::exp(x);
    return g * z / (z + T(1));
  });
  return record(out, "SoftplusGradBackward", {grad, a}, {grad, a}, true, [](const Node& self, const Tensor& gg) {
    const Tensor& g = self.saved[0];
    const Tensor& x = self.saved[1];
    auto gr = grads(2);
    if (self.needs_grad(0)) gr[0] = softplus_grad(gg, x);  // linear in g
    if (self.needs_grad(1)) {
      // d/da e^a / (e^a + 1) = s (1 - s), s = sigmoid(a); 0 from the threshold on (a constant mask). At exactly 20
      // the first derivative is still s, yet its derivative is 0 (black-box, SEM-2.12).
      Tensor s = sigmoid(x);
      Tensor below = map_unary(x, [](auto v) {
        using T = decltype(v);
        return v < T(20) ? T(1) : T(0);
      });
      gr[1] = mul(mul(gg, g), mul(mul(s, add_scalar(neg(s), 1.0)), below));
    }
    return gr;
  });
}

Tensor sign(const Tensor& a) {
  detail::require_defined("sign", a);
  Tensor out = map_unary(a, [](auto x) {
    using T = decltype(x);
    if (x > T(0)) return T(1);
    if (x < T(0)) return T(-1);
    return T(0);  // 0 and NaN (black-box: LibTorch's abs grad at NaN is 0)
  });
  return record(out, "SignBackward", {a}, {}, false, [](const Node&, const Tensor& g) {
    return std::vector<Tensor>{Tensor::zeros(g.dtype(), g.shape())};  // piecewise constant
  });
}

// ---------------------------------------------------------------------------------------------------------

void add_in_place(Tensor& a, const Tensor& b) {
  detail::require_defined("add_in_place", a);
  detail::require_defined("add_in_place", b);
  detail::require_same_dtype("add_in_place", a, b);
  if (a.shape() != b.shape())
    detail::fail("add_in_place", "shapes " + shape_string(a.shape()) + " and " + shape_string(b.shape()) + " differ");
  a.bump_version();  // an in-place change (TensorImpl::version)
  dispatch_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* x = a.data<T>();
    const T* y = b.data<T>();
    const int64_t n = a.numel();
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
  });
}

}  // namespace lockstep::impl::ops
