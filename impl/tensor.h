// impl/tensor.h: the clean-room tensor with reference semantics (SEMANTICS §1).
//
// A Tensor is a handle to a shared TensorImpl (shape, dtype, storage, autograd slots). Copying a handle
// aliases: both see every in-place change, and is_same() tells whether two handles share the impl
// (SEM-1.1). In-place operations (zero_, detach_, the optimizers' updates) change the impl; out-of-place
// operations (ops.h) make a new one (SEM-1.2).
//
// Standard library only: no torch header is reachable from impl/.
//
// Example:
//   Tensor w = Tensor::from_values(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
//   w.set_requires_grad(true);           // a parameter: a leaf that requires grad (SEM-2.1)
//   Tensor alias = w;                    // same tensor
//   w.zero_();                           // alias sees zeros
//   float* p = w.data<float>();          // w is (2,3), row-major
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lockstep::impl {

enum class DType { Float32, Float64 };

using Shape = std::vector<int64_t>;  // {} is a 0-d scalar

int64_t shape_numel(const Shape& s);  // 1 for {}
std::string shape_string(const Shape& s);

struct Node;  // autograd.h: a recorded operation of the graph

// The element buffer. Usually one tensor owns it; Tensor::share_storage() makes a second tensor (another
// identity) on the same buffer, so an in-place change through either is seen by both (black-box, LibTorch
// 1.13: two parameters' grads can end up on one storage, see ops::sum and SEM-3.1).
struct Storage {
  std::vector<float> f32;   // the elements when dtype == Float32
  std::vector<double> f64;  // the elements when dtype == Float64
};

struct TensorImpl {
  DType dtype = DType::Float32;
  Shape shape;
  std::shared_ptr<Storage> storage = std::make_shared<Storage>();  // never null

  // Autograd slots (SEMANTICS §2, §3).
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;            // null for leaves and for results made under no_grad
  std::shared_ptr<TensorImpl> grad;         // a leaf's accumulated gradient; null = undefined (SEM-2.1)

  // The version counter: bumped by every in-place change a program makes (zero_, accumulation into a grad,
  // an Adam/AdamW update of p); a node records it for each tensor it saves and backward fails when it has
  // moved (autograd.h, kInplaceModified). Writes that are not program actions (the lockstep harness
  // re-synchronising values, set_at) do not bump it; nor does SGD's update (black-box, see sgd.cc).
  uint64_t version = 0;
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  static Tensor zeros(DType dtype, const Shape& shape);
  static Tensor from_values(DType dtype, const Shape& shape, const std::vector<double>& values);
  static Tensor scalar(DType dtype, double value);  // 0-d

  bool defined() const { return impl_ != nullptr; }
  DType dtype() const { return impl_->dtype; }
  const Shape& shape() const { return impl_->shape; }
  int64_t numel() const { return shape_numel(impl_->shape); }
  int64_t dim() const { return static_cast<int64_t>(impl_->shape.size()); }

  template <class T> T* data();              // T = float for Float32, double for Float64
  template <class T> const T* data() const;

  double at(int64_t i) const;                // element i (row-major), widened to double
  void set_at(int64_t i, double v);          // converts to the dtype
  std::vector<double> to_values() const;     // all elements, widened to double

  // Identity (SEM-1.1).
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  // Autograd slots.
  bool requires_grad() const { return impl_->requires_grad; }
  void set_requires_grad(bool r) { impl_->requires_grad = r; }
  const std::shared_ptr<Node>& grad_fn() const { return impl_->grad_fn; }
  bool is_leaf() const { return impl_->grad_fn == nullptr; }
  Tensor grad() const { return Tensor(impl_->grad); }  // undefined when the grad is
  void set_grad(const Tensor& g) { impl_->grad = g.impl_; }
  void reset_grad() { impl_->grad.reset(); }           // set_to_none (SEM-4.2)

  // Version counter (TensorImpl::version), shared by every alias.
  uint64_t version() const { return impl_->version; }
  void bump_version() { ++impl_->version; }

  // In place (SEM-1.2): every alias sees the change.
  void zero_();          // bumps the version
  void detach_();        // drops grad_fn and requires_grad (SEM-4.1)
  void copy_values_from(const Tensor& src);  // same shape and dtype; values only

  // Out of place: a new impl with the same values in a new storage, no autograd history.
  Tensor clone() const;

  // A new impl (a different tensor, SEM-1.1) on this tensor's storage: same dtype, shape and values, no
  // autograd history, version 0; in-place changes through either are seen by both.
  Tensor share_storage() const;
  bool shares_storage_with(const Tensor& other) const { return impl_->storage == other.impl_->storage; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

template <> inline float* Tensor::data<float>() { return impl_->storage->f32.data(); }
template <> inline double* Tensor::data<double>() { return impl_->storage->f64.data(); }
template <> inline const float* Tensor::data<float>() const { return impl_->storage->f32.data(); }
template <> inline const double* Tensor::data<double>() const { return impl_->storage->f64.data(); }

// Calls f(T{}) with T = float or double according to dtype: one body serves both dtypes.
template <class F>
decltype(auto) dispatch_dtype(DType dtype, F&& f) {
  if (dtype == DType::Float32) return f(float{});
  return f(double{});
}

}  // namespace lockstep::impl
