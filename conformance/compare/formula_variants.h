// Formula variants: named, exact descriptions of how a framework computes something differently from the
// specification, for expectations that accept a known deviation by saying what the deviating value IS
// ({"accept": {"variant": NAME}}, expectations.h) instead of accepting any value of a field.
//
// A variant is evaluated in double at the implementation's own inputs (its parameters at the held forward, its
// previous record), like the error budget (error_budget.h): the implementation's value must be within the
// comparator's bound of it. A framework that deviates in another way (a doubled gradient, a wrong learning rate)
// is still rejected, which its guard mutant proves (tools/adapters/check_adapter_mutants.sh).
//
// Example:
//   const ExpressionVariant* v = expression_variant("relu.leaky_0.001");
//   ExactEvaluation e = exact_evaluation(loss, actual_state, nullptr, v);  // tolerance.h
#pragma once

#include <string>
#include <vector>

#include "conformance/program/op_descriptions.h"

namespace lockstep {

struct FormulaVariantInfo {
  std::string name;         // "adam.no_bias_correction"
  std::string applies_to;   // which values: "forward outputs and backward grads", "step: parameter values", ...
  std::string description;  // the formula
};
const std::vector<FormulaVariantInfo>& formula_variants();

// Variants of the loss expression's ops (forward and backward), for exact_evaluation (tolerance.h).
// The expression variant of that name; null for a variant of another kind or an unknown name.
const ExpressionVariant* expression_variant(const std::string& name);

}  // namespace lockstep
