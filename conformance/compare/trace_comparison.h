// One program's records compared as they come, action by action: the comparison every path shares
// (lockstep and free-running runs, replay of fixtures, drivers).
//
// Between records it holds what the comparator needs (comparator.h): both sides' previous records, the held
// forward's loss and parameters on both sides (operand scales, tolerance.h; error budget, error_budget.h),
// and which parameter each grad handle holds. Every value is judged where it is produced, including its
// first appearance (a grad, output, moment or handle going from absent to present), and a number neither
// side changed is not judged again. Without re-synchronisation each action's bound carries the deviation
// its inputs already had (the error budget); after resynchronised() the sides are equal and the budget is 0.
// A FieldMask (expectations.h) accepts the differences it matches: they are kept in masked() with the
// entry's reason and not returned, so the comparison goes on and a later unmasked difference still fails.
// Differences a rule of the comparison accepts (a NaN or infinity on one side where a singularity is straddled,
// comparator.h) are kept in masked() too, as passes (by_profile), with the rule as their reason.
//
// Example:
//   TraceComparison cmp(program, Tolerance{});
//   std::vector<Difference> d = cmp.compare_init(expected.init, actual.init);
//   for (size_t i = 0; d.empty() && i < program.actions.size(); ++i)
//     d = cmp.compare_action(i, expected.records[i], actual.records[i]);
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conformance/compare/comparator.h"
#include "conformance/compare/expectations.h"
#include "conformance/program/optimizer_descriptions.h"
#include "conformance/program/program.h"
#include "conformance/program/trace.h"

namespace lockstep {

// A difference an expectation accepted (expectations.h), where it happened.
struct MaskedDifference {
  std::optional<size_t> action_index;  // nullopt: the setup record
  std::string action;                  // "init", "step", ...
  Difference difference;
  std::string reason;                  // the expectation's reason
  // A rule's, not an expectation's: an API profile's (api_profile.h) or the comparison's own (a singularity straddled,
  // comparator.h CompareContext::accepted). A pass, not a known discrepancy.
  bool by_profile = false;
};

class TraceComparison {
 public:
  // `program` and the expectations behind `mask` must outlive the comparison.
  TraceComparison(const Program& program, Tolerance tolerance, FieldMask mask = {});

  std::vector<Difference> compare_init(Record expected, Record actual, ErrorStats* stats = nullptr);
  // Record of program.actions[index]; actions are compared in order.
  std::vector<Difference> compare_action(size_t index, Record expected, Record actual, ErrorStats* stats = nullptr);

  // Lockstep mode: the engine under test was just set to the expected side's numbers (Engine::synchronise).
  void resynchronised();

  const Record& expected_previous() const { return expected_previous_; }
  const std::vector<MaskedDifference>& masked() const { return masked_; }
  // Whether a masked difference was structural (the sides' structure may differ from then on).
  bool masked_structure() const { return masked_structure_; }
  // Per optional field (optional_fields.h): observations compared and left untested so far.
  const OptionalFieldCounts& optional_fields() const { return optional_fields_; }
  // Values judged imprecise so far (comparator.h, SEMANTICS §9.6); `first` names the record.
  const Imprecision& imprecision() const { return imprecision_; }
  // Set where the comparison ended early, as a pass ("action 3 (step): p0 → value[0] ..."): a rule accepted a NaN or
  // infinity on one side only (a singularity straddled, SEMANTICS §9.2), or a step that moves between its closure
  // calls took a decision within rounding (§16.5). Every later record follows from it; ended_why() says which.
  const std::string& ended_at() const { return ended_at_; }
  // Why it ended there: "a singularity straddled (SEMANTICS §9.2)", or a decision of a step that moves between its
  // closure calls taken within rounding (SEMANTICS §16.5).
  const std::string& ended_why() const { return ended_why_; }

 private:
  struct HeldForward {
    const Expr* loss = nullptr;
    EngineState expected_state, actual_state;  // the parameters it read, on each side
  };

  void note_imprecision(const Imprecision& found, const std::string& where);
  // A formula variant's value for difference `d` of the record of action `index` (expectations.h "accept"), at the
  // implementation's inputs; nullopt where the variant says nothing about it.
  std::optional<double> variant_value(const std::string& name, const Difference& d, const Action* action,
                                      const Record& actual) const;
  // One record, of program.actions[index] or of `action` in its closure (`where` prefixes the paths: "call 2, forward
  // (closure action 0): ").
  std::vector<Difference> compare_one(size_t index, const Action& action, const std::string& where, Record expected,
                                      Record actual, ErrorStats* stats);
  // A step's closure calls, in order (SEMANTICS §17.3), and what the step returned.
  std::vector<Difference> compare_calls(size_t index, const Action& action, const Record& expected,
                                        const Record& actual, ErrorStats* stats);
  std::vector<Difference> apply_mask(std::vector<Difference> d, std::optional<size_t> index, const Action* program_action,
                                     const std::string& action, const Record& expected, const Record& actual);

  const Program& program_;
  Tolerance tolerance_;
  FieldMask mask_;
  std::vector<MaskedDifference> masked_;
  bool masked_structure_ = false;
  OptionalFieldCounts optional_fields_;
  Imprecision imprecision_;
  std::string ended_at_;
  std::string ended_why_ = "a singularity straddled (SEMANTICS §9.2)";
  Record expected_previous_, actual_previous_;
  bool synchronised_ = false;  // the sides' numbers are equal: no budget to carry
  std::optional<HeldForward> held_;
  // An optimizer whose step moves the parameters between closure calls (L-BFGS, SEMANTICS §16.3): a model of each
  // side's step, fed with that side's observations (ClosureStepModel), and the moves the next record shows.
  std::shared_ptr<ClosureStepModel> expected_model_, actual_model_;
  struct PendingMoves {
    PlannedMove expected, actual;
  };
  std::optional<PendingMoves> pending_moves_;
  // The moves' budget and scales for the record compared now (compare_one).
  // A move whose every element's bound is at least its size is counted in `imprecise` (SEMANTICS §9.6).
  void widen_after_resynchronisation(ErrorBudget& budget, OperandScales& scales) const;
  void moves_budget(ErrorBudget& budget, std::map<std::string, CompareContext::Moved>& moved,
                    Imprecision& imprecise) const;
  // After call `k` of a step (its records compared): feeds both models; false where the comparison ends there.
  bool follow_call(size_t index, size_t k, const Record& expected_last, const Record& actual_last);
  std::map<std::string, std::string> handle_param_;
  // Each checkpoint's state as both sides' records of its state_dict showed it (SEMANTICS §19.5): a load carries it.
  std::map<std::string, std::pair<EngineState, EngineState>> checkpoints_;
};

}  // namespace lockstep
