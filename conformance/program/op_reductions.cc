// The reductions to a 0-d result (SEMANTICS §2): sum, mean, mse_loss and cross_entropy. Each gives its value, its
// scale B (tolerance.h) and its backward, signed and as the scales' magnitudes.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "conformance/program/op_descriptions.h"

namespace lockstep {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int64_t operand_numel(const OpCall& c) { return static_cast<int64_t>(c.arg(0).v.size()); }

// sum and mean: one value from every element; mean divides by the count (at least 1).
OpDescription sum_or_mean(Op op, const char* name) {
  const bool mean = op == Op::Mean;
  auto divisor = [mean](const EvalNode& a) {
    return mean ? std::max<double>(1, static_cast<double>(a.v.size())) : 1.0;
  };
  OpDescription d = op_entry(op, name, 1, 1);
  d.result_shape = [](const Expr&, const std::vector<TypedShape>&, const std::string&) { return Shape{}; };
  d.forward = [divisor](OpCall& c) {
    const EvalNode& a = c.arg(0);
    double v = 0;
    for (double x : a.v) v += x;
    c.out.shape = {};
    c.out.v = {v / divisor(a)};
  };
  d.forward_scale = [divisor](OpCall& c) {
    const EvalNode& a = c.arg(0);
    double b = 0;
    for (double x : a.b) b += x;
    c.out.b = {std::max(std::fabs(c.out.v[0]), b / divisor(a))};
  };
  d.backward = [divisor](OpCall& c) {
    EvalNode& a = c.arg(0);
    const double scale = 1 / divisor(a);
    for (double& x : a.s) x += c.out.s[0] * scale;
  };
  d.backward_scale = d.backward;
  d.reduction_length = operand_numel;
  return d;
}

// mse_loss(a, b) = mean((a - b)^2); the variant divides by the rows squared instead (formula_variants.h).
double mse_divisor(const EvalNode& a, bool rows_squared) {
  if (!rows_squared) return static_cast<double>(a.v.size());
  const double rows = a.shape.size() < 2 ? 1.0 : static_cast<double>(a.shape[0]);
  return rows * rows;
}

OpStep mse_forward(bool rows_squared) {
  return [rows_squared](OpCall& c) {
    const EvalNode& a = c.arg(0);
    const EvalNode& t = c.arg(1);
    if (a.v.size() != t.v.size() || a.v.empty()) throw CannotEvaluate{};
    double v = 0;
    for (size_t i = 0; i < a.v.size(); ++i) v += (a.v[i] - t.v[i]) * (a.v[i] - t.v[i]);
    c.out.shape = {};
    c.out.v = {v / mse_divisor(a, rows_squared)};
  };
}

OpStep mse_backward(bool rows_squared) {
  return [rows_squared](OpCall& c) {
    EvalNode& a = c.arg(0);
    EvalNode& t = c.arg(1);
    const double scale = 2 / mse_divisor(a, rows_squared);
    for (size_t j = 0; j < a.v.size(); ++j) {
      const double g = c.out.s[0] * scale * (a.v[j] - t.v[j]);
      a.s[j] += g;
      t.s[j] -= g;
    }
  };
}

OpDescription mse_loss() {
  OpDescription d = op_entry(Op::MseLoss, "mse_loss", 2, 2);
  d.result_shape = [](const Expr&, const std::vector<TypedShape>& in, const std::string& path) -> Shape {
    if (in[0].shape != in[1].shape)
      throw ProgramError(path, "mse_loss: operand shapes differ (" + shape_string(in[0].shape) + " vs " +
                                   shape_string(in[1].shape) + ")");
    return {};
  };
  d.forward = mse_forward(false);
  d.forward_scale = [](OpCall& c) {
    const EvalNode& a = c.arg(0);
    const EvalNode& t = c.arg(1);
    double v = 0, b = 0;
    for (size_t i = 0; i < a.v.size(); ++i) {
      const double diff = a.v[i] - t.v[i];
      const double bd = a.b[i] + t.b[i];
      v += diff * diff;
      b += std::max(bd * bd, diff * diff + 2 * std::fabs(diff) * bd);  // as square: d^2 + |2d| * B(d)
    }
    c.out.b = {std::max(v, b) / static_cast<double>(a.v.size())};
  };
  d.backward = mse_backward(false);
  d.backward_scale = [](OpCall& c) {
    EvalNode& a = c.arg(0);
    EvalNode& t = c.arg(1);
    const double scale = 2 / static_cast<double>(a.v.size());
    for (size_t j = 0; j < a.v.size(); ++j) {
      const double g = c.out.s[0] * scale * (a.b[j] + t.b[j]);
      a.s[j] += g;
      t.s[j] += g;
    }
  };
  d.reduction_length = operand_numel;
  OpFormulaVariant v;
  v.name = "mse_loss.divided_by_rows_squared";
  v.applies_to = "forward outputs, backward grads and the handles holding them";
  v.description = "mse_loss(a, b) = sum((a - b)^2) / B^2, B = the product of all but the last dimension: js-pytorch's "
                  "nn.MSELoss";
  v.forward = mse_forward(true);
  v.backward = mse_backward(true);
  d.variants.push_back(std::move(v));
  return d;
}

// cross_entropy(x, t) = mean_i (log sum_j exp(x_ij) - x_{i,t_i}), the row's max subtracted first (SEMANTICS §2.11).
struct SoftmaxRow {
  double max = -kInf;
  double z = 0;  // sum_j exp(x_ij - max)
};
SoftmaxRow softmax_row(const EvalNode& x, int64_t i, int64_t classes) {
  SoftmaxRow r;
  for (int64_t j = 0; j < classes; ++j) r.max = std::max(r.max, x.v[i * classes + j]);
  for (int64_t j = 0; j < classes; ++j) r.z += std::exp(x.v[i * classes + j] - r.max);
  return r;
}

OpDescription cross_entropy() {
  OpDescription d = op_entry(Op::CrossEntropy, "cross_entropy", 1, 1, OpExtra::Indices, "targets");
  d.exponentiates = true;
  d.repeated_index_cell = true;
  d.result_shape = [](const Expr& e, const std::vector<TypedShape>& in, const std::string& path) -> Shape {
    if (in[0].shape.size() != 2)
      throw ProgramError(path, "cross_entropy: the logits must have rank 2, got " +
                                   typed_string(in[0]));
    const int64_t n = in[0].shape[0], c = in[0].shape[1];
    if (static_cast<int64_t>(e.indices.size()) != n)
      throw ProgramError(path + "/targets", "cross_entropy: logits " + shape_string(in[0].shape) + " need " +
                                                std::to_string(n) + " targets, got " +
                                                std::to_string(e.indices.size()));
    for (size_t i = 0; i < e.indices.size(); ++i)
      if (e.indices[i] < 0 || e.indices[i] >= c)
        throw ProgramError(path + "/targets/" + std::to_string(i), "cross_entropy: target " +
                                                                      std::to_string(e.indices[i]) +
                                                                      " is not a class in [0, " + std::to_string(c) + ")");
    return {};
  };
  d.forward = [](OpCall& c) {
    const EvalNode& x = c.arg(0);
    const std::vector<int64_t>& targets = c.expr.indices;
    if (x.shape.size() != 2 || static_cast<int64_t>(targets.size()) != x.shape[0] || x.shape[0] == 0)
      throw CannotEvaluate{};
    const int64_t rows = x.shape[0], classes = x.shape[1];
    double v = 0;
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t t = targets[i];
      if (t < 0 || t >= classes) throw CannotEvaluate{};
      const SoftmaxRow r = softmax_row(x, i, classes);
      v += r.max + std::log(r.z) - x.v[i * classes + t];
    }
    c.out.shape = {};
    c.out.v = {v / static_cast<double>(rows)};
  };
  // loss_i = log z_i - (x[i, t_i] - mx_i): the max is subtracted first, so the local rounding is that of the shifted
  // logit and of log z (each exp term's relative error adds up to about `classes` ulps of 1), not of the raw logits:
  // B_i = |x_it - mx_i| + |log z_i| + classes. Raw magnitudes (|lse| + |x_it|) would let a wrong loss of 10^12 pass as
  // rounding when logits reach 2^60 (found by the wrong-driver battery on op-cross-entropy-large-f32).
  d.forward_scale = [](OpCall& c) {
    const EvalNode& x = c.arg(0);
    const bool computed_logits = c.expr.args[0]->op != Op::Param && c.expr.args[0]->op != Op::Const;
    const int64_t rows = x.shape[0], classes = x.shape[1];
    double b = 0;
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t t = c.expr.indices[i];
      const SoftmaxRow r = softmax_row(x, i, classes);
      const double lse = r.max + std::log(r.z);
      // Errors of computed logits propagate (bounded by softmax_j B_j + B_t, which stays sound when the softmax
      // saturates); logits that are parameters or constants are inputs, exact on both sides; a one-class row is
      // exactly 0 whatever its logits.
      double spread = 0;
      if (classes > 1 && computed_logits) {
        // A -inf logit's softmax is exactly 0 and carries no rounding: only finite scales count.
        for (int64_t j = 0; j < classes; ++j)
          if (std::isfinite(x.b[i * classes + j])) spread += std::exp(x.v[i * classes + j] - lse) * x.b[i * classes + j];
        spread += x.b[i * classes + t];
      }
      b += std::fabs(x.v[i * classes + t] - r.max) + std::fabs(std::log(r.z)) + static_cast<double>(classes) + spread;
    }
    c.out.b = {b / static_cast<double>(rows)};
  };
  d.backward = [](OpCall& c) {
    EvalNode& x = c.arg(0);
    const int64_t rows = x.shape[0], classes = x.shape[1];
    for (int64_t i = 0; i < rows; ++i) {
      const SoftmaxRow r = softmax_row(x, i, classes);
      for (int64_t j = 0; j < classes; ++j) {
        const double softmax = std::exp(x.v[i * classes + j] - r.max) / r.z;
        const double target = j == c.expr.indices[i] ? 1.0 : 0.0;
        x.s[i * classes + j] += c.out.s[0] * (softmax - target) / static_cast<double>(rows);
      }
    }
  };
  d.backward_scale = [](OpCall& c) {
    EvalNode& x = c.arg(0);
    const int64_t rows = x.shape[0], classes = x.shape[1];
    for (int64_t i = 0; i < rows; ++i) {
      const SoftmaxRow r = softmax_row(x, i, classes);
      // An infinite logit's own scale is infinite, but its softmax is exactly 0 or 1 (or NaN): it carries no
      // rounding into the other classes' gradients, so only finite scales count.
      double bmax = 0;
      for (int64_t j = 0; j < classes; ++j)
        if (std::isfinite(x.b[i * classes + j])) bmax = std::max(bmax, x.b[i * classes + j]);
      for (int64_t j = 0; j < classes; ++j) {
        const double softmax = std::exp(x.v[i * classes + j] - r.max) / r.z;
        const double target = j == c.expr.indices[i] ? 1.0 : 0.0;
        x.s[i * classes + j] += c.out.s[0] * (softmax * (1 + 2 * bmax) + target) / static_cast<double>(rows);
      }
    }
  };
  d.reduction_length = [](const OpCall& c) { return std::max(c.arg(0).shape[0], c.arg(0).shape[1]); };
  return d;
}

}  // namespace

std::vector<OpDescription> reduction_op_descriptions() {
  std::vector<OpDescription> ops;
  ops.push_back(sum_or_mean(Op::Sum, "sum"));
  ops.push_back(sum_or_mean(Op::Mean, "mean"));
  ops.push_back(mse_loss());
  ops.push_back(cross_entropy());
  return ops;
}

}  // namespace lockstep
