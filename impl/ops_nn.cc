// Neural-network ops: forward and backward side by side (see ops.h). matmul, mse_loss, log_softmax,
// linear and embedding save tensors (SEM-2.5), so a second backward through them without retain_graph fails;
// except linear when only its bias requires grad (black-box: it then saves nothing).
#include <cmath>

#include "impl/ops.h"
#include "impl/ops_internal.h"

namespace lockstep::impl::ops {

using detail::pairwise_sum;

namespace {

void check_indices(const char* op, const std::vector<int64_t>& indices, int64_t bound) {
  for (int64_t i : indices) {
    if (i < 0 || i >= bound)
      detail::fail(op, "index " + std::to_string(i) + " is out of range [0, " + std::to_string(bound) + ")");
  }
}

// out (L,dim) = w[rows[l], :] for each l; w is (num,dim).
Tensor gather_rows(const char* op, const Tensor& w, const std::vector<int64_t>& rows) {
  detail::require_dim(op, w, 2);
  const int64_t num = w.shape()[0], dim = w.shape()[1];
  check_indices(op, rows, num);
  const int64_t count = static_cast<int64_t>(rows.size());
  Tensor out = Tensor::zeros(w.dtype(), {count, dim});
  dispatch_dtype(w.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* src = w.data<T>();
    T* dst = out.data<T>();
    for (int64_t l = 0; l < count; ++l)
      for (int64_t d = 0; d < dim; ++d) dst[l * dim + d] = src[rows[l] * dim + d];
  });
  return out;
}

// out (n,m) = a (n,k) @ b (k,m), out zero-initialised: out[i][j] = sum_p a[i][p] b[p][j], p ascending (one
// rounding per product and per addition). The j loop is innermost so it vectorises without reordering sums.
template <class T>
void matmul_kernel(const T* a, const T* b, T* out, int64_t n, int64_t k, int64_t m) {
  for (int64_t i = 0; i < n; ++i) {
    T* row = out + i * m;
    for (int64_t p = 0; p < k; ++p) {
      const T aip = a[i * k + p];
      const T* brow = b + p * m;
      for (int64_t j = 0; j < m; ++j) row[j] += aip * brow[j];
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------

Tensor matmul(const Tensor& a, const Tensor& b) {
  detail::require_dim("matmul", a, 2);
  detail::require_dim("matmul", b, 2);
  detail::require_same_dtype("matmul", a, b);
  const int64_t n = a.shape()[0], k = a.shape()[1], m = b.shape()[1];
  if (b.shape()[0] != k)
    detail::fail("matmul", "shapes " + shape_string(a.shape()) + " and " + shape_string(b.shape()) +
                               " cannot be multiplied");
  // a is (n,k), b is (k,m); out is (n,m): out[i][j] = sum_p a[i][p] b[p][j], p ascending
  Tensor out = Tensor::zeros(a.dtype(), {n, m});
  dispatch_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    matmul_kernel(a.data<T>(), b.data<T>(), out.data<T>(), n, k, m);
  });
  // saved[0] = a, for b's grad; saved[1] = b, for a's grad (black-box: matmul(p, c) saves only c)
  std::vector<Tensor> saved{input_needs_grad(b) ? a : Tensor(), input_needs_grad(a) ? b : Tensor()};
  return record(out, "MmBackward", {a, b}, std::move(saved), true, [](const Node& self, const Tensor& g) {
    const Tensor& a = self.saved[0];
    const Tensor& b = self.saved[1];
    std::vector<Tensor> gr(2);
    if (self.needs_grad(0)) gr[0] = matmul(g, transpose(b));  // (n,m) @ (m,k) -> (n,k)
    if (self.needs_grad(1)) gr[1] = matmul(transpose(a), g);  // (k,n) @ (n,m) -> (k,m)
    return gr;
  });
}

Tensor mse_loss(const Tensor& a, const Tensor& b) {
  detail::require_defined("mse_loss", a);
  detail::require_defined("mse_loss", b);
  detail::require_same_dtype("mse_loss", a, b);
  if (a.shape() != b.shape())
    detail::fail("mse_loss", "shapes " + shape_string(a.shape()) + " and " + shape_string(b.shape()) + " differ");
  const int64_t n = a.numel();
  // out is () = sum_i (a_i - b_i)^2 / n
  Tensor out = Tensor::zeros(a.dtype(), {});
  dispatch_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = a.data<T>();
    const T* y = b.data<T>();
    std::vector<T> squares(n);
    for (int64_t i = 0; i < n; ++i) {
      const T d = x[i] - y[i];
      squares[i] = d * d;
    }
    out.data<T>()[0] = pairwise_sum(squares.data(), n) / static_cast<T>(n);
  });
  return record(out, "MseLossBackward", {a, b}, {a, b}, true, [n](const Node& self, const Tensor& g) {
    // d/da = 2 (a - b) g / n ; d/db = 2 (b - a) g / n, not -d/da: where a = b the sign of the zero is that of
    // b - a (SEMANTICS §9.5; LibTorch: a = b = 0 gives +0 to both).
    Tensor scale = div_scalar(mul_scalar(g, 2.0), static_cast<double>(n));  // ()
    std::vector<Tensor> gr(2);
    if (self.needs_grad(1)) gr[1] = mul(sub(self.saved[1], self.saved[0]), scale);
    if (self.needs_grad(0)) gr[0] = mul(sub(self.saved[0], self.saved[1]), scale);
    return gr;
  });
}

// ---------------------------------------------------------------------------------------------------------
// Cross entropy = nll_loss(log_softmax(logits)).

Tensor log_softmax(const Tensor& x) {
  detail::require_dim("log_softmax", x, 2);
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  // x is (N,C); out[i][j] = (x[i][j] - max_i) - log(sum_j exp(x[i][j] - max_i)): stable, exp never overflows
  Tensor out = Tensor::zeros(x.dtype(), x.shape());
  dispatch_dtype(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.data<T>();
    T* o = out.data<T>();
    std::vector<T> exps(cols);
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = in + r * cols;
      T max = cols > 0 ? row[0] : T(0);
      for (int64_t c = 1; c < cols; ++c)
        if (row[c] > max || std::isnan(row[c])) max = row[c];
      for (int64_t c = 0; c < cols; ++c) exps[c] = std::exp(row[c] - max);
      const T log_sum = std::log(pairwise_sum(exps.data(), cols));
      for (int64_t c = 0; c < cols; ++c) o[r * cols + c] = (row[c] - max) - log_sum;
    }
  });
  return record_saving_output(out, "LogSoftmaxBackward", {x}, [cols](const Node& self, const Tensor& g) {
    // dx = g - softmax(x) * rowsum(g), softmax = exp(the saved output)
    Tensor softmax = exp(saved_output(self));
    // A row of -0s sums to -0 here (LibTorch's, black-box), so dx = -0 - softmax * -0 = +0 (SEMANTICS §9.5)
    Tensor row_sums = expand_dim(sum_dim_of_signed_zeros(g, 1), 1, cols);  // (N,C)
    return std::vector<Tensor>{sub(g, mul(softmax, row_sums))};
  });
}

Tensor pick_per_row(const Tensor& x, const std::vector<int64_t>& columns) {
  detail::require_dim("pick_per_row", x, 2);
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  if (static_cast<int64_t>(columns.size()) != rows)
    detail::fail("pick_per_row", std::to_string(columns.size()) + " indices for " + std::to_string(rows) + " rows");
  check_indices("pick_per_row", columns, cols);
  // x is (N,C); out is (N): out[i] = x[i][columns[i]]
  Tensor out = Tensor::zeros(x.dtype(), {rows});
  dispatch_dtype(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    for (int64_t r = 0; r < rows; ++r) out.data<T>()[r] = x.data<T>()[r * cols + columns[r]];
  });
  return record(out, "PickPerRowBackward", {x}, {}, false, [columns, cols](const Node&, const Tensor& g) {
    return std::vector<Tensor>{place_per_row(g, columns, cols)};
  });
}

Tensor place_per_row(const Tensor& v, const std::vector<int64_t>& columns, int64_t num_columns) {
  detail::require_dim("place_per_row", v, 1);
  const int64_t rows = v.shape()[0];
  if (static_cast<int64_t>(columns.size()) != rows)
    detail::fail("place_per_row", std::to_string(columns.size()) + " indices for " + std::to_string(rows) + " rows");
  check_indices("place_per_row", columns, num_columns);
  // v is (N); out is (N,C): zeros, out[i][columns[i]] = v[i]
  Tensor out = Tensor::zeros(v.dtype(), {rows, num_columns});
  dispatch_dtype(v.dtype(), [&](auto zero) {
    using T = decltype(zero);
    for (int64_t r = 0; r < rows; ++r) out.data<T>()[r * num_columns + columns[r]] = v.data<T>()[r];
  });
  return record(out, "PlacePerRowBackward", {v}, {}, false, [columns](const Node&, const Tensor& g) {
    return std::vector<Tensor>{pick_per_row(g, columns)};
  });
}

Tensor nll_loss(const Tensor& log_probs, const std::vector<int64_t>& targets) {
  // (N,C) -> (): (1/N) sum_i -log_probs[i][targets[i]]; negated before the sum, which starts from +0, so that a
  // loss of zero is +0 (SEMANTICS §9.5)
  return mean(neg(pick_per_row(log_probs, targets)));
}

Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets) {
  return nll_loss(log_softmax(logits), targets);
}

// ---------------------------------------------------------------------------------------------------------

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  detail::require_dim("linear", x, 2);
  detail::require_dim("linear", w, 2);
  detail::require_same_dtype("linear", x, w);
  const int64_t batch = x.shape()[0], in = x.shape()[1], out_features = w.shape()[0];
  if (w.shape()[1] != in)
    detail::fail("linear", "input " + shape_string(x.shape()) + " and weight " + shape_string(w.shape()) + " do not fit");
  if (b.defined()) {
    detail::require_dim("linear", b, 1);
    detail::require_same_dtype("linear", x, b);
    if (b.shape()[0] != out_features)
      detail::fail("linear", "bias " + shape_string(b.shape()) + " does not fit weight " + shape_string(w.shape()));
  }
  // x is (N,in), w is (out,in), b is (out); out is (N,out): out[n][o] = (sum_k x[n][k] w[o][k]) + b[o]
  Tensor out = Tensor::zeros(x.dtype(), {batch, out_features});
  dispatch_dtype(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> w_t(in * out_features);  // W^T is (in,out)
    const T* ws = w.data<T>();
    for (int64_t f = 0; f < out_features; ++f)
      for (int64_t k = 0; k < in; ++k) w_t[k * out_features + f] = ws[f * in + k];
    T* o = out.data<T>();
    matmul_kernel(x.data<T>(), w_t.data(), o, batch, in, out_features);
    if (b.defined()) {
      const T* bs = b.data<T>();
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t f = 0; f < out_features; ++f) o[n * out_features + f] += bs[f];
    }
  });
  // saved[0] = x, for w's grad; saved[1] = w, for x's grad; the bias's grad needs neither. Black-box: with
  // only the bias requiring grad nothing is saved and a second backward succeeds.
  const bool need_x = input_needs_grad(x), need_w = input_needs_grad(w);
  std::vector<Tensor> saved{need_w ? x : Tensor(), need_x ? w : Tensor()};
  return record(out, "LinearBackward", {x, w, b}, std::move(saved), need_x || need_w,
                [](const Node& self, const Tensor& g) {
                  const Tensor& x = self.saved[0];
                  const Tensor& w = self.saved[1];
                  std::vector<Tensor> gr(3);
                  if (self.needs_grad(0)) gr[0] = matmul(g, w);             // (N,out) @ (out,in) -> (N,in)
                  if (self.needs_grad(1)) gr[1] = matmul(transpose(g), x);  // (out,N) @ (N,in) -> (out,in)
                  if (self.needs_grad(2)) gr[2] = sum_dim(g, 0);            // (out)
                  return gr;
                });
}

Tensor embedding(const Tensor& w, const std::vector<int64_t>& indices, bool saves_weight) {
  Tensor out = gather_rows("embedding", w, indices);
  const int64_t num = w.shape()[0];
  // Saves its indices (SEM-2.5, held by the backward below) and, as 1.13 does, its weight (black-box: a retained
  // graph through embedding(p) fails after an Adam step of p on 1.13, so the weight's version is checked; on 2.x it
  // does not fail: SEM-2.8, SEM-12.5).
  const std::vector<Tensor> saved = saves_weight ? std::vector<Tensor>{w} : std::vector<Tensor>{};
  return record(out, "EmbeddingBackward", {w}, saved, true, [indices, num](const Node&, const Tensor& g) {
    return std::vector<Tensor>{index_add_rows(g, indices, num)};  // repeated indices accumulate
  });
}

Tensor index_rows(const Tensor& w, const std::vector<int64_t>& rows) {
  Tensor out = gather_rows("index_rows", w, rows);
  const int64_t num = w.shape()[0];
  return record(out, "IndexRowsBackward", {w}, {}, false, [rows, num](const Node&, const Tensor& g) {
    return std::vector<Tensor>{index_add_rows(g, rows, num)};
  });
}

Tensor index_add_rows(const Tensor& g, const std::vector<int64_t>& rows, int64_t num_rows) {
  detail::require_dim("index_add_rows", g, 2);
  const int64_t count = g.shape()[0], dim = g.shape()[1];
  if (static_cast<int64_t>(rows.size()) != count)
    detail::fail("index_add_rows", std::to_string(rows.size()) + " indices for " + std::to_string(count) + " rows");
  check_indices("index_add_rows", rows, num_rows);
  // g is (L,dim); out is (num_rows,dim): zeros, out[rows[l]] += g[l] in order of l
  Tensor out = Tensor::zeros(g.dtype(), {num_rows, dim});
  dispatch_dtype(g.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* src = g.data<T>();
    T* dst = out.data<T>();
    for (int64_t l = 0; l < count; ++l)
      for (int64_t d = 0; d < dim; ++d) dst[rows[l] * dim + d] += src[l * dim + d];
  });
  return record(out, "IndexAddRowsBackward", {g}, {}, false, [rows](const Node&, const Tensor& gg) {
    return std::vector<Tensor>{index_rows(gg, rows)};
  });
}

}  // namespace lockstep::impl::ops
