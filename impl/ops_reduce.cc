// Reductions and shape changes: forward and backward side by side (see ops.h). SEM-2.5: sum and mean save
// nothing. Each op here is the backward of another (sum <-> expand, sum_dim <-> expand_dim, transpose).
#include "impl/ops.h"
#include "impl/ops_internal.h"

namespace lockstep::impl::ops {

using detail::pairwise_sum;

namespace {
// A new tensor on g's storage (Tensor::share_storage), recorded as a pass-through when grad mode is on.
Tensor storage_alias(const Tensor& g) {
  return record(g.share_storage(), "AliasBackward", {g}, {}, false,
                [](const Node&, const Tensor& gg) { return std::vector<Tensor>{gg}; });
}
}  // namespace

Tensor sum(const Tensor& a) {
  detail::require_defined("sum", a);
  // out is () = sum of every element of a
  Tensor out = Tensor::zeros(a.dtype(), {});
  dispatch_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    out.data<T>()[0] = pairwise_sum(a.data<T>(), a.numel());
  });
  return record(out, "SumBackward", {a}, {}, false, [shape = a.shape()](const Node&, const Tensor& g) {
    // Black-box (LibTorch 1.13): over a 0-d input the grad passed on is a new tensor on the incoming
    // grad's storage, and the leaf that receives it takes it over (SEM-3.1, nobody else holds it). So
    // add(sum(p0), sum(p1)) with 0-d p0, p1 leaves p0.grad and p1.grad two tensors on ONE storage: each
    // in-place accumulation of a later backward (SEM-3.2) is seen by both (grads 3 and 3 after two
    // backwards, not 2 and 2). Not over shape [1] or [1,1], nor for mean: there the grad is a new storage.
    if (shape.empty()) return std::vector<Tensor>{storage_alias(g)};
    return std::vector<Tensor>{expand(g, shape)};  // every element contributed once
  });
}

Tensor mean(const Tensor& a) {
  detail::require_defined("mean", a);
  const int64_t n = a.numel();
  // out is () = sum / n, the division in a's dtype (SEM-1.3)
  Tensor out = Tensor::zeros(a.dtype(), {});
  dispatch_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    out.data<T>()[0] = pairwise_sum(a.data<T>(), n) / static_cast<T>(n);
  });
  return record(out, "MeanBackward", {a}, {}, false, [shape = a.shape(), n](const Node&, const Tensor& g) {
    return std::vector<Tensor>{expand(div_scalar(g, static_cast<double>(n)), shape)};  // g / n everywhere
  });
}

Tensor expand(const Tensor& scalar, const Shape& shape) {
  detail::require_dim("expand", scalar, 0);
  // out is `shape`, every element = scalar
  Tensor out = Tensor::zeros(scalar.dtype(), shape);
  dispatch_dtype(scalar.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T v = scalar.data<T>()[0];
    T* o = out.data<T>();
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  });
  return record(out, "ExpandBackward", {scalar}, {}, false,
                [](const Node&, const Tensor& g) { return std::vector<Tensor>{sum_to(g, {})}; });
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  detail::require_defined("sum_to", grad);
  if (grad.shape() == shape) return grad;
  if (shape.empty()) return sum(grad);  // the grad of a broadcast 0-d operand
  detail::fail("sum_to", "cannot reduce shape " + shape_string(grad.shape()) + " to " + shape_string(shape));
}

namespace {
Tensor sum_dim_from(const Tensor& a, int dim, bool negative_zero_start) {
  detail::require_dim("sum_dim", a, 2);
  if (dim != 0 && dim != 1) detail::fail("sum_dim", "dim must be 0 or 1");
  const int64_t rows = a.shape()[0], cols = a.shape()[1];
  // a is (R,C); out is (C) summing over rows (dim 0) or (R) summing each row (dim 1)
  Tensor out = Tensor::zeros(a.dtype(), {dim == 0 ? cols : rows});
  dispatch_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = a.data<T>();
    T* o = out.data<T>();
    const T start = negative_zero_start ? T(-0.0) : T(0);
    if (dim == 0) {
      for (int64_t c = 0; c < cols; ++c) o[c] = pairwise_sum(x + c, rows, cols, start);
    } else {
      for (int64_t r = 0; r < rows; ++r) o[r] = pairwise_sum(x + r * cols, cols, int64_t{1}, start);
    }
  });
  const int64_t removed = dim == 0 ? rows : cols;
  return record(out, "SumDimBackward", {a}, {}, false, [dim, removed](const Node&, const Tensor& g) {
    return std::vector<Tensor>{expand_dim(g, dim, removed)};
  });
}
}  // namespace

Tensor sum_dim(const Tensor& a, int dim) { return sum_dim_from(a, dim, false); }
Tensor sum_dim_of_signed_zeros(const Tensor& a, int dim) { return sum_dim_from(a, dim, true); }

Tensor expand_dim(const Tensor& v, int dim, int64_t size) {
  detail::require_dim("expand_dim", v, 1);
  if (dim != 0 && dim != 1) detail::fail("expand_dim", "dim must be 0 or 1");
  if (size < 0) detail::fail("expand_dim", "negative size");
  const int64_t len = v.shape()[0];
  // v is (C) -> out (size,C), every row = v (dim 0); or v is (R) -> out (R,size), row r all v[r] (dim 1)
  Tensor out = Tensor::zeros(v.dtype(), dim == 0 ? Shape{size, len} : Shape{len, size});
  dispatch_dtype(v.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = v.data<T>();
    T* o = out.data<T>();
    if (dim == 0) {
      for (int64_t r = 0; r < size; ++r)
        for (int64_t c = 0; c < len; ++c) o[r * len + c] = x[c];
    } else {
      for (int64_t r = 0; r < len; ++r)
        for (int64_t c = 0; c < size; ++c) o[r * size + c] = x[r];
    }
  });
  return record(out, "ExpandDimBackward", {v}, {}, false,
                [dim](const Node&, const Tensor& g) { return std::vector<Tensor>{sum_dim(g, dim)}; });
}

Tensor transpose(const Tensor& a) {
  detail::require_dim("transpose", a, 2);
  const int64_t rows = a.shape()[0], cols = a.shape()[1];
  // a is (R,C); out is (C,R)
  Tensor out = Tensor::zeros(a.dtype(), {cols, rows});
  dispatch_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = a.data<T>();
    T* o = out.data<T>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) o[c * rows + r] = x[r * cols + c];
  });
  return record(out, "TransposeBackward", {a}, {}, false,
                [](const Node&, const Tensor& g) { return std::vector<Tensor>{transpose(g)}; });
}

}  // namespace lockstep::impl::ops
