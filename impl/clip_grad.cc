// impl/clip_grad.cc: SEMANTICS §18, step by step.
#include "impl/clip_grad.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "impl/error.h"

namespace lockstep::impl {
namespace {

// x rounded to `dtype` (float32 values are held as double in the arithmetic below).
double round_to(DType dtype, double x) { return dtype == DType::Float32 ? static_cast<double>(static_cast<float>(x)) : x; }

// The norm_type-norm of `values` in `dtype` (SEM-18.1): 1: sum |x|; 2: sqrt(sum x^2); +inf: max |x|. NaN anywhere
// gives NaN. Each square rounds to the dtype (a float32 element of 1e-23 adds 0, one of 1e20 makes the norm inf); the
// sum is kept in double and rounded once, as are the root and the result.
// With NormSquares::InDtypeButOneElementExact (2.x) the norm of one element is its absolute value.
double norm_of(const std::vector<double>& values, double norm_type, DType dtype, NormSquares squares) {
  if (squares == NormSquares::InDtypeButOneElementExact && values.size() == 1) return std::fabs(values[0]);
  double acc = 0;
  for (double x : values) {
    if (std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
    const double a = std::fabs(x);
    if (norm_type == 1) acc += a;
    else if (norm_type == 2) acc += round_to(dtype, a * a);
    else acc = std::max(acc, a);
  }
  acc = round_to(dtype, acc);
  return round_to(dtype, norm_type == 2 ? std::sqrt(acc) : acc);
}

// The grads clipping reads: every defined one, in the order given (a parameter given twice: twice).
std::vector<Tensor> defined_grads(const std::vector<Tensor>& params) {
  std::vector<Tensor> grads;
  for (const Tensor& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  return grads;
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type, bool error_if_nonfinite,
                       NormSquares squares) {
  const std::vector<Tensor> grads = defined_grads(params);
  if (grads.empty()) return Tensor::scalar(DType::Float32, 0);  // SEM-18.1: no defined grad, 0

  // Each grad's norm in its own dtype, then the total: the norm of the norms, in float64 when any grad is float64.
  DType total_dtype = DType::Float32;
  std::vector<double> norms;
  for (const Tensor& g : grads) {
    norms.push_back(norm_of(g.to_values(), norm_type, g.dtype(), squares));
    if (g.dtype() == DType::Float64) total_dtype = DType::Float64;
  }
  const double total = norm_of(norms, norm_type, total_dtype, squares);

  // SEM-18.3: a non-finite total fails before anything changes, if asked.
  if (error_if_nonfinite && !std::isfinite(total))
    throw Error(ErrorKind::NonfiniteNorm, "The total norm of order " + std::to_string(norm_type) +
                                              " for gradients from `parameters` is non-finite, so it cannot be clipped.");

  // SEM-18.2: coefficient max_norm / (total + 1e-6) in the total's dtype, at most 1 (NaN stays NaN).
  const double denominator = round_to(total_dtype, total + round_to(total_dtype, 1e-6));
  double coefficient = round_to(total_dtype, round_to(total_dtype, max_norm) / denominator);
  if (coefficient > 1) coefficient = 1;

  // Every counted grad times the coefficient (in the grad's dtype), in place; no version bump (the C++ API).
  for (Tensor g : grads) {
    const double c = round_to(g.dtype(), coefficient);
    for (int64_t i = 0; i < g.numel(); ++i) g.set_at(i, g.at(i) * c);
  }
  return Tensor::scalar(total_dtype, total);
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  for (Tensor g : defined_grads(params)) {
    const double high = round_to(g.dtype(), clip_value);
    const double low = round_to(g.dtype(), -clip_value);
    for (int64_t i = 0; i < g.numel(); ++i) {
      const double x = g.at(i);
      if (std::isnan(x)) continue;  // SEM-18.5: NaN stays NaN, and a NaN bound makes every number NaN
      g.set_at(i, std::isnan(clip_value) ? clip_value : std::min(std::max(x, low), high));
    }
  }
}

}  // namespace lockstep::impl
