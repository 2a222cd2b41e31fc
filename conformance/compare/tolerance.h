// The tolerance model (SEMANTICS §9): when two numbers agree, in units of the operands' ULP.
//
// A number agrees when |actual - expected| <= k_eff * ulp(m) in the tensor's dtype, where
//  - ulp(x) is the gap from |x| to the next larger magnitude of the dtype (float32: 2^(e-23) for
//    2^e <= |x| < 2^(e+1)), and ulp(0) (and of any denormal) is the dtype's smallest denormal;
//  - m is the largest magnitude among the operands that produced the value in this action. The comparator
//    sees states, not operands, so m is reconstructed element by element (ScaleInputs) from:
//      * the value at the previous record (the oracle's), the new expected value and the change between
//        them: for an in-place update `x = x + u` those are exactly the operands (old value, applied update);
//      * for a step: the operands the optimizer combined, from the expected state: the gradient plus the
//        L2 term |g| + wd*|p| for momentum buffers and first moments (its square for second moments), and
//        for the parameter the update evaluated at operand magnitudes (SGD: lr*(G + momentum*|buf|),
//        Adam: lr/bc1 * (b1*|m_old| + (1-b1)*G) / denom), so a cancelling L2 term or exp_avg is not held
//        to the ULP of its tiny result;
//      * for values a forward or backward computed (the output, grads, grad handles): the operand scale of
//        operand_scales() below, a first-order forward error analysis of the loss expression evaluated in
//        double on the oracle's parameter values. For the output, B(node) = |value| + sum over operands of
//        |d node / d operand| * B(operand) (sums: sum of B, matmul: |A||B|), i.e. the magnitude at which
//        every rounding on the way happened; for a grad, the backward pass applied to absolute values with
//        each local derivative's magnitude (plus its sensitivity to its inputs' rounding), element by element
//        (the grad of w in sum(w * c) is judged at |c_i|; the largest element of the tensor would be far
//        looser for small elements). A mixed-sign sum that cancels to near zero is therefore judged at the
//        scale of sum |x_i|, not of its result.
//  - k_eff = k(quantity) for values an optimizer or a zero_grad produced, and k(quantity) * r(n) for values
//    produced by forward or backward, r(n) = max(1, ceil(log2 n)), n = the longest reduction in the loss
//    expression's forward or backward (a sum's or mean's operand size; matmul/linear: the largest of its
//    three dimensions; cross_entropy: rows or classes; an element-wise op with a broadcast 0-d operand: the
//    result's size, summed in that operand's gradient). Why log2: the rounding error of a
//    pairwise/cascade sum (LibTorch's CPU reductions) grows as log2(n) * ulp(sum |x_i|); two such orders
//    differ by at most the sum of both errors, which k absorbs. sqrt(n) (the typical growth of a naive
//    sequential sum) would be looser by 30x at n = 2^20 and hide real accuracy bugs; an implementation that
//    sums sequentially in float32 exceeds the bound only beyond a few thousand terms, where the difference
//    is worth reporting (and k can be raised per quantity).
// Non-finite numbers: NaN equals NaN at the same position; +inf/-inf must match exactly; finite vs
// non-finite is a mismatch. Non-finite operands and scales are ignored when computing m, element by element:
// an infinite operand of one element never drops the scale of the others (a finite value produced from an
// infinite operand, x / inf, is exact and judged at its own magnitude).
// Subnormals: a rounded intermediate in the subnormal range has an absolute error of up to one denormal, so
// every computed node's scale (forward and backward) is at least the dtype's smallest normal number.
// Classes decided by a rounding: where an infinite gradient flows through tanh or sigmoid within k ULPs of saturation,
// the local derivative 1 - y^2 (y (1 - y)) is 0 on an engine whose y rounded to exactly 1 and tiny on the other
// (LibTorch's tanh and libm's differ by an ULP there), so the grad is NaN (inf * 0) on one and ±inf on the other;
// likewise softplus's e^a / (e^a + 1) where e^a underflows to 0 on one engine and to a subnormal on the other. Such
// elements (OperandScales::grad_straddle) accept NaN against the specification's own ±inf, either way round.
// Without re-synchronisation (free-running, replay, drivers) the bound also carries an error budget
// (error_budget.h): the deviation already accepted in the action's inputs, propagated through the action.
//
// Example:
//   Tolerance tol;                     // k = 4 for every quantity
//   tol.grad = 8;                      // overrides are plain fields (a tolerance-overrides file may set them)
//   double bound = tol.k(Quantity::Grad) * ulp(1.5, DType::Float32);    // 4 * 2^-23
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "conformance/compare/formula_variants.h"
#include "conformance/program/program.h"
#include "conformance/program/trace.h"

namespace lockstep {

// A numeric quantity a trace holds (SEMANTICS §8), each with its own k: a parameter's value, its grad, every
// optimizer state tensor of optimizer_descriptions.h (a quantity of the state tensor's name), the forward's output
// and a held grad's handle. A new state tensor is a new quantity without a change here.
class Quantity {
 public:
  static const Quantity Param, Grad, Output, Handle;
  // The quantity of an optimizer state tensor; `name` must be one of all_state_tensors().
  static Quantity state(const std::string& name);

  size_t index() const { return index_; }  // dense, below quantity_count()
  bool operator==(Quantity o) const { return index_ == o.index_; }
  bool operator!=(Quantity o) const { return index_ != o.index_; }

 private:
  friend struct QuantityIndex;
  constexpr explicit Quantity(size_t index) : index_(index) {}
  size_t index_;
};
inline constexpr size_t kFixedQuantities = 4;  // Param, Grad, Output, Handle; the state tensors follow
inline const Quantity Quantity::Param{0};
inline const Quantity Quantity::Grad{1};
inline const Quantity Quantity::Output{2};
inline const Quantity Quantity::Handle{3};

size_t quantity_count();
const char* quantity_name(Quantity q);  // "param", "grad", "momentum_buffer", ..., "output", "handle"
// Every quantity in report order: param, grad, the state tensors in all_state_tensors() order, output, handle.
const std::vector<Quantity>& all_quantities();
std::optional<Quantity> quantity_from_name(const std::string& name);

// k per quantity, in ULPs of m. Defaults: 4 everywhere, i.e. each engine may round each of the value's
// (at most two) dependent roundings differently and one of them may fuse a multiply-add (SEMANTICS §1.4).
struct Tolerance {
  Tolerance() : k_(quantity_count(), 4.0) {}

  double k(Quantity q) const { return k_[q.index()]; }
  double& k(Quantity q) { return k_[q.index()]; }

 private:
  std::vector<double> k_;
};

// The ULP of magnitude |x| in `dtype` (see the header comment). Works for any double, including magnitudes
// beyond float32's range; ulp(inf) = inf, ulp(NaN) = NaN.
double ulp(double x, DType dtype);

// r(n) = max(1, ceil(log2 n)).
double reduction_factor(int64_t n);

// Operand scales of one forward (and its backward) of a loss expression, from a first-order error
// analysis in double (header comment). Non-finite scale elements (a division by zero, pow of 0 with a
// negative exponent) are set to 0, so they fall back to the value-based terms instead of accepting
// everything.
struct OperandScales {
  std::vector<double> output;                          // per element of the output
  std::map<std::string, std::vector<double>> grad;     // per parameter reached, per element
  int64_t reduction_length = 1;                        // n: the longest reduction (header comment)
  // Per parameter with such an element: the grad's signed value in double (±inf) where its class hangs on a rounding
  // (header comment: an infinite gradient through tanh or sigmoid at saturation, softplus at e^a's underflow), else 0.
  std::map<std::string, std::vector<double>> grad_straddle;
  // Per element: 1 where every operand that produced it was exactly zero (its scale before the subnormal floor is 0),
  // so the sign of a zero result is defined (SEMANTICS §9.5); 0 where a product with an exact zero had a computed
  // non-zero factor (below the backward's root), whose sign rounding may decide. The comparator goes by these flags.
  std::vector<char> output_exact_zero;
  std::map<std::string, std::vector<char>> grad_exact_zero;
};

// `params_state` supplies the parameters' values (the oracle's state before the forward). `gradient` is
// backward's explicit gradient (its magnitudes seed the backward), null for a scalar loss (seed 1).
// Never throws on a validated program; returns empty scales for anything it cannot evaluate.
OperandScales operand_scales(const Expr& loss, const EngineState& params_state,
                             const std::vector<double>* gradient);

// The loss expression evaluated in double on `params_state`'s values: the output and, per parameter reached,
// the gradient of <output, seed> (seed: the explicit gradient, else 1 per element). The error budget
// (error_budget.h) compares two such evaluations, at the oracle's and at the implementation's parameters,
// to bound how far a deviation accepted earlier may move a result. ok is false when it cannot evaluate.
struct ExactEvaluation {
  bool ok = false;
  std::vector<double> output;
  std::map<std::string, std::vector<double>> grad;
};
// `variant`: a formula variant of the expression's ops (formula_variants.h), null for the specification's.
ExactEvaluation exact_evaluation(const Expr& loss, const EngineState& params_state,
                                 const std::vector<double>* gradient, const ExpressionVariant* variant = nullptr);

}  // namespace lockstep
