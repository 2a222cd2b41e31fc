// impl/clip_grad.h: gradient clipping between backward and step (SEMANTICS §18), torch::nn::utils' clip_grad_norm_
// and clip_grad_value_.
//
// Both work in place on the grads of the parameters they are given, in the order given: an undefined grad is skipped
// (neither counted nor created, SEM-18.1); a parameter given twice, or two parameters whose grads share storage
// (SEM-3.7), has its grad counted and changed twice (SEM-18.4). Neither validates its numbers (SEM-18.2, 18.5), and
// neither moves a grad's version counter (the C++ API with grads of one dtype, SEM-18.2; where LibTorch's does, no
// program observes it: no graph a program backpropagates through again saves a grad).
//
// Example:
//   Tensor total = clip_grad_norm_({w, b}, /*max_norm=*/1.0, /*norm_type=*/2.0);   // 0-d, float32 for float32 grads
//   clip_grad_value_({w}, 0.5);                                                      // w.grad in [-0.5, 0.5]
#pragma once

#include <vector>

#include "impl/tensor.h"

namespace lockstep::impl {

// How a 2-norm is computed (SEM-18.1): each element squared in the tensor's dtype (a float32 element of 1e20 makes the
// norm inf, one of 1e-23 adds nothing), in both versions; but 2.x takes the norm of a one-element tensor as its
// absolute value (the norm of [1e20] is 1e20, of [1e-310] 1e-310, while [1e20, 1] gives inf as in 1.x).
enum class NormSquares { InDtype, InDtypeButOneElementExact };

// Scales every counted grad by min(1, max_norm / (total + 1e-6)) and returns the total norm (SEM-18.1, 18.2): the
// norm_type-norm (1, 2 or +inf) of the grads' norms, a 0-d tensor, float64 when a counted grad is float64, else
// float32; 0 when no grad is defined. With error_if_nonfinite a total of inf or NaN throws Error(NonfiniteNorm) and
// leaves the grads as they are (SEM-18.3).
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false, NormSquares squares = NormSquares::InDtype);

// Clamps every defined grad to [-clip_value, clip_value] (SEM-18.5): max with -clip_value first, then min with
// clip_value, so a negative clip_value sets every number to clip_value; NaN stays NaN, and a NaN clip_value makes
// every number NaN.
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

}  // namespace lockstep::impl
