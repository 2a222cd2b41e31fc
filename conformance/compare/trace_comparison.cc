// One program's records compared action by action (see trace_comparison.h).
#include "conformance/compare/trace_comparison.h"

#include <utility>

#include "conformance/compare/error_budget.h"
#include "conformance/compare/tolerance.h"

namespace lockstep {

TraceComparison::TraceComparison(const Program& program, Tolerance tolerance, FieldMask mask)
    : program_(program), tolerance_(tolerance), mask_(std::move(mask)) {}

std::vector<Difference> TraceComparison::apply_mask(std::vector<Difference> d, std::optional<size_t> index,
                                                    const std::string& action) {
  if (mask_.empty() || d.empty()) return d;
  std::vector<Difference> kept;
  for (Difference& x : d) {
    if (const Expectation* e = mask_.match(x.path)) {
      if (x.kind == DifferenceKind::Structure) masked_structure_ = true;
      masked_.push_back(MaskedDifference{index, action, std::move(x), e->reason});
    } else {
      kept.push_back(std::move(x));
    }
  }
  return kept;
}

std::vector<Difference> TraceComparison::compare_init(Record expected, Record actual, ErrorStats* stats) {
  CompareContext ctx;
  ctx.tolerance = tolerance_;
  if (program_.optimizer) ctx.optimizer = program_.optimizer->kind;
  std::vector<Difference> d = apply_mask(compare_records(expected, actual, nullptr, ctx, stats), std::nullopt, "init");
  expected_previous_ = std::move(expected);
  actual_previous_ = std::move(actual);
  synchronised_ = false;
  return d;
}

void TraceComparison::resynchronised() {
  actual_previous_.state = expected_previous_.state;
  if (held_) held_->actual_state = held_->expected_state;
  synchronised_ = true;
}

std::vector<Difference> TraceComparison::compare_action(size_t index, Record expected, Record actual,
                                                        ErrorStats* stats) {
  const Action& action = program_.actions.at(index);
  CompareContext ctx;
  ctx.tolerance = tolerance_;
  if (program_.optimizer) ctx.optimizer = program_.optimizer->kind;
  ctx.actual_previous = &actual_previous_;
  const bool carry = !synchronised_;
  ErrorBudget budget;
  switch (action.kind) {
    case ActionKind::Forward: {
      // A forward that failed leaves the previous output held.
      const Expr* loss = action.loss ? action.loss.get() : program_.loss.get();
      if (loss && !expected.error) {
        held_ = HeldForward{loss, expected_previous_.state, actual_previous_.state};
        ctx.scales = operand_scales(*loss, held_->expected_state, nullptr);
        if (carry) budget = forward_budget(*loss, held_->expected_state, held_->actual_state);
      }
      break;
    }
    case ActionKind::Backward:
      if (held_) {
        const std::vector<double>* gradient = action.gradient ? &*action.gradient : nullptr;
        ctx.scales = operand_scales(*held_->loss, held_->expected_state, gradient);
        if (carry)
          budget = backward_budget(*held_->loss, held_->expected_state, held_->actual_state, gradient,
                                   expected_previous_, actual_previous_, handle_param_);
      }
      break;
    case ActionKind::HoldGrad:
      handle_param_[action.handle] = action.param;
      if (carry) budget = hold_grad_budget(action.handle, action.param, expected, actual);
      break;
    case ActionKind::Step:
      if (carry && program_.optimizer)
        budget = step_budget(program_.optimizer->kind, expected_previous_, actual_previous_, expected, actual);
      break;
    default:
      break;
  }
  ctx.handle_param = handle_param_;
  if (!budget.empty()) ctx.budget = &budget;
  std::vector<Difference> d =
      apply_mask(compare_records(expected, actual, &expected_previous_, ctx, stats), index, action_name(action.kind));
  expected_previous_ = std::move(expected);
  actual_previous_ = std::move(actual);
  synchronised_ = false;
  return d;
}

}  // namespace lockstep
