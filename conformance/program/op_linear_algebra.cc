// The ops whose local derivative is the other operand (SEMANTICS §2): matmul, linear and embedding. Their backward
// is written once, with the operands standing in as their values (the signed gradient) or as their scales B (the
// scales' backward, tolerance.h).
#include <algorithm>
#include <utility>

#include "conformance/program/op_descriptions.h"

namespace lockstep {
namespace {

void expect_rank(const char* op, const TypedShape& t, size_t rank, const char* what, const std::string& path) {
  if (t.shape.size() != rank)
    throw ProgramError(path, std::string(op) + ": " + what + " must have rank " + std::to_string(rank) + ", got " +
                                 typed_string(t));
}

// (rows x inner) @ (inner x cols); transpose_right: right is (cols x inner).
void matmul(const std::vector<double>& l, const std::vector<double>& r, int64_t rows, int64_t inner, int64_t cols,
            bool transpose_right, std::vector<double>& out) {
  out.assign(static_cast<size_t>(rows * cols), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < inner; ++k) acc += l[i * inner + k] * (transpose_right ? r[j * inner + k] : r[k * cols + j]);
      out[i * cols + j] = acc;
    }
}

// The operand's values or its scales, as the backward's factor.
using Factor = std::vector<double> EvalNode::*;

// dA += G C^T, dC += A^T G.
void matmul_backward(OpCall& c, Factor factor) {
  EvalNode& a = c.arg(0);
  EvalNode& m = c.arg(1);
  const int64_t rows = a.shape[0], inner = a.shape[1], cols = m.shape[1];
  const std::vector<double>& a_factor = a.*factor;
  const std::vector<double>& m_factor = m.*factor;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const double g = c.out.s[i * cols + j];
      for (int64_t k = 0; k < inner; ++k) {
        a.s[i * inner + k] += g * m_factor[k * cols + j];
        m.s[k * cols + j] += g * a_factor[i * inner + k];
      }
    }
}

// x W^T + b: dx += G W, dW += G^T x, db += column sums of G.
void linear_backward(OpCall& c, Factor factor) {
  EvalNode& x = c.arg(0);
  EvalNode& w = c.arg(1);
  EvalNode* bias = c.operands.size() > 2 ? &c.arg(2) : nullptr;
  const int64_t rows = x.shape[0], inner = x.shape[1], cols = w.shape[0];
  const std::vector<double>& x_factor = x.*factor;
  const std::vector<double>& w_factor = w.*factor;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const double g = c.out.s[i * cols + j];
      for (int64_t k = 0; k < inner; ++k) {
        x.s[i * inner + k] += g * w_factor[j * inner + k];
        w.s[j * inner + k] += g * x_factor[i * inner + k];
      }
      if (bias) bias->s[j] += g;
    }
}

// Rows gathered forward; their gradients scattered back (repeated indices accumulate).
void embedding_backward(OpCall& c) {
  EvalNode& w = c.arg(0);
  const int64_t dim = w.shape[1];
  for (size_t l = 0; l < c.expr.indices.size(); ++l)
    for (int64_t j = 0; j < dim; ++j) w.s[c.expr.indices[l] * dim + j] += c.out.s[l * dim + j];
}

int64_t inner_or_outer(const OpCall& c) {
  return std::max({c.arg(0).shape[0], c.arg(0).shape[1], c.out.shape[1]});
}

OpDescription matmul_op() {
  OpDescription d = op_entry(Op::Matmul, "matmul", 2, 2);
  d.result_shape = [](const Expr&, const std::vector<TypedShape>& in, const std::string& path) -> Shape {
    expect_rank("matmul", in[0], 2, "the left operand", path);
    expect_rank("matmul", in[1], 2, "the right operand", path);
    if (in[0].shape[1] != in[1].shape[0])
      throw ProgramError(path, "matmul: inner dimensions differ (" + shape_string(in[0].shape) + " @ " +
                                   shape_string(in[1].shape) + ")");
    return {in[0].shape[0], in[1].shape[1]};
  };
  d.forward = [](OpCall& c) {
    const EvalNode& a = c.arg(0);
    const EvalNode& m = c.arg(1);
    if (a.shape.size() != 2 || m.shape.size() != 2 || a.shape[1] != m.shape[0]) throw CannotEvaluate{};
    c.out.shape = {a.shape[0], m.shape[1]};
    matmul(a.v, m.v, a.shape[0], a.shape[1], m.shape[1], false, c.out.v);
  };
  d.forward_scale = [](OpCall& c) {
    const EvalNode& a = c.arg(0);
    const EvalNode& m = c.arg(1);
    matmul(a.b, m.b, a.shape[0], a.shape[1], m.shape[1], false, c.out.b);
  };
  d.backward = [](OpCall& c) { matmul_backward(c, &EvalNode::v); };
  d.backward_scale = [](OpCall& c) { matmul_backward(c, &EvalNode::b); };
  d.reduction_length = inner_or_outer;
  return d;
}

OpDescription linear_op() {
  OpDescription d = op_entry(Op::Linear, "linear", 2, 3);  // the bias is optional
  d.result_shape = [](const Expr&, const std::vector<TypedShape>& in, const std::string& path) -> Shape {
    expect_rank("linear", in[0], 2, "the input x", path);
    expect_rank("linear", in[1], 2, "the weight W", path);
    if (in[0].shape[1] != in[1].shape[1])
      throw ProgramError(path, "linear: x " + shape_string(in[0].shape) + " and W " + shape_string(in[1].shape) +
                                   " need x (N,in) and W (out,in)");
    if (in.size() == 3 && in[2].shape != Shape{in[1].shape[0]})
      throw ProgramError(path, "linear: bias " + shape_string(in[2].shape) + " must have shape [" +
                                   std::to_string(in[1].shape[0]) + "]");
    return {in[0].shape[0], in[1].shape[0]};
  };
  // The bias (operand 2) is added to each row, for values and for scales alike.
  auto add_bias = [](OpCall& c, Factor field) {
    if (c.operands.size() <= 2) return;
    const std::vector<double>& bias = c.arg(2).*field;
    std::vector<double>& out = c.out.*field;
    const int64_t rows = c.out.shape[0], cols = c.out.shape[1];
    if (static_cast<int64_t>(bias.size()) != cols) throw CannotEvaluate{};
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) out[i * cols + j] += bias[j];
  };
  d.forward = [add_bias](OpCall& c) {
    const EvalNode& x = c.arg(0);
    const EvalNode& w = c.arg(1);
    if (x.shape.size() != 2 || w.shape.size() != 2 || x.shape[1] != w.shape[1]) throw CannotEvaluate{};
    c.out.shape = {x.shape[0], w.shape[0]};
    matmul(x.v, w.v, x.shape[0], x.shape[1], w.shape[0], true, c.out.v);
    add_bias(c, &EvalNode::v);
  };
  d.forward_scale = [add_bias](OpCall& c) {
    const EvalNode& x = c.arg(0);
    const EvalNode& w = c.arg(1);
    matmul(x.b, w.b, x.shape[0], x.shape[1], w.shape[0], true, c.out.b);
    add_bias(c, &EvalNode::b);
  };
  d.backward = [](OpCall& c) { linear_backward(c, &EvalNode::v); };
  d.backward_scale = [](OpCall& c) { linear_backward(c, &EvalNode::b); };
  d.reduction_length = inner_or_outer;
  return d;
}

OpDescription embedding_op() {
  OpDescription d = op_entry(Op::Embedding, "embedding", 1, 1, OpExtra::Indices, "indices");
  d.repeated_index_cell = true;
  d.result_shape = [](const Expr& e, const std::vector<TypedShape>& in, const std::string& path) -> Shape {
    expect_rank("embedding", in[0], 2, "the weight W", path);
    const int64_t rows = in[0].shape[0];
    for (size_t i = 0; i < e.indices.size(); ++i)
      if (e.indices[i] < 0 || e.indices[i] >= rows)
        throw ProgramError(path + "/indices/" + std::to_string(i), "embedding: index " + std::to_string(e.indices[i]) +
                                                                       " is not a row in [0, " + std::to_string(rows) + ")");
    return {static_cast<int64_t>(e.indices.size()), in[0].shape[1]};
  };
  // The rows of the weight's values, or of its scales.
  auto gather = [](OpCall& c, Factor field) {
    const EvalNode& w = c.arg(0);
    if (w.shape.size() != 2) throw CannotEvaluate{};
    const int64_t rows = w.shape[0], dim = w.shape[1];
    std::vector<double>& out = c.out.*field;
    out.clear();
    for (int64_t index : c.expr.indices) {
      if (index < 0 || index >= rows) throw CannotEvaluate{};
      for (int64_t j = 0; j < dim; ++j) out.push_back((w.*field)[index * dim + j]);
    }
  };
  d.forward = [gather](OpCall& c) {
    c.out.shape = {static_cast<int64_t>(c.expr.indices.size()), c.arg(0).shape.size() == 2 ? c.arg(0).shape[1] : 0};
    gather(c, &EvalNode::v);
  };
  d.forward_scale = [gather](OpCall& c) { gather(c, &EvalNode::b); };
  d.backward = embedding_backward;
  d.backward_scale = embedding_backward;
  d.reduction_length = [](const OpCall& c) { return static_cast<int64_t>(c.expr.indices.size()); };
  return d;
}

}  // namespace

std::vector<OpDescription> linear_algebra_op_descriptions() {
  std::vector<OpDescription> ops;
  ops.push_back(matmul_op());
  ops.push_back(linear_op());
  ops.push_back(embedding_op());
  return ops;
}

}  // namespace lockstep
