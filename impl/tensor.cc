#include "impl/tensor.h"

#include <algorithm>
#include <stdexcept>

namespace lockstep::impl {

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

Tensor Tensor::zeros(DType dtype, const Shape& shape) {
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = dtype;
  impl->shape = shape;
  if (dtype == DType::Float32) impl->f32.assign(shape_numel(shape), 0.0f);
  else impl->f64.assign(shape_numel(shape), 0.0);
  return Tensor(std::move(impl));
}

Tensor Tensor::from_values(DType dtype, const Shape& shape, const std::vector<double>& values) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    throw std::invalid_argument("from_values: " + std::to_string(values.size()) + " values for shape " +
                                shape_string(shape));
  Tensor t = zeros(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) t.set_at(static_cast<int64_t>(i), values[i]);
  return t;
}

Tensor Tensor::scalar(DType dtype, double value) { return from_values(dtype, {}, {value}); }

double Tensor::at(int64_t i) const {
  return impl_->dtype == DType::Float32 ? static_cast<double>(impl_->f32[i]) : impl_->f64[i];
}

void Tensor::set_at(int64_t i, double v) {
  if (impl_->dtype == DType::Float32) impl_->f32[i] = static_cast<float>(v);
  else impl_->f64[i] = v;
}

std::vector<double> Tensor::to_values() const {
  std::vector<double> out(numel());
  for (int64_t i = 0; i < numel(); ++i) out[i] = at(i);
  return out;
}

void Tensor::zero_() {
  bump_version();
  if (impl_->dtype == DType::Float32) std::fill(impl_->f32.begin(), impl_->f32.end(), 0.0f);
  else std::fill(impl_->f64.begin(), impl_->f64.end(), 0.0);
}

void Tensor::detach_() {
  impl_->grad_fn.reset();
  impl_->requires_grad = false;
}

void Tensor::copy_values_from(const Tensor& src) {
  impl_->f32 = src.impl_->f32;
  impl_->f64 = src.impl_->f64;
}

Tensor Tensor::clone() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = impl_->dtype;
  impl->shape = impl_->shape;
  impl->f32 = impl_->f32;
  impl->f64 = impl_->f64;
  return Tensor(std::move(impl));
}

}  // namespace lockstep::impl
