// Every op of the loss language (SEMANTICS §2), described once as data.
//
// A description says what an op is: its name and operands, the field holding its scalar or indices, its shape
// rule, its value and its gradient in double, how rounding grows through it (the scales B and the backward
// scales of tolerance.h), the longest sum it takes part in, its edge classes for coverage, and the formula
// variants a framework may compute instead (formula_variants.h). One evaluator (op_evaluator.h) walks an
// expression through these entries for coverage, the tolerance and the error budget; the program's name table,
// its JSON and its static checks read them too. Adding an op means: its Op value (program.h), one entry in the
// file of its family here (op_elementwise.cc, op_reductions.cc, op_linear_algebra.cc), impl's op, the oracle's
// glue, the generator's choice of it, SEMANTICS, tests and docs.
//
// Example:
//   const OpDescription& d = describe(Op::Tanh);
//   d.name;                                    // "tanh"
//   std::optional<Op> op = op_from_name("mse_loss");
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "conformance/program/program.h"

namespace lockstep {

// Thrown by an op for operands it cannot evaluate (a shape it does not take, an index out of range): the
// evaluation as a whole is given up (op_evaluator.h).
struct CannotEvaluate : std::exception {
  const char* what() const noexcept override { return "cannot evaluate the expression"; }
};

// One node of an evaluated expression, in evaluation order (operands before the op).
struct EvalNode {
  const Expr* expr = nullptr;
  DType dtype = DType::Float32;  // a leaf's own; an op's that of its first operand
  Shape shape;
  std::vector<double> v;  // value, in double
  std::vector<double> b;  // scale B >= |v| (tolerance.h); filled only when scales are evaluated
  std::vector<double> s;  // the gradient reaching this node (signed), or its backward scale
  std::vector<int> args;  // indices of the operands' nodes
};

// An op node and its operands during an evaluation.
struct OpCall {
  const Expr& expr;
  EvalNode& out;
  std::vector<EvalNode*> operands;

  const EvalNode& arg(size_t i) const {
    if (i >= operands.size()) throw CannotEvaluate{};
    return *operands[i];
  }
  EvalNode& arg(size_t i) {
    if (i >= operands.size()) throw CannotEvaluate{};
    return *operands[i];
  }
};

using OpStep = std::function<void(OpCall&)>;
// An element-wise op's local derivative d out[j] / d operand[j] (signed), or its magnitude for the scales.
using LocalDerivative = std::function<double(const OpCall&, size_t operand, size_t element)>;

// A framework's documented deviation in one op (formula_variants.h): what replaces the op's value or gradient.
struct OpFormulaVariant {
  const char* name = "";        // "relu.leaky_0.001"
  const char* applies_to = "";  // which values it changes
  const char* description = "";
  OpStep forward;                    // unset: the op's own
  LocalDerivative local_derivative;  // element-wise ops; unset: the op's own
  OpStep backward;                   // the others; unset: the op's own
};

// Which extra field of the expression an op reads, and its JSON key.
enum class OpExtra { None, Scalar, Indices };

struct OpDescription {
  Op op = Op::Const;
  const char* name = "";  // the JSON name: "mse_loss"
  size_t min_operands = 1, max_operands = 1;
  OpExtra extra = OpExtra::None;
  const char* extra_key = "";  // "scalar", "exponent", "targets", "indices"

  // The result's shape from the operands' (program.cc has checked their count and dtypes); throws ProgramError
  // at `path` for operands the op does not take.
  std::function<Shape(const Expr&, const std::vector<TypedShape>&, const std::string& path)> result_shape;

  // Value in double: out.shape and out.v from the operands' values.
  OpStep forward;
  // Scales B (tolerance.h): out.b from the operands' v and b and out.v.
  OpStep forward_scale;
  // Element-wise ops (one output element per operand element; a 0-d operand broadcast) give their local
  // derivatives, signed and as the magnitudes of the scales' backward (|f'| + |f''| B); the evaluator applies them
  // element by element. `zero_within_rounding`: the derivative at this element is 0 within a rounding of the
  // op's output (tanh's 1 - y^2 at saturation), so an infinite gradient meeting it is NaN on one engine and
  // infinite on the other (tolerance.h's straddles).
  bool elementwise = false;
  LocalDerivative local_derivative;
  LocalDerivative local_scale;
  using WithinRounding = std::function<bool(double distance, double scale)>;
  std::function<bool(const OpCall&, size_t element, const WithinRounding&)> zero_within_rounding;
  // The other ops add out.s into their operands' s themselves: `backward` with signed values, `backward_scale`
  // with the scales' magnitudes.
  OpStep backward;
  OpStep backward_scale;

  // The most terms one value of its forward or backward sums (tolerance.h's reduction factor); 1 by default.
  std::function<int64_t(const OpCall&)> reduction_length;

  // Coverage (coverage_cells.h): "large" inputs are those beyond where exp overflows; broadcast and repeated
  // indices are cells of their own.
  bool exponentiates = false;
  bool broadcasts = false;
  bool repeated_index_cell = false;

  // The driver protocol that brought it (fixtures/PROTOCOL.md): a driver of an older protocol that declares no ops
  // is not sent it.
  int since_protocol = 1;

  std::vector<OpFormulaVariant> variants;
};

// An entry's identity, the rest left to fill: `OpDescription d = op_entry(Op::Linear, "linear", 2, 3);`.
OpDescription op_entry(Op op, const char* name, size_t min_operands, size_t max_operands, OpExtra extra = OpExtra::None,
                       const char* extra_key = "");

// Every op, in Op order (Param and Const first: leaves, with no arithmetic).
const std::vector<OpDescription>& op_descriptions();
const OpDescription& describe(Op op);

// op_name() and op_from_name() (program.h) read these names.

// An op's formula variant with its op (formula_variants.h's expression_variant() finds one by name).
struct ExpressionVariant {
  Op op = Op::Const;
  const OpFormulaVariant* formula = nullptr;
};

// The families' entries (op_elementwise.cc, op_reductions.cc, op_linear_algebra.cc), gathered by
// op_descriptions().
std::vector<OpDescription> elementwise_op_descriptions();
std::vector<OpDescription> reduction_op_descriptions();
std::vector<OpDescription> linear_algebra_op_descriptions();

}  // namespace lockstep
