// The error budget: how far an implementation may legitimately move a value in one action because the
// action's inputs already deviated, within tolerance, from the oracle's (SEMANTICS §9).
//
// In lockstep mode the engine under test is re-synchronised after every action, so its inputs are the
// oracle's and the budget is zero. Everywhere else (free-running, replay of fixtures, every driver) an
// accepted rounding difference stays in the state and feeds the next action: a gradient accepted at 12 ULP
// of its operands is the input of a step judged at 4 ULP of |g|. The budget carries each accepted
// deviation forward: for a value y = f(x) produced by the action,
//
//     |y_actual - y_expected| <= k * ulp(m)  +  |f(x_actual) - f(x_expected)|
//
// Precisely: each engine rounds f at its own inputs, y_a = f(x_a) + r_a and y_e = f(x_e) + r_e, so
//
//     | y_actual - (y_expected + delta) | <= k * ulp(m),     delta = f(x_actual) - f(x_expected)
//
// The budget is the SIGNED shift delta, evaluated in double with the specification's f, never the
// implementation's: the tested value must be a correct rounding of the specification at its own inputs,
// however far those inputs drifted. (Used as symmetric slack |delta| it would accept a wrong value up to
// 2 |delta| away, e.g. after a relu kink flipped between the sides.) With equal inputs delta is zero.
//  - forward: f = the loss expression at each side's parameters (exact_evaluation in tolerance.h);
//  - backward: each reached grad is its value before plus the expression's gradient at the parameters of the
//    held forward, so the budget is the deviation the grad had before plus |grad f(x_a) - grad f(x_e)|;
//    handles holding a reached grad get its budget;
//  - hold_grad: the new handle holds the grad as it is, with the deviation it has;
//  - step: SEMANTICS §5.3 / §6.3 / §6.4 in double, per parameter occurrence in group order, from each
//    side's previous parameter, grad and state; the parameter update reads each side's own new moments
//    and momentum buffer (what the engine actually used), so rounding inside the moments (subnormal
//    second moments in particular) reaches the parameter's budget.
// Non-finite budget elements are 0 (non-finite values are compared exactly anyway), but the two evaluations are kept
// (`evaluations`): where the engines' results differ in class (NaN, +inf, -inf, finite), the difference is accepted
// when the inputs' deviation straddles a singularity of f, i.e. f in double is of the oracle's class at the oracle's
// inputs and of the implementation's class at the implementation's (RMSprop with eps = 0: 0/0 where a grad is 0 on
// one side and 0 up to the budget on the other), a finite value then within k ULPs of f(x_actual) (SEMANTICS §9.2,
// comparator.cc). With equal inputs the two evaluations are equal, so this never applies in lockstep.
// For float64 values the double evaluation of f rounds as coarsely as the engines do, so where delta is not 0
// the comparator allows k more ULPs (comparator.cc).
//
// Example:
//   ErrorBudget b = step_budget(OptimizerKind::Adam, expected_before, actual_before, expected_after, actual_after);
//   if (const std::vector<double>* w = b.find("w → value")) ... (*w)[i] ...
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "conformance/program/program.h"
#include "conformance/program/trace.h"

namespace lockstep {

struct ErrorBudget {
  // Field path as in Difference::path without the index ("w → grad", "w → exp_avg", "output → value",
  // "handle g0 → value") -> per element, in the tensor's row-major order: f(x_actual) - f(x_expected).
  std::map<std::string, std::vector<double>> fields;
  // Per field where f was evaluated on both sides: {f(x_expected), f(x_actual)} per element, non-finite elements
  // kept (the header comment: a singularity straddled).
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> evaluations;

  const std::vector<double>* find(const std::string& field) const;
  const std::pair<std::vector<double>, std::vector<double>>* evaluation(const std::string& field) const;
  bool empty() const { return fields.empty(); }
};

// The parameters' values at the held forward, on each side.
ErrorBudget forward_budget(const Expr& loss, const EngineState& expected_at_forward,
                           const EngineState& actual_at_forward);

// `gradient`: backward's explicit gradient (null: a scalar loss, seed 1). `handle_param`: handle -> the
// parameter whose grad it holds.
ErrorBudget backward_budget(const Expr& loss, const EngineState& expected_at_forward,
                            const EngineState& actual_at_forward, const std::vector<double>* gradient,
                            const Record& expected_before, const Record& actual_before,
                            const std::map<std::string, std::string>& handle_param);

ErrorBudget hold_grad_budget(const std::string& handle, const std::string& param, const Record& expected_after,
                             const Record& actual_after);

// A parameter one step updates more than once (it sits in two groups, or twice in one group, SEM-7.4): how often,
// and per element the largest magnitude it takes on the way (in double, from `before`), for the tolerance's scale.
struct RepeatedUpdate {
  int updates = 0;
  std::vector<double> peak;
};
std::map<std::string, RepeatedUpdate> repeated_updates(OptimizerKind kind, const Record& before,
                                                       const std::vector<GroupObservation>& groups);

// Each side steps with its own group options (`expected_after`'s, `actual_after`'s where the groups hold the same
// parameters): options are compared exactly, so they differ only where an expectation accepted it. A parameter
// whose optimizer state differs in structure between the sides, before or after (a state tensor or a grad one side
// lacks, or another step count) gets no budget: that is no rounding to carry, even where a mask accepted it.
ErrorBudget step_budget(OptimizerKind kind, const Record& expected_before, const Record& actual_before,
                        const Record& expected_after, const Record& actual_after);

// load_state_dict (SEMANTICS §19.5): a loaded state tensor is the saved one, so it carries the deviation it had at the
// save: each side's state as its record of the state_dict action showed it.
ErrorBudget load_budget(const EngineState& expected_saved, const EngineState& actual_saved);

// clip_grad_norm / clip_grad_value (SEMANTICS §18), in double at each side's grads before: every grad and held handle
// the clip changed (a grad listed twice, or a 0-d grad sharing storage with a listed one, is scaled once per listing:
// how often is read from the oracle's own change), and for clip_grad_norm the total ("returned"). clip_budget.cc.
ErrorBudget clip_budget(const Action& action, const Record& expected_before, const Record& actual_before,
                        const Record& expected_after);
// a - b per element (the actual side minus the expected side); 0 where it is not finite or the sizes differ.
std::vector<double> finite_deviation(const std::vector<double>& a, const std::vector<double>& b);
// The norm_type-norm (1, 2, +inf) of `values` in double (SEM-18.1); NaN anywhere gives NaN.
double vector_norm(const std::vector<double>& values, double norm_type);
// The longest reduction of a clip_grad_norm (tolerance.h r(n)): the largest counted grad's elements, or the number of
// listed parameters when larger.
int64_t clip_reduction_length(const Action& action, const EngineState& before);

}  // namespace lockstep
