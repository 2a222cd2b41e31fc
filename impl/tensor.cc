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
  if (dtype == DType::Float32) impl->storage->f32.assign(shape_numel(shape), 0.0f);
  else impl->storage->f64.assign(shape_numel(shape), 0.0);
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
  const Storage& s = *impl_->storage;
  return impl_->dtype == DType::Float32 ? static_cast<double>(s.f32[i]) : s.f64[i];
}

void Tensor::set_at(int64_t i, double v) {
  Storage& s = *impl_->storage;
  if (impl_->dtype == DType::Float32) s.f32[i] = static_cast<float>(v);
  else s.f64[i] = v;
}

std::vector<double> Tensor::to_values() const {
  std::vector<double> out(numel());
  for (int64_t i = 0; i < numel(); ++i) out[i] = at(i);
  return out;
}

void Tensor::zero_() {
  bump_version();
  Storage& s = *impl_->storage;
  if (impl_->dtype == DType::Float32) std::fill(s.f32.begin(), s.f32.end(), 0.0f);
  else std::fill(s.f64.begin(), s.f64.end(), 0.0);
}

void Tensor::detach_() {
  impl_->grad_fn.reset();
  impl_->requires_grad = false;
}

void Tensor::copy_values_from(const Tensor& src) {
  // Into the storage itself (not a new one), so a tensor sharing it sees the values too.
  if (impl_->storage == src.impl_->storage) return;
  impl_->storage->f32 = src.impl_->storage->f32;
  impl_->storage->f64 = src.impl_->storage->f64;
}

Tensor Tensor::clone() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = impl_->dtype;
  impl->shape = impl_->shape;
  impl->storage = std::make_shared<Storage>(*impl_->storage);  // a copy: a new storage
  return Tensor(std::move(impl));
}

Tensor Tensor::share_storage() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = impl_->dtype;
  impl->shape = impl_->shape;
  impl->storage = impl_->storage;
  return Tensor(std::move(impl));
}

}  // namespace lockstep::impl
