// The comparator: one record of the implementation under test against the oracle's (SEMANTICS §8, §9).
//
// Numbers are compared within the tolerance model of tolerance.h; everything else exactly: the error kind
// (messages are not compared), grad definedness, identity (same_as_previous; a parameter's too, an optional field
// compared where both sides report it), requires_grad, has_grad_fn,
// which optimizer state exists and which of its fields, step counts, each group's parameters and options,
// handle definedness, the output's presence, requires_grad, has_grad_fn, and every tensor's shape and dtype.
//
// Field paths name what differs: "w → value[1,2]", "w → grad.defined", "w → exp_avg_sq[1,2]" (the index is in
// the tensor's shape; a 0-d tensor has none), "w → state.step", "handle g0 → value[3]", "group 0 → lr",
// "output → value", "error.kind".
//
// Example:
//   CompareContext ctx;                                   // default tolerance, no operand scales
//   std::vector<Difference> d = compare_records(oracle_rec, impl_rec, &oracle_prev, ctx);
//   if (!d.empty()) std::cout << d.front().path << ": " << d.front().bound;
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "conformance/program/program.h"
#include "conformance/compare/error_budget.h"
#include "conformance/compare/tolerance.h"
#include "conformance/program/optional_fields.h"
#include "conformance/program/trace.h"

namespace lockstep {

enum class DifferenceKind {
  Structure,  // anything that is not a number within tolerance: definedness, identity, shapes, errors, ...
  Numeric,    // a number outside its tolerance
};

struct Difference {
  DifferenceKind kind = DifferenceKind::Structure;
  std::string path;           // "w → exp_avg_sq[1,2]"
  std::string expected_text;  // the oracle's value as text (numbers too, shortest round trip)
  std::string actual_text;
  // Numeric differences only (NaN otherwise).
  std::optional<Quantity> quantity;
  double expected = std::numeric_limits<double>::quiet_NaN();
  double actual = std::numeric_limits<double>::quiet_NaN();
  double absolute_error = std::numeric_limits<double>::quiet_NaN();  // |a-c| (c: centre)
  double relative_error = std::numeric_limits<double>::quiet_NaN();  // |a-c| / |c| (c: centre); inf when c == 0
  double ulp_error = std::numeric_limits<double>::quiet_NaN();       // |a-c| / ulp(m)
  double scale = std::numeric_limits<double>::quiet_NaN();           // m
  double allowed_ulps = std::numeric_limits<double>::quiet_NaN();    // k_eff
  double carried = 0;         // the element's error budget (error_budget.h): the value must round from expected + carried
  // The value expected at the implementation's own inputs: expected + carried, the centre of the bound. absolute_error,
  // relative_error and ulp_error are the actual value's distance from it (what was judged), bound_value the largest
  // distance allowed (allowed_ulps * ulp(scale), allowed_ulps as applied).
  double centre = std::numeric_limits<double>::quiet_NaN();
  DType dtype = DType::Float32;           // the tensor's (numeric differences)
  std::string field;                      // the path without the index: "w → grad" (numeric differences)
  size_t element = 0;                     // the flat row-major index of the element
  // The implementation's value of the element at its previous record, where it had one (expectations' "unchanged").
  bool has_actual_before = false;
  double actual_before = std::numeric_limits<double>::quiet_NaN();
  double bound_value = std::numeric_limits<double>::quiet_NaN();
  std::string bound;          // "4 ulp of 3.5 (float32)", or a rule: "exact", "NaN must match NaN"
  // A summary entry that stands for this many further out-of-tolerance elements of the tensor at `path`
  // ("w → grad[...]"); its numbers are NaN. 0 for every other entry.
  size_t omitted = 0;
};

// Values whose bound is at least their own magnitude (SEMANTICS §9.6): the comparison could not tell them from
// their negation or a multiple, so a case with one is imprecise, not passed.
struct Imprecision {
  int64_t values = 0;  // tensors (per record) none of whose judged values is larger than its bound
  std::string first;  // "w → grad[1]: bound 3.2e+10 ≥ |expected| 1.5"
};

// What the comparator knows about the action besides the records (tolerance.h).
struct CompareContext {
  Tolerance tolerance;
  std::optional<OptimizerKind> optimizer;              // the program's, for the step scales
  // Operand scales of the forward (Output) or backward (Grad, and handles of those grads) this action ran.
  std::optional<OperandScales> scales;
  std::map<std::string, std::string> handle_param;     // handle name -> the parameter whose grad it holds
  // The engine under test's previous record (after re-synchronisation, in lockstep mode). A number that
  // neither engine changed in this action is then neither judged nor counted in ErrorStats again: it was,
  // with its producing action's operand scales and budget, where it was produced. A value that appears
  // (absent before) is always judged. Null: every number is judged.
  const Record* actual_previous = nullptr;
  // The deviation the action may carry from its inputs (error_budget.h); null or empty in lockstep mode.
  const ErrorBudget* budget = nullptr;
  // Parameters an L-BFGS step moved before this record (between two closure calls, or after the last, SEMANTICS
  // §16.3): per element the move's magnitude and a bound on the rounding of both sides' arithmetic behind it
  // (ClosureStepModel, optimizer_descriptions.h), the value's scale.
  struct Moved {
    std::vector<double> magnitude, bound;
  };
  const std::map<std::string, Moved>* moved = nullptr;
  // clip_grad_norm and clip_grad_value (SEMANTICS §18.7): the fields the clip produced ("returned", "w → grad" of a
  // listed or changed grad, "handle h → value" of a handle aliasing one) are judged at their own new magnitude, not at
  // the value before (a scaled grad's rounding is relative to its result), and for clip_grad_norm with
  // k * (r(n) + 2): n the longest reduction behind the total norm (clip_reduction_length in error_budget.h), plus the
  // coefficient's two roundings. A zero among them keeps its input's sign: the sign must match where both sides' inputs
  // were zeros of one sign.
  std::set<std::string> clip_fields;
  int64_t clip_reduction_length = 0;
  // A clip_grad_norm over float32 and float64 grads together: the float64 total and coefficient hang on float32 norms
  // (SEM-18.1), so the float64 clip fields are judged in float32 ULPs.
  bool clip_float32_norms = false;
  // Step only: the parameters the step updates more than once, with the magnitudes they take on the way.
  const std::map<std::string, RepeatedUpdate>* repeated_update_peaks = nullptr;
  // When given, receives per optional field (optional_fields.h) how many observations were compared and how
  // many went untested (absent on one side: never a difference).
  OptionalFieldCounts* optional_fields = nullptr;
  // When given, receives the values judged imprecise (Imprecision).
  Imprecision* imprecision = nullptr;
  // List every out-of-tolerance element instead of the first few of a tensor and a count of the rest: for masks
  // (expectations.h), which judge element by element; summarise_long_tensors() shortens the list afterwards.
  bool list_every_element = false;
  // When given, receives the differences a rule accepted (not returned as differences): a NaN or infinity on one
  // side only where a singularity is straddled, by the inputs' carried deviation (SEMANTICS §9.2, error_budget.h) or
  // by a rounding inside the action (SEMANTICS §9.1, OperandScales::grad_straddle). `bound` names the rule.
  std::vector<Difference>* accepted = nullptr;
};

// The largest ULP error seen per quantity in one comparison (free-running growth); -1 when none compared.
struct ErrorStats {
  std::vector<double> max_ulp_error;  // per Quantity::index()
  ErrorStats() : max_ulp_error(quantity_count(), -1.0) {}
  double& operator[](Quantity q) { return max_ulp_error[q.index()]; }
  double operator[](Quantity q) const { return max_ulp_error[q.index()]; }
};

// Every difference between `actual` and `expected`, in a fixed order: the action and error first, then
// parameter by parameter (value, grad, optimizer state), handles, groups, the output. Within a tensor, the
// first out-of-tolerance element in row-major order comes first. `expected_previous` is the oracle's record
// before this one (null for the setup record); it supplies the old values for the scale m. When `stats` is
// given, it receives the largest ULP error per quantity of every number compared (within tolerance or not).
std::vector<Difference> compare_records(const Record& expected, const Record& actual,
                                        const Record* expected_previous, const CompareContext& context,
                                        ErrorStats* stats = nullptr);

bool has_structural_difference(const std::vector<Difference>& differences);

// One line for a difference, the same in every report: "w → momentum_buffer[0]: expected 1, actual 0.5: error 0.5
// > bound 4.8e-07 (4 ulp of 1 (float32))"; where a deviation of the inputs was carried, the value expected at the
// implementation's own inputs comes first: "w → value[0]: expected 0.5 (0.75 at its own inputs, +0.25 carried),
// actual 0.5: error 0.25 > bound ..."; rules: "w → grad[1]: expected NaN, actual inf (NaN must match NaN)".
std::string difference_text(const Difference& d);
// The first few numeric differences of each tensor, and one entry counting the rest (as compare_records lists them).
std::vector<Difference> summarise_long_tensors(std::vector<Difference> differences);
// "0.75 at its own inputs, +0.25 carried" when something was carried, else "".
std::string centre_text(const Difference& d);

// "4 ulp of 3.5 (float32)": the shortest round-trip decimal of m.
std::string describe_bound(double allowed_ulps, double scale, DType dtype);
// Shortest round-trip text of a number in its dtype ("0.1" for 0.1f), "NaN", "inf", "-inf".
std::string number_text(double v, DType dtype);

}  // namespace lockstep
