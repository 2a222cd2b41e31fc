// impl/ops_internal.h: kernels and checks shared by ops_elementwise.cc, ops_reduce.cc and ops_nn.cc.
// Not part of the public API (use ops.h).
//
// Example:
//   Tensor y = detail::map_unary(x, [](auto v) { return v * v; });     // in x's dtype
//   double s = detail::pairwise_sum(p, n);                              // accurate sum in T
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "impl/autograd.h"
#include "impl/tensor.h"

namespace lockstep::impl::ops::detail {

[[noreturn]] inline void fail(const std::string& op, const std::string& message) {
  throw Error(ErrorKind::Other, op + ": " + message);
}

inline void require_defined(const char* op, const Tensor& t) {
  if (!t.defined()) fail(op, "an operand is an undefined tensor");
}

inline void require_dim(const char* op, const Tensor& t, int64_t dim) {
  require_defined(op, t);
  if (t.dim() != dim)
    fail(op, "expected a " + std::to_string(dim) + "-d tensor, got shape " + shape_string(t.shape()));
}

inline void require_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) fail(op, "operands have different dtypes");
}

// The result shape of a binary element-wise op: one shape, or one operand 0-d (broadcast).
inline Shape broadcast_shape(const char* op, const Tensor& a, const Tensor& b) {
  require_defined(op, a);
  require_defined(op, b);
  require_same_dtype(op, a, b);
  if (a.shape() == b.shape()) return a.shape();
  if (a.dim() == 0) return b.shape();
  if (b.dim() == 0) return a.shape();
  fail(op, "shapes " + shape_string(a.shape()) + " and " + shape_string(b.shape()) +
               " differ and neither is 0-d");
}

// y[i] = f(x[i]) in a's dtype; f is generic: f(T) -> T.
template <class F>
Tensor map_unary(const Tensor& a, F f) {
  Tensor out = Tensor::zeros(a.dtype(), a.shape());
  dispatch_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = a.data<T>();
    T* y = out.data<T>();
    const int64_t n = a.numel();
    for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
  });
  return out;
}

// z[i] = f(x[i], y[i]) in the operands' dtype, a 0-d operand broadcast; f is generic: f(T, T) -> T.
template <class F>
Tensor map_binary(const char* op, const Tensor& a, const Tensor& b, F f) {
  Shape shape = broadcast_shape(op, a, b);
  Tensor out = Tensor::zeros(a.dtype(), shape);
  const int64_t n = out.numel();
  const int64_t step_a = (a.numel() == n) ? 1 : 0;  // a 0-d operand of a larger result is read at 0
  const int64_t step_b = (b.numel() == n) ? 1 : 0;
  dispatch_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = a.data<T>();
    const T* y = b.data<T>();
    T* z = out.data<T>();
    if (step_a == 1 && step_b == 1) {
      for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) z[i] = f(x[i * step_a], y[i * step_b]);
    }
  });
  return out;
}

// Sum of p[0], p[stride], ... (n terms) in T, pairwise for accuracy: the error grows with log n, not n.
// `start` is where each block's sum starts: +0 (a sum of -0s is +0, as LibTorch's sums), or -0 (the same sum, but
// -0 for terms that are all -0: only the sign of a zero differs, SEMANTICS §9.5).
template <class T>
T pairwise_sum(const T* p, int64_t n, int64_t stride = 1, T start = T(0)) {
  constexpr int64_t kBlock = 32;
  if (n <= kBlock) {
    T s = start;
    for (int64_t i = 0; i < n; ++i) s += p[i * stride];
    return s;
  }
  int64_t half = n / 2;
  return pairwise_sum(p, half, stride, start) + pairwise_sum(p + half * stride, n - half, stride, start);
}

}  // namespace lockstep::impl::ops::detail
