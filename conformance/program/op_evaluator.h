// The one evaluator of loss expressions in double: it walks an expression through the op descriptions
// (op_descriptions.h), forward and backward. Coverage (coverage_cells.h) visits each op with its operands' values,
// the tolerance (tolerance.h) adds each op's scale B and the scales' backward, the error budget and the formula
// variants evaluate the value and the signed gradient.
//
// Example:
//   ForwardPass pass;
//   pass.leaf = [&](const Expr& e, EvalNode& n) { n.dtype = DType::Float64; n.shape = ...; n.v = ...; };
//   std::vector<EvalNode> nodes = evaluate_forward(loss, pass);   // nodes.back() is the loss
//   backward_values(nodes, {1.0});                                 // each node's s: d loss / d node
//   std::map<std::string, std::vector<double>> grads = parameter_gradients(nodes);
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "conformance/program/op_descriptions.h"

namespace lockstep {

struct ForwardPass {
  // Fills a parameter's or a constant's node: dtype, shape, v (and b when `scales`). Throw CannotEvaluate for an
  // unknown parameter.
  std::function<void(const Expr&, EvalNode&)> leaf;
  bool scales = false;                         // also each op's scale B (forward_scale)
  const ExpressionVariant* variant = nullptr;  // an op's formula variant in place of its own
  std::function<void(const OpCall&)> before_op;  // each op with its operands, before it runs
  std::function<void(OpCall&)> after_node;       // each node once evaluated, leaves too (no operands)
};

// The nodes of `root` in evaluation order (operands first); nodes.back() is the root. Throws CannotEvaluate when an
// operand is missing or an op cannot evaluate its operands.
std::vector<EvalNode> evaluate_forward(const Expr& root, const ForwardPass& pass);

// The longest sum an op takes part in, forward or backward (OpDescription::reduction_length); 1 for a leaf.
int64_t reduction_length(const OpCall& call);

// Per node and element: the gradient's class (NaN or ±inf) there hangs on a rounding (tolerance.h's straddles).
struct StraddleMarks {
  OpDescription::WithinRounding within_rounding;
  std::vector<std::vector<char>> marks;  // filled by backward_values, one per node
};

// The signed backward: `seed` at the root, every node's s its gradient. With `straddles`, an element is marked where
// an infinite incoming gradient met a local derivative that is 0 within the rounding of the op's output, and the mark
// follows the gradient down: element by element through element-wise ops, to every operand element of the others.
void backward_values(std::vector<EvalNode>& nodes, const std::vector<double>& seed,
                     const ExpressionVariant* variant = nullptr, StraddleMarks* straddles = nullptr);

// The backward on magnitudes (tolerance.h): `seed` at the root, each node's s its backward scale. An op's incoming
// scale, the root's included, is at least `min_normal` (a gradient through the subnormal range is rounded to an
// absolute denormal); a non-finite contribution of one element (0 * inf) is dropped. With `min_normal` 0 (the exact
// scales, SEMANTICS §9.5), a scale is 0 only where a zero's sign is fixed: a zero made from a computed factor (a
// gradient below the root, an operand computed to a non-zero value) is marked 1 instead, whatever its magnitude.
void backward_scales(std::vector<EvalNode>& nodes, const std::vector<double>& seed, double min_normal);

// The mark of the exact scales (SEMANTICS §9.5) for a zero whose sign a rounding may decide: there only zero or not
// matters, so any non-zero value would do.
inline constexpr double kSignFreeMark = 1;

// Whether an operand of `call` that is neither a parameter nor a constant was computed to a non-zero value (its
// forward scale b) at element j of an output of `out_size` elements (a 0-d operand broadcasts): a zero the op makes
// there has its sign from that operand's rounding (SEMANTICS §9.5).
bool computed_nonzero_operand_at(const OpCall& call, size_t j, size_t out_size);

// Each parameter's gradient: the s of its nodes summed (in reverse evaluation order, as a backward accumulates).
std::map<std::string, std::vector<double>> parameter_gradients(const std::vector<EvalNode>& nodes);

}  // namespace lockstep
