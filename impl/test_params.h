// Test helpers shared by the optimizer tests (impl/*_test.cc): a 1-D parameter and a grad set by hand.
//
//   Tensor p = make_param({1, -2});      // float64, requires grad, grad undefined
//   set_grad(p, {0.5, 0.25});            // a fresh grad tensor shaped like p
#pragma once

#include <cstdint>
#include <vector>

#include "impl/tensor.h"

namespace lockstep::impl {

inline Tensor make_param(std::vector<double> values, DType dtype = DType::Float64) {
  Tensor t = Tensor::from_values(dtype, {static_cast<int64_t>(values.size())}, values);
  t.set_requires_grad(true);
  return t;
}

inline void set_grad(Tensor& p, std::vector<double> values) {
  p.set_grad(Tensor::from_values(p.dtype(), p.shape(), values));
}

}  // namespace lockstep::impl
